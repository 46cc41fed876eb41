package fs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/glyd/glyd/chunkstore"
	"github.com/glyd/glyd/internal/buflist"
	"github.com/glyd/glyd/packed"
	"github.com/glyd/glyd/safetensors"
)

// body is one version of a file's bytes as reads see them: a chunk store
// object holding the bytes, or one holding a safetensors file's packed
// form, decoded as it is read.
type body interface {
	Size() int64
	ReadAt(p []byte, off int64) (int, error)
	// Prefetch decodes [off, off+n) in the background.
	Prefetch(off, n int64)
	// Slices returns up to n bytes at off without copying them (io.EOF
	// when fewer), for a reply written with writev; release lets them go.
	Slices(off int64, n int) (vecs [][]byte, release func(), err error)
	// Stored is what the version's chunks take in the store.
	Stored() (int64, error)
	Modified() time.Time
	// Refs lists the chunks the bytes are, for the next version to reuse
	// the ones it leaves unchanged; nil when the bytes are decoded from
	// something else (a packed file), so there are none to reuse.
	Refs() []chunkstore.Ref
}

// openBody opens the version held in object name.
func (f *FS) openBody(name string) (body, error) {
	o, err := f.store.OpenObject(name)
	if err != nil {
		return nil, err
	}
	if !strings.HasSuffix(name, packedSuffix) {
		return o, nil
	}
	pf, err := packed.OpenReaderAt(o, o.Size())
	if err != nil {
		return nil, err
	}
	return &packedBody{o: o, f: pf, wins: map[int64]*window{}}, nil
}

// frozenBody opens the version in object name, which never changes (a
// snapshot's), keeping the last few open: a packed one keeps its decoded
// windows across the kernel's reads.
func (f *FS) frozenBody(name string) (body, error) {
	f.frozenMu.Lock()
	b := f.frozen[name]
	f.frozenMu.Unlock()
	if b != nil {
		return b, nil
	}
	b, err := f.openBody(name)
	if err != nil {
		return nil, err
	}
	f.frozenMu.Lock()
	if len(f.frozen) >= 16 {
		clear(f.frozen)
	}
	f.frozen[name] = b
	f.frozenMu.Unlock()
	return b, nil
}

// packedBody reads a safetensors file stored packed. It decodes a window
// (4 MiB of the original file) at a time and keeps the last few, so the
// kernel's reads of a tensor decode its groups once (and each span's table
// once per window); a window a reader waits for decodes on every core, and
// a sequential reader's read-ahead decodes the next windows in the
// background.
type packedBody struct {
	o *chunkstore.Object
	f *packed.File

	mu    sync.Mutex
	wins  map[int64]*window
	order []int64  // windows by when they were started, oldest first
	spare [][]byte // buffers of evicted windows, for the next ones
}

const windowSize = 4 << 20

// keepWindows is how many decoded windows a packed body keeps (a variable
// only so that a test can make eviction happen on a small file).
var keepWindows = 8

// window is one decoded window. Its data is read under packedBody.mu once
// done is closed; eviction takes it for reuse (data nil), and a reader
// that finds it gone asks again.
type window struct {
	done chan struct{}
	data []byte
	err  error
	// held counts replies being written from data (Slices); an evicted
	// window's buffer is recycled by the last of them instead.
	held    int
	evicted bool
}

// decoders bounds the windows decoded in the background at once.
var decoders = make(chan struct{}, runtime.GOMAXPROCS(0))

// windowBufs holds the window buffers of files no longer open, for the
// next ones: a fresh buffer per file cost more than decoding into it
// (first-touch page faults), most of a small model's read.
var windowBufs = buflist.List{Max: 32 << 20, Round: 256 << 10}

// release gives the windows' buffers to the next files; a later read
// decodes its window again. glydfs calls it once no handle is open (the
// last release, or the kernel forgetting the inode), so no read is in
// flight.
func (b *packedBody) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	bufs := b.spare
	for _, w := range b.wins {
		select {
		case <-w.done:
			if w.held > 0 {
				w.evicted = true // the last reply recycles it
			} else if w.data != nil {
				bufs = append(bufs, w.data)
				w.data = nil
			}
		default: // a read-ahead decode still running keeps its buffer
		}
	}
	b.wins, b.order, b.spare = map[int64]*window{}, nil, nil
	for _, buf := range bufs {
		windowBufs.Put(buf)
	}
}

func (b *packedBody) Size() int64            { return b.f.Size() }
func (b *packedBody) Stored() (int64, error) { return b.o.Stored() }
func (b *packedBody) Modified() time.Time    { return b.o.Modified() }
func (b *packedBody) Refs() []chunkstore.Ref { return nil }
func (b *packedBody) windowRange(i int64) (int64, int64) {
	lo := i * windowSize
	return lo, min(lo+windowSize, b.f.Size())
}

