package fp8

import (
	"math"
	"testing"
)

// Every finite byte converts back to itself, and values between two
// neighbours round to the nearer one (ties to the even mantissa).
func TestE4M3(t *testing.T) {
	for b := range 256 {
		v := E4M3Value(byte(b))
		if math.IsNaN(v) {
			if got := E4M3(v); got&0x7f != 0x7f {
				t.Errorf("NaN -> %#x", got)
			}
			continue
		}
		if got := E4M3(v); got != byte(b) && !(v == 0 && got&0x7f == 0) {
			t.Errorf("%#x (%g) -> %#x", b, v, got)
		}
	}
	for b := byte(0); b < 0x7e; b++ {
		lo, hi := E4M3Value(b), E4M3Value(b+1)
		mid := (lo + hi) / 2
		if got := E4M3(lo + (mid-lo)/2); got != b {
			t.Errorf("just above %g: %#x, want %#x", lo, got, b)
		}
		if got := E4M3(hi - (hi-mid)/2); got != b+1 {
			t.Errorf("just below %g: %#x, want %#x", hi, got, b+1)
		}
		want := b
		if b&1 != 0 {
			want = b + 1
		}
		if got := E4M3(mid); got != want {
			t.Errorf("tie %g between %#x and %#x: %#x, want %#x", mid, b, b+1, got, want)
		}
	}
	for _, c := range []struct {
		v    float64
		want byte
	}{{448, 0x7e}, {1e9, 0x7e}, {-1e9, 0xfe}, {1, 0x38}, {-2, 0xc0}} {
		if got := E4M3(c.v); got != c.want {
			t.Errorf("E4M3(%g) = %#x, want %#x", c.v, got, c.want)
		}
	}
}
