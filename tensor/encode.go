package tensor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"sync"
)

// Group sizes: a group holds 2^groupLog2 values (the last group of a span
// may hold fewer).
const (
	MinGroupLog2     = 8
	MaxGroupLog2     = 16
	DefaultGroupLog2 = 12
)

// split16 and split32 split one value (a 16-bit word, or the 32-bit word
// for F32) into its symbol and raw bits.
func split16(k Kind, w uint16) (sym int, raw byte) {
	if k == F16 {
		return int(w >> 8), byte(w)
	}
	// BF16: exponent, then sign and mantissa.
	return int(w>>7) & 0xff, byte(w>>8)&0x80 | byte(w)&0x7f
}

func split32(w uint32) (sym int, raw uint32) {
	return int(w>>23) & 0xff, w&0x7fffff | (w>>31)<<23
}

// Histogram counts the symbols of the values in words (len a multiple of
// the kind's word size) into freq (256 entries) for a split kind.
func Histogram(k Kind, words []byte, freq []uint64) {
	switch k {
	case BF16:
		var h [256]uint32
		for i := 0; i+1 < len(words); i += 2 {
			h[(binary.LittleEndian.Uint16(words[i:])>>7)&0xff]++
		}
		for s, n := range h {
			freq[s] += uint64(n)
		}
	case F16:
		var h [256]uint32
		for i := 1; i < len(words); i += 2 {
			h[words[i]]++
		}
		for s, n := range h {
			freq[s] += uint64(n)
		}
	case F32:
		for i := 0; i+3 < len(words); i += 4 {
			freq[(binary.LittleEndian.Uint32(words[i:])>>23)&0xff]++
		}
	case B8:
		var h [256]uint32
		for _, b := range words {
			h[b]++
		}
		for s, n := range h {
			freq[s] += uint64(n)
		}
	default:
		panic("tensor: Histogram of a kind without a fixed alphabet")
	}
}

// WordHistogram counts distinct 16-bit words, giving up (nil, nil) once
// more than limit distinct words are seen. dict is ascending.
func WordHistogram(words []byte, limit int) (dict []uint16, freq []uint64) {
	cp := wordCounts.Get().(*[1 << 16]uint32)
	counts := cp[:]
	var seen []uint16
	defer func() {
		for _, w := range seen {
			counts[w] = 0
		}
		wordCounts.Put(cp)
	}()
	for i := 0; i+1 < len(words); i += 2 {
		w := binary.LittleEndian.Uint16(words[i:])
		if counts[w] == 0 {
			if len(seen) >= limit {
				return nil, nil
			}
			seen = append(seen, w)
		}
		counts[w]++
	}
	sort.Slice(seen, func(a, b int) bool { return seen[a] < seen[b] })
	dict = append([]uint16(nil), seen...)
	freq = make([]uint64, len(dict))
	for i, w := range dict {
		freq[i] = uint64(counts[w])
	}
	return dict, freq
}

// wordCounts recycles WordHistogram's counters (all zero between uses).
var wordCounts = sync.Pool{New: func() any { return new([1 << 16]uint32) }}

type bitWriter struct {
	out []byte
	acc uint64
	n   uint
}

func (w *bitWriter) write(code uint64, n uint) {
	w.acc |= code << w.n
	w.n += n
	if w.n >= 32 {
		w.out = binary.LittleEndian.AppendUint32(w.out, uint32(w.acc))
		w.acc >>= 32
		w.n -= 32
	}
}

func (w *bitWriter) flush() {
	for w.n > 0 {
		w.out = append(w.out, byte(w.acc))
		w.acc >>= 8
		if w.n > 8 {
			w.n -= 8
		} else {
			w.n = 0
		}
	}
	w.acc, w.n = 0, 0
}

