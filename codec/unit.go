package codec

import (
	"encoding/binary"
	"errors"
	"sync"

	"github.com/glyd/glyd/codec/lz"
)

// Encoders and decoders hold large tables; pools let parallel workers reuse
// them across units instead of allocating per unit.
var (
	encPools [3]sync.Pool
	decPool  = sync.Pool{New: func() any { return lz.NewDecoder() }}
)

func init() {
	for t := range encPools {
		tier := Tier(t)
		encPools[t].New = func() any { return newTierEncoder(tier) }
	}
}

func newTierEncoder(t Tier) *lz.Encoder {
	switch t {
	case Max:
		return lz.NewEncoder(lz.Lazy, true)
	case Cold:
		return lz.NewEncoder(lz.Deep, true)
	}
	return lz.NewEncoder(lz.Fast, false)
}

// framePool recycles unit frame buffers: a frame is copied out (to the
// result or the writer) as soon as it is done, and allocating a fresh one per
// unit kept the garbage collector busy enough to show in encode profiles.
var framePool sync.Pool

func getFrame() []byte {
	if b, ok := framePool.Get().(*[]byte); ok {
		return (*b)[:0]
	}
	return nil
}

func putFrame(b []byte) {
	if cap(b) > 0 {
		framePool.Put(&b)
	}
}

// encodeUnit appends one unit frame coding src to dst.
func encodeUnit(dst, src []byte, tier Tier) []byte {
	e := encPools[tier].Get().(*lz.Encoder)
	defer encPools[tier].Put(e)
	e.StartUnit(len(src))
	return encodeBlocks(dst, src, 0, e, baseRef{})
}

// deltaPools hold the encoders for delta frames, by tier: always the wide
// layout (a base reaches further back than 64 KiB) and a lazy parse, with the
// Huffman stage where the tier has one, so a delta and the same chunk coded
// alone compare like for like.
var deltaPools = [3]sync.Pool{
	{New: func() any {
		// The default tier puts fast: deltas index their bases every
		// other byte and long matches every eighth (lz.SetStrides).
		e := lz.NewEncoder(lz.Lazy, false)
		e.SetStrides(2, 8)
		return e
	}},
	{New: func() any { return lz.NewEncoder(lz.Lazy, true) }},
	{New: func() any { return lz.NewEncoder(lz.Deep, true) }},
}

// baseRef says where a delta unit's base comes from: a range of the base
// file for streams written by glyd --base, or {0, 0} for a base the caller
// supplies (chunk frames in the store).
type baseRef struct{ off, len int64 }

// encodeDeltaUnit appends a unit frame coding target with base as history;
// every delta block records ref.
func encodeDeltaUnit(dst, base, target []byte, tier Tier, ref baseRef) []byte {
	return encodeDeltaUnitFrom(dst, [][]byte{base}, target, tier, ref)
}

// encodeDeltaUnitFrom is encodeDeltaUnit with the history the concatenation
// of bases, in order.
func encodeDeltaUnitFrom(dst []byte, bases [][]byte, target []byte, tier Tier, ref baseRef) []byte {
	pool := &deltaPools[tier]
	e := pool.Get().(*lz.Encoder)
	defer pool.Put(e)
	buf := getFrame()
	for _, b := range bases {
		buf = append(buf, b...)
	}
	hist := len(buf)
	buf = append(buf, target...)
	defer putFrame(buf)
	e.StartUnit(len(buf))
	e.Prime(buf, hist)
	return encodeBlocks(dst, buf, hist, e, ref)
}

// encodeBlocks appends a unit frame coding src[hist:] (src[:hist] is history
// the decoder is given separately) block by block.
func encodeBlocks(dst, src []byte, hist int, e *lz.Encoder, ref baseRef) []byte {
	n := len(src) - hist
	nblocks := (n + BlockSize - 1) / BlockSize
	// Room for the worst case (every block stored raw) up front: growing the
	// frame by appends copied it over and over.
	if need := len(dst) + unitHeaderSize + nblocks*blockHeaderSize + n; cap(dst) < need {
		dst = append(make([]byte, 0, need), dst...)
	}
	start := len(dst)
	dst = append(dst, make([]byte, unitHeaderSize)...)
	for b := range nblocks {
		lo, hi := hist+b*BlockSize, min(hist+(b+1)*BlockSize, len(src))
		hpos := len(dst)
		dst = append(dst, make([]byte, blockHeaderSize)...)
		if hist > 0 {
			dst = binary.AppendUvarint(dst, uint64(ref.off))
			dst = binary.AppendUvarint(dst, uint64(ref.len))
		}
		dst = e.EncodeBlock(dst, src, lo, hi)
		coding := CodingLZ
		switch {
		case hist > 0:
			coding = CodingDelta
		case e.Layout() == lz.Narrow:
			coding = CodingLZNarrow
		}
		h := blockHeader{coding: coding, rawLen: hi - lo, compLen: len(dst) - hpos - blockHeaderSize, crc: Checksum(src[lo:hi])}
		// Incompressible data is stored as it is: a raw block decodes at
		// memcpy speed and costs nothing but its header.
		if e.GaveUp() || h.compLen >= h.rawLen {
			dst = append(dst[:hpos+blockHeaderSize], src[lo:hi]...)
			h.coding, h.compLen = CodingRaw, h.rawLen
		}
		h.append(dst[hpos:hpos])
	}
	unitHeader{blocks: nblocks, rawLen: n, compLen: len(dst) - start - unitHeaderSize}.append(dst[start:start])
	return dst
}

