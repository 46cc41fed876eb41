package buflist

import "testing"

// The list hands back the smallest buffer that fits, allocates when none
// does, and keeps no more than its bound, dropping small buffers first.
func TestList(t *testing.T) {
	l := List{Max: 1 << 20}
	a, b := l.Get(100<<10), l.Get(500<<10)
	if cap(a) != 128<<10 || cap(b) != 512<<10 || len(a) != 100<<10 {
		t.Fatalf("new buffers of %d and %d bytes, want rounded to 64 KiB", cap(a), cap(b))
	}
	same := func(x, y []byte) bool { return &x[:1][0] == &y[:1][0] }
	l.Put(a)
	l.Put(b)
	if got := l.Get(90 << 10); !same(got, a) || len(got) != 90<<10 {
		t.Fatal("a 90 KiB need did not get the 128 KiB buffer")
	}
	if got := l.Get(90 << 10); !same(got, b) {
		t.Fatal("the next 90 KiB need did not get the 512 KiB buffer")
	}
	l.Put(a)
	l.Put(b)
	c := l.Get(700 << 10)
	if same(c, a) || same(c, b) || len(l.free) != 2 {
		t.Fatal("a need larger than every free buffer took one")
	}
	l.Put(c) // 128+512+704 KiB: over 1 MiB, the smallest go until it fits
	if l.bytes > l.Max || len(l.free) != 1 || !same(l.free[0], c) {
		t.Fatalf("kept %d bytes in %d buffers (bound %d), want the 704 KiB one alone", l.bytes, len(l.free), l.Max)
	}
	r := List{Max: 1 << 20, Round: 256 << 10}
	if d := r.Get(1); cap(d) != 256<<10 {
		t.Fatalf("Round 256 KiB: a new buffer of %d bytes", cap(d))
	}
}
