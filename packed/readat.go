package packed

import (
	"encoding/binary"
	"fmt"
	"io"
	"sync"

	"github.com/glyd/glyd/internal/buflist"
	"github.com/glyd/glyd/internal/workers"
	"github.com/glyd/glyd/tensor"
)

// A File opened with OpenReaderAt does not hold its payload: a read decodes
// the groups it needs from a sub-payload assembled for them, laid out as a
// span payload of its own (docs/tensors.md): the group end offsets
// rebased to the first group's stream, the groups' CRCs, their raw bytes
// and their streams, each read with one ReadAt. A read of a few MiB of a
// large tensor reads a few MiB of the packed file, not the tensor's whole
// payload.

// spanPayload returns span s's whole payload.
func (f *File) spanPayload(s *span) ([]byte, error) {
	if f.r == nil {
		return f.payload[s.payOff : s.payOff+s.payLen], nil
	}
	return f.bytesAt(int64(f.hdr.payloadStart())+s.payOff, s.payLen)
}

// subDecoder returns a decoder of span s's groups [g0, g1) alone (its
// groups numbered from 0), reading only their bytes.
// Its sub-payload lies in sub, from subBufs: give it back once the
// decoder is done with.
func (f *File) subDecoder(s *span, g0, g1 int) (d *tensor.Decoder, sub []byte, err error) {
	gl := int(f.hdr.groupLog2)
	values := int(s.length) / s.code.Kind.WordSize()
	ng := (values-1)>>gl + 1
	if g0 < 0 || g1 > ng || g0 >= g1 {
		return nil, nil, formatErrorf("groups %d to %d of a %d-group span", g0, g1, ng)
	}
	rs := int64(s.code.Kind.RawSize())
	fixed := 8*int64(ng) - 4 + int64(values)*rs
	if fixed > s.payLen {
		return nil, nil, formatErrorf("span payload of %d bytes too short for %d values", s.payLen, values)
	}
	streamLen := s.payLen - fixed
	base := int64(f.hdr.payloadStart()) + s.payOff
	// Group ends g0-1 .. g1-1, of those the table holds (group ng-1's is
	// the stream area's end).
	e0, e1 := max(g0-1, 0), min(g1, ng-1)
	var ends []byte
	if e1 > e0 {
		var err error
		if ends, err = f.bytesAt(base+4*int64(e0), 4*int64(e1-e0)); err != nil {
			return nil, nil, err
		}
	}
	end := func(g int) int64 {
		if g == ng-1 {
			return streamLen
		}
		return int64(binary.LittleEndian.Uint32(ends[4*(g-e0):]))
	}
	start := int64(0)
	if g0 > 0 {
		start = end(g0 - 1)
	}
	stop := end(g1 - 1)
	if start > stop || stop > streamLen {
		return nil, nil, formatErrorf("group streams %d to %d outside the %d-byte stream area", start, stop, streamLen)
	}
	k := g1 - g0
	first := g0 << gl
	n := min(values, g1<<gl) - first
	head := 8*int64(k) - 4
	need := int(head + int64(n)*rs + stop - start)
	sub = subBufs.Get(need)
	defer func() {
		if err != nil {
			subBufs.Put(sub)
			sub = nil
		}
	}()
	for g := g0; g < g1-1; g++ {
		e := end(g) - start
		if e < 0 {
			return nil, nil, formatErrorf("group %d ends before group %d starts", g, g0)
		}
		binary.LittleEndian.PutUint32(sub[4*(g-g0):], uint32(e))
	}
	// CRCs, raw bytes, streams: read straight into place.
	at := 4 * int64(k-1)
	for _, r := range [][2]int64{
		{base + 4*int64(ng-1) + 4*int64(g0), 4 * int64(k)},
		{base + 8*int64(ng) - 4 + int64(first)*rs, int64(n) * rs},
		{base + fixed + start, stop - start},
	} {
		if err := f.readInto(sub[at:at+r[1]], r[0]); err != nil {
			return nil, nil, err
		}
		at += r[1]
	}
	d, err = tensor.NewDecoder(s.code, n, gl, sub)
	return d, sub, err
}

// readInto fills p with the packed file's bytes at off.
func (f *File) readInto(p []byte, off int64) error {
	if off < 0 || off > f.size || int64(len(p)) > f.size-off {
		return formatErrorf("range %d+%d outside the %d-byte file", off, len(p), f.size)
	}
	if f.r == nil {
		copy(p, f.b[off:])
		return nil
	}
	if k, err := f.r.ReadAt(p, off); k != len(p) {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("packed: reading %d bytes at %d: %w", len(p), off, err)
	}
	return nil
}

// subBufs recycles sub-payload buffers (in a freshly started glydfs
// reading the corpus weights cold, half its page faults were sub-payload
// buffers in fresh memory).
var subBufs = buflist.List{Max: 64 << 20}

// decodeDataAt is decodeData for a File read through a ReaderAt: each
// coded span's groups in [lo, hi) get one sub-payload, read at once.
func (f *File) decodeDataAt(dst []byte, lo, hi int64, threads int) error {
	var decs []*tensor.Decoder
	var bufs [][]byte
	defer func() {
		for _, d := range decs {
			d.Release()
		}
		for _, b := range bufs {
			subBufs.Put(b)
		}
	}()
	ts, err := f.tasks(lo, hi, func(_ int, s *span, g0, g1 int) (*tensor.Decoder, int, error) {
		if s.flags&spanXOR != 0 {
			return nil, 0, ErrNeedBase
		}
		d, buf, err := f.subDecoder(s, g0, g1)
		if err != nil {
			return nil, 0, err
		}
		decs, bufs = append(decs, d), append(bufs, buf)
		return d, g0, nil
	})
	if err != nil {
		return err
	}
	var scratch sync.Pool
	b := batches(ts)
	return workers.Run(len(b)-1, threads, func(i int) error {
		return f.runBatch(ts[b[i]:b[i+1]], dst, lo, hi, &scratch)
	})
}