// decodeUnit decodes the blocks of one unit (frame without its 16-byte
// header) into dst, whose length is the unit's decoded size. Every block's
// checksum is verified before the call returns.
func decodeUnit(dst, frame []byte, uh unitHeader, unit int, frameOff int64) error {
	return decodeUnitAfter(dst, nil, frame, uh, unit, frameOff, baseRef{})
}

// decodeUnitAfter decodes a unit into dst; bases, concatenated, is the
// history its delta blocks copy from (their base, which must be the one
// ref names), and nil for ordinary units. The bases are only read: the
// decoder reaches into them where it would into dst, so neither is copied.
func decodeUnitAfter(dst []byte, bases [][]byte, frame []byte, uh unitHeader, unit int, frameOff int64, ref baseRef) error {
	d := decPool.Get().(*lz.Decoder)
	defer decPool.Put(d)
	pos := 0
	off := frameOff + unitHeaderSize
	for b := range uh.blocks {
		if len(frame) < blockHeaderSize {
			return formatErr(unit, b, off, "truncated block header")
		}
		h := parseBlockHeader(frame)
		want := min(BlockSize, uh.rawLen-pos)
		if h.rawLen != want {
			return formatErr(unit, b, off, "block holds %d bytes, want %d", h.rawLen, want)
		}
		if h.compLen > len(frame)-blockHeaderSize {
			return formatErr(unit, b, off, "block payload of %d bytes runs past the unit", h.compLen)
		}
		payload := frame[blockHeaderSize : blockHeaderSize+h.compLen]
		switch h.coding {
		case CodingRaw:
			if h.compLen != h.rawLen {
				return formatErr(unit, b, off, "raw block of %d bytes stores %d", h.rawLen, h.compLen)
			}
			copy(dst[pos:], payload)
		case CodingLZ, CodingLZNarrow:
			layout := lz.Wide
			if h.coding == CodingLZNarrow {
				layout = lz.Narrow
			}
			if err := d.DecodeBlockAfter(dst, pos, h.rawLen, payload, layout, bases); err != nil {
				return formatErr(unit, b, off, "%v", err)
			}
		case CodingDelta:
			if len(bases) == 0 {
				return formatErr(unit, b, off, "delta block needs its base, and none was given")
			}
			got, rest, err := parseBaseRef(payload)
			if err != nil || got != ref {
				return formatErr(unit, b, off, "delta block names base range %d+%d, unit was given %d+%d", got.off, got.len, ref.off, ref.len)
			}
			if err := d.DecodeBlockAfter(dst, pos, h.rawLen, rest, lz.Wide, bases); err != nil {
				return formatErr(unit, b, off, "%v", err)
			}
		case CodingRecord, CodingTensor:
			return formatErr(unit, b, off, "block coding %s is reserved for a later glyd and not supported here", h.coding)
		default:
			return formatErr(unit, b, off, "unknown block coding %d", uint8(h.coding))
		}
		if Checksum(dst[pos:pos+h.rawLen]) != h.crc {
			return formatErr(unit, b, off, "checksum mismatch: the block is damaged")
		}
		pos += h.rawLen
		off += int64(blockHeaderSize + h.compLen)
		frame = frame[blockHeaderSize+h.compLen:]
	}
	if len(frame) != 0 {
		return formatErr(unit, -1, off, "%d stray bytes after the last block", len(frame))
	}
	return nil
}

// parseBaseRef reads the base range at the start of a delta block payload.
func parseBaseRef(p []byte) (baseRef, []byte, error) {
	o, n := binary.Uvarint(p)
	if n <= 0 || o > 1<<62 {
		return baseRef{}, nil, errors.New("bad base offset")
	}
	l, m := binary.Uvarint(p[n:])
	if m <= 0 || l > MaxUnitSize {
		return baseRef{}, nil, errors.New("bad base length")
	}
	return baseRef{int64(o), int64(l)}, p[n+m:], nil
}

// unitBaseRef returns the base range a unit's first block names, and
// whether the unit is a delta unit at all.
func unitBaseRef(frame []byte) (baseRef, bool) {
	if len(frame) < unitHeaderSize+blockHeaderSize {
		return baseRef{}, false
	}
	h := parseBlockHeader(frame[unitHeaderSize:])
	if h.coding != CodingDelta || h.compLen > len(frame)-unitHeaderSize-blockHeaderSize {
		return baseRef{}, false
	}
	ref, _, err := parseBaseRef(frame[unitHeaderSize+blockHeaderSize : unitHeaderSize+blockHeaderSize+h.compLen])
	return ref, err == nil
}