// get returns window i, starting its decode when it is not cached: here
// when wait is set, in the background otherwise.
func (b *packedBody) get(i int64, wait bool) *window {
	b.mu.Lock()
	if w := b.wins[i]; w != nil {
		b.mu.Unlock()
		return w
	}
	w := &window{done: make(chan struct{})}
	b.wins[i] = w
	b.order = append(b.order, i)
	for len(b.order) > keepWindows {
		old := b.order[0]
		b.order = b.order[1:]
		if ow := b.wins[old]; ow != nil {
			delete(b.wins, old)
			select {
			case <-ow.done: // decoded: its buffer can serve the next window
				if ow.held > 0 {
					ow.evicted = true // a reply is being written from it
					break
				}
				if ow.data != nil && len(b.spare) < 2 {
					b.spare = append(b.spare, ow.data)
				}
				ow.data = nil
			default: // still decoding: its decoder keeps the buffer
			}
		}
	}
	lo, hi := b.windowRange(i)
	var buf []byte
	if k := len(b.spare); k > 0 && cap(b.spare[k-1]) >= int(hi-lo) {
		buf, b.spare = b.spare[k-1][:hi-lo], b.spare[:k-1]
	} else {
		buf = windowBufs.Get(int(hi - lo))
	}
	b.mu.Unlock()
	// Every window decodes on all cores: a reader may be waiting for one
	// the read-ahead started.
	decode := func() {
		b.prefetchPacked(lo, hi)
		_, err := b.f.ReadAtThreads(buf, lo, 0)
		b.mu.Lock()
		w.data, w.err = buf, err
		if err != nil && b.wins[i] == w {
			delete(b.wins, i) // the next read tries again
		}
		b.mu.Unlock()
		close(w.done)
	}
	if wait {
		decode()
	} else {
		go func() {
			decoders <- struct{}{}
			defer func() { <-decoders }()
			decode()
		}()
	}
	return w
}

// ReadAt copies what Slices returns.
func (b *packedBody) ReadAt(p []byte, off int64) (int, error) {
	vecs, release, err := b.Slices(off, len(p))
	if vecs == nil && err != nil && err != io.EOF {
		return 0, err
	}
	n := 0
	for _, v := range vecs {
		n += copy(p[n:], v)
	}
	release()
	return n, err
}

// Slices returns the decoded bytes [off, off+n) as slices of the windows
// that hold them, each held until release (a reply written from a window
// keeps its buffer from being recycled meanwhile).
func (b *packedBody) Slices(off int64, n int) ([][]byte, func(), error) {
	var vecs [][]byte
	var held []*window
	release := func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, w := range held {
			w.held--
			if w.held == 0 && w.evicted && w.data != nil {
				windowBufs.Put(w.data)
				w.data = nil
			}
		}
		held = nil
	}
	end := min(off+int64(n), b.f.Size())
	for off < end {
		i := off / windowSize
		w := b.get(i, true)
		<-w.done
		b.mu.Lock()
		if w.err != nil {
			b.mu.Unlock()
			release()
			return nil, nil, w.err
		}
		if w.data == nil || w.evicted {
			b.mu.Unlock()
			continue // evicted meanwhile: decode it again
		}
		lo, _ := b.windowRange(i)
		k := min(end-off, lo+int64(len(w.data))-off)
		vecs = append(vecs, w.data[off-lo:off-lo+k])
		w.held++
		held = append(held, w)
		b.mu.Unlock()
		off += k
	}
	if iovLen(vecs) < n {
		return vecs, release, io.EOF
	}
	return vecs, release, nil
}

func iovLen(vecs [][]byte) int {
	n := 0
	for _, v := range vecs {
		n += len(v)
	}
	return n
}

// prefetchPacked has the store read and decode, in parallel, the chunks of
// the packed object that a decode of the original bytes [lo, hi) will ask
// for one range at a time: the same share of the packed object, with a
// margin (tensors pack to different ratios).
func (b *packedBody) prefetchPacked(lo, hi int64) {
	ratio := float64(b.o.Size()) / float64(max(1, b.f.Size()))
	from := int64(float64(lo)*ratio) - 1<<20
	to := int64(float64(hi)*ratio) + 1<<20
	b.o.Prefetch(max(0, from), to-max(0, from))
}

func (b *packedBody) Prefetch(off, n int64) {
	for i := off / windowSize; i*windowSize < min(off+n, b.f.Size()); i++ {
		b.get(i, false)
	}
}

// pack returns c's bytes in packed form when they are a safetensors file
// that packs smaller, nil otherwise. The packed form is decoded and
// compared with the bytes before it is used: a version is never stored in
// a form that does not give them back.
func (f *FS) pack(c *content) ([]byte, error) {
	if f.opts.NoPack || c.size < 16 || c.size > f.opts.PackLimit {
		return nil, nil
	}
	// The header first (safetensors.Read reads and validates only it):
	// the whole file is read only for one that is a safetensors file.
	if _, err := safetensors.Read(readerAtFunc(c.readAt), c.size); err != nil {
		if errors.Is(err, safetensors.ErrInvalid) {
			return nil, nil
		}
		return nil, err
	}
	file := make([]byte, c.size)
	if err := c.readAt(file, 0); err != nil {
		return nil, err
	}
	p, err := packed.Encode(file, packed.Options{})
	if err != nil || int64(len(p)) >= c.size {
		return nil, nil // not a valid safetensors file, or nothing gained
	}
	pf, err := packed.Open(p, nil)
	if err != nil {
		return nil, fmt.Errorf("glydfs: packing: %w", err)
	}
	cw := &compareWriter{want: file}
	if _, err := pf.WriteTo(cw, 0, nil); err != nil || len(cw.want) != 0 {
		f.log.Printf("packing a %d-byte safetensors file did not give its bytes back (%v): stored as bytes", c.size, err)
		return nil, nil
	}
	return p, nil
}

// compareWriter checks what is written against the rest of want, failing
// at the first difference.
type compareWriter struct{ want []byte }

func (w *compareWriter) Write(p []byte) (int, error) {
	if len(p) > len(w.want) || !bytes.Equal(p, w.want[:len(p)]) {
		return 0, errors.New("the decoded bytes differ from the original")
	}
	w.want = w.want[len(p):]
	return len(p), nil
}
