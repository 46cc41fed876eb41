package chunkstore

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// A chunk evicted while held keeps its bytes until released; then its
// buffer is reused.
func TestCacheHoldsEvicted(t *testing.T) {
	c := newChunkCache(2 * poolClass)
	a := c.insert(ID{1}, bytes.Repeat([]byte{1}, poolClass), false)
	c.release(c.insert(ID{2}, bytes.Repeat([]byte{2}, poolClass), false))
	c.release(c.insert(ID{3}, c.alloc(poolClass), false)) // evicts 1, still held
	if c.has(ID{1}) || !bytes.Equal(a.data, bytes.Repeat([]byte{1}, poolClass)) {
		t.Fatal("a held chunk was evicted and recycled")
	}
	if b := c.alloc(poolClass); &b[:1][0] == &a.data[0] {
		t.Fatal("alloc handed out a held buffer")
	}
	buf := a.data
	c.release(a)
	if b := c.alloc(poolClass - 5); &b[0] != &buf[0] {
		t.Error("a released buffer was not reused")
	}
}

// Many readers of an object through a cache far smaller than it, so that
// chunks are evicted and their buffers reused all the time, read the
// right bytes (run under -race too).
func TestCacheRecyclingUnderLoad(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s, err := Init(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Versions of one text, so most chunks are deltas with bases to hold.
	var data []byte
	for i := range 4 {
		data = append(data, version(1<<20, i)...)
	}
	if _, err := s.Put("obj", bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	s.cache = newChunkCache(256 << 10)
	o, err := s.OpenObject("obj")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for k := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(k), 1))
			for range 60 {
				off := r.Int64N(int64(len(data)))
				p := make([]byte, 1+r.IntN(300<<10))
				n, _ := o.ReadAt(p, off)
				if !bytes.Equal(p[:n], data[off:min(int64(len(data)), off+int64(len(p)))]) {
					errs <- fmt.Errorf("reader %d: ReadAt(%d, %d): wrong bytes", k, len(p), off)
					return
				}
				if k%2 == 0 {
					o.Prefetch(off, 1<<20)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// Once the read-ahead has finished too, nothing is held.
	held := func() (n int) {
		s.cache.mu.Lock()
		defer s.cache.mu.Unlock()
		for e := s.cache.ll.Front(); e != nil; e = e.Next() {
			n += int(e.Value.(*cached).refs)
		}
		return n
	}
	for i := 0; held() != 0; i++ {
		if i == 200 {
			t.Fatalf("%d holds left after every read returned", held())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Buffers come from the region while it lasts and go back to the pool
// whatever the pool holds already (the garbage collector cannot take a
// piece of the region); past the region they come from the heap, and the
// pool keeps only a quarter of the cache's size of those.
func TestCacheRegion(t *testing.T) {
	c := newChunkCache(8 * poolClass) // region: 10 classes plus 1 MiB
	c.mu.Lock()
	c.regionLocked()
	c.mu.Unlock()
	var region, heap [][]byte
	for {
		b := c.alloc(4 * poolClass)
		if !c.inRegion(b) {
			heap = append(heap, b)
			break
		}
		region = append(region, b)
	}
	if got := len(region) * 4 * poolClass; got > len(c.region) || got+4*poolClass <= len(c.region) {
		t.Fatalf("%d region buffers of %d bytes from a region of %d", len(region), 4*poolClass, len(c.region))
	}
	for range 20 {
		heap = append(heap, c.alloc(4*poolClass))
	}
	for _, b := range append(region, heap...) {
		c.free(b)
	}
	if c.poolSize > c.limit/4+1<<20 {
		t.Fatalf("pool holds %d heap bytes, over its cap", c.poolSize)
	}
	if n := len(c.pool[4]); n < len(region) {
		t.Fatalf("the pool kept %d buffers, fewer than the %d region buffers", n, len(region))
	}
	fromRegion := 0
	for range len(region) {
		if c.inRegion(c.alloc(4 * poolClass)) {
			fromRegion++
		}
	}
	if fromRegion != len(region) {
		t.Errorf("%d of %d reused buffers came from the region", fromRegion, len(region))
	}
}

// Faulting the region in never changes bytes already written to it, while
// other goroutines write.
func TestPrefaultKeepsBytes(t *testing.T) {
	c := newChunkCache(16 << 20)
	c.mu.Lock()
	c.regionLocked()
	c.mu.Unlock()
	var bufs [][]byte
	for i := range 64 {
		b := c.alloc(64 << 10)
		for j := range b {
			b[j] = byte(i + j)
		}
		bufs = append(bufs, b)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 64; i < 200; i++ {
			b := c.alloc(64 << 10)
			for j := range b {
				b[j] = byte(i + j)
			}
			bufs = append(bufs, b)
		}
	}()
	prefault(c.region)
	<-done
	for i, b := range bufs {
		for j := range b {
			if b[j] != byte(i+j) {
				t.Fatalf("buffer %d byte %d changed", i, j)
			}
		}
	}
}

// With ReadsCachedAbove (glydfs), reading an object made of deltas keeps
// the bases and lets go of the chunks read: after a sequential read
// through a cache that holds the bases but not bases and chunks together,
// every base is still cached and reading again decodes only the object's
// own chunks. Without it the read chunks win and the bases are gone.
func TestCacheKeepsBasesForReadersThatCache(t *testing.T) {
	for _, above := range []bool{true, false} {
		dir := filepath.Join(t.TempDir(), "store")
		s, err := Init(dir, Options{ReadsCachedAbove: above})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.Put("v1", bytes.NewReader(version(1<<20, 1))); err != nil {
			t.Fatal(err)
		}
		v2 := version(1<<20, 2)
		if _, err := s.Put("v2", bytes.NewReader(v2)); err != nil {
			t.Fatal(err)
		}
		m, _ := s.manifest("v2")
		bases := map[ID]int{}
		for _, c := range m.chunks {
			r, err := s.record(c.id)
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range r.bases() {
				br, _ := s.record(b)
				bases[b] = br.rawLen
			}
		}
		var baseBytes int64
		for _, n := range bases {
			baseBytes += int64(n)
		}
		if len(bases) < len(m.chunks)/2 {
			t.Fatalf("only %d of %d chunks are deltas: the test needs more", len(bases), len(m.chunks))
		}
		// Room for every base and two chunks more, in the cache's classes.
		s.cache = newChunkCache(baseBytes + int64(len(bases))*poolClass + 2*(256<<10))
		o, err := s.OpenObject("v2")
		if err != nil {
			t.Fatal(err)
		}
		p := make([]byte, 32<<10)
		for off := int64(0); off < o.Size(); off += int64(len(p)) {
			n, _ := o.ReadAt(p, off)
			if !bytes.Equal(p[:n], v2[off:off+int64(n)]) {
				t.Fatalf("wrong bytes at %d", off)
			}
		}
		kept := 0
		for b := range bases {
			if s.cache.has(b) {
				kept++
			}
		}
		if above && kept != len(bases) {
			t.Errorf("ReadsCachedAbove: %d of %d bases still cached after the read", kept, len(bases))
		}
		if !above && kept == len(bases) {
			t.Errorf("without ReadsCachedAbove every base stayed cached: the cache is larger than the test means it to be")
		}
		s.Close()
	}
}

// Slices gives the same bytes as ReadAt, holes included, at every kind of
// offset and length (inside one chunk, across many, up to and past the
// end); the chunks stay held until release, through a cache far smaller
// than the object, and release lets the cache recycle them.
func TestSlicesMatchReadAt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s, err := Init(dir, Options{ReadsCachedAbove: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	v1, v2 := version(1<<20, 1), version(1<<20, 2)
	b, err := s.NewBuilder()
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Write(bytes.NewReader(v1)); err != nil {
		t.Fatal(err)
	}
	b.Hole(300 << 10)
	if err := b.Write(bytes.NewReader(v2)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Commit("obj", true, nil); err != nil {
		t.Fatal(err)
	}
	want := append(append(bytes.Clone(v1), make([]byte, 300<<10)...), v2...)
	s.cache = newChunkCache(256 << 10)
	o, err := s.OpenObject("obj")
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 7))
	var releases []func()
	for k := range 300 {
		off := r.Int64N(int64(len(want)) + 10)
		n := 1 + r.IntN(1<<20)
		if k%10 == 0 {
			n = 1 + r.IntN(100)
		}
		vecs, release, err := o.Slices(off, n)
		wantN := int(max(0, min(int64(n), int64(len(want))-off)))
		if wantN < n && err != io.EOF || wantN == n && err != nil {
			t.Fatalf("Slices(%d, %d): %v", off, n, err)
		}
		var got []byte
		for _, v := range vecs {
			got = append(got, v...)
		}
		if !bytes.Equal(got, want[min(off, int64(len(want))):min(off, int64(len(want)))+int64(wantN)]) {
			t.Fatalf("Slices(%d, %d): wrong bytes", off, n)
		}
		// Hold some across later reads: their bytes must not change.
		if k%3 == 0 {
			cp := bytes.Clone(got)
			releases = append(releases, func() {
				var again []byte
				for _, v := range vecs {
					again = append(again, v...)
				}
				if !bytes.Equal(again, cp) {
					t.Errorf("Slices(%d, %d): held slices changed", off, n)
				}
				release()
			})
		} else {
			release()
		}
	}
	for _, f := range releases {
		f()
	}
	for e := s.cache.ll.Front(); e != nil; e = e.Next() {
		if ch := e.Value.(*cached); ch.refs != 0 {
			t.Fatalf("chunk %s still held %d times after every release", ch.id.Short(), ch.refs)
		}
	}
}
