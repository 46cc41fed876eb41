// Package codec implements glyd's v7 container: a stream of independent
// units, each a run of blocks with its own coding and checksum, followed by a
// seek index, so that any byte range decodes without walking the stream and
// units encode and decode one per core. docs/format.md specifies the bytes.
package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Version is the container version this package writes.
const Version = 7

// Sizes of the fixed-size parts of the format.
const (
	headerSize      = 16
	unitHeaderSize  = 16
	blockHeaderSize = 16
	indexEntrySize  = 24
	indexHeadSize   = 16
	trailerSize     = 16

	// BlockSize is the largest block: the granule of the coding choice and of
	// the entropy stage's tables.
	BlockSize = 128 << 10
	// MaxUnitSize bounds a unit: the LZ window (23-bit offsets) spans a unit.
	MaxUnitSize = 8 << 20
	// MinUnitSize keeps the index small relative to the data.
	MinUnitSize = BlockSize
)

var (
	magic        = [4]byte{'G', 'L', 'Y', 'D'}
	trailerMagic = [4]byte{'G', 'L', 'Y', 'X'}
)

// Frame kinds: the first byte of every frame after the header.
const (
	frameUnit  = 'U'
	frameIndex = 'X'
)

// Coding identifies how one block is stored.
type Coding uint8

// Block codings. Ids 16-18 are reserved for the transforms later parts of
// glyd add (records, tensors, delta against a base); this version rejects
// them with a clear error.
const (
	CodingRaw      Coding = 0
	CodingLZ       Coding = 1 // LZ, wide offset layout (23-bit offsets)
	CodingLZNarrow Coding = 2 // LZ, narrow offset layout (16-bit offsets)
	CodingRecord   Coding = 16
	CodingTensor   Coding = 17
	CodingDelta    Coding = 18
)

func (c Coding) String() string {
	switch c {
	case CodingRaw:
		return "raw"
	case CodingLZ:
		return "lz"
	case CodingLZNarrow:
		return "lz16"
	case CodingRecord:
		return "records"
	case CodingTensor:
		return "tensor"
	case CodingDelta:
		return "delta"
	}
	return fmt.Sprintf("coding(%d)", uint8(c))
}

// Tier is the trade-off between ratio and speed an encoder aims for. Every
// tier writes the same container; a reader needs no option to read it.
type Tier uint8

const (
	// Default is the decode-first LZ tier: raw streams, greedy parse.
	Default Tier = 0
	// Max adds a Huffman stage per stream and a lazy hash-chain parse.
	Max Tier = 1
	// Cold is the archive tier: 8 MiB units, deep search, Huffman streams.
	Cold Tier = 2
)

func (t Tier) String() string {
	switch t {
	case Default:
		return "default"
	case Max:
		return "max"
	case Cold:
		return "cold"
	}
	return fmt.Sprintf("tier(%d)", uint8(t))
}

// ParseTier reads a tier name as String writes it.
func ParseTier(s string) (Tier, error) {
	for _, t := range []Tier{Default, Max, Cold} {
		if s == t.String() {
			return t, nil
		}
	}
	return 0, fmt.Errorf("unknown tier %q (want default, max or cold)", s)
}

