package chunkstore

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/glyd/glyd/chunkstore/cdc"
)

// Golden stores: one store of each format, written by the glyd that
// introduced it, committed under testdata/golden and read by every glyd
// since (docs/store.md, "Format versions"). -update-golden writes them
// again: only ever for a new format, never over an existing one.
var updateGolden = flag.Bool("update-golden", false, "write chunkstore/testdata/golden/format<N> for this FormatVersion")

var goldenChunking = cdc.Params{Min: 64 << 10, Avg: 128 << 10, Max: 256 << 10}

type goldenObject struct {
	name string
	data []byte
}

// goldenObjects are what the golden stores hold, put in this order: two
// unrelated one-chunk objects, an edited copy of the first (a delta), and
// halves of both (in format 2, a two-base delta).
func goldenObjects() []goldenObject {
	x, y := letters(11, 60<<10), letters(12, 60<<10)
	return []goldenObject{
		{"x", x},
		{"y", y},
		{"x2", append(append(bytes.Clone(x[:1000]), "an edit"...), x[1007:]...)},
		{"z", append(append(bytes.Clone(x[30<<10:]), "where the halves meet"...), y[:30<<10]...)},
	}
}

func TestGoldenStores(t *testing.T) {
	if *updateGolden {
		dir := filepath.Join("testdata", "golden", "format"+string(rune('0'+FormatVersion)))
		if _, err := os.Stat(dir); err == nil {
			t.Fatalf("%s exists: a golden store is never rewritten", dir)
		}
		s, err := initFormat(dir, Options{Chunking: goldenChunking}, FormatVersion)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range goldenObjects() {
			if _, err := s.Put(o.name, bytes.NewReader(o.data)); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		// badger's DISCARD file is a megabyte of zeros it recreates.
		os.Remove(filepath.Join(dir, "DISCARD"))
	}
	for format := 1; format <= FormatVersion; format++ {
		dir := filepath.Join("testdata", "golden", "format"+string(rune('0'+format)))
		// A copy: opening a store may write to it.
		tmp := filepath.Join(t.TempDir(), "store")
		if err := os.CopyFS(tmp, os.DirFS(dir)); err != nil {
			t.Fatalf("format %d: %v", format, err)
		}
		s, err := Open(tmp, Options{})
		if err != nil {
			t.Fatalf("format %d: %v", format, err)
		}
		if s.cfg.Format != format {
			t.Errorf("golden format %d store says format %d", format, s.cfg.Format)
		}
		for _, o := range goldenObjects() {
			if got := get(t, s, o.name); !bytes.Equal(got, o.data) {
				t.Errorf("format %d: object %s differs", format, o.name)
			}
		}
		kinds := map[byte]int{}
		if err := s.eachRecord(func(id ID, r chunkRecord, err error) error {
			kinds[r.kind]++
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if kinds[kindDelta] == 0 || format >= 2 && kinds[kindDelta2] == 0 {
			t.Errorf("format %d store: chunk kinds %v, the fixture should hold each kind of its format", format, kinds)
		}
		if rep, err := s.Verify(); err != nil || len(rep.Damaged) != 0 {
			t.Errorf("format %d: verify: %+v %v", format, rep, err)
		}
		// Still writable: a new object goes in as the store's format does.
		if _, err := s.Put("new", bytes.NewReader(letters(13, 70<<10))); err != nil {
			t.Errorf("format %d: put: %v", format, err)
		}
		s.Close()
	}
}
