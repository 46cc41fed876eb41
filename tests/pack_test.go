package tests

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// safetensorsFile builds a safetensors file of bf16 weights (normal, of
// varying scale) and a small int tensor, the header in data order.
func safetensorsFile(t *testing.T, seed uint64, names ...string) []byte {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 3))
	var hdr bytes.Buffer
	var data []byte
	hdr.WriteString(`{"__metadata__":{"format":"pt"}`)
	for i, name := range names {
		n := 1000 + r.IntN(20000)
		begin := len(data)
		sigma := 0.01 + r.Float64()*0.1
		for range n {
			b := math.Float32bits(float32(r.NormFloat64() * sigma))
			data = binary.LittleEndian.AppendUint16(data, uint16((b+0x7fff+(b>>16)&1)>>16))
		}
		e, _ := json.Marshal(map[string]any{"dtype": "BF16", "shape": []int{n}, "data_offsets": []int{begin, len(data)}})
		k, _ := json.Marshal(name)
		hdr.WriteString("," + string(k) + ":" + string(e))
		if i == 0 {
			begin = len(data)
			data = binary.LittleEndian.AppendUint64(data, uint64(seed))
			hdr.WriteString(`,"` + name + `.step":{"dtype":"I64","shape":[1],"data_offsets":[` + itoa(begin) + "," + itoa(len(data)) + "]}")
		}
	}
	hdr.WriteString("}")
	for hdr.Len()%8 != 0 {
		hdr.WriteByte(' ')
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(hdr.Len()))
	out = append(out, hdr.Bytes()...)
	return append(out, data...)
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func TestPackFile(t *testing.T) {
	dir := t.TempDir()
	orig := safetensorsFile(t, 1, "a.weight", "b.weight", "c.weight")
	writeFile(t, filepath.Join(dir, "m.safetensors"), orig)
	ok(t, dir, nil, "pack", "m.safetensors", "m.glyt")
	p := readFile(t, filepath.Join(dir, "m.glyt"))
	if len(p) >= len(orig)*3/4 {
		t.Errorf("packed %d of %d bytes", len(p), len(orig))
	}
	ok(t, dir, nil, "test", "m.glyt")
	ok(t, dir, nil, "unpack", "m.glyt", "back.safetensors")
	if !bytes.Equal(readFile(t, filepath.Join(dir, "back.safetensors")), orig) {
		t.Fatal("unpacked file differs from the original")
	}
	// Outputs are not overwritten without -f.
	fails(t, dir, nil, []string{"unpack", "m.glyt", "back.safetensors"}, "back.safetensors", "exists")
	ok(t, dir, nil, "unpack", "-f", "m.glyt", "back.safetensors")

	// info --json reports bits per value per tensor and overall.
	r := ok(t, dir, nil, "info", "--json", "m.glyt")
	var info struct {
		Format       string  `json:"format"`
		PackedSize   int64   `json:"packed_size"`
		OriginalSize int64   `json:"original_size"`
		BitsPerFloat float64 `json:"bits_per_float_value"`
		Tensors      []struct {
			Name         string  `json:"name"`
			BitsPerValue float64 `json:"bits_per_value"`
		} `json:"tensors"`
	}
	if err := json.Unmarshal(r.stdout, &info); err != nil {
		t.Fatalf("info --json: %v\n%s", err, r.stdout)
	}
	if info.PackedSize != int64(len(p)) || info.OriginalSize != int64(len(orig)) || len(info.Tensors) != 4 {
		t.Fatalf("info: %+v", info)
	}
	if info.BitsPerFloat < 9 || info.BitsPerFloat > 12.5 {
		t.Errorf("bits per value %.3f", info.BitsPerFloat)
	}
	for _, tt := range info.Tensors {
		if strings.HasSuffix(tt.Name, ".weight") && (tt.BitsPerValue < 9 || tt.BitsPerValue > 12.5) {
			t.Errorf("%s: %.3f bits per value", tt.Name, tt.BitsPerValue)
		}
	}
	r = ok(t, dir, nil, "info", "--tensors", "m.glyt")
	if !strings.Contains(string(r.stdout), "a.weight") || !strings.Contains(string(r.stdout), "bits per value") {
		t.Errorf("info --tensors:\n%s", r.stdout)
	}
}

func TestPackDirectory(t *testing.T) {
	dir := t.TempDir()
	model := filepath.Join(dir, "model")
	if err := os.MkdirAll(model, 0o777); err != nil {
		t.Fatal(err)
	}
	s1 := safetensorsFile(t, 1, "x.0", "x.1")
	s2 := safetensorsFile(t, 2, "y.0")
	writeFile(t, filepath.Join(model, "model-00001-of-00002.safetensors"), s1)
	writeFile(t, filepath.Join(model, "model-00002-of-00002.safetensors"), s2)
	index := `{"metadata":{"total_size":1},"weight_map":{"x.0":"model-00001-of-00002.safetensors","x.1":"model-00001-of-00002.safetensors","x.0.step":"model-00001-of-00002.safetensors","y.0":"model-00002-of-00002.safetensors","y.0.step":"model-00002-of-00002.safetensors"}}`
	writeFile(t, filepath.Join(model, "model.safetensors.index.json"), []byte(index))
	writeFile(t, filepath.Join(model, "config.json"), []byte(`{"hidden":1}`))
	ok(t, dir, nil, "pack", "model", "packed")
	for _, name := range []string{"model-00001-of-00002.safetensors.glyt", "model-00002-of-00002.safetensors.glyt", "model.safetensors.index.json", "config.json"} {
		if !exists(filepath.Join(dir, "packed", name)) {
			t.Errorf("packed directory lacks %s", name)
		}
	}
	ok(t, dir, nil, "unpack", "packed", "back")
	for _, name := range []string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors", "model.safetensors.index.json", "config.json"} {
		if !bytes.Equal(readFile(t, filepath.Join(dir, "back", name)), readFile(t, filepath.Join(model, name))) {
			t.Errorf("%s differs after pack and unpack", name)
		}
	}
	// An index naming a tensor its shard lacks is refused before anything
	// is written.
	writeFile(t, filepath.Join(model, "model.safetensors.index.json"), []byte(`{"weight_map":{"z":"model-00002-of-00002.safetensors"}}`))
	fails(t, dir, nil, []string{"pack", "model", "packed2"}, "index.json", `"z"`)
	if exists(filepath.Join(dir, "packed2")) {
		t.Error("a refused pack left output behind")
	}
}

