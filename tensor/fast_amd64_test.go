//go:build amd64 && !noasm

package tensor

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/cpu"
)

// TestLaneStateLayout pins the field offsets fast_amd64.s uses.
func TestLaneStateLayout(t *testing.T) {
	var s laneState
	for _, c := range []struct {
		name string
		got  uintptr
		want uintptr
	}{
		{"iters", unsafe.Offsetof(s.iters), 0}, {"out", unsafe.Offsetof(s.out), 8}, {"lut", unsafe.Offsetof(s.lut), 16},
		{"mask", unsafe.Offsetof(s.mask), 48}, {"bp", unsafe.Offsetof(s.bp), 80}, {"at", unsafe.Offsetof(s.at), 112},
	} {
		if c.got != c.want {
			t.Errorf("laneState.%s at %d, fast_amd64.s expects %d", c.name, c.got, c.want)
		}
	}
}

// TestGoLoops runs the round trips with the assembly switched off, so the
// Go loops are checked on amd64 too.
func TestGoLoops(t *testing.T) {
	useAsm = false
	defer func() { useAsm = haveAsm }()
	TestRoundTripKinds(t)
	TestSpecialValues(t)
}

// TestCombineSIMD checks the AVX2 and SSE loops against the Go loop on
// every length up to a few vectors (the tails go to the narrower loops).
func TestCombineSIMD(t *testing.T) {
	defer func() { useAVX2 = haveAsm && cpu.X86.HasAVX2 }()
	for _, avx2 := range []bool{true, false} {
		useAVX2 = avx2 && haveAsm && cpu.X86.HasAVX2
		for _, k := range []Kind{BF16, F16} {
			for n := 0; n <= 70; n++ {
				syms, raw := make([]byte, n), make([]byte, n)
				for i := range n {
					syms[i], raw[i] = byte(i*37+n), byte(i*91+7)
				}
				got, want := make([]byte, 2*n), make([]byte, 2*n)
				combine16(got, syms, raw, k)
				combine16Go(want, syms, raw, k)
				if string(got) != string(want) {
					t.Fatalf("avx2=%v %v n=%d: % x, want % x", useAVX2, k, n, got, want)
				}
			}
		}
	}
}
