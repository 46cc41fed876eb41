package chunkstore

import (
	"container/list"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	badger "github.com/dgraph-io/badger/v4"
	"golang.org/x/sync/errgroup"

	"github.com/glyd/glyd/codec"
)

// chunkData returns a chunk's plain bytes, decoding its delta chain as
// needed (at most MaxDepth+1 decodes), through the cache.
func (s *Store) chunkData(id ID) ([]byte, error) {
	if b, ok := s.cache.get(id); ok {
		return b, nil
	}
	// One decode per chunk at a time: a reader that reaches a chunk the
	// read-ahead is decoding waits for it instead of decoding it again.
	s.flightMu.Lock()
	if f, ok := s.flight[id]; ok {
		s.flightMu.Unlock()
		<-f.done
		return f.data, f.err
	}
	f := &flight{done: make(chan struct{})}
	if s.flight == nil {
		s.flight = map[ID]*flight{}
	}
	s.flight[id] = f
	s.flightMu.Unlock()
	defer func() {
		s.flightMu.Lock()
		delete(s.flight, id)
		s.flightMu.Unlock()
		close(f.done)
	}()
	if b, ok := s.cache.get(id); ok {
		f.data = b
		return b, nil
	}
	r, err := s.record(id)
	if err != nil {
		f.err = err
		return nil, err
	}
	f.data, f.err = s.decodeChunk(id, r, 0)
	return f.data, f.err
}

// flight is a chunk being decoded.
type flight struct {
	done chan struct{}
	data []byte
	err  error
}

func (s *Store) decodeChunk(id ID, r chunkRecord, hops int) ([]byte, error) {
	if hops > MaxDepth {
		return nil, corrupt("chunk %s: delta chain longer than %d", id.Short(), MaxDepth)
	}
	frame, err := s.blobs.Get(id)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil, corrupt("chunk %s: frame missing", id.Short())
		}
		return nil, err
	}
	var base []byte
	if r.kind == kindDelta {
		if b, ok := s.cache.get(r.base); ok {
			base = b
		} else {
			br, err := s.record(r.base)
			if err != nil {
				return nil, corrupt("chunk %s: base %s: %v", id.Short(), r.base.Short(), err)
			}
			if base, err = s.decodeChunk(r.base, br, hops+1); err != nil {
				return nil, err
			}
		}
	}
	data, err := codec.DecodeChunk(frame, base)
	if err != nil {
		return nil, corrupt("chunk %s: %v", id.Short(), err)
	}
	if len(data) != r.rawLen {
		return nil, corrupt("chunk %s: decodes to %d bytes, record says %d", id.Short(), len(data), r.rawLen)
	}
	s.cache.put(id, data)
	return data, nil
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
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	if off >= o.m.size {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	n := len(p)
	if int64(n) > o.m.size-off {
		n = int(o.m.size - off)
	}
	end := off + int64(n)
	first := sort.Search(len(o.m.chunks), func(i int) bool {
		return o.m.offsets[i]+int64(o.m.chunks[i].rawLen) > off
	})
	var g errgroup.Group
	g.SetLimit(o.s.opts.Threads)
	for i := first; i < len(o.m.chunks) && o.m.offsets[i] < end; i++ {
		c, start := o.m.chunks[i], o.m.offsets[i]
		if c.id == (ID{}) {
			lo, hi := max(off, start), min(end, start+int64(c.rawLen))
			clear(p[lo-off : hi-off])
			continue
		}
		g.Go(func() error {
			data, err := o.s.chunkData(c.id)
			if err != nil {
				return fmt.Errorf("object %q at offset %d: %w", o.name, start, err)
			}
			lo, hi := max(off, start), min(end, start+int64(c.rawLen))
			copy(p[lo-off:hi-off], data[lo-start:hi-start])
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return 0, err
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
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

// chunkCache keeps recently decoded chunks, bounded by bytes.
type chunkCache struct {
	mu    sync.Mutex
	limit int64
	size  int64
	ll    *list.List
	items map[ID]*list.Element
}

type cacheEntry struct {
	id   ID
	data []byte
}

func newChunkCache(limit int64) *chunkCache {
	return &chunkCache{limit: limit, ll: list.New(), items: map[ID]*list.Element{}}
}

func (c *chunkCache) get(id ID) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[id]; ok {
		c.ll.MoveToFront(e)
		return e.Value.(*cacheEntry).data, true
	}
	return nil, false
}

func (c *chunkCache) put(id ID, data []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[id]; ok || int64(len(data)) > c.limit {
		return
	}
	c.items[id] = c.ll.PushFront(&cacheEntry{id, data})
	c.size += int64(len(data))
	for c.size > c.limit {
		e := c.ll.Back()
		ent := e.Value.(*cacheEntry)
		c.ll.Remove(e)
		delete(c.items, ent.id)
		c.size -= int64(len(ent.data))
	}
}

// drop forgets a chunk (after GC deleted it).
func (c *chunkCache) drop(id ID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[id]; ok {
		c.ll.Remove(e)
		delete(c.items, id)
		c.size -= int64(len(e.Value.(*cacheEntry).data))
	}
}

// Prefetch decodes the chunks covering [off, off+n) into the cache in the
// background (read-ahead for a sequential reader), in order, as many at
// once as the store has threads. It returns at once.
func (o *Object) Prefetch(off, n int64) {
	if off < 0 || off >= o.m.size || n <= 0 {
		return
	}
	end := min(off+n, o.m.size)
	first := sort.Search(len(o.m.chunks), func(i int) bool {
		return o.m.offsets[i]+int64(o.m.chunks[i].rawLen) > off
	})
	go func() {
		for i := first; i < len(o.m.chunks) && o.m.offsets[i] < end; i++ {
			id := o.m.chunks[i].id
			if id == (ID{}) {
				continue
			}
			if _, ok := o.s.cache.get(id); ok {
				continue
			}
			o.s.prefetch <- struct{}{}
			go func() {
				defer func() { <-o.s.prefetch }()
				o.s.chunkData(id) // errors surface when the reader gets there
			}()
		}
	}()
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
