package packed

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/glyd/glyd/codec"
	"github.com/glyd/glyd/internal/workers"
	"github.com/glyd/glyd/safetensors"
	"github.com/glyd/glyd/tensor"
)

// maxDirectory caps the directory a reader decodes before trusting it.
const maxDirectory = 64 << 20

// File is an open packed file: its directory and header parsed, its meta
// section decoded as far as the header, everything else decoded on demand.
// It is safe for concurrent use.
type File struct {
	b        []byte      // the packed file, when held in memory
	r        io.ReaderAt // the packed file, when read on demand (OpenReaderAt)
	size     int64       // the packed file's length
	hdr      fileHeader
	dir      *directory
	header   []byte // the safetensors header, rebuilt
	stOnce   sync.Once
	st       *safetensors.Header // parsed by Header
	stErr    error
	payload  []byte
	baseData []byte
	noBase   bool // opened for information without its base

	frames     []metaFrame
	storedOff  int64 // where the stored area starts in the decoded meta
	metaLen    int64 // decoded meta length
	frameMu    sync.Mutex
	frameCache map[int][]byte

	decMu    sync.Mutex
	decoders []*tensor.Decoder
}

type metaFrame struct {
	off, n int   // compressed frame within b
	raw    int64 // decoded offset within the meta section
	rawLen int
}

// NeedsBase reports whether b (the start of a packed file, at least
// HeaderSize bytes) was coded against a base file.
func NeedsBase(b []byte) bool {
	h, err := parseFileHeader(b)
	return err == nil && h.flags&flagBase != 0
}

// Open checks a packed file held in memory (b must stay unchanged while the
// File is used) and reads its directory and header. base is the file it was
// coded against, or nil: a file coded against a base refuses to open
// without the right one.
func Open(b []byte, base []byte) (*File, error) {
	return open(b, base, false)
}

// OpenInfo opens a packed file for its directory, header and Stats only: a
// file coded against a base opens without it (decoding its spans that
// need the base then fails).
func OpenInfo(b []byte) (*File, error) {
	return open(b, nil, true)
}

// OpenReaderAt opens a packed file of size bytes read through r (a file,
// a store object) without holding it in memory: it reads the header and
// the meta section's directory and header frames, and later reads only
// the bytes of the groups (and meta frames) a read needs. Files coded
// against a base need Open.
func OpenReaderAt(r io.ReaderAt, size int64) (*File, error) {
	f := &File{r: r, size: size, frameCache: map[int][]byte{}}
	if err := f.init(nil, false); err != nil {
		return nil, err
	}
	return f, nil
}

func open(b []byte, base []byte, noBase bool) (*File, error) {
	f := &File{b: b, size: int64(len(b)), frameCache: map[int][]byte{}, noBase: noBase}
	if err := f.init(base, noBase); err != nil {
		return nil, err
	}
	return f, nil
}

// bytesAt returns n bytes of the packed file at off: part of it when it is
// held in memory, a fresh copy read through r otherwise.
func (f *File) bytesAt(off, n int64) ([]byte, error) {
	if off < 0 || n < 0 || off > f.size || n > f.size-off {
		return nil, formatErrorf("range %d+%d outside the %d-byte file", off, n, f.size)
	}
	if f.r == nil {
		return f.b[off : off+n], nil
	}
	buf := make([]byte, n)
	return buf, f.readInto(buf, off)
}

func (f *File) init(base []byte, noBase bool) error {
	hb, err := f.bytesAt(0, min(f.size, HeaderSize))
	if err != nil {
		return err
	}
	h, err := parseFileHeader(hb)
	if err != nil {
		return err
	}
	size := uint64(f.size)
	if h.metaLen > size || h.payloadStart()+h.payLen != size || h.payLen > size {
		return formatErrorf("file of %d bytes, header says %d (meta %d, payload %d): truncated or damaged",
			size, h.payloadStart()+h.payLen, h.metaLen, h.payLen)
	}
	pad, err := f.bytesAt(int64(HeaderSize+h.metaLen), int64(h.payloadStart()-HeaderSize-h.metaLen))
	if err != nil {
		return err
	}
	for _, c := range pad {
		if c != 0 {
			return formatErrorf("padding before the payload is not zero")
		}
	}
	f.hdr = h
	if f.r == nil {
		f.payload = f.b[h.payloadStart():]
	} else if h.flags&flagBase != 0 {
		return errors.New("packed: the file was coded against a base file: it opens only in memory, with its base")
	}
	if h.flags&flagBase != 0 && !noBase {
		if base == nil {
			return ErrNeedBase
		}
		if checksum(base) != h.baseTag {
			return ErrWrongBase
		}
		bst, err := safetensors.Parse(base)
		if err != nil {
			return fmt.Errorf("base: %w", err)
		}
		f.baseData = base[bst.DataStart:]
	}
	if err := f.indexFrames(); err != nil {
		return err
	}
	return f.readDirectory()
}

