package safetensors

import (
	"bytes"
	"testing"
)

// FuzzParse feeds arbitrary bytes to the parser: it must never panic, and
// what it accepts must be consistent (tensors tiling the data section,
// names unique, every tensor's bytes inside the file).
func FuzzParse(f *testing.F) {
	for _, s := range seeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		file, err := Parse(b)
		if err != nil {
			return
		}
		if file.Size() != int64(len(b)) {
			t.Fatalf("accepted a file of %d bytes as %d", len(b), file.Size())
		}
		var total int64
		seen := map[string]bool{}
		for i := range file.Tensors {
			tt := &file.Tensors[i]
			if seen[tt.Name] {
				t.Fatalf("duplicate name %q accepted", tt.Name)
			}
			seen[tt.Name] = true
			if tt.Begin < 0 || tt.End > file.DataSize || tt.Begin > tt.End {
				t.Fatalf("tensor %q outside the data", tt.Name)
			}
			if tt.ShapeBytes() != tt.Size() {
				t.Fatalf("tensor %q: size mismatch accepted", tt.Name)
			}
			_ = file.Data(b, tt)
			total += tt.Size()
		}
		if total != file.DataSize {
			t.Fatalf("tensors cover %d of %d data bytes", total, file.DataSize)
		}
		// Reading through an io.ReaderAt agrees.
		f2, err := Read(bytes.NewReader(b), int64(len(b)))
		if err != nil || len(f2.Tensors) != len(file.Tensors) {
			t.Fatalf("Read disagrees with Parse: %v", err)
		}
	})
}

// FuzzParseIndex checks the index parser never panics.
func FuzzParseIndex(f *testing.F) {
	f.Add([]byte(`{"metadata":{"total_size":10},"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00002-of-00002.safetensors"}}`))
	f.Add([]byte(`{"weight_map":{"a":"../x"}}`))
	f.Add([]byte(`{"weight_map":{"a":"x","a":"y"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		x, err := ParseIndex(b)
		if err != nil {
			return
		}
		for _, s := range x.Shards() {
			if !validShardName(s) {
				t.Fatalf("accepted shard name %q", s)
			}
		}
	})
}
