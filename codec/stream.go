package codec

import (
	"encoding/binary"
	"errors"
	"io"
	"math/bits"
	"sync"
)

// pending is one unit moving through a pipeline: workers fill it in any
// order, the consumer takes them in stream order.
type pending struct {
	in, out []byte
	err     error
	done    chan struct{}
}

// Writer compresses a stream written to it. Units are encoded in parallel
// and written in order; Close writes the seek index and trailer, so output
// may go to a pipe. Close does not close the underlying writer.
type Writer struct {
	w     io.Writer
	opts  Options
	us    int
	buf   []byte
	queue chan *pending
	sem   chan struct{}
	wg    sync.WaitGroup // the ordered writer goroutine

	mu     sync.Mutex
	err    error
	units  []UnitInfo
	off    int64 // compressed bytes written
	raw    int64
	closed bool
}

// NewWriter returns a Writer that writes a glyd stream to w.
func NewWriter(w io.Writer, opts Options) (*Writer, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	return newWriter(w, opts, header{tier: opts.Tier})
}

func newWriter(w io.Writer, opts Options, h header) (*Writer, error) {
	t := opts.threads()
	zw := &Writer{w: w, opts: opts, us: opts.unitSize(), queue: make(chan *pending, 2*t), sem: make(chan struct{}, t)}
	h.unitLog2 = uint8(bits.Len(uint(zw.us)) - 1)
	hdr := h.append(nil)
	if _, err := w.Write(hdr); err != nil {
		return nil, err
	}
	zw.off = headerSize
	zw.wg.Add(1)
	go zw.writeLoop()
	return zw, nil
}

func (z *Writer) fail(err error) {
	z.mu.Lock()
	if z.err == nil {
		z.err = err
	}
	z.mu.Unlock()
}

func (z *Writer) failed() error {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.err
}

// writeLoop writes finished units in stream order.
func (z *Writer) writeLoop() {
	defer z.wg.Done()
	for p := range z.queue {
		<-p.done
		if z.failed() != nil {
			continue
		}
		n := len(p.out)
		_, err := z.w.Write(p.out)
		putFrame(p.out)
		p.out = nil
		if err != nil {
			z.fail(err)
			continue
		}
		z.mu.Lock()
		z.units = append(z.units, UnitInfo{CompOffset: z.off, RawOffset: z.raw, CompLen: n, RawLen: len(p.in)})
		z.off += int64(n)
		z.raw += int64(len(p.in))
		z.mu.Unlock()
	}
}

// Write buffers p and hands every full unit to an encoder.
func (z *Writer) Write(p []byte) (int, error) {
	if z.closed {
		return 0, errors.New("glyd: write to closed Writer")
	}
	n := 0
	for len(p) > 0 {
		if err := z.failed(); err != nil {
			return n, err
		}
		if z.buf == nil {
			z.buf = make([]byte, 0, z.us)
		}
		k := min(len(p), z.us-len(z.buf))
		z.buf = append(z.buf, p[:k]...)
		p, n = p[k:], n+k
		if len(z.buf) == z.us {
			z.submit()
		}
	}
	return n, nil
}

