package codec

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
}

func TestGoldenFixtures(t *testing.T) {
	dir := filepath.Join("testdata", "golden")
	sums := filepath.Join(dir, "SHA256SUMS")
	if *updateGolden {
		os.MkdirAll(dir, 0o755)
		var list strings.Builder
		for _, c := range goldenCases {
			src := sample(c.size, 42)
			enc, err := Encode(src, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, c.name+".glyd"), enc, 0o644); err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(src)
			fmt.Fprintf(&list, "%s  %d  %s.glyd\n", hex.EncodeToString(sum[:]), len(src), c.name)
		}
		if err := os.WriteFile(sums, []byte(list.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Open(sums)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var sum, name string
		var size int
		if _, err := fmt.Sscanf(sc.Text(), "%s %d %s", &sum, &size, &name); err != nil {
			t.Fatalf("bad line %q", sc.Text())
		}
		enc, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decode(enc, 0)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		h := sha256.Sum256(got)
		if len(got) != size || hex.EncodeToString(h[:]) != sum {
			t.Fatalf("%s decodes to different bytes", name)
		}
		n++
	}
	if n < len(goldenCases) {
		t.Fatalf("only %d golden fixtures", n)
	}
}
