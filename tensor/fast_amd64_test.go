//go:build amd64 && !noasm

package tensor

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/cpu"
)

// TestPairStateLayout pins the field offsets fast_amd64.s uses.
func TestPairStateLayout(t *testing.T) {
	var s pairState
	for _, c := range []struct {
		name string
		got  uintptr
		want uintptr
	}{
		{"lut", unsafe.Offsetof(s.lut), 0}, {"src", unsafe.Offsetof(s.src), 8}, {"out", unsafe.Offsetof(s.out), 16},
		{"lim", unsafe.Offsetof(s.lim), 24}, {"n", unsafe.Offsetof(s.n), 32}, {"bpa", unsafe.Offsetof(s.bpa), 40},
		{"bpb", unsafe.Offsetof(s.bpb), 48}, {"ia", unsafe.Offsetof(s.ia), 56}, {"ib", unsafe.Offsetof(s.ib), 64},
	} {
		if c.got != c.want {
			t.Errorf("pairState.%s at %d, fast_amd64.s expects %d", c.name, c.got, c.want)
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
