package packed

import "testing"

// The free list hands back the smallest buffer that fits, allocates when
// none does, and keeps no more than its bound, dropping small buffers
// first.
func TestBufList(t *testing.T) {
	l := bufList{max: 1 << 20}
	a, b := l.get(100<<10), l.get(500<<10)
	if cap(*a) != 128<<10 || cap(*b) != 512<<10 {
		t.Fatalf("new buffers of %d and %d bytes, want rounded to 64 KiB", cap(*a), cap(*b))
	}
	l.put(a)
	l.put(b)
	if got := l.get(90 << 10); got != a {
		t.Fatal("a 90 KiB need did not get the 128 KiB buffer")
	}
	if got := l.get(90 << 10); got != b {
		t.Fatal("the next 90 KiB need did not get the 512 KiB buffer")
	}
	l.put(a)
	l.put(b)
	c := l.get(700 << 10)
	if c == a || c == b || len(l.free) != 2 {
		t.Fatal("a need larger than every free buffer took one")
	}
	l.put(c) // 128+512+704 KiB: over 1 MiB, the smallest go until it fits
	if l.bytes > l.max || len(l.free) != 1 || l.free[0] != c {
		t.Fatalf("kept %d bytes in %d buffers (bound %d), want the 704 KiB one alone", l.bytes, len(l.free), l.max)
	}
}