// DefaultUnitSize is the unit size each tier uses unless told otherwise:
// docs/format.md records the measurements behind these choices.
func (t Tier) DefaultUnitSize() int {
	if t == Cold {
		return 8 << 20
	}
	return 1 << 20
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Checksum is the CRC-32C used throughout the format. The standard library
// computes it with SSE4.2/CLMUL instructions where the CPU has them.
func Checksum(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// ErrFormat is wrapped by every error about malformed, truncated, damaged
// or foreign input, so callers can tell bad data from I/O failures.
var ErrFormat = errors.New("glyd: bad input")

// FormatError says what is wrong with the input and where.
type FormatError struct {
	Unit   int   // unit index, -1 when not inside a unit
	Block  int   // block index within the unit, -1 when not inside a block
	Offset int64 // byte offset in the compressed stream, -1 when unknown
	Msg    string
}

func (e *FormatError) Error() string {
	where := ""
	if e.Unit >= 0 {
		where += fmt.Sprintf(" unit %d", e.Unit)
	}
	if e.Block >= 0 {
		where += fmt.Sprintf(" block %d", e.Block)
	}
	if e.Offset >= 0 {
		where += fmt.Sprintf(" at byte %d", e.Offset)
	}
	if where != "" {
		where = " (" + where[1:] + ")"
	}
	return "glyd: " + e.Msg + where
}

func (e *FormatError) Unwrap() error { return ErrFormat }

func formatErr(unit, block int, off int64, format string, args ...any) error {
	return &FormatError{Unit: unit, Block: block, Offset: off, Msg: fmt.Sprintf(format, args...)}
}

// header is the 16-byte start of every stream.
type header struct {
	tier     Tier
	unitLog2 uint8
	// needsBase marks a stream coded against a base file (glyd --base);
	// baseTag is the CRC-32C of that base, to refuse a wrong one.
	needsBase bool
	baseTag   uint32
}

const flagNeedsBase = 1

func (h header) append(b []byte) []byte {
	start := len(b)
	b = append(b, magic[:]...)
	var flags byte
	if h.needsBase {
		flags |= flagNeedsBase
	}
	b = append(b, Version, byte(h.tier), h.unitLog2, flags)
	b = binary.LittleEndian.AppendUint32(b, h.baseTag)
	return binary.LittleEndian.AppendUint32(b, Checksum(b[start:]))
}

func parseHeader(b []byte) (header, error) {
	if len(b) < headerSize {
		return header{}, formatErr(-1, -1, 0, "input too short for a glyd header (%d bytes)", len(b))
	}
	if [4]byte(b[:4]) != magic {
		return header{}, formatErr(-1, -1, 0, "not a glyd stream (magic %q)", b[:4])
	}
	if b[4] != Version {
		if b[4] > Version {
			return header{}, formatErr(-1, -1, 4, "stream is format version %d; this glyd reads version %d: upgrade glyd", b[4], Version)
		}
		return header{}, formatErr(-1, -1, 4, "unsupported format version %d", b[4])
	}
	if Checksum(b[:12]) != binary.LittleEndian.Uint32(b[12:16]) {
		return header{}, formatErr(-1, -1, 12, "header checksum mismatch")
	}
	if b[7]&^flagNeedsBase != 0 {
		return header{}, formatErr(-1, -1, 7, "unknown header flags %#x: written by a newer glyd", b[7])
	}
	return header{tier: Tier(b[5]), unitLog2: b[6], needsBase: b[7]&flagNeedsBase != 0, baseTag: binary.LittleEndian.Uint32(b[8:])}, nil
}

// unitHeader starts every unit frame.
type unitHeader struct {
	blocks  int
	rawLen  int
	compLen int // bytes of block headers and payloads after the unit header
}

func (u unitHeader) append(b []byte) []byte {
	start := len(b)
	b = append(b, frameUnit, byte(u.blocks), 0, 0)
	b = binary.LittleEndian.AppendUint32(b, uint32(u.rawLen))
	b = binary.LittleEndian.AppendUint32(b, uint32(u.compLen))
	return binary.LittleEndian.AppendUint32(b, Checksum(b[start:]))
}

func parseUnitHeader(b []byte, unit int, off int64) (unitHeader, error) {
	if Checksum(b[:12]) != binary.LittleEndian.Uint32(b[12:16]) {
		return unitHeader{}, formatErr(unit, -1, off, "unit header checksum mismatch")
	}
	u := unitHeader{
		blocks:  int(b[1]),
		rawLen:  int(binary.LittleEndian.Uint32(b[4:])),
		compLen: int(binary.LittleEndian.Uint32(b[8:])),
	}
	if u.rawLen > MaxUnitSize || u.blocks != (u.rawLen+BlockSize-1)/BlockSize {
		return unitHeader{}, formatErr(unit, -1, off, "unit of %d bytes in %d blocks is not valid", u.rawLen, u.blocks)
	}
	if u.compLen < u.blocks*blockHeaderSize || u.compLen > u.blocks*blockHeaderSize+u.rawLen+u.rawLen/8+1024 {
		return unitHeader{}, formatErr(unit, -1, off, "unit payload of %d bytes is not valid", u.compLen)
	}
	return u, nil
}

// blockHeader precedes every block's payload.
type blockHeader struct {
	coding  Coding
	rawLen  int
	compLen int
	crc     uint32 // CRC-32C of the decoded bytes
}

func (h blockHeader) append(b []byte) []byte {
	b = append(b, byte(h.coding), 0, 0, 0)
	b = binary.LittleEndian.AppendUint32(b, uint32(h.rawLen))
	b = binary.LittleEndian.AppendUint32(b, uint32(h.compLen))
	return binary.LittleEndian.AppendUint32(b, h.crc)
}

func parseBlockHeader(b []byte) blockHeader {
	return blockHeader{
		coding:  Coding(b[0]),
		rawLen:  int(binary.LittleEndian.Uint32(b[4:])),
		compLen: int(binary.LittleEndian.Uint32(b[8:])),
		crc:     binary.LittleEndian.Uint32(b[12:]),
	}
}

// UnitInfo locates one unit: the seek index holds one per unit.
type UnitInfo struct {
	CompOffset int64 // offset of the unit frame in the stream
	RawOffset  int64 // offset of the unit's first byte in the decoded data
	CompLen    int   // bytes of the whole unit frame, header included
	RawLen     int   // decoded bytes
}

func appendIndex(b []byte, units []UnitInfo, rawTotal int64) []byte {
	start := len(b)
	b = append(b, frameIndex, 0, 0, 0)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(units)))
	b = binary.LittleEndian.AppendUint64(b, uint64(rawTotal))
	for _, u := range units {
		b = binary.LittleEndian.AppendUint64(b, uint64(u.CompOffset))
		b = binary.LittleEndian.AppendUint64(b, uint64(u.RawOffset))
		b = binary.LittleEndian.AppendUint32(b, uint32(u.CompLen))
		b = binary.LittleEndian.AppendUint32(b, uint32(u.RawLen))
	}
	return binary.LittleEndian.AppendUint32(b, Checksum(b[start:]))
}

