package packed

import (
	"bytes"
	"encoding/binary"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glyd/glyd/internal/golden"
	"github.com/glyd/glyd/safetensors"
	"github.com/glyd/glyd/tensor"
)

var updateGolden = flag.Bool("update-golden", false, "write new golden fixtures (only when adding a format version or a kind: old ones must stay)")

// goldenBaseFile is v1-base's base: mixed(t, 7); the file itself is
// mixed(t, 7) with one tensor nudged (TestBase's edit).
func goldenFiles(t *testing.T) (mixedFile, base, edited []byte) {
	base = mixed(t, 7)
	st, _ := safetensors.Parse(base)
	edited = bytes.Clone(base)
	tt, _ := st.Lookup("layer.1.weight")
	d := edited[st.DataStart+tt.Begin : st.DataStart+tt.End]
	for i := 0; i < len(d); i += 2 * 37 {
		binary.LittleEndian.PutUint16(d[i:], binary.LittleEndian.Uint16(d[i:])+1)
	}
	return mixed(t, 42), base, edited
}

// TestGoldenFixtures decodes the packed files earlier versions wrote
// (testdata/golden; every kind of span: the split kinds, V16 dictionaries,
// B8 fp8 values, stored tensors, copies and XORs against a base) and checks
// their SHA-256. Fixtures are written once, by -update-golden, and never
// rewritten: every later glyd must read them.
func TestGoldenFixtures(t *testing.T) {
	dir := filepath.Join("testdata", "golden")
	if *updateGolden {
		os.MkdirAll(dir, 0o755)
		mixedFile, base, edited := goldenFiles(t)
		var list []string
		for _, c := range []struct {
			name       string
			file, base []byte
		}{{"v1-mixed", mixedFile, nil}, {"v1-base", edited, base}} {
			enc, err := Encode(c.file, Options{Base: c.base})
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, c.name+".glyt"), enc, 0o644); err != nil {
				t.Fatal(err)
			}
			if c.base != nil {
				if err := os.WriteFile(filepath.Join(dir, c.name+".old"), c.base, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			list = append(list, golden.Line(c.name+".glyt", c.file))
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
	kinds := map[tensor.Kind]bool{}
	for _, fx := range fixtures {
		name := fx.Name
		enc, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		var base []byte
		if NeedsBase(enc) {
			if base, err = os.ReadFile(filepath.Join(dir, strings.TrimSuffix(name, ".glyt")+".old")); err != nil {
				t.Fatal(err)
			}
		}
		got, err := Decode(enc, base, 2)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !fx.Matches(got) {
			t.Fatalf("%s decodes to different bytes", name)
		}
		if base == nil {
			checkReaderAt(t, enc, got)
		}
		pf, err := Open(enc, base)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range pf.Spans() {
			if s.Coded {
				kinds[s.Code.Kind] = true
			}
		}
		n++
	}
	if n == 0 {
		t.Fatal("no golden fixtures")
	}
	for _, k := range []tensor.Kind{tensor.BF16, tensor.F16, tensor.F32, tensor.V16, tensor.B8} {
		if !kinds[k] {
			t.Errorf("no golden fixture has a %v span", k)
		}
	}
}

// fp8 tensors are coded whole (B8) where that pays: a 60,000-value E4M3
// tensor of normal weights takes well under its 8 bits a value.
func TestFP8Coded(t *testing.T) {
	file := mixed(t, 3)
	enc := roundTrip(t, file, Options{})
	pf, err := Open(enc, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := pf.Header()
	if err != nil {
		t.Fatal(err)
	}
	tt, _ := st.Lookup("fp8.big")
	for _, s := range pf.Spans() {
		if s.DataOff <= tt.Begin && tt.End <= s.DataOff+s.Len {
			if !s.Coded || s.Code.Kind != tensor.B8 {
				t.Fatalf("fp8.big is in a span coded %v (coded %v)", s.Code, s.Coded)
			}
			if bpv := 8 * float64(s.PayloadLen) / float64(s.Values); bpv > 7 {
				t.Fatalf("fp8 at %.2f bits a value", bpv)
			} else {
				t.Logf("fp8.big: %.2f bits a value", bpv)
			}
			return
		}
	}
	t.Fatal("no span holds fp8.big")
}
