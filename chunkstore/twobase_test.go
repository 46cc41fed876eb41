package chunkstore

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	badger "github.com/dgraph-io/badger/v4"

	"github.com/glyd/glyd/chunkstore/cdc"
	"github.com/glyd/glyd/codec"
)

// letters is text with about 4.7 bits per byte: it compresses alone only
// somewhat, so what a delta saves is plainly the base's doing.
func letters(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 77))
	b := make([]byte, n)
	for i := range b {
		b[i] = " abcdefghijklmnopqrstuvwxyz"[r.IntN(27)]
	}
	return b
}

// oneChunkStore chunks nothing below 64 KiB, so each object under that is
// one chunk and a test decides exactly what each chunk holds.
func oneChunkStore(t *testing.T, format int) (*Store, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "store")
	s, err := initFormat(dir, Options{Chunking: cdc.Params{Min: 64 << 10, Avg: 128 << 10, Max: 256 << 10}}, format)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, dir
}

func chunkOf(t *testing.T, s *Store, name string) (ID, chunkRecord) {
	t.Helper()
	m, err := s.manifest(name)
	if err != nil || len(m.chunks) != 1 {
		t.Fatalf("%s: %v (%d chunks)", name, err, len(m.chunks))
	}
	r, err := s.record(m.chunks[0].id)
	if err != nil {
		t.Fatal(err)
	}
	return m.chunks[0].id, r
}

// A new chunk made of the second half of one stored chunk and the first
// half of another is coded against both: the record names the two bases,
// the object reads back exactly, GC keeps both bases when only the new
// object still needs them, and damage to either base is reported against
// the object, never returned as data.
func TestTwoBaseDelta(t *testing.T) {
	s, _ := oneChunkStore(t, FormatVersion)
	x, y := letters(1, 60<<10), letters(2, 60<<10)
	z := append(append(bytes.Clone(x[30<<10:]), "a few new bytes where the halves meet"...), y[:30<<10]...)
	for name, data := range map[string][]byte{"x": x, "y": y} {
		if _, err := s.Put(name, bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
	}
	st, err := s.Put("z", bytes.NewReader(z))
	if err != nil {
		t.Fatal(err)
	}
	xid, _ := chunkOf(t, s, "x")
	yid, _ := chunkOf(t, s, "y")
	zid, zr := chunkOf(t, s, "z")
	if zr.kind != kindDelta2 || zr.depth != 2 {
		t.Fatalf("z's chunk: kind %d depth %d, a two-base delta of depth 2 expected", zr.kind, zr.depth)
	}
	if got := []ID{zr.base, zr.base2}; !(got[0] == xid && got[1] == yid || got[0] == yid && got[1] == xid) {
		t.Fatalf("z's bases are %s and %s, not x's and y's chunks", zr.base.Short(), zr.base2.Short())
	}
	alone := len(codec.EncodeChunk(nil, z, s.tier))
	if st.Stored*10 > int64(alone) {
		t.Fatalf("z stored %d bytes, %d alone", st.Stored, alone)
	}
	if !bytes.Equal(get(t, s, "z"), z) {
		t.Fatal("z differs")
	}

	// Only z needs x's and y's chunks now: GC keeps them.
	for _, name := range []string{"x", "y"} {
		if err := s.Delete(name); err != nil {
			t.Fatal(err)
		}
	}
	if gs, err := s.GC(); err != nil || gs.Freed != 0 {
		t.Fatalf("gc freed %d chunks that z needs: %v", gs.Freed, err)
	}
	s.cache = newChunkCache(1 << 20)
	if !bytes.Equal(get(t, s, "z"), z) {
		t.Fatal("z differs after gc")
	}
	if rep, err := s.Verify(); err != nil || len(rep.Damaged) != 0 {
		t.Fatalf("verify: %+v %v", rep, err)
	}

	// Damage the second base: z's chunk cannot be decoded, and verify
	// names z.
	frame, _ := blobCopy(s.blobs, zr.base2)
	frame[len(frame)/2] ^= 0x55
	if err := s.blobs.Put(zr.base2, frame); err != nil {
		t.Fatal(err)
	}
	s.cache = newChunkCache(1 << 20)
	o, err := s.OpenObject("z")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.ReadAt(make([]byte, len(z)), 0); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("reading z over a damaged base: %v", err)
	}
	rep, err := s.Verify()
	if err != nil {
		t.Fatal(err)
	}
	named := false
	for _, d := range rep.Damaged {
		if d.Chunk == zid && len(d.Objects) == 1 && d.Objects[0] == "z" {
			named = true
		}
	}
	if !named || len(rep.Damaged) != 2 {
		t.Fatalf("verify: %+v", rep)
	}

	// Deleting z too frees all three chunks and their index entries.
	if err := s.Delete("z"); err != nil {
		t.Fatal(err)
	}
	if gs, err := s.GC(); err != nil || gs.Freed != 3 {
		t.Fatalf("gc freed %d chunks: %v", gs.Freed, err)
	}
	if n := countKeys(t, s, "f/"); n != 0 {
		t.Fatalf("%d index entries left after the last chunk went", n)
	}
}

