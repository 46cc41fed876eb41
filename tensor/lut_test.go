package tensor

import (
	"testing"

	"github.com/glyd/glyd/internal/cputime"
)

func TestBuildLUTSpeed(t *testing.T) {
	if testing.Short() {
		t.Skip()
	}
	words := gaussian(BF16, 100000, 0.02, 1)
	c := codeFor(t, BF16, words)
	lut := make([]uint64, 4096)
	d, _ := cputime.Best(200, func() { buildLUT(lut, c, MaxCodeLen) })
	t.Logf("buildLUT: %v", d)
}

// buildLUTSlow is the straightforward construction (symbol by symbol for
// each entry), kept to check buildLUT against.
func buildLUTSlow(lut []uint64, c *Code, tb uint) {
	size := 1 << tb
	var oneBuf [1 << MaxCodeLen]uint32
	one := oneBuf[:size] // code length | lane value<<8
	width := uint(8)
	for s, l := range c.Lens {
		v, w := c.lane(s)
		width = w
		switch {
		case l == soleLen:
			for x := range one {
				one[x] = uint32(v) << 8
			}
		case l != 0:
			e := uint32(v)<<8 | uint32(l)
			for x := int(c.codes[s]); x < size; x += 1 << l {
				one[x] = e
			}
		}
	}
	maxSyms := uint(48 / width)
	if width == 8 {
		maxSyms = 5
	}
	for x := range size {
		e1 := one[x]
		l1 := uint(e1 & 0xff)
		lanes := uint64(e1 >> 8)
		n, cnt := l1, uint(1)
		rem, avail := uint(x)>>l1, tb-l1
		for cnt < maxSyms {
			e := one[rem]
			l := uint(e & 0xff)
			if l > avail {
				break
			}
			lanes |= uint64(e>>8) << (width * cnt)
			n, cnt = n+l, cnt+1
			rem, avail = rem>>l, avail-l
			if l == 0 {
				// A zero-bit code: fill every lane.
				for ; cnt < maxSyms; cnt++ {
					lanes |= uint64(e>>8) << (width * cnt)
				}
			}
		}
		lut[x] = makeEntry(c.Kind, n, cnt, l1, lanes)
	}
	for k := size; k < len(lut); k *= 2 {
		copy(lut[k:], lut[:k])
	}
}

func TestBuildLUTMatches(t *testing.T) {
	for _, k := range []Kind{BF16, F16, F32, V16, B8} {
		for _, n := range []int{3, 100, 5000, 100000} {
			if k == V16 && n > 5000 {
				continue
			}
			words := gaussian(k, n, 0.02, uint64(n))
			c := codeFor(t, k, words)
			for _, tb := range []uint{uint(max(1, c.MaxLen())), MaxCodeLen} {
				a, b := make([]uint64, 4096), make([]uint64, 4096)
				buildLUT(a, c, tb)
				buildLUTSlow(b, c, tb)
				for x := range a {
					if a[x] != b[x] {
						t.Fatalf("%v n=%d tb=%d: entry %d: %#x, want %#x", k, n, tb, x, a[x], b[x])
					}
				}
			}
		}
	}
}
