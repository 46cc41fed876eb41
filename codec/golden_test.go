package codec

import (
	"bytes"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glyd/glyd/internal/golden"
)

var updateGolden = flag.Bool("update-golden", false, "write new golden fixtures (only when adding a format version: old ones must stay)")

// goldenCases are the fixtures each format version writes once and every
// later glyd must still decode to the same bytes.
var goldenCases = []struct {
	name string
	size int
	opts Options
}{
	{"v7-empty", 0, Options{}},
	{"v7-default", 400 << 10, Options{}},
	{"v7-default-units", 400 << 10, Options{UnitSize: MinUnitSize}},
	{"v7-max", 400 << 10, Options{Tier: Max}},
	{"v7-cold", 400 << 10, Options{Tier: Cold}},
	{"v7-max-units", 1 << 20, Options{Tier: Max, UnitSize: 256 << 10}},
	{"v7-mixed", 300 << 10, Options{}},         // a noise block stored raw
	{"v7-base", 200 << 10, Options{Tier: Max}}, // coded against v7-base.old
}

// goldenInput is what a case encodes: v7-mixed interleaves noise blocks.
func goldenInput(name string, size int) []byte {
	src := sample(size, 42)
	if name == "v7-mixed" {
		r := rand.New(rand.NewPCG(5, 5))
		for i := BlockSize; i+BlockSize <= len(src); i += 2 * BlockSize {
			for j := i; j < i+BlockSize; j++ {
				src[j] = byte(r.Uint32())
			}
		}
	}
	return src
}

// goldenBase encodes src against a base made from it (edited, shifted),
// the way glyd --base would, and returns the stream and the base.
func goldenBase(src []byte, opts Options) ([]byte, []byte, error) {
	old := append(sample(20000, 9), src...)
	for i := 7000; i < len(old); i += 50000 {
		old[i] ^= 0x20
	}
	var buf bytes.Buffer
	bw, err := NewBaseWriter(&buf, old, opts)
	if err != nil {
		return nil, nil, err
	}
	const piece = 64 << 10
	for off := 0; off < len(src); off += piece {
		end := min(len(src), off+piece)
		if err := bw.WritePiece(src[off:end], int64(off), int64(min(len(old)-off, 100000))); err != nil {
			return nil, nil, err
		}
	}
	err = bw.Close()
	return buf.Bytes(), old, err
}

func TestGoldenFixtures(t *testing.T) {
	dir := filepath.Join("testdata", "golden")
	if *updateGolden {
		os.MkdirAll(dir, 0o755)
		var list []string
		for _, c := range goldenCases {
			src := goldenInput(c.name, c.size)
			enc, err := Encode(src, c.opts)
			if c.name == "v7-base" {
				var old []byte
				enc, old, err = goldenBase(src, c.opts)
				if err == nil {
					err = os.WriteFile(filepath.Join(dir, c.name+".old"), old, 0o644)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, c.name+".glyd"), enc, 0o644); err != nil {
				t.Fatal(err)
			}
			list = append(list, golden.Line(c.name+".glyd", src))
		}
		if err := golden.Write(dir, list); err != nil {
			t.Fatal(err)
		}
	}
	fixtures, err := golden.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, fx := range fixtures {
		name := fx.Name
		enc, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		f, err := OpenBytes(enc, 0)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if f.NeedsBase() {
			old, err := os.ReadFile(filepath.Join(dir, strings.TrimSuffix(name, ".glyd")+".old"))
			if err != nil {
				t.Fatal(err)
			}
			if err := f.SetBase(bytes.NewReader(old), int64(len(old))); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		got := make([]byte, f.Size())
		if _, err := f.ReadAt(got, 0); err != nil && len(got) > 0 {
			t.Fatalf("%s: %v", name, err)
		}
		if !fx.Matches(got) {
			t.Fatalf("%s decodes to different bytes", name)
		}
		n++
	}
	if n < len(goldenCases) {
		t.Fatalf("only %d golden fixtures", n)
	}
}
