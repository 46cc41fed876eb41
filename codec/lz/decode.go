package lz

import (
	"encoding/binary"

	"github.com/klauspost/compress/huff0"
)

// Decoder decodes blocks. It keeps scratch buffers for entropy-coded
// streams; it is not safe for concurrent use, so keep one per goroutine.
type Decoder struct {
	// Per stream, the table it last carried; has says whether it carried
	// one in the current unit.
	huf [numStreams]*huff0.Scratch
	has [numStreams]bool
	buf [numStreams][]byte
	pad []byte // the assembly decoder's padded copy of off2
}

// goOnly makes DecodeBlock use the pure Go sequence loop even where the
// assembly one is built; tests compare the two.
var goOnly bool

// NewDecoder returns a Decoder.
func NewDecoder() *Decoder { return &Decoder{} }

// seqs is one block's streams, ready to be replayed.
type seqs struct {
	tok, lit, off0, off1, off2, ext []byte
	narrow                          bool
	hist                            history
}

// history is the content a block's matches may reach into that lies before
// its buffer: the bases of a delta, in order, as the encoder saw them
// concatenated in front of the target. Keeping them apart from the output
// spares a delta's decode copying its bases in and its result out; the
// assembly loop leaves matches that reach into them to step.
type history struct {
	segs [][]byte
	n    int // total length of segs
}

// DecodeBlock decodes the block src into dst[pos:pos+n]. dst[:pos] is the
// unit's history that matches may reach into. The decoder copies in wide
// words and may write past pos+n up to len(dst) (the space of the unit's
// next block, which that block then overwrites), never past len(dst): so
// units decode side by side into one buffer without touching each other.
func (d *Decoder) DecodeBlock(dst []byte, pos, n int, src []byte, layout Layout) error {
	return d.DecodeBlockAfter(dst, pos, n, src, layout, nil)
}

// DecodeBlockAfter is DecodeBlock for a block whose history starts before
// dst: hist, concatenated, then dst[:pos]. A match may reach up to
// pos+len(all of hist) bytes back. hist is only read.
func (d *Decoder) DecodeBlockAfter(dst []byte, pos, n int, src []byte, layout Layout, hist [][]byte) error {
	if n < 0 || n > MaxBlock || pos < 0 || len(dst) < pos+n {
		return corrupt("block of %d bytes at %d does not fit the buffer", n, pos)
	}
	if pos == 0 {
		// A unit's first block: tables from another unit must not be used.
		d.has = [numStreams]bool{}
	}
	nseq, k := binary.Uvarint(src)
	if k <= 0 || nseq > uint64(n/MinMatch) {
		return corrupt("bad sequence count")
	}
	src = src[k:]
	var modes [numStreams]byte
	var rawLens, compLens [numStreams]int
	payload := 0
	for i := range numStreams {
		if len(src) < 1 {
			return corrupt("truncated stream table")
		}
		modes[i] = src[0]
		r, k1 := binary.Uvarint(src[1:])
		if k1 <= 0 {
			return corrupt("bad %s length", streamNames[i])
		}
		c, k2 := binary.Uvarint(src[1+k1:])
		if k2 <= 0 {
			return corrupt("bad %s size", streamNames[i])
		}
		src = src[1+k1+k2:]
		// Every stream is bounded by what the block can hold; checking here
		// keeps a hostile header from asking for a huge allocation.
		limit := uint64(n)
		switch i {
		case sTokens, sOff0, sOff1:
			if r != nseq {
				return corrupt("%s holds %d entries for %d sequences", streamNames[i], r, nseq)
			}
		case sOff2:
			limit = nseq
			if layout == Narrow {
				limit = 0
			}
		case sExt:
			limit = 2 * binary.MaxVarintLen64 * nseq
		}
		if r > limit || c > uint64(len(src))+uint64(payload) {
			return corrupt("%s stream too long", streamNames[i])
		}
		rawLens[i], compLens[i] = int(r), int(c)
		payload += int(c)
	}
	if payload != len(src) {
		return corrupt("streams hold %d bytes, block has %d", payload, len(src))
	}
	var s [numStreams][]byte
	for i := range numStreams {
		p := src[:compLens[i]]
		src = src[compLens[i]:]
		out, err := d.stream(i, modes[i], rawLens[i], p)
		if err != nil {
			return err
		}
		s[i] = out
	}
	q := seqs{tok: s[sTokens], lit: s[sLiterals], off0: s[sOff0], off1: s[sOff1], off2: s[sOff2], ext: s[sExt], narrow: layout == Narrow}
	if len(hist) > 0 {
		q.hist.segs = hist
		for _, h := range hist {
			q.hist.n += len(h)
		}
	}
	if goOnly {
		return decodeSeqsGo(dst, pos, pos+n, &q)
	}
	return decodeSeqs(dst, pos, pos+n, &q, &d.pad)
}

