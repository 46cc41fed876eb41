// Package lz is glyd's LZ77 block coder: the sequence format shared by every
// tier, the match finders that produce it, and the decoders (pure Go and amd64
// assembly) that turn it back into bytes.
//
// A block is coded as six separate byte streams rather than one interleaved
// stream (the layout docs/format.md specifies byte by byte):
//
//	tokens   one byte per sequence: literal length (high nibble) and
//	         match length - MinMatch (low nibble); 15 means "read more from ext"
//	literals the literal bytes, in order
//	off0     one byte per sequence: offset bits 0-7
//	off1     one byte per sequence: offset bits 8-14, bit 7 set when off2 follows
//	off2     one byte per sequence with bit 7 of off1 set: offset bits 15-22
//	ext      LEB128 varints: the excess of literal/match lengths over 15
//
// Splitting by meaning costs the raw tier nothing at decode (six cursors instead
// of one) and is what makes the entropy tiers work: each stream has a skewed,
// stable distribution of its own that a Huffman stage codes well.
//
// An offset of 0 means "the previous offset again" (a repeat match), which is
// frequent in tables, records and aligned binary data.
//
// A block comes in one of two offset layouts (the container records which):
// Wide, as above, reaching 8 MiB back; and Narrow, where off1 holds offset
// bits 8-15 whole and there is no off2 stream, reaching 64 KiB back. The
// default tier writes Narrow blocks: its decode loop then has no per-sequence
// test for a third offset byte, which is worth more speed than the longer
// reach is worth ratio (docs/format.md has the numbers).
package lz

import (
	"errors"
	"fmt"
)

const (
	// MinMatch is the shortest match the format can express.
	MinMatch = 4
	// MaxOffset is the farthest back a match may reach (23 bits).
	MaxOffset = 1<<23 - 1
	// MaxNarrowOffset is the farthest back a match in a Narrow block reaches.
	MaxNarrowOffset = 1<<16 - 1
	// MaxBlock is the largest block (decoded bytes) one set of streams codes.
	MaxBlock   = 128 << 10
	numStreams = 6
)

// Stream indexes.
const (
	sTokens = iota
	sLiterals
	sOff0
	sOff1
	sOff2
	sExt
)

// Layout selects how a block codes offsets.
type Layout uint8

const (
	Wide   Layout = 0 // off0, off1 (7 bits + flag), off2: 23-bit offsets
	Narrow Layout = 1 // off0, off1: 16-bit offsets, no off2 stream
)

var streamNames = [numStreams]string{"tokens", "literals", "off0", "off1", "off2", "ext"}

// Stream coding modes.
const (
	ModeRaw  = 0 // the bytes as they are
	ModeRLE  = 1 // one byte, repeated rawLen times
	ModeHuf1 = 2 // huff0 single stream (small streams)
	ModeHuf4 = 3 // huff0 four interleaved streams
	// The same, coded with the table this stream last carried in an earlier
	// block of the same unit: small streams would otherwise spend much of
	// their size, and the decoder much of its time, on tables.
	ModeHuf1Reuse = 4
	ModeHuf4Reuse = 5
)

// ErrCorrupt is wrapped by every error the decoder returns for bad input.
var ErrCorrupt = errors.New("corrupt LZ block")

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}
