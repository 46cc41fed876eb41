// Package buflist is a bounded best-fit free list of byte buffers, for
// buffers from kilobytes to megabytes that are worth keeping across uses:
// fresh memory costs a page fault per 4 KiB on first touch, on the
// machines measured more than filling it. A sync.Pool does not serve
// them: it hands back any buffer, so a large need met a small one,
// dropped it and took fresh memory, and it empties at every other GC.
package buflist

import "sync"

// List keeps up to Max bytes of free buffers. The zero value with Max set
// is ready; it is safe for concurrent use.
type List struct {
	Max   int // bytes kept at most
	Round int // new buffers' capacity is rounded up to this (0: 64 KiB)

	mu    sync.Mutex
	free  [][]byte
	bytes int
}

// Get returns a buffer of length n: the smallest free one that holds n
// bytes, or a new one.
func (l *List) Get(n int) []byte {
	l.mu.Lock()
	best := -1
	for i, b := range l.free {
		if cap(b) >= n && (best < 0 || cap(b) < cap(l.free[best])) {
			best = i
		}
	}
	if best >= 0 {
		b := l.free[best]
		l.free[best] = l.free[len(l.free)-1]
		l.free = l.free[:len(l.free)-1]
		l.bytes -= cap(b)
		l.mu.Unlock()
		return b[:n]
	}
	l.mu.Unlock()
	round := l.Round
	if round <= 0 {
		round = 64 << 10
	}
	return make([]byte, n, (n+round-1)/round*round)
}

// Put gives b back for a later Get; past Max bytes kept, the smallest
// buffers are let go first.
func (l *List) Put(b []byte) {
	if cap(b) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.free = append(l.free, b[:0])
	l.bytes += cap(b)
	for l.bytes > l.Max && len(l.free) > 0 {
		small := 0
		for i, f := range l.free {
			if cap(f) < cap(l.free[small]) {
				small = i
			}
		}
		l.bytes -= cap(l.free[small])
		l.free[small] = l.free[len(l.free)-1]
		l.free = l.free[:len(l.free)-1]
	}
}