// stream returns the plain bytes of one stream.
func (d *Decoder) stream(i int, mode byte, rawLen int, p []byte) ([]byte, error) {
	switch mode {
	case ModeRaw:
		if len(p) != rawLen {
			return nil, corrupt("raw %s stream: %d bytes, want %d", streamNames[i], len(p), rawLen)
		}
		return p, nil
	case ModeRLE:
		if len(p) != 1 {
			return nil, corrupt("rle %s stream: %d bytes", streamNames[i], len(p))
		}
		b := d.scratch(i, rawLen)
		for j := range b {
			b[j] = p[0]
		}
		return b, nil
	case ModeHuf1, ModeHuf4, ModeHuf1Reuse, ModeHuf4Reuse:
		if rawLen == 0 {
			return nil, corrupt("empty huffman %s stream", streamNames[i])
		}
		h := d.huf[i]
		if h == nil {
			h = &huff0.Scratch{}
			d.huf[i] = h
		}
		rest := p
		if mode == ModeHuf1 || mode == ModeHuf4 {
			var err error
			if h, rest, err = huff0.ReadTable(p, h); err != nil {
				return nil, corrupt("%s stream table: %v", streamNames[i], err)
			}
			d.huf[i] = h
			d.has[i] = true
		} else if !d.has[i] {
			return nil, corrupt("%s stream reuses a table the unit never had", streamNames[i])
		}
		h.MaxDecodedSize = rawLen
		b := d.scratch(i, rawLen)[:0:rawLen]
		var out []byte
		var err error
		if mode == ModeHuf4 || mode == ModeHuf4Reuse {
			out, err = h.Decoder().Decompress4X(b, rest)
		} else {
			out, err = h.Decoder().Decompress1X(b, rest)
		}
		if err != nil {
			return nil, corrupt("%s stream: %v", streamNames[i], err)
		}
		if len(out) != rawLen {
			return nil, corrupt("%s stream decoded to %d bytes, want %d", streamNames[i], len(out), rawLen)
		}
		return out, nil
	}
	return nil, corrupt("unknown mode %d for %s stream", mode, streamNames[i])
}

func (d *Decoder) scratch(i, n int) []byte {
	if cap(d.buf[i]) < n {
		d.buf[i] = make([]byte, n, max(n, 4096))
	}
	return d.buf[i][:n]
}

// cursor is the decoder's position in a block's streams: how many
// sequences, literals, ext and off2 bytes are consumed, where output is, and
// the repeat offset. The assembly decoder shares it (fastState).
type cursor struct {
	op, ti, li, ei, o2, rep int
}

// decodeSeqsGo replays the sequences into dst[pos:end]; wide copies may
// write past end but never past len(dst).
func decodeSeqsGo(dst []byte, pos, end int, q *seqs) error {
	c := cursor{op: pos}
	for c.ti < len(q.tok) {
		if err := step(dst, end, q, &c); err != nil {
			return err
		}
	}
	return finish(dst, pos, end, q, &c)
}

// finish copies the literals that end the block and checks that every
// stream was used up exactly.
func finish(dst []byte, pos, end int, q *seqs, c *cursor) error {
	rest := len(q.lit) - c.li
	if rest != end-c.op {
		return corrupt("block decodes to %d bytes, want %d", c.op+rest-pos, end-pos)
	}
	copy(dst[c.op:end], q.lit[c.li:])
	if c.ei != len(q.ext) || c.o2 != len(q.off2) {
		return corrupt("unused stream bytes after the last sequence")
	}
	return nil
}

