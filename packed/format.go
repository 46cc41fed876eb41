// Package packed is glyd's packed form of a safetensors file: the header
// and every tensor kept byte for byte, floating-point tensors coded by
// package tensor (exponents with a grouped canonical Huffman code a GPU can
// decode, sign and mantissa raw) and everything else by the codec's tiers.
// docs/tensors.md specifies the bytes; Encode writes them, Open reads them
// and gives back the original file.
package packed

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/glyd/glyd/tensor"
)

// Version is the packed format version this package writes.
const Version = 1

// Magic starts every packed file.
var Magic = [4]byte{'G', 'L', 'Y', 'T'}

// HeaderSize is the fixed header at the start of a packed file.
const HeaderSize = 40

// Flags in the file header.
const (
	flagBase = 1 << 0 // coded against a base file
)

// Span kinds in the directory. The tensor.Kind values (1-4, 6) are coded
// spans.
const (
	spanStored = 0 // bytes kept in the meta section
	spanCopy   = 5 // bytes equal to a range of the base file's data section
)

// Span flags (coded spans).
const (
	spanXOR = 1 << 0 // the decoded (or stored) bytes are XORed with a range of the base
)

// Header codings in the directory.
const (
	headerVerbatim = 0
	headerElided   = 1 // data_offsets written as [] where they follow from the sizes
	headerFieldsC  = 2 // stored as columns (names, dtypes, shapes), written back as compact JSON
)

// maxMetaChunk is the decoded size of one meta chunk frame.
const maxMetaChunk = 4 << 20

// ErrFormat is wrapped by every error about a damaged, truncated or foreign
// packed file.
var ErrFormat = errors.New("bad packed file")

type formatError struct{ msg string }

func (e *formatError) Error() string { return "packed: " + e.msg }
func (e *formatError) Unwrap() error { return ErrFormat }

