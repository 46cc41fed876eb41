package chunkstore

import (
	"bytes"
	"fmt"
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