// Encode appends the payload of the values in words coded with c
// (docs/tensors.md, "span payload"). Groups are coded on up to threads
// goroutines (<= 0: one).
func Encode(dst []byte, c *Code, words []byte, groupLog2 int, threads int) ([]byte, error) {
	ws := c.Kind.WordSize()
	if len(words)%ws != 0 || len(words) == 0 {
		return dst, fmt.Errorf("tensor: %d bytes is not a whole, nonzero number of %d-byte values", len(words), ws)
	}
	if groupLog2 < MinGroupLog2 || groupLog2 > MaxGroupLog2 {
		return dst, fmt.Errorf("tensor: group size 2^%d out of range", groupLog2)
	}
	values := len(words) / ws
	G := 1 << groupLog2
	ng := (values + G - 1) / G
	var symOf []uint16 // V16: word -> symbol
	if c.Kind == V16 {
		symOf = make([]uint16, 1<<16)
		for i := range symOf {
			symOf[i] = 0xffff
		}
		for s, w := range c.Dict {
			symOf[w] = uint16(s)
		}
	}
	rs := c.Kind.RawSize()
	base := len(dst)
	head := 8*ng - 4 // ends of all groups but the last, then every CRC
	dst = append(dst, make([]byte, head+values*rs)...)
	ends := dst[base : base+4*(ng-1)]
	crcs := dst[base+4*(ng-1) : base+head]
	raw := dst[base+head:]
	// Raw plane and CRCs.
	for g := range ng {
		gw := words[g*G*ws : min(values, (g+1)*G)*ws]
		binary.LittleEndian.PutUint32(crcs[4*g:], checksum(gw))
	}
	switch c.Kind {
	case BF16, F16:
		for i := range values {
			_, raw[i] = split16(c.Kind, binary.LittleEndian.Uint16(words[2*i:]))
		}
	case F32:
		for i := range values {
			_, r := split32(binary.LittleEndian.Uint32(words[4*i:]))
			raw[3*i], raw[3*i+1], raw[3*i+2] = byte(r), byte(r>>8), byte(r>>16)
		}
	}
	// Streams, in parallel chunks of groups.
	threads = max(1, min(threads, (ng+15)/16))
	streams := make([][]byte, threads)
	groupEnds := make([]int, ng) // within each chunk's stream
	var bad error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for t := range threads {
		g0, g1 := t*ng/threads, (t+1)*ng/threads
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := bitWriter{out: make([]byte, 0, (g1-g0)*G*ws/2)}
			for g := g0; g < g1; g++ {
				for i := g * G; i < min(values, (g+1)*G); i++ {
					var s int
					switch c.Kind {
					case F32:
						s, _ = split32(binary.LittleEndian.Uint32(words[4*i:]))
					case V16:
						s = int(symOf[binary.LittleEndian.Uint16(words[2*i:])])
					case B8:
						s = int(words[i])
					default:
						s, _ = split16(c.Kind, binary.LittleEndian.Uint16(words[2*i:]))
					}
					if s >= len(c.Lens) || c.Lens[s] == 0 {
						mu.Lock()
						bad = errors.New("tensor: value whose symbol the code lacks")
						mu.Unlock()
						return
					}
					if l := c.Lens[s]; l != soleLen {
						w.write(uint64(c.codes[s]), uint(l))
					}
				}
				w.flush()
				groupEnds[g] = len(w.out)
			}
			streams[t] = w.out
		}()
	}
	wg.Wait()
	if bad != nil {
		return dst[:base], bad
	}
	off := 0
	for t := range threads {
		g0, g1 := t*ng/threads, (t+1)*ng/threads
		for g := g0; g < g1; g++ {
			if uint64(off+groupEnds[g]) > 1<<32-1 {
				return dst[:base], errors.New("tensor: span too large (stream past 4 GiB)")
			}
			if g < ng-1 {
				binary.LittleEndian.PutUint32(ends[4*g:], uint32(off+groupEnds[g]))
			}
		}
		off += len(streams[t])
	}
	for _, s := range streams {
		dst = append(dst, s...)
	}
	return dst, nil
}