func formatErrorf(format string, args ...any) error {
	return &formatError{fmt.Sprintf(format, args...)}
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func checksum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// fileHeader is the fixed 40-byte header.
type fileHeader struct {
	flags     uint8
	groupLog2 uint8
	metaLen   uint64
	payLen    uint64
	origSize  uint64
	baseTag   uint32
}

func (h fileHeader) append(b []byte) []byte {
	start := len(b)
	b = append(b, Magic[:]...)
	b = append(b, Version, h.flags, h.groupLog2, 0)
	b = binary.LittleEndian.AppendUint64(b, h.metaLen)
	b = binary.LittleEndian.AppendUint64(b, h.payLen)
	b = binary.LittleEndian.AppendUint64(b, h.origSize)
	b = binary.LittleEndian.AppendUint32(b, h.baseTag)
	return binary.LittleEndian.AppendUint32(b, checksum(b[start:]))
}

// IsPacked reports whether b starts like a packed file.
func IsPacked(b []byte) bool { return len(b) >= 4 && [4]byte(b[:4]) == Magic }

// OriginalSize reads the size of the original safetensors file from a
// packed file's first HeaderSize bytes.
func OriginalSize(head []byte) (int64, error) {
	h, err := parseFileHeader(head)
	if err != nil {
		return 0, err
	}
	if h.origSize > 1<<62 {
		return 0, formatErrorf("original size %d", h.origSize)
	}
	return int64(h.origSize), nil
}

func parseFileHeader(b []byte) (fileHeader, error) {
	var h fileHeader
	if len(b) < HeaderSize || !IsPacked(b) {
		if len(b) >= 4 && !IsPacked(b) {
			return h, formatErrorf("not a packed safetensors file (no GLYT magic)")
		}
		return h, formatErrorf("file of %d bytes too short for a packed header", len(b))
	}
	if checksum(b[:36]) != binary.LittleEndian.Uint32(b[36:]) {
		return h, formatErrorf("header checksum mismatch")
	}
	if b[4] != Version {
		if b[4] > Version {
			return h, formatErrorf("packed format version %d is newer than this glyd's %d: upgrade glyd", b[4], Version)
		}
		return h, formatErrorf("unknown packed format version %d", b[4])
	}
	h.flags, h.groupLog2 = b[5], b[6]
	if h.flags&^flagBase != 0 || b[7] != 0 {
		return h, formatErrorf("unknown header flags")
	}
	if h.groupLog2 < tensor.MinGroupLog2 || h.groupLog2 > tensor.MaxGroupLog2 {
		return h, formatErrorf("group size 2^%d out of range", h.groupLog2)
	}
	h.metaLen = binary.LittleEndian.Uint64(b[8:])
	h.payLen = binary.LittleEndian.Uint64(b[16:])
	h.origSize = binary.LittleEndian.Uint64(b[24:])
	h.baseTag = binary.LittleEndian.Uint32(b[32:])
	if h.flags&flagBase == 0 && h.baseTag != 0 {
		return h, formatErrorf("base tag without the base flag")
	}
	return h, nil
}

// payloadStart is where the payload section begins: after the header and
// the meta section, rounded up to 8 bytes.
func (h fileHeader) payloadStart() uint64 { return (HeaderSize + h.metaLen + 7) &^ 7 }

// span is one entry of the directory: a byte range of the data section and
// how it is stored.
type span struct {
	kind    uint8 // spanStored, a tensor.Kind, or spanCopy
	length  int64 // bytes of the data section
	flags   uint8 // coded spans: spanXOR (the kind byte's high nibble)
	baseOff int64 // spanCopy, or spanXOR: offset in the base's data section
	code    *tensor.Code
	payLen  int64 // coded spans: payload bytes

	// Filled when reading or writing.
	begin   int64  // offset in the data section
	payOff  int64  // coded spans: payload offset within the payload section
	metaOff int64  // stored spans: offset within the stored area
	payload []byte // coded spans (when encoding)
}

func (s *span) coded() bool { return tensor.Kind(s.kind).Valid() }

// directory is the decoded start of the meta section.
type directory struct {
	headerLen    int64 // N, the safetensors header length
	headerCoding uint64
	skeletonLen  int64
	dataLen      int64
	spans        []span
	order        []int // headerElided: data order of the header's tensors (nil: header order)
}

func (d *directory) append(b []byte) []byte {
	b = binary.AppendUvarint(b, uint64(d.headerLen))
	b = binary.AppendUvarint(b, d.headerCoding)
	b = binary.AppendUvarint(b, uint64(d.skeletonLen))
	b = binary.AppendUvarint(b, uint64(d.dataLen))
	if d.headerCoding != headerVerbatim {
		if d.order == nil {
			b = binary.AppendUvarint(b, 0)
		} else {
			b = binary.AppendUvarint(b, uint64(len(d.order)))
			for _, i := range d.order {
				b = binary.AppendUvarint(b, uint64(i))
			}
		}
	}
	b = binary.AppendUvarint(b, uint64(len(d.spans)))
	for i := range d.spans {
		s := &d.spans[i]
		b = append(b, s.kind|s.flags<<4)
		b = binary.AppendUvarint(b, uint64(s.length))
		switch {
		case s.kind == spanCopy, s.kind == spanStored && s.flags&spanXOR != 0:
			b = binary.AppendUvarint(b, uint64(s.baseOff))
		case s.coded():
			if s.flags&spanXOR != 0 {
				b = binary.AppendUvarint(b, uint64(s.baseOff))
			}
			b = s.code.AppendTable(b)
			b = binary.AppendUvarint(b, uint64(s.payLen))
		}
	}
	return b
}

// reader reads varints from the meta section, remembering the first error.
type reader struct {
	b   []byte
	pos int
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = formatErrorf("directory: "+format, args...)
	}
}

func (r *reader) uvarint(what string, limit uint64) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b[r.pos:])
	if n <= 0 {
		r.fail("truncated or bad %s", what)
		return 0
	}
	if v > limit {
		r.fail("%s %d out of range", what, v)
		return 0
	}
	r.pos += n
	return v
}