// ErrNeedBase and ErrWrongBase refuse a file coded against a base file
// when it is missing or is not the one the file was coded against.
var (
	ErrNeedBase  = errors.New("packed: the file was coded against a base file: give the base (the earlier version)")
	ErrWrongBase = errors.New("packed: the base given is not the file this one was coded against")
)

// indexFrames walks the meta section's chunk frames by their headers.
func (f *File) indexFrames() error {
	metaLen := int64(f.hdr.metaLen)
	var raw int64
	for pos := int64(0); pos < metaLen; {
		if metaLen-pos < 16 {
			return formatErrorf("meta section: truncated frame header at byte %d", pos)
		}
		fh, err := f.bytesAt(HeaderSize+pos, 16)
		if err != nil {
			return err
		}
		n := 16 + int64(binary.LittleEndian.Uint32(fh[8:]))
		if n > metaLen-pos {
			return formatErrorf("meta section: frame at byte %d runs past the section", pos)
		}
		frame, err := f.bytesAt(HeaderSize+pos, n)
		if err != nil {
			return err
		}
		info, err := codec.InspectChunk(frame)
		if err != nil {
			return formatErrorf("meta section: frame at byte %d: %v", pos, err)
		}
		f.frames = append(f.frames, metaFrame{off: HeaderSize + int(pos), n: int(n), raw: raw, rawLen: info.RawLen})
		raw += int64(info.RawLen)
		pos += n
	}
	f.metaLen = raw
	return nil
}

// frame decodes meta frame i (the last few stay cached).
func (f *File) frame(i int) ([]byte, error) {
	f.frameMu.Lock()
	defer f.frameMu.Unlock()
	if b, ok := f.frameCache[i]; ok {
		return b, nil
	}
	fr := f.frames[i]
	frame, err := f.bytesAt(int64(fr.off), int64(fr.n))
	if err != nil {
		return nil, err
	}
	b, err := codec.DecodeChunk(frame, nil)
	if err != nil {
		return nil, formatErrorf("meta section: %v", err)
	}
	if len(f.frameCache) >= 4 {
		clear(f.frameCache)
	}
	f.frameCache[i] = b
	return b, nil
}

// readMeta copies decoded meta bytes [off, off+len(p)) into p.
func (f *File) readMeta(p []byte, off int64) error {
	if off < 0 || off+int64(len(p)) > f.metaLen {
		return formatErrorf("meta section holds %d bytes, wanted %d more at %d", f.metaLen, len(p), off)
	}
	k := sort.Search(len(f.frames), func(i int) bool { return f.frames[i].raw+int64(f.frames[i].rawLen) > off })
	for len(p) > 0 {
		b, err := f.frame(k)
		if err != nil {
			return err
		}
		n := copy(p, b[off-f.frames[k].raw:])
		p, off = p[n:], off+int64(n)
		k++
	}
	return nil
}