func TestPackBase(t *testing.T) {
	dir := t.TempDir()
	v1 := safetensorsFile(t, 5, "a", "b", "c", "d")
	v2 := bytes.Clone(v1)
	// Nudge some values of the last tensor by one unit in the last place.
	for i := len(v2) - 2; i > len(v2)-4000; i -= 2 * 7 {
		binary.LittleEndian.PutUint16(v2[i:], binary.LittleEndian.Uint16(v2[i:])^1)
	}
	writeFile(t, filepath.Join(dir, "v1.safetensors"), v1)
	writeFile(t, filepath.Join(dir, "v2.safetensors"), v2)
	ok(t, dir, nil, "pack", "v2.safetensors", "alone.glyt")
	ok(t, dir, nil, "pack", "--base", "v1.safetensors", "v2.safetensors", "delta.glyt")
	alone, delta := readFile(t, filepath.Join(dir, "alone.glyt")), readFile(t, filepath.Join(dir, "delta.glyt"))
	if len(delta) > len(alone)/10 {
		t.Errorf("against v1: %d bytes, alone %d", len(delta), len(alone))
	}
	fails(t, dir, nil, []string{"unpack", "delta.glyt", "out.safetensors"}, "delta.glyt", "--base")
	fails(t, dir, nil, []string{"unpack", "--base", "v2.safetensors", "delta.glyt", "out.safetensors"}, "delta.glyt", "base")
	ok(t, dir, nil, "unpack", "--base", "v1.safetensors", "delta.glyt", "out.safetensors")
	if !bytes.Equal(readFile(t, filepath.Join(dir, "out.safetensors")), v2) {
		t.Fatal("unpacked v2 differs")
	}
	ok(t, dir, nil, "info", "delta.glyt") // sizes need no base
}

func TestPackBadInput(t *testing.T) {
	dir := t.TempDir()
	orig := safetensorsFile(t, 9, "w")
	writeFile(t, filepath.Join(dir, "m.safetensors"), orig)
	writeFile(t, filepath.Join(dir, "junk"), []byte("GLYT but not really a packed file at all, just text"))
	writeFile(t, filepath.Join(dir, "text.safetensors"), []byte("hello"))
	fails(t, dir, nil, []string{"unpack", "junk", "out"}, "junk")
	fails(t, dir, nil, []string{"test", "junk"}, "junk")
	fails(t, dir, nil, []string{"info", "junk"}, "junk")
	fails(t, dir, nil, []string{"pack", "text.safetensors", "out"}, "text.safetensors", "safetensors")
	fails(t, dir, nil, []string{"pack", "missing.safetensors", "out"}, "missing.safetensors")
	ok(t, dir, nil, "pack", "m.safetensors", "m.glyt")
	p := readFile(t, filepath.Join(dir, "m.glyt"))
	for i, bad := range [][]byte{p[:len(p)-1], p[:100], append(bytes.Clone(p), 0)} {
		name := filepath.Join(dir, "bad.glyt")
		writeFile(t, name, bad)
		fails(t, dir, nil, []string{"unpack", "-f", "bad.glyt", "out"}, "bad.glyt")
		if exists(filepath.Join(dir, "out")) {
			t.Fatalf("case %d: failed unpack left output", i)
		}
	}
	r := rand.New(rand.NewPCG(1, 1))
	for range 30 {
		bad := bytes.Clone(p)
		bad[r.IntN(len(bad))] ^= byte(1 + r.IntN(255))
		writeFile(t, filepath.Join(dir, "bad.glyt"), bad)
		res := run(t, dir, nil, "unpack", "-f", "bad.glyt", "out")
		if res.code == 0 && !bytes.Equal(readFile(t, filepath.Join(dir, "out")), orig) {
			t.Fatal("damage went unnoticed")
		}
		_ = os.Remove(filepath.Join(dir, "out"))
	}
}

func TestPackCorpus(t *testing.T) {
	weights := filepath.Join(corpusDir(), "weights")
	sets, _ := filepath.Glob(filepath.Join(weights, "*"))
	if len(sets) == 0 {
		t.Skip("corpus weights not found")
	}
	if testing.Short() {
		sets = sets[:1]
	}
	dir := t.TempDir()
	for _, set := range sets {
		out := filepath.Join(dir, filepath.Base(set))
		ok(t, dir, nil, "pack", set, out+".packed")
		ok(t, dir, nil, "unpack", out+".packed", out)
		files, _ := filepath.Glob(filepath.Join(set, "*"))
		for _, f := range files {
			if !bytes.Equal(readFile(t, f), readFile(t, filepath.Join(out, filepath.Base(f)))) {
				t.Errorf("%s differs after pack and unpack", f)
			}
		}
	}
}

// corpusDir is GLYD_CORPUS, or the shared corpus beside the repository.
func corpusDir() string {
	d := os.Getenv("GLYD_CORPUS")
	if d == "" {
		d = filepath.Join("..", "..", "shared", "corpus")
	}
	abs, err := filepath.Abs(d)
	if err != nil {
		return d
	}
	return abs
}
