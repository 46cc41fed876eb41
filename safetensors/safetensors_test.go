package safetensors

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func file(header string, data int) []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	b = append(b, header...)
	return append(b, make([]byte, data)...)
}

// seeds are valid and invalid files for the fuzz target and the tests.
func seeds() [][]byte {
	return [][]byte{
		file(`{"__metadata__":{"format":"pt"},"a":{"dtype":"BF16","shape":[2,3],"data_offsets":[0,12]},"b":{"dtype":"I32","shape":[],"data_offsets":[12,16]}}`, 16),
		file(`{"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]},"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}}   `, 8),
		file(`{"e":{"dtype":"F4","shape":[4],"data_offsets":[0,2]},"z":{"dtype":"U8","shape":[0],"data_offsets":[2,2]}}`, 2),
		file(`{}`, 0),
		file(`{"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}}`, 3),
		file(`{"a":{"dtype":"XX","shape":[2],"data_offsets":[0,4]}}`, 4),
		file(`{"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]},"a":{"dtype":"BF16","shape":[2],"data_offsets":[4,8]}}`, 8),
		file(`{"a":{"dtype":"BF16","shape":[2],"data_offsets":[2,6]}}`, 6),
		file(`{"n\u00e9\ud83d\ude00":{"dtype":"BF16","shape":[1],"data_offsets":[0,2],"extra":[1,{"x":null}]}}`, 2),
		{0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, '{'},
		{4, 0, 0, 0, 0, 0, 0, 0, '{', '}'},
	}
}

func TestParseValid(t *testing.T) {
	f, err := Parse(seeds()[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Tensors) != 2 || f.Metadata["format"] != "pt" || f.DataSize != 16 || f.MetadataIndex != 0 {
		t.Fatalf("%+v", f.Header)
	}
	a, ok := f.Lookup("a")
	if !ok || a.Dtype != BF16 || a.NumElements() != 6 || a.Size() != 12 {
		t.Fatalf("a: %+v", a)
	}
	if got := string(f.Raw[a.OffsetsText[0]:a.OffsetsText[1]]); got != "[0,12]" {
		t.Fatalf("offsets text %q", got)
	}
	// Header order differs from data order; padding after the JSON.
	f, err = Parse(seeds()[1])
	if err != nil {
		t.Fatal(err)
	}
	if o := f.DataOrder(); f.Tensors[o[0]].Name != "a" {
		t.Fatalf("data order %v", o)
	}
	if f, err = Parse(seeds()[2]); err != nil || f.Tensors[0].Size() != 2 {
		t.Fatalf("F4: %v", err)
	}
	if f, err = Parse(seeds()[8]); err != nil || f.Tensors[0].Name != "né😀" {
		t.Fatalf("escapes: %v", err)
	}
}

func TestParseInvalid(t *testing.T) {
	for _, c := range []struct {
		b    []byte
		want string
	}{
		{nil, "too short"},
		{[]byte{1, 2, 3}, "too short"},
		{seeds()[4], "holds 3 bytes"},
		{seeds()[5], "unknown dtype"},
		{seeds()[6], "duplicate tensor name"},
		{seeds()[7], "gap"},
		{seeds()[9], "limit"},
		{seeds()[10], "past the end"},
		{file(`{"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]},"b":{"dtype":"BF16","shape":[1],"data_offsets":[2,4]}}`, 4), "overlaps"},
		{file(`{"a":{"dtype":"BF16","shape":[3],"data_offsets":[0,4]}}`, 4), "needs 6 bytes"},
		{file(`{"a":{"dtype":"BF16","shape":[2],"data_offsets":[4,0]}}`, 4), "end before"},
		{file(`{"a":{"dtype":"BF16","shape":[-2],"data_offsets":[0,4]}}`, 4), "negative"},
		{file(`{"a":{"dtype":"BF16","shape":[1.5],"data_offsets":[0,4]}}`, 4), "fraction"},
		{file(`{"a":{"dtype":"BF16","shape":[4294967296,4294967296,4],"data_offsets":[0,4]}}`, 4), "overflows"},
		{file(`{"a":{"dtype":"BF16","shape":[2]}}`, 4), "no data_offsets"},
		{file(`{"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}`, 4), "after an entry"},
		{file(`{"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}}x`, 4), "after the header"},
		{file(`{"__metadata__":{"a":1}}`, 0), "not a string"},
		{file(`{"a":{"dtype":"BF16","dtype":"F16","shape":[2],"data_offsets":[0,4]}}`, 4), "duplicate key"},
		{file(`{"a":{"dtype":"F4","shape":[3],"data_offsets":[0,2]}}`, 2), "whole number of bytes"},
		{file(`[1,2]`, 0), "JSON object"},
		{file("{\"a\x01\":{}}", 0), "control character"},
		{file(`{"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4],"x":`+strings.Repeat("[", 100)+strings.Repeat("]", 100)+`}}`, 4), "nested"},
	} {
		_, err := Parse(c.b)
		if err == nil || !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one mentioning %q", c.b[min(8, len(c.b)):], err, c.want)
		}
	}
}

