package safetensors

import "math/bits"

// Dtype is a safetensors element type, as the header spells it ("BF16").
type Dtype string

// The element types the safetensors format defines.
const (
	BOOL    Dtype = "BOOL"
	F4      Dtype = "F4"
	F6E2M3  Dtype = "F6_E2M3"
	F6E3M2  Dtype = "F6_E3M2"
	U8      Dtype = "U8"
	I8      Dtype = "I8"
	F8E5M2  Dtype = "F8_E5M2"
	F8E4M3  Dtype = "F8_E4M3"
	F8E8M0  Dtype = "F8_E8M0"
	I16     Dtype = "I16"
	U16     Dtype = "U16"
	F16     Dtype = "F16"
	BF16    Dtype = "BF16"
	I32     Dtype = "I32"
	U32     Dtype = "U32"
	F32     Dtype = "F32"
	C64     Dtype = "C64"
	F64     Dtype = "F64"
	I64     Dtype = "I64"
	U64     Dtype = "U64"
	unknown Dtype = ""
)

// dtypeBits is the size of one element in bits; a dtype missing here is
// unknown.
var dtypeBits = map[Dtype]uint64{
	BOOL: 8, F4: 4, F6E2M3: 6, F6E3M2: 6, U8: 8, I8: 8, F8E5M2: 8, F8E4M3: 8, F8E8M0: 8,
	I16: 16, U16: 16, F16: 16, BF16: 16, I32: 32, U32: 32, F32: 32, C64: 64, F64: 64, I64: 64, U64: 64,
}

// Known reports whether d is a dtype this package understands.
func (d Dtype) Known() bool { _, ok := dtypeBits[d]; return ok }

// Bits is the size of one element in bits (4 and 6 for the packed
// sub-byte float types), 0 for an unknown dtype.
func (d Dtype) Bits() int { return int(dtypeBits[d]) }

// IsFloat reports whether d is a floating-point type.
func (d Dtype) IsFloat() bool {
	switch d {
	case F4, F6E2M3, F6E3M2, F8E5M2, F8E4M3, F8E8M0, F16, BF16, F32, F64:
		return true
	}
	return false
}

// byteSize returns the bytes that numel elements of d occupy, and false when
// that overflows or is not a whole number of bytes.
func byteSize(d Dtype, numel uint64) (uint64, bool) {
	hi, lo := bits.Mul64(numel, dtypeBits[d])
	if hi != 0 || lo%8 != 0 {
		return 0, false
	}
	return lo / 8, true
}

// ShapeBytes is the size in bytes of a tensor of dtype d and the given
// shape, and false when that overflows or is not whole bytes.
func ShapeBytes(d Dtype, shape []int64) (int64, bool) {
	numel := uint64(1)
	for _, x := range shape {
		if x < 0 {
			return 0, false
		}
		hi, lo := bits.Mul64(numel, uint64(x))
		if hi != 0 || lo > 1<<62 {
			return 0, false
		}
		numel = lo
	}
	n, ok := byteSize(d, numel)
	return int64(n), ok && n <= 1<<62
}

// DtypeOf returns the Dtype spelled b, without allocating for the
// known ones.
func DtypeOf(b []byte) Dtype {
	switch string(b) {
	case "BF16":
		return BF16
	case "F16":
		return F16
	case "F32":
		return F32
	case "I32":
		return I32
	case "I64":
		return I64
	case "U8":
		return U8
	case "I8":
		return I8
	case "BOOL":
		return BOOL
	}
	return Dtype(b)
}