func (f *File) readDirectory() error {
	var pre [binary.MaxVarintLen64]byte
	if err := f.readMeta(pre[:min(len(pre), int(f.metaLen))], 0); err != nil {
		return err
	}
	dl, n := binary.Uvarint(pre[:min(len(pre), int(f.metaLen))])
	if n <= 0 || dl > maxDirectory || int64(n)+int64(dl) > f.metaLen {
		return formatErrorf("meta section: bad directory length")
	}
	db := make([]byte, dl)
	if err := f.readMeta(db, int64(n)); err != nil {
		return err
	}
	dir, used, err := parseDirectory(db)
	if err != nil {
		return err
	}
	if used != len(db) {
		return formatErrorf("directory: %d bytes left over", len(db)-used)
	}
	f.dir = dir
	if uint64(8+dir.headerLen+dir.dataLen) != f.hdr.origSize {
		return formatErrorf("header and data (%d + %d bytes) do not make the %d-byte original", dir.headerLen, dir.dataLen, f.hdr.origSize)
	}
	skOff := int64(n) + int64(dl)
	var stored int64
	var pay uint64
	for i := range dir.spans {
		s := &dir.spans[i]
		if s.kind == spanStored {
			stored += s.length
		}
		switch {
		case f.noBase:
		case s.kind == spanCopy || s.flags&spanXOR != 0:
			if f.baseData == nil {
				return formatErrorf("directory: span refers to a base file, but the file was not coded against one")
			}
			if s.baseOff > int64(len(f.baseData)) || s.length > int64(len(f.baseData))-s.baseOff {
				return formatErrorf("directory: span refers to bytes past the base's data")
			}
		}
		if s.coded() {
			pay = uint64(s.payOff + s.payLen)
		}
	}
	if pay != f.hdr.payLen {
		return formatErrorf("directory: span payloads take %d bytes, the payload section holds %d", pay, f.hdr.payLen)
	}
	if skOff+dir.skeletonLen+stored != f.metaLen {
		return formatErrorf("meta section holds %d bytes, the directory accounts for %d", f.metaLen, skOff+dir.skeletonLen+stored)
	}
	f.storedOff = skOff + dir.skeletonLen
	sk := make([]byte, dir.skeletonLen)
	if err := f.readMeta(sk, skOff); err != nil {
		return err
	}
	switch dir.headerCoding {
	case headerElided:
		f.header, err = rebuildHeader(sk, dir.order)
	case headerFieldsC:
		// The header comes out N bytes long (checked below): room for
		// that, unless the fields are too few to make it (damage must not
		// buy a large allocation).
		f.header, err = rebuildStructured(sk, dir.order, int(min(dir.headerLen, 8*int64(len(sk))+1024)))
	default:
		f.header = sk
	}
	if err != nil {
		return err
	}
	if int64(len(f.header)) != dir.headerLen {
		return formatErrorf("header rebuilt to %d bytes, want %d", len(f.header), dir.headerLen)
	}
	f.decoders = make([]*tensor.Decoder, len(dir.spans))
	return nil
}

// Size is the length of the original safetensors file.
func (f *File) Size() int64 { return int64(f.hdr.origSize) }

// Header is the original file's header, parsed. It is parsed on first use:
// decoding the file needs only the header's bytes, and parsing them back
// took a third of opening a packed file (a fifth of decoding a small model
// whole).
func (f *File) Header() (*safetensors.Header, error) {
	f.stOnce.Do(func() {
		st, err := safetensors.ParseHeader(f.header)
		switch {
		case err != nil:
			f.stErr = formatErrorf("header: %v", err)
		case st.DataSize != f.dir.dataLen:
			f.stErr = formatErrorf("header describes %d bytes of data, the directory %d", st.DataSize, f.dir.dataLen)
		default:
			f.st = st
		}
	})
	return f.st, f.stErr
}

// GroupLog2 is the log2 of the group size.
func (f *File) GroupLog2() int { return int(f.hdr.groupLog2) }

// decoder returns span i's decoder, making it on first use.
func (f *File) decoder(i int) (*tensor.Decoder, error) {
	f.decMu.Lock()
	defer f.decMu.Unlock()
	if d := f.decoders[i]; d != nil {
		return d, nil
	}
	s := &f.dir.spans[i]
	pay, err := f.spanPayload(s)
	if err != nil {
		return nil, err
	}
	d, err := tensor.NewDecoder(s.code, int(s.length)/s.code.Kind.WordSize(), int(f.hdr.groupLog2), pay)
	if err != nil {
		return nil, fmt.Errorf("span %d: %w", i, err)
	}
	f.decoders[i] = d
	return d, nil
}

// dropDecoder releases span i's decoder.
func (f *File) dropDecoder(i int) {
	f.decMu.Lock()
	if d := f.decoders[i]; d != nil {
		d.Release()
		f.decoders[i] = nil
	}
	f.decMu.Unlock()
}

// task is one piece of decoding work: part of one span.
type task struct {
	span  int
	d     *tensor.Decoder // coded spans: the decoder that holds the groups
	group int             // coded spans: first group, within d
	count int             // coded spans: groups (1 to groupsPerTask)
	off   int64           // offset within the data section
	n     int64           // bytes
}

