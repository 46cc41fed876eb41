// Package fp8 converts to the 8-bit floating-point formats safetensors
// files carry, for benchmarks and tests that make fp8 weights out of wider
// ones (the corpus has none).
package fp8

import "math"

// E4M3 rounds v to the nearest F8_E4M3 value (sign, 4 exponent bits with
// bias 7, 3 mantissa bits, no infinities), ties to even, saturating at
// ±448; NaN becomes 0x7f.
func E4M3(v float64) byte {
	var sign byte
	if math.Signbit(v) {
		sign, v = 0x80, -v
	}
	switch {
	case math.IsNaN(v):
		return 0x7f
	case v >= 448:
		return sign | 0x7e
	case v < 1.0/64: // below the smallest normal, 2^-6: steps of 2^-9
		return sign | byte(math.RoundToEven(v*512)) // 8 rounds up to the smallest normal, 0x08
	}
	frac, exp := math.Frexp(v) // v = frac · 2^exp, frac in [0.5, 1)
	m := math.RoundToEven((frac*2 - 1) * 8)
	e := exp - 1 + 7
	if m == 8 {
		m, e = 0, e+1
	}
	if e > 15 || e == 15 && m == 7 {
		return sign | 0x7e
	}
	return sign | byte(e)<<3 | byte(m)
}

// E4M3Value is the value of an F8_E4M3 byte (NaN for 0x7f and 0xff).
func E4M3Value(b byte) float64 {
	e, m := int(b>>3&15), float64(b&7)
	var v float64
	switch {
	case b&0x7f == 0x7f:
		return math.NaN()
	case e == 0:
		v = m / 8 * math.Ldexp(1, -6)
	default:
		v = (1 + m/8) * math.Ldexp(1, e-7)
	}
	if b&0x80 != 0 {
		v = -v
	}
	return v
}
