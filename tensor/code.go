// Package tensor codes arrays of floating-point numbers losslessly in a
// layout a GPU can decode: each value is split into a symbol (its exponent,
// or the whole value) coded with a length-limited canonical Huffman code,
// and raw bits (sign and mantissa) kept as a plain byte plane. Values are
// cut into groups of 2^k; every group's bit stream starts at an offset the
// payload records, so any group decodes without the ones before it (one GPU
// thread per group), and every group carries the CRC-32C of its decoded
// bytes. docs/tensors.md specifies the bytes.
package tensor

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Kind says how the values of a span are split into symbol and raw bits.
type Kind uint8

// Span kinds (docs/tensors.md, "kinds").
const (
	// BF16: symbol = the 8 exponent bits; raw byte = sign and 7 mantissa bits.
	BF16 Kind = 1
	// F16: symbol = the high byte (sign, 5 exponent bits, 2 mantissa
	// bits); raw byte = the low 8 mantissa bits.
	F16 Kind = 2
	// F32: symbol = the 8 exponent bits; 3 raw bytes = the 23 mantissa
	// bits and the sign in bit 23.
	F32 Kind = 3
	// V16: 16-bit words coded whole through a dictionary of the words that
	// occur; no raw bits.
	V16 Kind = 4
	// B8: 8-bit values (fp8: F8_E4M3, F8_E5M2) coded whole: symbol = the
	// byte; no raw bits. Sign, exponent and the 2-3 mantissa bits are too
	// few to split: the whole byte's distribution is what a code can use.
	// (5 is no kind: packed files number their copy spans 5.)
	B8 Kind = 6
)