// tasks lists the work that produces the data section's bytes [lo, hi):
// runs of up to groupsPerTask groups of coded spans, and pieces of at most
// 1 MiB of the rest.
// decoder gives, for coded span i whose groups [g0, g1) are wanted, the
// decoder to use and the span's group that is its group 0.
func (f *File) tasks(lo, hi int64, decoder func(i int, s *span, g0, g1 int) (*tensor.Decoder, int, error)) ([]task, error) {
	var ts []task
	gl := int(f.hdr.groupLog2)
	for i := range f.dir.spans {
		s := &f.dir.spans[i]
		if s.begin+s.length <= lo || s.begin >= hi {
			continue
		}
		if !s.coded() {
			for off := max(lo, s.begin); off < min(hi, s.begin+s.length); off += 1 << 20 {
				ts = append(ts, task{span: i, off: off, n: min(1<<20, min(hi, s.begin+s.length)-off)})
			}
			continue
		}
		ws := int64(s.code.Kind.WordSize())
		gb := ws << gl // bytes per group
		g0 := int((max(lo, s.begin) - s.begin) / gb)
		g1 := int((min(hi, s.begin+s.length) - s.begin + gb - 1) / gb)
		d, base, err := decoder(i, s, g0, g1)
		if err != nil {
			return nil, err
		}
		for g := g0; g < g1; g += groupsPerTask {
			t := task{span: i, d: d, group: g - base, count: min(groupsPerTask, g1-g), off: s.begin + int64(g)*gb}
			last := t.group + t.count
			_, n := d.Group(last - 1)
			t.n = int64(last-1-t.group)*gb + int64(n)*ws
			ts = append(ts, t)
		}
	}
	return ts, nil
}

// groupsPerTask is the most groups a task holds, and batchGroups about
// how many a batch of tasks holds: a batch is one worker's piece of work,
// its groups decoded together (tensor.DecodeJobs interleaves them, across
// spans).
const (
	groupsPerTask = 4
	batchGroups   = 64
	batchBytes    = 1 << 20
)

// batches cuts tasks into batches: consecutive runs of about batchGroups
// groups or batchBytes bytes, as index ranges [b[i], b[i+1]).
func batches(ts []task) []int {
	b := []int{0}
	groups, bytes := 0, int64(0)
	for i, t := range ts {
		if (groups >= batchGroups || bytes >= batchBytes) && i > b[len(b)-1] {
			b = append(b, i)
			groups, bytes = 0, 0
		}
		groups += t.count
		bytes += t.n
	}
	return append(b, len(ts))
}

// runBatch does tasks ts, putting the part of their bytes within [lo, hi)
// into dst (which holds [lo, hi)): the coded tasks' groups decode together,
// straight into dst where a task lies wholly within it.
func (f *File) runBatch(ts []task, dst []byte, lo, hi int64, scratch *sync.Pool) error {
	var jobsBuf [batchGroups + groupsPerTask]tensor.GroupJob
	var ownerBuf [batchGroups + groupsPerTask]int
	jobs, owner := jobsBuf[:0], ownerBuf[:0] // owner: each job's task
	type partial struct {
		t   int
		buf *[]byte
	}
	var parts []partial
	defer func() {
		for _, p := range parts {
			scratch.Put(p.buf)
		}
	}()
	bufs := make([][]byte, len(ts))
	for i, t := range ts {
		if t.off >= lo && t.off+t.n <= hi {
			bufs[i] = dst[t.off-lo : t.off-lo+t.n]
		} else {
			bp, _ := scratch.Get().(*[]byte)
			if bp == nil || int64(cap(*bp)) < t.n {
				b := make([]byte, t.n)
				bp = &b
			}
			parts = append(parts, partial{i, bp})
			bufs[i] = (*bp)[:t.n]
		}
		if t.d == nil {
			if err := f.run(t, bufs[i]); err != nil {
				return err
			}
			continue
		}
		at := 0
		for k := range t.count {
			_, n := t.d.Group(t.group + k)
			n *= t.d.Kind().WordSize()
			jobs = append(jobs, tensor.GroupJob{D: t.d, G: t.group + k, Dst: bufs[i][at : at+n]})
			owner = append(owner, i)
			at += n
		}
	}
	if j, err := tensor.DecodeJobs(jobs); err != nil {
		t := ts[0]
		if j >= 0 {
			t = ts[owner[j]]
		}
		return fmt.Errorf("span %d: %w", t.span, err)
	}
	for i, t := range ts {
		if t.d != nil && f.dir.spans[t.span].flags&spanXOR != 0 {
			if err := f.xorBase(t, bufs[i]); err != nil {
				return err
			}
		}
	}
	for _, p := range parts {
		t := ts[p.t]
		a, b := max(lo, t.off), min(hi, t.off+t.n)
		copy(dst[a-lo:b-lo], bufs[p.t][a-t.off:b-t.off])
	}
	return nil
}