func (r *reader) byte(what string) uint8 {
	if r.err != nil {
		return 0
	}
	if r.pos >= len(r.b) {
		r.fail("truncated %s", what)
		return 0
	}
	r.pos++
	return r.b[r.pos-1]
}

const maxLen = 1 << 62

func parseDirectory(meta []byte) (*directory, int, error) {
	r := &reader{b: meta}
	d := &directory{}
	var slab tensor.CodeSlab // the spans' code tables, a few allocations for all
	d.headerLen = int64(r.uvarint("header length", 100<<20))
	d.headerCoding = r.uvarint("header coding", headerFieldsC)
	d.skeletonLen = int64(r.uvarint("skeleton length", 100<<20))
	d.dataLen = int64(r.uvarint("data length", maxLen))
	if d.headerCoding != headerVerbatim {
		n := r.uvarint("tensor count", uint64(len(meta)))
		if n > 0 {
			d.order = make([]int, n)
			seen := make([]bool, n)
			for i := range d.order {
				v := r.uvarint("tensor order", n-1)
				if r.err == nil && seen[v] {
					r.fail("tensor order repeats %d", v)
				}
				if r.err != nil {
					return nil, 0, r.err
				}
				seen[v] = true
				d.order[i] = int(v)
			}
		}
	} else if r.err == nil && d.skeletonLen != d.headerLen {
		r.fail("verbatim header of %d bytes stored as %d", d.headerLen, d.skeletonLen)
	}
	ns := r.uvarint("span count", uint64(len(meta)))
	if r.err != nil {
		return nil, 0, r.err
	}
	d.spans = make([]span, 0, min(ns, 1<<16))
	var begin, payOff, metaOff int64
	for range ns {
		s := span{begin: begin}
		kf := r.byte("span kind")
		s.kind, s.flags = kf&15, kf>>4
		if s.flags != 0 && !s.coded() && s.kind != spanStored || s.flags&^spanXOR != 0 {
			r.fail("bad span kind byte %#x", kf)
		}
		s.length = int64(r.uvarint("span length", maxLen))
		if r.err == nil && s.length == 0 {
			r.fail("empty span")
		}
		switch {
		case s.kind == spanStored:
			s.metaOff = metaOff
			metaOff += s.length
			if s.flags&spanXOR != 0 {
				s.baseOff = int64(r.uvarint("base offset", maxLen))
			}
		case s.kind == spanCopy:
			s.baseOff = int64(r.uvarint("base offset", maxLen))
		case s.coded():
			if s.flags&spanXOR != 0 {
				s.baseOff = int64(r.uvarint("base offset", maxLen))
			}
			if r.err != nil {
				return nil, 0, r.err
			}
			k := tensor.Kind(s.kind)
			if s.length%int64(k.WordSize()) != 0 {
				r.fail("%v span of %d bytes is not whole values", k, s.length)
				return nil, 0, r.err
			}
			c, n, err := slab.ParseTable(k, r.b[r.pos:])
			if err != nil {
				return nil, 0, formatErrorf("directory: span %d: %v", len(d.spans), err)
			}
			r.pos += n
			s.code = c
			s.payLen = int64(r.uvarint("payload length", maxLen))
			s.payOff = payOff
			payOff += s.payLen
		default:
			r.fail("unknown span kind %d", s.kind)
		}
		if r.err != nil {
			return nil, 0, r.err
		}
		begin += s.length
		if begin > d.dataLen {
			return nil, 0, formatErrorf("directory: spans cover more than the %d-byte data section", d.dataLen)
		}
		d.spans = append(d.spans, s)
	}
	if begin != d.dataLen {
		return nil, 0, formatErrorf("directory: spans cover %d of the %d-byte data section", begin, d.dataLen)
	}
	return d, r.pos, nil
}
