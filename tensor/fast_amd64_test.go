//go:build amd64 && !noasm

package tensor

import (
	"testing"
	"unsafe"
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