// run does uncoded task t, writing its bytes to dst (exactly t.n bytes).
func (f *File) run(t task, dst []byte) error {
	s := &f.dir.spans[t.span]
	switch {
	case s.kind == spanStored:
		if err := f.readMeta(dst, f.storedOff+s.metaOff+t.off-s.begin); err != nil || s.flags&spanXOR == 0 {
			return err
		}
		return f.xorBase(t, dst)
	case s.kind == spanCopy:
		if f.baseData == nil {
			return ErrNeedBase
		}
		copy(dst, f.baseData[s.baseOff+t.off-s.begin:])
		return nil
	}
	return fmt.Errorf("span %d: internal error: a coded span outside a batch", t.span)
}

// xorBase XORs task t's bytes (in dst) with the base's.
func (f *File) xorBase(t task, dst []byte) error {
	if f.baseData == nil {
		return ErrNeedBase
	}
	s := &f.dir.spans[t.span]
	b := f.baseData[s.baseOff+t.off-s.begin:]
	for i := range dst {
		dst[i] ^= b[i]
	}
	return nil
}

// decodeData decodes the data section's bytes [lo, hi) into dst, on up to
// threads goroutines. With release set, each span's decoder is dropped once
// its last task is done (a pass over the whole file needs each only once).
func (f *File) decodeData(dst []byte, lo, hi int64, threads int, release bool) error {
	if f.r != nil {
		return f.decodeDataAt(dst, lo, hi, threads)
	}
	ts, err := f.tasks(lo, hi, func(i int, _ *span, _, _ int) (*tensor.Decoder, int, error) {
		d, err := f.decoder(i)
		return d, 0, err
	})
	if err != nil {
		return err
	}
	var left []atomic.Int32
	if release {
		left = make([]atomic.Int32, len(f.dir.spans))
		for _, t := range ts {
			left[t.span].Add(1)
		}
	}
	var scratch sync.Pool
	b := batches(ts)
	return workers.Run(len(b)-1, threads, func(i int) error {
		bt := ts[b[i]:b[i+1]]
		if release {
			defer func() {
				for _, t := range bt {
					if left[t.span].Add(-1) == 0 {
						f.dropDecoder(t.span)
					}
				}
			}()
		}
		return f.runBatch(bt, dst, lo, hi, &scratch)
	})
}

func threadsOr(n int) int {
	if n <= 0 {
		return runtime.GOMAXPROCS(0)
	}
	return n
}

// DecodeTo writes the original file into dst (Size bytes), decoding on up
// to threads goroutines (<= 0: one per CPU).
func (f *File) DecodeTo(dst []byte, threads int) error {
	if int64(len(dst)) != f.Size() {
		panic("packed: DecodeTo: wrong destination size")
	}
	binary.LittleEndian.PutUint64(dst, uint64(f.dir.headerLen))
	copy(dst[8:], f.header)
	return f.decodeData(dst[8+len(f.header):], 0, f.dir.dataLen, threadsOr(threads), true)
}

// Decode returns the original file.
func (f *File) Decode(threads int) ([]byte, error) {
	out := make([]byte, f.Size())
	return out, f.DecodeTo(out, threads)
}

// Decode decodes a packed file held in memory (base: see Open).
func Decode(b, base []byte, threads int) ([]byte, error) {
	f, err := Open(b, base)
	if err != nil {
		return nil, err
	}
	return f.Decode(threads)
}

// window is how much WriteTo decodes at once.
const window = 64 << 20