// Two bases cost both bases' decodes: a chunk is coded against two only
// while its depth (2 plus the bases' depths) stays within MaxDepth.
func TestTwoBaseDeltaDepth(t *testing.T) {
	s, _ := oneChunkStore(t, FormatVersion)
	x, y := letters(3, 60<<10), letters(4, 60<<10)
	put := func(name string, data []byte) {
		t.Helper()
		if _, err := s.Put(name, bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
	}
	put("x", x)
	put("y", y)
	// Versions of x and y, each a small edit of the one before: chains.
	for v := range 6 {
		x[v*1000+7] ^= 1
		y[v*1000+9] ^= 1
		put("x"+string(rune('0'+v)), x)
		put("y"+string(rune('0'+v)), y)
	}
	z := append(bytes.Clone(x[30<<10:]), y[:30<<10]...)
	put("z", z)
	if !bytes.Equal(get(t, s, "z"), z) {
		t.Fatal("z differs")
	}
	if err := s.eachRecord(func(id ID, r chunkRecord, err error) error {
		if err != nil {
			return err
		}
		depth := 0
		for _, b := range r.bases() {
			br, err := s.record(b)
			if err != nil {
				return err
			}
			depth += 1 + br.depth
		}
		if r.depth != depth || r.depth > MaxDepth {
			t.Errorf("chunk %s: depth %d, its bases make it %d (cap %d)", id.Short(), r.depth, depth, MaxDepth)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// A store made by an earlier glyd (format 1) is written as that glyd
// wrote it: three super-features a chunk in its index and deltas against
// one base, so that glyd still reads it; it stays format 1 when reopened.
func TestFormat1StoreStaysFormat1(t *testing.T) {
	s, dir := oneChunkStore(t, 1)
	x, y := letters(5, 60<<10), letters(6, 60<<10)
	z := append(bytes.Clone(x[30<<10:]), y[:30<<10]...)
	for _, o := range []struct {
		name string
		data []byte
	}{{"x", x}, {"y", y}, {"z", z}, {"x2", append(bytes.Clone(x[:100]), x[101:]...)}} {
		if _, err := s.Put(o.name, bytes.NewReader(o.data)); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.cfg.Format != 1 {
		t.Fatalf("reopened as format %d", s.cfg.Format)
	}
	if _, err := s.Put("z2", bytes.NewReader(append(bytes.Clone(z), "more"...))); err != nil {
		t.Fatal(err)
	}
	records, deltas := 0, 0
	if err := s.eachRecord(func(id ID, r chunkRecord, err error) error {
		if err != nil {
			return err
		}
		records++
		if r.kind == kindDelta2 {
			t.Errorf("chunk %s: a two-base delta in a format-1 store", id.Short())
		}
		if r.kind == kindDelta {
			deltas++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if deltas == 0 {
		t.Error("no deltas in the format-1 store: its super-features found nothing")
	}
	if n := countKeys(t, s, "f/"); n > 3*records {
		t.Errorf("%d index entries for %d chunks: more than three super-features each", n, records)
	}
	if !bytes.Equal(get(t, s, "z"), z) {
		t.Fatal("z differs")
	}
}

// Only a format-2 store pairs bases: a format-1 store's readers cannot
// decode a two-base delta, whatever its super-features happen to share.
func TestComplementOnlyInFormat2(t *testing.T) {
	cands := []candidate{{id: ID{1}, shared: 2, keys: 0b011}, {id: ID{2}, shared: 1, keys: 0b100}}
	for format, want := range map[int]bool{1: false, 2: true} {
		s, _ := oneChunkStore(t, format)
		if c, ok := s.complement(cands); ok != want || ok && c.id != (ID{2}) {
			t.Errorf("format %d: complement %v %v, want %v", format, c.id.Short(), ok, want)
		}
	}
}

func countKeys(t *testing.T, s *Store, prefix string) int {
	t.Helper()
	n := 0
	err := s.db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.PrefetchValues = false
		it := txn.NewIterator(opts)
		defer it.Close()
		for it.Seek([]byte(prefix)); it.ValidForPrefix([]byte(prefix)); it.Next() {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestTwoBaseRecordRoundTrip(t *testing.T) {
	r := chunkRecord{kind: kindDelta2, depth: 3, rawLen: 1000, storedLen: 10, aloneLen: 700, base: ID{1}, base2: ID{2}}
	got, err := decodeChunkRecord(r.encode())
	if err != nil || got != r {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	r.depth = 1 // two bases cost at least two decodes
	if _, err := decodeChunkRecord(r.encode()); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("depth 1 with two bases: %v", err)
	}
	r.depth = MaxDepth + 1
	if _, err := decodeChunkRecord(r.encode()); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("depth past the cap: %v", err)
	}
}

// A long series does not end at the depth cap: where a version's delta
// would be a dead end (depth MaxDepth, nothing can be coded against it), it
// is coded against a shallow base instead, so later versions still find
// bases a version apart. (Without that, 112 of these 157 deltas sat at the
// cap.)
func TestSeriesStartsNewChains(t *testing.T) {
	s := tempStore(t, Options{Tier: codec.Default})
	var first, last PutStats
	var atCap, deltas int
	data := version(1<<20, 1)
	r := rand.New(rand.NewPCG(7, 7))
	for v := 1; v <= 14; v++ {
		// Each version edits the one before in a few places.
		data = bytes.Clone(data)
		for range 24 {
			copy(data[r.IntN(len(data)-16):], fmt.Sprintf("edit %d.", v))
		}
		st, err := s.Put(fmt.Sprint(v), bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		if v == 2 {
			first = st
		}
		last = st
	}
	if err := s.eachRecord(func(id ID, r chunkRecord, err error) error {
		if err != nil {
			return err
		}
		if r.kind != kindFull {
			deltas++
			if r.depth >= MaxDepth {
				atCap++
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if deltas == 0 || atCap*2 > deltas {
		t.Errorf("%d of %d deltas at the depth cap", atCap, deltas)
	}
	t.Logf("%d of %d deltas at the cap; second version %d bytes, last %d", atCap, deltas, first.Stored, last.Stored)
}