func TestSkeleton(t *testing.T) {
	h, err := ParseSkeleton([]byte(`{"a":{"dtype":"BF16","shape":[2],"data_offsets":[]}}`))
	if err != nil || h.Tensors[0].Begin != -1 || h.Tensors[0].ShapeBytes() != 4 {
		t.Fatalf("%v %+v", err, h)
	}
	if _, err := ParseHeader([]byte(`{"a":{"dtype":"BF16","shape":[2],"data_offsets":[]}}`)); err == nil {
		t.Fatal("empty data_offsets accepted outside a skeleton")
	}
}

func TestIndex(t *testing.T) {
	dir := t.TempDir()
	s1 := file(`{"a":{"dtype":"BF16","shape":[2],"data_offsets":[0,4]}}`, 4)
	s2 := file(`{"b":{"dtype":"BF16","shape":[1],"data_offsets":[0,2]}}`, 2)
	must(t, os.WriteFile(filepath.Join(dir, "m-1.safetensors"), s1, 0o666))
	must(t, os.WriteFile(filepath.Join(dir, "m-2.safetensors"), s2, 0o666))
	must(t, os.WriteFile(filepath.Join(dir, "model.safetensors.index.json"),
		[]byte(`{"metadata":{"total_size":6},"weight_map":{"a":"m-1.safetensors","b":"m-2.safetensors"}}`), 0o666))
	name, err := FindIndex(dir)
	if err != nil || name != "model.safetensors.index.json" {
		t.Fatalf("FindIndex: %q, %v", name, err)
	}
	c, err := OpenCheckpoint(dir, name)
	if err != nil || len(c.Shards) != 2 {
		t.Fatalf("OpenCheckpoint: %v", err)
	}
	for _, bad := range []string{
		`{"weight_map":{"a":"m-2.safetensors"}}`,
		`{"weight_map":{"a":"missing.safetensors"}}`,
		`{"weight_map":{"a":"/etc/passwd"}}`,
		`{"weight_map":{"a":"../m-1.safetensors"}}`,
		`{"weight_map":{"a":"m-1.safetensors","a":"m-1.safetensors"}}`,
		`{"weight_map":[]}`,
		`{}`,
		`not json`,
	} {
		must(t, os.WriteFile(filepath.Join(dir, name), []byte(bad), 0o666))
		if _, err := OpenCheckpoint(dir, name); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestWriteFuzzSeeds rewrites testdata/fuzz/FuzzParse from seeds() when
// GLYD_WRITE_SEEDS is set.
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("GLYD_WRITE_SEEDS") == "" {
		t.Skip("set GLYD_WRITE_SEEDS to rewrite the seed corpus")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzParse")
	must(t, os.MkdirAll(dir, 0o777))
	for i, s := range seeds() {
		body := "go test fuzz v1\n[]byte(" + strconv.Quote(string(s)) + ")\n"
		must(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("seed-%02d", i)), []byte(body), 0o666))
	}
}