func appendTrailer(b []byte, indexOff int64) []byte {
	start := len(b)
	b = binary.LittleEndian.AppendUint64(b, uint64(indexOff))
	b = append(b, trailerMagic[:]...)
	return binary.LittleEndian.AppendUint32(b, Checksum(b[start:]))
}

// parseIndex checks an index frame (b holds exactly the frame, checksum
// included) against itself and the stream it came from: units must tile both
// the decoded data and the compressed stream in order.
func parseIndex(b []byte, off int64) ([]UnitInfo, int64, error) {
	if len(b) < indexHeadSize+4 || b[0] != frameIndex {
		return nil, 0, formatErr(-1, -1, off, "seek index missing or truncated")
	}
	body := b[:len(b)-4]
	if Checksum(body) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		return nil, 0, formatErr(-1, -1, off, "seek index checksum mismatch")
	}
	n := int(binary.LittleEndian.Uint32(b[4:]))
	total := int64(binary.LittleEndian.Uint64(b[8:]))
	if len(body) != indexHeadSize+n*indexEntrySize {
		return nil, 0, formatErr(-1, -1, off, "seek index holds %d bytes for %d units", len(body), n)
	}
	units := make([]UnitInfo, n)
	comp, raw := int64(headerSize), int64(0)
	for i := range units {
		e := body[indexHeadSize+i*indexEntrySize:]
		u := UnitInfo{
			CompOffset: int64(binary.LittleEndian.Uint64(e)),
			RawOffset:  int64(binary.LittleEndian.Uint64(e[8:])),
			CompLen:    int(binary.LittleEndian.Uint32(e[16:])),
			RawLen:     int(binary.LittleEndian.Uint32(e[20:])),
		}
		if u.CompOffset != comp || u.RawOffset != raw || u.RawLen > MaxUnitSize || u.RawLen == 0 || u.CompLen < unitHeaderSize {
			return nil, 0, formatErr(i, -1, off, "seek index entry does not match the stream layout")
		}
		comp += int64(u.CompLen)
		raw += int64(u.RawLen)
		units[i] = u
	}
	if raw != total || comp != off {
		return nil, 0, formatErr(-1, -1, off, "seek index totals do not match the stream")
	}
	return units, total, nil
}
