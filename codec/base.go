package codec

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// Streams coded against a base file (glyd --base OLD NEW): the header is
// flagged and carries the base's CRC-32C; a delta unit's blocks name the
// range of the base they copy from, so any unit decodes on its own with one
// read of the base.

// baseFile is a base a reader was given.
type baseFile struct {
	ra   io.ReaderAt
	size int64
	tag  uint32
	done bool
}

// BaseTag is the CRC-32C a stream records of its base.
func BaseTag(r io.ReaderAt, size int64) (uint32, error) {
	buf := make([]byte, 1<<20)
	var crc uint32
	for off := int64(0); off < size; {
		n, err := r.ReadAt(buf[:min(int64(len(buf)), size-off)], off)
		crc = crc32.Update(crc, castagnoli, buf[:n])
		off += int64(n)
		if err != nil && !(err == io.EOF && off == size) {
			return 0, fmt.Errorf("reading the base: %w", err)
		}
	}
	return crc, nil
}

// check matches the base against a stream's header (b may be nil).
func (b *baseFile) check(h header) error {
	switch {
	case !h.needsBase:
		return nil
	case b == nil:
		return formatErr(-1, -1, 7, "this stream was coded against a base file: give it with --base")
	}
	if !b.done {
		tag, err := BaseTag(b.ra, b.size)
		if err != nil {
			return err
		}
		b.tag, b.done = tag, true
	}
	if b.tag != h.baseTag {
		return formatErr(-1, -1, 8, "wrong base: the stream was coded against a file with CRC-32C %08x, the base given has %08x", h.baseTag, b.tag)
	}
	return nil
}

// decodeFrame decodes one whole unit frame (header included) into dst,
// reading its base range first when it is a delta unit.
func decodeFrame(dst, fr []byte, uh unitHeader, unit int, off int64, base *baseFile) error {
	ref, isDelta := unitBaseRef(fr)
	if !isDelta {
		return decodeUnit(dst, fr[unitHeaderSize:], uh, unit, off)
	}
	if base == nil {
		return formatErr(unit, 0, off, "delta unit needs the base file it was coded against")
	}
	if ref.len == 0 || ref.off+ref.len > base.size {
		return formatErr(unit, 0, off, "delta unit names base range %d+%d, outside the %d-byte base", ref.off, ref.len, base.size)
	}
	hist := make([]byte, int(ref.len))
	if _, err := base.ra.ReadAt(hist, ref.off); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("reading the base: %w", err)
	}
	return decodeUnitAfter(dst, [][]byte{hist}, fr[unitHeaderSize:], uh, unit, off, ref)
}

// BaseWriter writes a stream coded against a base file held in memory. The
// caller cuts the new data into pieces (each becomes one unit, at most
// MaxChunk minus its base range) and names, for each, the range of the base
// most like it; pieces are coded in parallel and written in order.
type BaseWriter struct {
	z    *Writer
	base []byte
}

// NewBaseWriter starts a stream coded against base.
func NewBaseWriter(w io.Writer, base []byte, opts Options) (*BaseWriter, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	tag := crc32.Update(0, castagnoli, base)
	z, err := newWriter(w, opts, header{tier: opts.Tier, needsBase: true, baseTag: tag})
	if err != nil {
		return nil, err
	}
	return &BaseWriter{z: z, base: base}, nil
}

// WritePiece codes piece against base[off:off+n] (n == 0: alone), keeping
// whichever of the delta and the plain coding is smaller. piece must not be
// modified until Close.
func (b *BaseWriter) WritePiece(piece []byte, off, n int64) error {
	if err := b.z.failed(); err != nil {
		return err
	}
	if len(piece) == 0 {
		return nil
	}
	if off < 0 || n < 0 || off+n > int64(len(b.base)) || int(n)+len(piece) > MaxChunk {
		return errors.New("glyd: base range out of bounds")
	}
	tier := b.z.opts.Tier
	b.z.submitUnit(piece, func() []byte {
		alone := encodeUnit(getFrame(), piece, tier)
		if n == 0 {
			return alone
		}
		d := encodeDeltaUnit(nil, b.base[off:off+n], piece, tier, baseRef{off, n})
		if len(d) < len(alone) {
			putFrame(alone)
			return d
		}
		return alone
	})
	return nil
}

// Close finishes the stream (index and trailer).
func (b *BaseWriter) Close() error { return b.z.Close() }
