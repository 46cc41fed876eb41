package chunkstore

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	badger "github.com/dgraph-io/badger/v4"

	"github.com/glyd/glyd/chunkstore/cdc"
	"github.com/glyd/glyd/codec"
	"github.com/glyd/glyd/delta"
)

// version makes a "release": text-like content with a seed-dependent set of
// edits, so consecutive versions share most bytes in moved places.
func version(n int, v int) []byte {
	r := rand.New(rand.NewPCG(42, 0))
	words := []string{"package ", "func ", "return ", "if err != nil ", "{\n", "}\n", "x := ", "range ", "go ", "defer "}
	var b []byte
	for len(b) < n {
		b = append(b, words[r.IntN(len(words))]...)
		if r.IntN(5) == 0 {
			b = append(b, byte('a'+r.IntN(26)), byte('a'+r.IntN(26)), byte('0'+r.IntN(10)))
		}
	}
	b = b[:n]
	e := rand.New(rand.NewPCG(uint64(v), 9))
	for range v * 8 {
		i := e.IntN(len(b) - 64)
		copy(b[i:], []byte("EDITED-"+strings.Repeat("v", v)))
	}
	return b
}

func tempStore(t testing.TB, opts Options) *Store {
	t.Helper()
	s, err := Init(filepath.Join(t.TempDir(), "store"), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func get(t testing.TB, s *Store, name string) []byte {
	t.Helper()
	o, err := s.OpenObject(name)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := o.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestPutGetRanges(t *testing.T) {
	s := tempStore(t, Options{})
	data := version(3<<20+123, 1)
	st, err := s.Put("a", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if st.Size != int64(len(data)) || st.New == 0 || st.Stored >= int64(len(data)) {
		t.Fatalf("stats %+v", st)
	}
	if !bytes.Equal(get(t, s, "a"), data) {
		t.Fatal("object differs")
	}
	o, _ := s.OpenObject("a")
	r := rand.New(rand.NewPCG(1, 1))
	for range 200 {
		off := r.Int64N(int64(len(data)))
		p := make([]byte, r.IntN(300<<10))
		n, err := o.ReadAt(p, off)
		want := data[off:min(int64(len(data)), off+int64(len(p)))]
		if n != len(want) || !bytes.Equal(p[:n], want) || (n < len(p) && err != io.EOF) {
			t.Fatalf("ReadAt(%d, %d) = %d, %v", len(p), off, n, err)
		}
	}
	// empty object
	if _, err := s.Put("empty", bytes.NewReader(nil)); err != nil {
		t.Fatal(err)
	}
	if len(get(t, s, "empty")) != 0 {
		t.Fatal("empty object not empty")
	}
}

func TestDedupAndDeltas(t *testing.T) {
	s := tempStore(t, Options{Tier: codec.Max})
	v1, v2 := version(2<<20, 1), version(2<<20, 2)
	st1, err := s.Put("v1", bytes.NewReader(v1))
	if err != nil {
		t.Fatal(err)
	}
	again, err := s.Put("v1-copy", bytes.NewReader(v1))
	if err != nil {
		t.Fatal(err)
	}
	if again.New != 0 || again.Stored != 0 {
		t.Fatalf("a second copy stored %d new chunks (%d bytes)", again.New, again.Stored)
	}
	st2, err := s.Put("v2", bytes.NewReader(v2))
	if err != nil {
		t.Fatal(err)
	}
	if st2.Deltas == 0 || st2.Stored*5 > st1.Stored {
		t.Fatalf("v2 stored %d bytes in %d deltas; v1 took %d", st2.Stored, st2.Deltas, st1.Stored)
	}
	for name, want := range map[string][]byte{"v1": v1, "v1-copy": v1, "v2": v2} {
		if !bytes.Equal(get(t, s, name), want) {
			t.Fatalf("%s differs", name)
		}
	}
	u, err := s.Usage()
	if err != nil || u.Objects != 3 || u.Logical != int64(3*len(v1)) || u.DeltaChunks == 0 || u.DedupSaved < int64(len(v1)) {
		t.Fatalf("usage %+v %v", u, err)
	}
}

func TestDeleteGCKeepsBases(t *testing.T) {
	s := tempStore(t, Options{Tier: codec.Max})
	versions := make([][]byte, 7)
	for i := range versions {
		versions[i] = version(1<<20, i+1)
		if _, err := s.Put(string(rune('a'+i)), bytes.NewReader(versions[i])); err != nil {
			t.Fatal(err)
		}
	}
	// chains are bounded
	if err := s.eachRecord(func(id ID, r chunkRecord, err error) error {
		if err != nil || r.depth > MaxDepth {
			t.Fatalf("record %s depth %d: %v", id.Short(), r.depth, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// delete the early versions that later deltas are based on
	for i := range 4 {
		if err := s.Delete(string(rune('a' + i))); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.OpenObject("a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted object: %v", err)
	}
	before, _ := s.Usage()
	gs, err := s.GC()
	if err != nil {
		t.Fatal(err)
	}
	after, _ := s.Usage()
	if gs.Freed == 0 || before.Garbage == 0 || after.Garbage != 0 || gs.FreedBytes != before.Garbage {
		t.Fatalf("gc freed %d chunks (%d bytes); garbage %d -> %d", gs.Freed, gs.FreedBytes, before.Garbage, after.Garbage)
	}
	s.cache = newChunkCache(1 << 20)
	for i := 4; i < len(versions); i++ {
		if !bytes.Equal(get(t, s, string(rune('a'+i))), versions[i]) {
			t.Fatalf("version %d damaged by gc", i)
		}
	}
	rep, err := s.Verify()
	if err != nil || len(rep.Damaged) != 0 {
		t.Fatalf("verify after gc: %+v %v", rep, err)
	}
}

func TestVerifyFindsDamage(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s, err := Init(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	data := version(1<<20, 1)
	if _, err := s.Put("obj", bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	m, _ := s.manifest("obj")
	victim := m.chunks[len(m.chunks)/2].id
	frame, _ := blobCopy(s.blobs, victim)
	frame[len(frame)/2] ^= 0xff
	if err := s.blobs.Put(victim, frame); err != nil {
		t.Fatal(err)
	}
	s.cache = newChunkCache(1 << 20)
	rep, err := s.Verify()
	if err != nil || len(rep.Damaged) != 1 || rep.Damaged[0].Chunk != victim || len(rep.Damaged[0].Objects) != 1 || rep.Damaged[0].Objects[0] != "obj" {
		t.Fatalf("verify: %+v %v", rep, err)
	}
	o, _ := s.OpenObject("obj")
	p := make([]byte, len(data))
	if _, err := o.ReadAt(p, 0); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("reading damaged data: %v", err)
	}
	s.Close()
}

func TestOpenErrors(t *testing.T) {
	tmp := t.TempDir()
	if _, err := Open(filepath.Join(tmp, "nope"), Options{}); !errors.Is(err, ErrNotStore) {
		t.Fatalf("missing dir: %v", err)
	}
	os.WriteFile(filepath.Join(tmp, "file"), []byte("x"), 0o644)
	if _, err := Open(tmp, Options{}); !errors.Is(err, ErrNotStore) {
		t.Fatalf("plain dir: %v", err)
	}
	if _, err := Init(tmp, Options{}); err == nil {
		t.Fatal("init over a non-empty directory")
	}
	dir := filepath.Join(tmp, "s")
	s, err := Init(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second open: %v", err)
	}
	if _, err := s.OpenObject("missing"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing object: %v", err)
	}
	// a store from the future
	s.db.Update(func(txn *badger.Txn) error { return txn.Set(keyConfig, []byte(`{"format":99,"tier":"default"}`)) })
	s.Close()
	if _, err := Open(dir, Options{}); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("newer format: %v", err)
	}
}

func TestReopen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "s")
	s, err := Init(dir, Options{Tier: codec.Cold})
	if err != nil {
		t.Fatal(err)
	}
	data := version(500<<10, 3)
	s.Put("x", bytes.NewReader(data))
	s.Close()
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Tier() != codec.Cold || !bytes.Equal(get(t, s, "x"), data) {
		t.Fatal("reopened store differs")
	}
	ls, err := s.List()
	if err != nil || len(ls) != 1 || ls[0].Name != "x" || ls[0].Size != int64(len(data)) {
		t.Fatalf("list: %+v %v", ls, err)
	}
}

func TestConcurrentReadersAndWriter(t *testing.T) {
	s := tempStore(t, Options{})
	base := version(1<<20, 1)
	s.Put("base", bytes.NewReader(base))
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, err := s.OpenObject("base")
			if err != nil {
				t.Error(err)
				return
			}
			p := make([]byte, 64<<10)
			for i := range 30 {
				off := int64((i*7919 + g*104729) % (len(base) - len(p)))
				if _, err := o.ReadAt(p, off); err != nil || !bytes.Equal(p, base[off:off+int64(len(p))]) {
					t.Errorf("reader %d: %v", g, err)
					return
				}
			}
		}()
	}
	for i := range 3 {
		if _, err := s.Put("w", bytes.NewReader(version(512<<10, i+2))); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
}

func FuzzDecodeManifest(f *testing.F) {
	m := &manifest{size: 10, chunks: []chunkRef{{ID{1}, 4}, {ID{2}, 6}}}
	f.Add(m.encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeManifest(b)
		if err == nil && !bytes.Equal(m.encode(), b) {
			t.Fatal("manifest does not round-trip")
		}
	})
}

func FuzzDecodeChunkRecord(f *testing.F) {
	f.Add(chunkRecord{kind: kindFull, rawLen: 100, storedLen: 50, aloneLen: 50}.encode())
	f.Add(chunkRecord{kind: kindDelta, depth: 2, rawLen: 100, storedLen: 5, aloneLen: 50, base: ID{7}}.encode())
	f.Add(chunkRecord{kind: kindDelta2, depth: 2, rawLen: 100, storedLen: 5, aloneLen: 50, base: ID{7}, base2: ID{8}}.encode())
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeChunkRecord(b)
		if err == nil && !bytes.Equal(r.encode(), b) {
			t.Fatal("record does not round-trip")
		}
	})
}

func TestUsageSeparatesGarbage(t *testing.T) {
	s := tempStore(t, Options{})
	a := version(1<<20, 1)
	s.Put("a", bytes.NewReader(a))
	s.Put("b", bytes.NewReader(version(1<<20, 3)))
	s.Delete("b")
	u, err := s.Usage()
	if err != nil || u.Objects != 1 || u.Logical != int64(len(a)) || u.Garbage == 0 || u.DedupSaved < 0 || u.Unique != int64(len(a)) {
		t.Fatalf("usage after delete: %+v %v", u, err)
	}
	s.GC()
	if u2, _ := s.Usage(); u2.Garbage != 0 || u2.Stored != u.Stored {
		t.Fatalf("usage after gc: %+v (before %+v)", u2, u)
	}
}

// A chunk whose delta is tiny next to its base's ratio is never coded
// alone: its record's aloneLen is the base's ratio applied to it. Check
// that the estimate stays near the real size, and that such chunks are
// what most of a close second version becomes.
func TestTinyDeltaEstimatesAlone(t *testing.T) {
	s := tempStore(t, Options{Tier: codec.Default})
	v1, v2 := version(2<<20, 1), version(2<<20, 2)
	if _, err := s.Put("v1", bytes.NewReader(v1)); err != nil {
		t.Fatal(err)
	}
	st2, err := s.Put("v2", bytes.NewReader(v2))
	if err != nil {
		t.Fatal(err)
	}
	estimated := 0
	if err := s.eachRecord(func(id ID, r chunkRecord, err error) error {
		if err != nil || r.kind != kindDelta {
			return err
		}
		bc, err := s.chunkData(id)
		if err != nil {
			return err
		}
		real := len(codec.EncodeChunk(nil, bc.data, s.tier))
		s.cache.release(bc)
		if r.aloneLen*2 < real || r.aloneLen > 2*real {
			t.Errorf("chunk %s: aloneLen %d, coded alone it takes %d", id.Short(), r.aloneLen, real)
		}
		if r.aloneLen != real {
			estimated++
		}
		if !delta.Pays(r.storedLen, real) {
			t.Errorf("chunk %s: delta of %d bytes kept against %d alone", id.Short(), r.storedLen, real)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if estimated*2 < st2.Deltas {
		t.Fatalf("%d of %d deltas skipped the alone coding", estimated, st2.Deltas)
	}
	if !bytes.Equal(get(t, s, "v2"), v2) {
		t.Fatal("v2 differs")
	}
}

// Reading through delta chains keeps the chunks read, not their bases:
// with room for an object's chunks but not for them and their bases
// together, every chunk is still cached after one read, so a second read
// decodes nothing.
func TestCacheKeepsChunksOverBases(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	s, err := Init(dir, Options{Tier: codec.Default})
	if err != nil {
		t.Fatal(err)
	}
	const n = 1 << 20
	var last []byte
	for v := 1; v <= 5; v++ {
		last = version(n, v)
		if _, err := s.Put(fmt.Sprint("v", v), bytes.NewReader(last)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, Options{Cache: 2 * n})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	o, err := s.OpenObject("v5")
	if err != nil {
		t.Fatal(err)
	}
	var deep int
	for _, r := range o.Refs() {
		if rec, err := s.record(r.ID); err == nil && rec.depth >= 2 {
			deep++
		}
	}
	if deep == 0 {
		t.Fatal("v5 has no chunks two deltas deep: the test needs chains")
	}
	if !bytes.Equal(get(t, s, "v5"), last) {
		t.Fatal("v5 differs")
	}
	for _, r := range o.Refs() {
		if !s.cache.has(r.ID) {
			t.Fatalf("chunk %s of v5 not cached after reading it (%d chunks, %d at depth ≥ 2)", r.ID.Short(), len(o.Refs()), deep)
		}
	}
}

// Chunks may be as large as the codec codes in one unit and no larger: a
// store asking for more is refused (it made puts panic), and one at the
// limit stores and returns versions whose chunks and bases together are
// too large to code as deltas.
func TestLargestChunks(t *testing.T) {
	_, err := Init(filepath.Join(t.TempDir(), "store"), Options{Chunking: cdc.Params{Min: 4 << 20, Avg: 8 << 20, Max: 16 << 20}})
	if !errors.Is(err, cdc.ErrParams) {
		t.Fatalf("chunks of up to 16 MiB: %v, want a refusal", err)
	}
	s := tempStore(t, Options{Chunking: cdc.Params{Min: 2 << 20, Avg: 4 << 20, Max: codec.MaxChunk}})
	v1, v2 := version(16<<20, 1), version(16<<20, 2)
	for name, v := range map[string][]byte{"v1": v1, "v2": v2} {
		if _, err := s.Put(name, bytes.NewReader(v)); err != nil {
			t.Fatal(err)
		}
	}
	for name, want := range map[string][]byte{"v1": v1, "v2": v2} {
		if !bytes.Equal(get(t, s, name), want) {
			t.Fatalf("%s differs", name)
		}
	}
	if rep, err := s.Verify(); err != nil || len(rep.Damaged) != 0 {
		t.Fatalf("verify: %+v %v", rep, err)
	}
}

// A new store's chunking follows its tier unless given; an existing store
// keeps the chunking it was made with.
func TestDefaultChunkingByTier(t *testing.T) {
	for _, c := range []struct {
		tier codec.Tier
		want cdc.Params
	}{
		{codec.Default, cdc.DefaultParams()},
		{codec.Max, cdc.Params{Min: 64 << 10, Avg: 256 << 10, Max: 1 << 20}},
		{codec.Cold, cdc.Params{Min: 64 << 10, Avg: 256 << 10, Max: 1 << 20}},
	} {
		dir := t.TempDir()
		s, err := Init(dir, Options{Tier: c.tier})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Chunking(); got != c.want {
			t.Errorf("%v tier: chunking %+v, want %+v", c.tier, got, c.want)
		}
		s.Close()
		s, err = Open(dir, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Chunking(); got != c.want {
			t.Errorf("%v tier reopened: chunking %+v, want %+v", c.tier, got, c.want)
		}
		s.Close()
	}
	given := cdc.Params{Min: 4 << 10, Avg: 16 << 10, Max: 64 << 10}
	s, err := Init(t.TempDir(), Options{Tier: codec.Cold, Chunking: given})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.Chunking(); got != given {
		t.Errorf("given chunking %+v, store has %+v", given, got)
	}
}
