package chunkstore

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	badger "github.com/dgraph-io/badger/v4"
	"golang.org/x/sync/errgroup"

	"github.com/glyd/glyd/codec"
)

// chunkData returns a chunk's plain bytes, decoding its delta chain as
// needed (at most MaxDepth+1 decodes), through the cache. The caller holds
// the bytes until it releases them (s.cache.release): their buffer is
// reused only after that.
func (s *Store) chunkData(id ID) (*cached, error) {
	for {
		if c := s.cache.acquire(id); c != nil {
			return c, nil
		}
		// One decode per chunk at a time: a reader that reaches a chunk
		// the read-ahead is decoding waits for it, then takes it from the
		// cache (or, should it be gone already, decodes it itself).
		s.flightMu.Lock()
		if f, ok := s.flight[id]; ok {
			s.flightMu.Unlock()
			<-f.done
			if f.err != nil {
				return nil, f.err
			}
			continue
		}
		f := &flight{done: make(chan struct{})}
		if s.flight == nil {
			s.flight = map[ID]*flight{}
		}
		s.flight[id] = f
		s.flightMu.Unlock()
		c, err := s.decodeFlight(id)
		f.err = err
		s.flightMu.Lock()
		delete(s.flight, id)
		s.flightMu.Unlock()
		close(f.done)
		return c, err
	}
}

func (s *Store) decodeFlight(id ID) (*cached, error) {
	if c := s.cache.acquire(id); c != nil {
		return c, nil
	}
	r, err := s.readRecord(id)
	if err != nil {
		return nil, err
	}
	return s.decodeChunk(id, r, 0)
}

// flight is a chunk being decoded.
type flight struct {
	done chan struct{}
	err  error
}

// decodeChunk decodes chunk id (record r) into a buffer from the cache's
// pool and caches it, held for the caller. Its bases first, then its
// frame, decoded where the blobs keep it (Blobs.View: no copy of the
// frame into a buffer of ours).
func (s *Store) decodeChunk(id ID, r chunkRecord, hops int) (*cached, error) {
	if hops > MaxDepth {
		return nil, corrupt("chunk %s: delta chain longer than %d", id.Short(), MaxDepth)
	}
	var bases [2][]byte
	ids := r.bases()
	for i, b := range ids {
		bc := s.cache.acquire(b)
		if bc == nil {
			br, err := s.readRecord(b)
			if err != nil {
				return nil, corrupt("chunk %s: base %s: %v", id.Short(), b.Short(), err)
			}
			if bc, err = s.decodeChunk(b, br, hops+1); err != nil {
				return nil, err
			}
		}
		defer s.cache.release(bc)
		bases[i] = bc.data
	}
	buf := s.cache.alloc(r.rawLen)
	var derr error
	err := s.blobs.View(id, func(frame []byte) error {
		derr = codec.DecodeChunkFrom(buf, frame, bases[:len(ids)])
		return nil
	})
	if err == nil && derr != nil {
		err = corrupt("chunk %s: %v", id.Short(), derr)
	}
	if err != nil {
		s.cache.free(buf)
		if errors.Is(err, ErrNotFound) {
			return nil, corrupt("chunk %s: frame missing", id.Short())
		}
		return nil, err
	}
	return s.cache.insert(id, buf, hops > 0 && !s.opts.ReadsCachedAbove), nil
}

// ObjectInfo describes a stored object.
type ObjectInfo struct {
	Name     string
	Size     int64
	Chunks   int
	Modified time.Time
}

// Object is an open object: ReadAt decodes only the chunks covering the
// requested range. Safe for concurrent use.
type Object struct {
	s    *Store
	name string
	m    *manifest
}

// OpenObject opens the object name for reading.
func (s *Store) OpenObject(name string) (*Object, error) {
	m, err := s.manifest(name)
	if err != nil {
		return nil, err
	}
	return &Object{s: s, name: name, m: m}, nil
}

