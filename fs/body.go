package fs

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/glyd/glyd/chunkstore"
	"github.com/glyd/glyd/packed"
)

// body is one version of a file's bytes as reads see them: a chunk store
// object holding the bytes, or one holding a safetensors file's packed
// form, decoded as it is read.
type body interface {
	Size() int64
	ReadAt(p []byte, off int64) (int, error)
	// Prefetch decodes [off, off+n) in the background.
	Prefetch(off, n int64)
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
// (1 MiB of the original file) at a time and keeps the last few, so the
// kernel's 128 KiB reads of a tensor decode its groups once; a sequential
// reader's read-ahead decodes the next windows on other cores.
type packedBody struct {
	o *chunkstore.Object
	f *packed.File

	mu    sync.Mutex
	wins  map[int64]*window
	order []int64 // windows by when they were started, oldest first
}

const (
	windowSize  = 1 << 20
	keepWindows = 24
)

type window struct {
	done chan struct{}
	data []byte
	err  error
}

// decoders bounds the windows decoded in the background at once.
var decoders = make(chan struct{}, runtime.GOMAXPROCS(0))

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
		delete(b.wins, old) // readers holding it still finish with it
	}
	b.mu.Unlock()
	decode := func() {
		lo, hi := b.windowRange(i)
		w.data = make([]byte, hi-lo)
		_, w.err = b.f.ReadAt(w.data, lo)
		if w.err != nil {
			b.mu.Lock()
			if b.wins[i] == w {
				delete(b.wins, i) // the next read tries again
			}
			b.mu.Unlock()
		}
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

func (b *packedBody) ReadAt(p []byte, off int64) (int, error) {
	n := 0
	for n < len(p) && off < b.f.Size() {
		i := off / windowSize
		w := b.get(i, true)
		<-w.done
		if w.err != nil {
			return n, w.err
		}
		lo, _ := b.windowRange(i)
		k := copy(p[n:], w.data[off-lo:])
		n, off = n+k, off+int64(k)
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (b *packedBody) Prefetch(off, n int64) {
	for i := off / windowSize; i*windowSize < min(off+n, b.f.Size()); i++ {
		b.get(i, false)
	}
}

// isSafetensors reports whether a file's first bytes start a safetensors
// header (a length that fits the file and a JSON object): the files worth
// trying to pack.
func isSafetensors(head []byte, size int64) bool {
	if len(head) < 9 {
		return false
	}
	n := binary.LittleEndian.Uint64(head)
	return n >= 2 && n <= uint64(size-8) && head[8] == '{'
}

// pack returns c's bytes in packed form when they are a safetensors file
// that packs smaller, nil otherwise. The packed form is decoded and
// compared with the bytes before it is used: a version is never stored in
// a form that does not give them back.
func (f *FS) pack(c *content) ([]byte, error) {
	if f.opts.NoPack || c.size < 16 || c.size > f.opts.PackLimit {
		return nil, nil
	}
	head := make([]byte, 9)
	if err := c.readAt(head, 0); err != nil {
		return nil, err
	}
	if !isSafetensors(head, c.size) {
		return nil, nil
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
