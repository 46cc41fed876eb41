package chunkstore

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/glyd/glyd/codec"
)

// TestReleaseSeries puts the corpus's release series one version after
// another (only when GLYD_CORPUS is set) and reports what it stored.
func TestReleaseSeries(t *testing.T) {
	corpus := os.Getenv("GLYD_CORPUS")
	if corpus == "" {
		t.Skip("set GLYD_CORPUS")
	}
	files, _ := filepath.Glob(filepath.Join(corpus, "releases", "x-tools", "*.tar"))
	for _, tier := range []codec.Tier{codec.Default, codec.Max} {
		s := tempStore(t, Options{Tier: tier})
		var raw, stored int64
		t0 := time.Now()
		for _, f := range files {
			fh, err := os.Open(f)
			if err != nil {
				t.Fatal(err)
			}
			st, err := s.Put(filepath.Base(f), fh)
			fh.Close()
			if err != nil {
				t.Fatal(err)
			}
			raw += st.Size
			stored += st.Stored
			t.Logf("%s: %d chunks, %d new, %d deltas, %d bytes stored", filepath.Base(f), st.Chunks, st.New, st.Deltas, st.Stored)
		}
		t.Logf("tier %v: %d raw -> %d stored (%.2f%%), put %.0f MB/s", tier, raw, stored, 100*float64(stored)/float64(raw), float64(raw)/time.Since(t0).Seconds()/1e6)
	}
}