// WriteTo writes the original file to w, decoding a window at a time on up
// to threads goroutines; progress, if set, is called with the bytes
// written so far.
func (f *File) WriteTo(w io.Writer, threads int, progress func(int64)) (int64, error) {
	head := make([]byte, 8+len(f.header))
	binary.LittleEndian.PutUint64(head, uint64(f.dir.headerLen))
	copy(head[8:], f.header)
	n, err := w.Write(head)
	written := int64(n)
	if err != nil {
		return written, err
	}
	buf := make([]byte, min(window, f.dir.dataLen))
	for lo := int64(0); lo < f.dir.dataLen; lo += window {
		hi := min(f.dir.dataLen, lo+window)
		if err := f.decodeData(buf[:hi-lo], lo, hi, threadsOr(threads), true); err != nil {
			return written, err
		}
		n, err := w.Write(buf[:hi-lo])
		written += int64(n)
		if err != nil {
			return written, err
		}
		if progress != nil {
			progress(written)
		}
	}
	return written, nil
}

// ReadAt reads the original file's bytes at off, decoding only the groups
// (and meta frames) that hold them, on one goroutine.
func (f *File) ReadAt(p []byte, off int64) (int, error) { return f.ReadAtThreads(p, off, 1) }

// ReadAtThreads is ReadAt decoding on up to threads goroutines (<= 0: one
// per CPU).
func (f *File) ReadAtThreads(p []byte, off int64, threads int) (int, error) {
	if off < 0 {
		return 0, errors.New("packed: negative offset")
	}
	size := f.Size()
	if off >= size {
		return 0, io.EOF
	}
	want := len(p)
	n := want
	if int64(n) > size-off {
		n = int(size - off)
	}
	p = p[:n]
	head := int64(8 + len(f.header))
	if off < head {
		var h [8]byte
		binary.LittleEndian.PutUint64(h[:], uint64(f.dir.headerLen))
		k := copy(p, append(h[:], f.header...)[off:])
		p, off = p[k:], off+int64(k)
	}
	if len(p) > 0 {
		if err := f.decodeData(p, off-head, off-head+int64(len(p)), threadsOr(threads), false); err != nil {
			return 0, err
		}
	}
	if n < want {
		return n, io.EOF
	}
	return n, nil
}

// Verify decodes a packed file, checking every checksum, without keeping
// the result.
func Verify(b, base []byte, threads int) error {
	f, err := Open(b, base)
	if err != nil {
		return err
	}
	if _, err := f.Header(); err != nil {
		return err
	}
	_, err = f.WriteTo(io.Discard, threads, nil)
	return err
}

// Span describes one span of the data section, for loaders that decode
// the payload elsewhere (a GPU): coded spans name their code and payload,
// the others are bytes DataAt produces on the CPU.
type Span struct {
	// DataOff and Len place the span in the data section.
	DataOff, Len int64
	// Coded spans: the code and the payload, PayloadLen bytes at
	// PayloadOff within the payload section. Values = Len / word size.
	Coded      bool
	Code       *tensor.Code
	Values     int64
	PayloadOff int64
	PayloadLen int64
	// XOR: the decoded (or stored) bytes are XORed with the base file's
	// data section at BaseOff (files coded against a base).
	XOR     bool
	BaseOff int64
}

// Spans lists the data section's spans in order.
func (f *File) Spans() []Span {
	out := make([]Span, len(f.dir.spans))
	for i := range f.dir.spans {
		s := &f.dir.spans[i]
		out[i] = Span{DataOff: s.begin, Len: s.length, BaseOff: s.baseOff, XOR: s.flags&spanXOR != 0}
		if s.coded() {
			out[i].Coded, out[i].Code, out[i].PayloadOff, out[i].PayloadLen = true, s.code, s.payOff, s.payLen
			out[i].Values = s.length / int64(s.code.Kind.WordSize())
		}
	}
	return out
}

// PayloadSection returns the payload section's offset in the packed file
// and its length: the bytes a GPU loader uploads as they are.
func (f *File) PayloadSection() (off, n int64) {
	return int64(f.hdr.payloadStart()), int64(f.hdr.payLen)
}

// HeaderBytes returns the original file's first 8 + N bytes: the length
// prefix and the JSON header.
func (f *File) HeaderBytes() []byte {
	out := binary.LittleEndian.AppendUint64(nil, uint64(f.dir.headerLen))
	return append(out, f.header...)
}

// DataAt fills p with the data section's bytes at off (any spans; coded
// ones are decoded on the CPU, one thread).
func (f *File) DataAt(p []byte, off int64) error {
	if off < 0 || off+int64(len(p)) > f.dir.dataLen {
		return fmt.Errorf("packed: data range %d+%d outside the %d-byte data section", off, len(p), f.dir.dataLen)
	}
	return f.decodeData(p, off, off+int64(len(p)), 1, false)
}