func (k Kind) String() string {
	switch k {
	case BF16:
		return "bf16"
	case F16:
		return "f16"
	case F32:
		return "f32"
	case V16:
		return "v16"
	case B8:
		return "b8"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Valid reports whether k is a kind this version knows.
func (k Kind) Valid() bool { return k >= BF16 && k <= V16 || k == B8 }

// WordSize is the bytes per value.
func (k Kind) WordSize() int {
	switch k {
	case F32:
		return 4
	case B8:
		return 1
	}
	return 2
}

// RawSize is the raw-plane bytes per value.
func (k Kind) RawSize() int {
	switch k {
	case BF16, F16:
		return 1
	case F32:
		return 3
	}
	return 0
}

// ErrCorrupt is wrapped by every error about a damaged payload or table.
var ErrCorrupt = errors.New("corrupt tensor data")

type corruptError struct{ msg string }

func (e *corruptError) Error() string { return "tensor: " + e.msg }
func (e *corruptError) Unwrap() error { return ErrCorrupt }

func corruptf(format string, args ...any) error {
	return &corruptError{fmt.Sprintf(format, args...)}
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func checksum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// Code is a canonical Huffman code for one span's symbols.
type Code struct {
	Kind Kind
	// Lens is each symbol's code length: 0 for a symbol that does not
	// occur, 1..MaxCodeLen, or 15 for the only symbol of a one-symbol
	// alphabet (a code of no bits). Split kinds have 256 symbols (the
	// symbol is a byte of the value), B8 256 (the value); V16 one per
	// dictionary word.
	Lens []uint8
	// Dict is, for V16, the word each symbol stands for, in ascending order.
	Dict []uint16

	codes []uint16 // bit-reversed codes, for the encoder
}

// MaxLen is the longest code length in use (0 for a zero-bit code).
func (c *Code) MaxLen() int {
	m := 0
	for _, l := range c.Lens {
		if l != soleLen && int(l) > m {
			m = int(l)
		}
	}
	return m
}

// NewCode builds the optimal length-limited code for the symbol frequencies
// freq (256 entries for split kinds and B8; one per dict word for V16).
func NewCode(kind Kind, freq []uint64, dict []uint16) (*Code, error) {
	return NewCodeLimit(kind, freq, dict, MaxCodeLen)
}

// NewCodeLimit is NewCode with codes of at most maxLen bits (at most
// MaxCodeLen; raised to what the alphabet needs). Shorter codes make
// smaller decoding tables, quicker to build: worth a little size in a
// small span.
func NewCodeLimit(kind Kind, freq []uint64, dict []uint16, maxLen int) (*Code, error) {
	if !kind.Valid() {
		return nil, fmt.Errorf("tensor: unknown kind %d", kind)
	}
	if kind == V16 {
		if len(dict) != len(freq) || len(dict) == 0 || len(dict) > MaxSymbols {
			return nil, fmt.Errorf("tensor: V16 needs 1 to %d dictionary words with a frequency each", MaxSymbols)
		}
		for i := 1; i < len(dict); i++ {
			if dict[i] <= dict[i-1] {
				return nil, errors.New("tensor: V16 dictionary not strictly ascending")
			}
		}
		for _, f := range freq {
			if f == 0 {
				return nil, errors.New("tensor: V16 dictionary word that never occurs")
			}
		}
	} else if len(freq) != 256 {
		return nil, errors.New("tensor: split kinds need 256 frequencies")
	}
	used := false
	for _, f := range freq {
		used = used || f > 0
	}
	if !used {
		return nil, errors.New("tensor: no symbols to code")
	}
	n := 0
	for _, f := range freq {
		if f > 0 {
			n++
		}
	}
	maxLen = min(maxLen, MaxCodeLen)
	for maxLen < MaxCodeLen && 1<<maxLen < n {
		maxLen++
	}
	c := &Code{Kind: kind, Lens: codeLengths(freq, maxLen), Dict: dict}
	var ok bool
	if c.codes, ok = canonical(c.Lens); !ok {
		return nil, errors.New("tensor: internal error: code lengths not canonical")
	}
	return c, nil
}

// Bits is the size in bits of coding symbols with frequencies freq with
// this code, raw planes included (freq as for NewCode; symbols the code
// lacks make it return -1).
func (c *Code) Bits(freq []uint64) int64 {
	var n, b int64
	for s, f := range freq {
		if f == 0 {
			continue
		}
		if s >= len(c.Lens) || c.Lens[s] == 0 {
			return -1
		}
		n += int64(f)
		if l := c.Lens[s]; l != soleLen {
			b += int64(f) * int64(l)
		}
	}
	return b + n*int64(8*c.Kind.RawSize())
}

// AppendTable appends the code's table as docs/tensors.md specifies it.
func (c *Code) AppendTable(dst []byte) []byte {
	lens := c.Lens
	if c.Kind == V16 {
		dst = binary.AppendUvarint(dst, uint64(len(c.Dict)))
		prev := -1
		for _, w := range c.Dict {
			dst = binary.AppendUvarint(dst, uint64(int(w)-prev-1))
			prev = int(w)
		}
	} else {
		lo, hi := 0, len(lens)-1
		for lo < hi && lens[lo] == 0 {
			lo++
		}
		for hi > lo && lens[hi] == 0 {
			hi--
		}
		dst = append(dst, byte(lo), byte(hi-lo))
		lens = lens[lo : hi+1]
	}
	// Lengths are written as differences from the previous one (mod 16),
	// two to a byte: neighbouring symbols have similar lengths, so the
	// bytes repeat and the meta section's coder squeezes them.
	prev := uint8(0)
	for i := 0; i < len(lens); i += 2 {
		b := (lens[i] - prev) & 15
		prev = lens[i]
		if i+1 < len(lens) {
			b |= ((lens[i+1] - prev) & 15) << 4
			prev = lens[i+1]
		}
		dst = append(dst, b)
	}
	return dst
}

// splitTables holds a split kind's code, its lengths and its codes.
type splitTables struct {
	code  Code
	lens  [256]uint8
	codes [256]uint16
}

// A CodeSlab hands out the storage of many split codes, a few dozen to an
// allocation: a small model's directory has hundreds of spans, each with
// its table. The zero value is ready to use; codes it parsed stay valid
// as long as they are referenced.
type CodeSlab struct {
	free []splitTables
}

func (s *CodeSlab) get() *splitTables {
	if len(s.free) == 0 {
		s.free = make([]splitTables, 32)
	}
	t := &s.free[0]
	s.free = s.free[1:]
	return t
}

// ParseTable reads a table written by AppendTable and returns the code and
// the bytes it took.
func ParseTable(kind Kind, b []byte) (*Code, int, error) {
	s := CodeSlab{free: make([]splitTables, 1)} // storage for this one code
	return s.ParseTable(kind, b)
}

// ParseTable is the package's ParseTable, a split code's storage taken
// from the slab.
func (sl *CodeSlab) ParseTable(kind Kind, b []byte) (*Code, int, error) {
	if !kind.Valid() {
		return nil, 0, corruptf("unknown span kind %d", kind)
	}
	var split *splitTables
	var c *Code
	if kind == V16 {
		c = &Code{Kind: kind}
	} else {
		split = sl.get()
		c = &split.code
		c.Kind = kind
	}
	pos := 0
	var nl int
	lo := 0
	if kind == V16 {
		k, n := binary.Uvarint(b)
		if n <= 0 || k == 0 || k > MaxSymbols {
			return nil, 0, corruptf("bad V16 dictionary size")
		}
		pos = n
		c.Dict = make([]uint16, k)
		prev := -1
		for i := range c.Dict {
			d, n := binary.Uvarint(b[pos:])
			if n <= 0 || d > 0xffff || prev+1+int(d) > 0xffff {
				return nil, 0, corruptf("bad V16 dictionary word")
			}
			pos += n
			prev += 1 + int(d)
			c.Dict[i] = uint16(prev)
		}
		nl = int(k)
	} else {
		if len(b) < 2 {
			return nil, 0, corruptf("code table truncated")
		}
		lo, nl = int(b[0]), int(b[1])+1
		if lo+nl > 256 {
			return nil, 0, corruptf("code table covers symbols %d to %d, past 255", lo, lo+nl-1)
		}
		pos = 2
	}
	nb := (nl + 1) / 2
	if len(b)-pos < nb {
		return nil, 0, corruptf("code table truncated")
	}
	// A split kind's lengths and codes share one allocation (a decoder is
	// made per span, and small models have hundreds).
	var lens []uint8
	if kind == V16 {
		lens = make([]uint8, nl)
	} else {
		lens = split.lens[lo : lo+nl]
	}
	prev := uint8(0)
	for i := range lens {
		v := b[pos+i/2]
		if i%2 == 1 {
			v >>= 4
		}
		lens[i] = (prev + v) & 15
		prev = lens[i]
	}
	if nl%2 == 1 && b[pos+nb-1]>>4 != 0 {
		return nil, 0, corruptf("code table padding not zero")
	}
	pos += nb
	if kind == V16 {
		c.Lens = lens
		for _, l := range lens {
			if l == 0 {
				return nil, 0, corruptf("V16 dictionary word without a code")
			}
		}
	} else {
		c.Lens = split.lens[:]
		if lens[0] == 0 || lens[nl-1] == 0 {
			return nil, 0, corruptf("code table not trimmed")
		}
	}
	var codes []uint16
	if split != nil {
		codes = split.codes[:]
	}
	var ok bool
	if c.codes, ok = canonicalInto(codes, c.Lens, lo, lo+nl); !ok {
		return nil, 0, corruptf("code lengths do not form a complete prefix code")
	}
	return c, pos, nil
}
