//go:build !amd64 || noasm

package tensor

import "unsafe"

// No assembly here: the Go loops decode everything.
const haveAsm = false

// useAsm mirrors the amd64 switch for tests; there is nothing to switch.
var useAsm = false

// AsmDecoder reports whether the assembly decode loop is in use.
func AsmDecoder() bool { return false }

func (d *Decoder) asmPair(bpa, bpb *uint, ia, ib *int, op unsafe.Pointer, n int) bool {
	return false
}

func combine16(out, syms, raw []byte, k Kind) { combine16Go(out, syms, raw, k) }