// step replays one sequence. It checks every length and offset against the
// streams and the output, so hostile input fails cleanly; it commits nothing
// to c unless the whole sequence is valid.
func step(dst []byte, end int, q *seqs, c *cursor) error {
	i, op, ei := c.ti, c.op, c.ei
	t := q.tok[i]
	ll := int(t >> 4)
	if ll == 15 {
		v, k := binary.Uvarint(q.ext[ei:])
		if k <= 0 || v > MaxBlock {
			return corrupt("bad literal length at sequence %d", i)
		}
		ei += k
		ll += int(v)
	}
	ml := int(t&15) + MinMatch
	if ml == 15+MinMatch {
		v, k := binary.Uvarint(q.ext[ei:])
		if k <= 0 || v > MaxBlock {
			return corrupt("bad match length at sequence %d", i)
		}
		ei += k
		ml += int(v)
	}
	b1 := q.off1[i]
	off := int(q.off0[i]) | int(b1&0x7f)<<8
	o2 := c.o2
	if q.narrow {
		off |= int(b1&0x80) << 8
	} else if b1&0x80 != 0 {
		if o2 >= len(q.off2) {
			return corrupt("offset stream exhausted at sequence %d", i)
		}
		off |= int(q.off2[o2]) << 15
		o2++
	}
	if off == 0 {
		off = c.rep
	}
	li := c.li
	if ll > len(q.lit)-li || ll > end-op {
		return corrupt("literal run of %d overruns the block at sequence %d", ll, i)
	}
	if off == 0 || off > op+ll+q.hist.n {
		return corrupt("match offset %d at output %d is out of range", off, op+ll)
	}
	if ml > end-op-ll {
		return corrupt("match of %d overruns the block at sequence %d", ml, i)
	}
	if off > op+ll {
		copy(dst[op:op+ll], q.lit[c.li:c.li+ll])
		copyFromHistory(dst, op+ll, off, ml, &q.hist)
		*c = cursor{op: op + ll + ml, ti: i + 1, li: c.li + ll, ei: ei, o2: o2, rep: off}
		return nil
	}
	lit := q.lit
	if ll <= 16 && li+16 <= len(lit) && op+16 <= len(dst) {
		copy(dst[op:op+16], lit[li:li+16])
	} else {
		copy(dst[op:op+ll], lit[li:li+ll])
	}
	op += ll
	from := op - off
	switch {
	case off >= 16 && ml <= 32 && op+32 <= len(dst):
		copy(dst[op:op+16], dst[from:from+16])
		copy(dst[op+16:op+32], dst[from+16:from+32])
	case off >= ml:
		copy(dst[op:op+ml], dst[from:from+ml])
	case off >= 8 && op+ml+8 <= len(dst):
		for j := 0; j < ml; j += 8 {
			binary.LittleEndian.PutUint64(dst[op+j:], binary.LittleEndian.Uint64(dst[from+j:]))
		}
	default:
		for j := range ml {
			dst[op+j] = dst[from+j]
		}
	}
	*c = cursor{op: op + ml, ti: i + 1, li: li + ll, ei: ei, o2: o2, rep: off}
	return nil
}

// copyFromHistory replays a match of ml bytes at dst[at:] whose source
// starts off bytes back, before dst[0]: in the history h. The part that
// runs past the history's end continues from dst[0], off bytes behind, in
// pieces of at most off bytes so that an overlapping match repeats as LZ77
// says.
func copyFromHistory(dst []byte, at, off, ml int, h *history) {
	src := h.n - (off - at) // position in the concatenated history
	for _, s := range h.segs {
		if ml == 0 {
			return
		}
		if src >= len(s) {
			src -= len(s)
			continue
		}
		k := copy(dst[at:at+ml], s[src:])
		at, ml, src = at+k, ml-k, 0
	}
	for ml > 0 {
		k := copy(dst[at:at+min(ml, off)], dst[at-off:])
		at, ml = at+k, ml-k
	}
}
