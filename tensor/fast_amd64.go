//go:build amd64 && !noasm

package tensor

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// The amd64 decoder: fast_amd64.s decodes two groups of 4096 values
// interleaved (BMI2 shifts keep the two bit buffers out of CX) and puts
// values together with SSE4.1; everything else runs the Go loops.
var haveAsm = cpu.X86.HasBMI2 && cpu.X86.HasSSE41

// useAsm can be cleared by tests to measure and check the Go loops.
var useAsm = haveAsm

// useAVX2 puts values together sixteen at a time; tests clear it to check
// the SSE loop.
var useAVX2 = haveAsm && cpu.X86.HasAVX2

// AsmDecoder reports whether the assembly decode loop is in use.
func AsmDecoder() bool { return useAsm }

// pairState is what decodePair4096 reads and updates; fast_amd64.s fixes
// the field offsets (TestPairStateLayout checks them).
type pairState struct {
	lut      unsafe.Pointer // 0: 4096 entries
	src      unsafe.Pointer // 8: the payload
	out      unsafe.Pointer // 16: group a's symbol bytes; group b's 4096 bytes on
	lim      uint           // 24: last bit position an 8-byte load may start at
	n        int            // 32: stop once a value index passes n
	bpa, bpb uint           // 40, 48: bit positions
	ia, ib   int            // 56, 64: values decoded
}

// decodePair4096 decodes the symbol bytes of two consecutive groups of 4096
// values until either is within loopMargin8 values of its end or of the
// payload's end.
//
//go:noescape
func decodePair4096(s *pairState)

// combineSSE builds n words (n a multiple of 8): each symbol byte shifted
// left by shift, ORed with its raw byte r placed as r&m1 | (r&m2)<<8.
//
//go:noescape
func combineSSE(out, syms, raw unsafe.Pointer, n int, shift, m1, m2 uint64)

// combineAVX2 is combineSSE for n a multiple of 16.
//
//go:noescape
func combineAVX2(out, syms, raw unsafe.Pointer, n int, shift, m1, m2 uint64)

// asmPair runs the assembly loop on a pair of groups when it applies
// (split kinds, groups of 4096), updating the positions; false: the Go
// loops must do it.
func (d *Decoder) asmPair(bpa, bpb *uint, ia, ib *int, op unsafe.Pointer, n int) bool {
	if !useAsm || d.groupLog2 != 12 || d.kind == V16 {
		return false
	}
	s := pairState{
		lut: unsafe.Pointer(unsafe.SliceData(d.lut)),
		src: unsafe.Pointer(unsafe.SliceData(d.payload)),
		out: op,
		lim: uint(len(d.payload)-8) * 8,
		n:   n - loopMargin8,
		bpa: *bpa,
		bpb: *bpb,
	}
	decodePair4096(&s)
	*bpa, *bpb, *ia, *ib = s.bpa, s.bpb, s.ia, s.ib
	return true
}

// combine16 builds BF16 or F16 words: AVX2 for multiples of 16, SSE for
// multiples of 8, Go for the rest.
func combine16(out, syms, raw []byte, k Kind) {
	n := len(syms) &^ 7
	if useAsm && n > 0 {
		shift, m1, m2 := uint64(7), uint64(0x007f007f007f007f), uint64(0x0080008000800080)
		if k == F16 {
			shift, m1, m2 = 8, 0x00ff00ff00ff00ff, 0
		}
		op := unsafe.Pointer(unsafe.SliceData(out))
		sp := unsafe.Pointer(unsafe.SliceData(syms))
		rp := unsafe.Pointer(unsafe.SliceData(raw))
		done := 0
		if n16 := n &^ 15; useAVX2 && n16 > 0 {
			combineAVX2(op, sp, rp, n16, shift, m1, m2)
			done = n16
		}
		if done < n {
			combineSSE(unsafe.Add(op, 2*done), unsafe.Add(sp, done), unsafe.Add(rp, done), n-done, shift, m1, m2)
		}
		combine16Go(out[2*n:], syms[n:], raw[n:], k)
		return
	}
	combine16Go(out, syms, raw, k)
}