// ReadFrom compresses everything r yields, reading a unit at a time.
func (z *Writer) ReadFrom(r io.Reader) (int64, error) {
	var n int64
	for {
		if err := z.failed(); err != nil {
			return n, err
		}
		if z.buf == nil {
			z.buf = make([]byte, 0, z.us)
		}
		k, err := io.ReadFull(r, z.buf[len(z.buf):z.us])
		z.buf = z.buf[:len(z.buf)+k]
		n += int64(k)
		if len(z.buf) == z.us {
			z.submit()
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

func (z *Writer) submit() {
	in := z.buf
	z.buf = nil
	z.submitUnit(in, func() []byte { return encodeUnit(getFrame(), in, z.opts.Tier) })
}

// submitUnit queues one unit whose frame encode builds, in parallel with
// other units; frames are written in submission order.
func (z *Writer) submitUnit(in []byte, encode func() []byte) {
	p := &pending{in: in, done: make(chan struct{})}
	z.sem <- struct{}{}
	go func() {
		p.out = encode()
		close(p.done)
		<-z.sem
	}()
	z.queue <- p
}

// Close encodes what is buffered, waits for every unit, and writes the seek
// index and trailer.
func (z *Writer) Close() error {
	if z.closed {
		return z.failed()
	}
	z.closed = true
	if len(z.buf) > 0 {
		z.submit()
	}
	close(z.queue)
	z.wg.Wait()
	if err := z.failed(); err != nil {
		return err
	}
	tail := appendIndex(nil, z.units, z.raw)
	tail = appendTrailer(tail, z.off)
	_, err := z.w.Write(tail)
	return err
}

// Reader decompresses a glyd stream sequentially, without seeking, so it
// reads from pipes. Units decode in parallel ahead of the consumer. Every
// unit is checked against its checksums, and the seek index at the end
// against the units seen, before Read reports io.EOF.
type Reader struct {
	r       io.Reader
	base    *baseFile
	threads int
	queue   chan *pending
	sem     chan struct{}
	stop    chan struct{}
	once    sync.Once

	cur  []byte
	err  error
	read int64 // compressed bytes consumed by the producer
}

// NewReader returns a Reader decoding with up to threads units at once
// (<= 0: one per CPU).
func NewReader(r io.Reader, threads int) *Reader {
	return NewReaderBase(r, threads, nil, 0)
}

// NewReaderBase is NewReader for a stream that may have been coded against
// a base file (glyd --base): base is that file (nil if none).
func NewReaderBase(r io.Reader, threads int, base io.ReaderAt, baseSize int64) *Reader {
	t := threadsOr(threads)
	zr := &Reader{r: r, threads: t, queue: make(chan *pending, 2*t), sem: make(chan struct{}, t), stop: make(chan struct{})}
	if base != nil {
		zr.base = &baseFile{ra: base, size: baseSize}
	}
	go zr.produce()
	return zr
}

// Close stops the decoders; further reads fail.
func (z *Reader) Close() error {
	z.once.Do(func() { close(z.stop) })
	for range z.queue {
	}
	return nil
}

func (z *Reader) send(p *pending) bool {
	select {
	case z.queue <- p:
		return true
	case <-z.stop:
		return false
	}
}

func (z *Reader) sendErr(err error) {
	p := &pending{err: err, done: make(chan struct{})}
	close(p.done)
	z.send(p)
}

// readFull reads exactly len(b) bytes, mapping a short stream to a format
// error that says where it ended.
func (z *Reader) readFull(b []byte, what string, unit int) error {
	n, err := io.ReadFull(z.r, b)
	z.read += int64(n)
	if err == io.EOF || err == io.ErrUnexpectedEOF {
		return formatErr(unit, -1, z.read, "stream truncated in %s", what)
	}
	return err
}

func (z *Reader) produce() {
	defer close(z.queue)
	var hb [headerSize]byte
	if err := z.readFull(hb[:], "the header", -1); err != nil {
		if fe := (*FormatError)(nil); errors.As(err, &fe) && z.read == 0 {
			err = formatErr(-1, -1, 0, "empty input: not a glyd stream")
		}
		z.sendErr(err)
		return
	}
	h, err := parseHeader(hb[:])
	if err != nil {
		z.sendErr(err)
		return
	}
	if err := z.base.check(h); err != nil {
		z.sendErr(err)
		return
	}
	var seen []UnitInfo
	var raw int64
	for unit := 0; ; unit++ {
		start := z.read
		var fh [unitHeaderSize]byte
		if err := z.readFull(fh[:1], "a frame header", unit); err != nil {
			z.sendErr(err)
			return
		}
		if fh[0] == frameIndex {
			z.sendErr(z.finish(seen, raw, start))
			return
		}
		if fh[0] != frameUnit {
			z.sendErr(formatErr(unit, -1, start, "expected a unit or index frame, found kind %#x", fh[0]))
			return
		}
		if err := z.readFull(fh[1:], "a unit header", unit); err != nil {
			z.sendErr(err)
			return
		}
		uh, err := parseUnitHeader(fh[:], unit, start)
		if err != nil {
			z.sendErr(err)
			return
		}
		body := make([]byte, uh.compLen)
		if err := z.readFull(body, "a unit", unit); err != nil {
			z.sendErr(err)
			return
		}
		seen = append(seen, UnitInfo{CompOffset: start, RawOffset: raw, CompLen: unitHeaderSize + uh.compLen, RawLen: uh.rawLen})
		raw += int64(uh.rawLen)
		p := &pending{out: make([]byte, uh.rawLen), done: make(chan struct{})}
		select {
		case z.sem <- struct{}{}:
		case <-z.stop:
			return
		}
		go func() {
			p.err = decodeFrame(p.out, append(fh[:], body...), uh, unit, start, z.base)
			close(p.done)
			<-z.sem
		}()
		if !z.send(p) {
			return
		}
	}
}

// finish reads the seek index and trailer and checks them against the units
// the stream held. It returns io.EOF when all is well.
func (z *Reader) finish(seen []UnitInfo, raw int64, idxOff int64) error {
	head := make([]byte, indexHeadSize)
	head[0] = frameIndex
	if err := z.readFull(head[1:], "the seek index", -1); err != nil {
		return err
	}
	n := int(binary.LittleEndian.Uint32(head[4:]))
	if n != len(seen) {
		return formatErr(-1, -1, idxOff, "seek index lists %d units, stream holds %d", n, len(seen))
	}
	idx := append(head, make([]byte, n*indexEntrySize+4)...)
	if err := z.readFull(idx[indexHeadSize:], "the seek index", -1); err != nil {
		return err
	}
	units, total, err := parseIndex(idx, idxOff)
	if err != nil {
		return err
	}
	if total != raw {
		return formatErr(-1, -1, idxOff, "seek index totals %d bytes, stream holds %d", total, raw)
	}
	for i := range units {
		if units[i] != seen[i] {
			return formatErr(i, -1, idxOff, "seek index entry disagrees with the unit")
		}
	}
	var tb [trailerSize]byte
	if err := z.readFull(tb[:], "the trailer", -1); err != nil {
		return err
	}
	want := appendTrailer(nil, idxOff)
	if string(tb[:]) != string(want) {
		return formatErr(-1, -1, z.read-trailerSize, "trailer damaged")
	}
	// A stream ends at its trailer: anything after it is an error, not
	// silently dropped data (Open, reading from the end, would not even
	// find this stream's trailer).
	var one [1]byte
	if n, _ := io.ReadFull(z.r, one[:]); n > 0 {
		return formatErr(-1, -1, z.read, "unexpected data after the end of the glyd stream")
	}
	return io.EOF
}

// Read returns decoded bytes in order.
func (z *Reader) Read(p []byte) (int, error) {
	for len(z.cur) == 0 {
		if z.err != nil {
			return 0, z.err
		}
		pd, ok := <-z.queue
		if !ok {
			z.err = errors.New("glyd: read from closed Reader")
			return 0, z.err
		}
		<-pd.done
		if pd.err != nil {
			z.err = pd.err
			continue
		}
		z.cur = pd.out
	}
	n := copy(p, z.cur)
	z.cur = z.cur[n:]
	return n, nil
}

// WriteTo writes all decoded data to w.
func (z *Reader) WriteTo(w io.Writer) (int64, error) {
	var n int64
	for {
		if len(z.cur) > 0 {
			k, err := w.Write(z.cur)
			n += int64(k)
			z.cur = z.cur[k:]
			if err != nil {
				return n, err
			}
		}
		if z.err != nil {
			if z.err == io.EOF {
				return n, nil
			}
			return n, z.err
		}
		pd, ok := <-z.queue
		if !ok {
			return n, errors.New("glyd: read from closed Reader")
		}
		<-pd.done
		if pd.err != nil {
			z.err = pd.err
			continue
		}
		z.cur = pd.out
	}
}
