package codec

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// FuzzDecode feeds arbitrary bytes to the in-memory decoder, the random
// access reader and the streaming reader. None may panic; whatever one of
// them accepts, the others must decode to the same bytes.
func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "golden", "*.glyd"))
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil && len(b) < 64<<10 {
			f.Add(b)
		}
	}
	for _, tier := range []Tier{Default, Max} {
		enc, _ := Encode(sample(3000, 1), Options{Tier: tier})
		f.Add(enc)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		whole, err := Decode(in, 2)
		streamed, serr := io.ReadAll(NewReader(bytes.NewReader(in), 2))
		if err == nil && serr == nil && !bytes.Equal(whole, streamed) {
			t.Fatal("Decode and Reader disagree")
		}
		if err != nil {
			return
		}
		fl, err := OpenBytes(in, 1)
		if err != nil {
			t.Fatal("Decode accepted what Open rejects")
		}
		if fl.Size() > 0 {
			p := make([]byte, min(fl.Size(), 1000))
			off := fl.Size() / 3
			n, _ := fl.ReadAt(p, off)
			if !bytes.Equal(p[:n], whole[off:off+int64(n)]) {
				t.Fatal("ReadAt disagrees with Decode")
			}
		}
	})
}