func (s *Store) manifest(name string) (*manifest, error) {
	var m *manifest
	err := s.db.View(func(txn *badger.Txn) error {
		it, err := txn.Get(objectKey(name))
		if err != nil {
			return err
		}
		return it.Value(func(v []byte) (err error) {
			m, err = decodeManifest(v)
			return err
		})
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return nil, fmt.Errorf("object %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("object %q: %w", name, err)
	}
	return m, nil
}

// Size is the object's length.
func (o *Object) Size() int64 { return o.m.size }

// Info describes the object.
func (o *Object) Info() ObjectInfo {
	return ObjectInfo{Name: o.name, Size: o.m.size, Chunks: len(o.m.chunks), Modified: o.m.modified}
}

// ReadAt reads len(p) bytes at off, decoding the chunks that cover them,
// several at once.
func (o *Object) ReadAt(p []byte, off int64) (int, error) {
	n, err := o.clip(off, len(p))
	if n == 0 {
		return 0, err
	}
	err = o.eachChunk(off, n, func(_ int, cc *cached, lo, hi, start int64) {
		if cc == nil {
			clear(p[lo-off : hi-off])
			return
		}
		copy(p[lo-off:hi-off], cc.data[lo-start:hi-start])
		o.s.cache.release(cc)
	})
	if err != nil {
		return 0, err
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Slices returns up to n bytes at off (fewer at the object's end, with
// io.EOF) as slices of the store's decoded chunks, and of zeros for holes,
// without copying them: for a reply written with writev. The slices stay
// valid and unchanged until release is called, which must be done once;
// they must not be written to.
func (o *Object) Slices(off int64, n int) (vecs [][]byte, release func(), err error) {
	m, err := o.clip(off, n)
	if m == 0 {
		return nil, func() {}, err
	}
	count := o.chunkIndex(off+int64(m)-1) - o.chunkIndex(off) + 1
	vecs = make([][]byte, count)
	held := make([]*cached, count) // nil for holes
	err = o.eachChunk(off, m, func(i int, cc *cached, lo, hi, start int64) {
		if cc == nil {
			vecs[i] = zeroBytes(int(hi - lo))
			return
		}
		vecs[i], held[i] = cc.data[lo-start:hi-start], cc
	})
	release = func() {
		for _, cc := range held {
			if cc != nil {
				o.s.cache.release(cc)
			}
		}
		held = nil
	}
	if err != nil {
		release()
		return nil, nil, err
	}
	if m < n {
		return vecs, release, io.EOF
	}
	return vecs, release, nil
}

// zeros backs the slices Slices returns for holes (never written).
var zeros [1 << 20]byte

func zeroBytes(n int) []byte {
	if n <= len(zeros) {
		return zeros[:n:n]
	}
	return make([]byte, n)
}

// clip returns how many of n bytes at off the object holds, and io.EOF
// (or an error for a negative offset) when that is fewer.
func (o *Object) clip(off int64, n int) (int, error) {
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	if off >= o.m.size {
		if n == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	return int(min(int64(n), o.m.size-off)), nil
}

// chunkIndex is the index of the chunk that holds byte off.
func (o *Object) chunkIndex(off int64) int {
	return sort.Search(len(o.m.chunks), func(i int) bool {
		return o.m.offsets[i]+int64(o.m.chunks[i].rawLen) > off
	})
}

// eachChunk calls take for each chunk covering [off, off+n) (n > 0, inside
// the object), several chunks at once: with its index among them (0 for
// the chunk holding off), the chunk held (nil for a hole), which take must
// release, and the part of the range it holds, [lo, hi), the chunk
// starting at start. A chunk the range reaches the end
// of is demoted afterwards when the reader caches what it reads.
func (o *Object) eachChunk(off int64, n int, take func(i int, cc *cached, lo, hi, start int64)) error {
	end := off + int64(n)
	first := o.chunkIndex(off)
	one := func(i int) error {
		c, start := o.m.chunks[i], o.m.offsets[i]
		lo, hi := max(off, start), min(end, start+int64(c.rawLen))
		if c.id == (ID{}) {
			take(i-first, nil, lo, hi, start)
			return nil
		}
		cc, err := o.s.chunkData(c.id)
		if err != nil {
			return fmt.Errorf("object %q at offset %d: %w", o.name, start, err)
		}
		if len(cc.data) != c.rawLen {
			o.s.cache.release(cc)
			return fmt.Errorf("object %q at offset %d: %w", o.name, start,
				corrupt("chunk %s holds %d bytes, the manifest says %d", c.id.Short(), len(cc.data), c.rawLen))
		}
		if o.s.opts.ReadsCachedAbove && hi == start+int64(c.rawLen) {
			// Read to its end: the reader has it now; keep the room for
			// bases and for what read-ahead decodes next.
			o.s.cache.demote(cc)
		}
		take(i-first, cc, lo, hi, start)
		return nil
	}
	last := first
	for last+1 < len(o.m.chunks) && o.m.offsets[last+1] < end {
		last++
	}
	if last == first {
		// One chunk (most small reads): no goroutine to start and wait for.
		return one(first)
	}
	var g errgroup.Group
	g.SetLimit(o.s.opts.Threads)
	for i := first; i <= last; i++ {
		g.Go(func() error { return one(i) })
	}
	return g.Wait()
}

// WriteTo writes the whole object to w, decoding ahead in parallel.
func (o *Object) WriteTo(w io.Writer) (int64, error) {
	const window = 8 << 20
	buf := make([]byte, window)
	var done int64
	for done < o.m.size {
		n, err := o.ReadAt(buf, done)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return done, werr
			}
			done += int64(n)
		}
		if err != nil && err != io.EOF {
			return done, err
		}
	}
	return done, nil
}

// Prefetch decodes the chunks covering [off, off+n) into the cache in the
// background (read-ahead for a sequential reader), in order, as many at
// once as the store has prefetch workers. It returns at once.
func (o *Object) Prefetch(off, n int64) {
	if off < 0 || off >= o.m.size || n <= 0 {
		return
	}
	end := min(off+n, o.m.size)
	first := sort.Search(len(o.m.chunks), func(i int) bool {
		return o.m.offsets[i]+int64(o.m.chunks[i].rawLen) > off
	})
	s := o.s
	s.prefetchOnce.Do(s.startPrefetchers)
	go func() {
		for i := first; i < len(o.m.chunks) && o.m.offsets[i] < end; i++ {
			id := o.m.chunks[i].id
			if id == (ID{}) || s.cache.has(id) {
				continue
			}
			select {
			case s.prefetch <- id:
			case <-s.closing:
				return
			}
		}
	}()
}

// startPrefetchers starts the workers that serve Prefetch: long-lived, so
// that the deep stacks a decode grows (badger's lookups under the codec's)
// are grown once, not once a chunk (a goroutine a chunk spent ~6% of a
// cold sequential read copying stacks).
func (s *Store) startPrefetchers() {
	for range 4 * s.opts.Threads {
		go func() {
			for {
				select {
				case id := <-s.prefetch:
					if c, err := s.chunkData(id); err == nil { // errors surface when the reader gets there
						s.cache.release(c)
					}
				case <-s.closing:
					return
				}
			}
		}()
	}
}

// Stored is what the object's distinct chunks take in the store (each
// delta counted by its own frame, not its bases'; chunks it shares with
// other objects counted in full).
func (o *Object) Stored() (int64, error) {
	seen := map[ID]bool{}
	var n int64
	for _, c := range o.m.chunks {
		if c.id == (ID{}) || seen[c.id] {
			continue
		}
		seen[c.id] = true
		r, err := o.s.record(c.id)
		if err != nil {
			return 0, err
		}
		n += int64(r.storedLen)
	}
	return n, nil
}

// Modified is when the object was written.
func (o *Object) Modified() time.Time { return o.m.modified }
