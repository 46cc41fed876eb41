package safetensors

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// IndexSuffix ends the name of a sharded checkpoint's index
// (model.safetensors.index.json).
const IndexSuffix = ".safetensors.index.json"

// maxIndexSize caps an index file: a few hundred bytes per tensor.
const maxIndexSize = 256 << 20

// Index is a sharded checkpoint's index: which shard holds each tensor.
type Index struct {
	// Metadata is the index's "metadata" object as raw JSON (nil if absent).
	Metadata json.RawMessage
	// WeightMap maps a tensor name to the shard file that holds it, a path
	// relative to the index's directory.
	WeightMap map[string]string
}

// Shards lists the distinct shard files the index names, sorted.
func (x *Index) Shards() []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range x.WeightMap {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// ParseIndex parses and validates an index file's bytes: a JSON object with
// a "weight_map" object of tensor name to shard file. Shard names must be
// relative paths that stay inside the index's directory.
func ParseIndex(b []byte) (*Index, error) {
	if len(b) > maxIndexSize {
		return nil, invalidf("index of %d bytes is larger than the %d-byte limit", len(b), maxIndexSize)
	}
	var raw struct {
		Metadata  json.RawMessage `json:"metadata"`
		WeightMap json.RawMessage `json:"weight_map"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&raw); err != nil {
		return nil, invalidf("index: %v", err)
	}
	if dec.More() {
		return nil, invalidf("index: unexpected data after the JSON object")
	}
	if raw.WeightMap == nil {
		return nil, invalidf("index has no weight_map")
	}
	// Read the weight map with the header's reader, which reports
	// duplicate names instead of keeping the last.
	s := &scanner{b: raw.WeightMap}
	wm, _, err := parseStrings(s, "weight_map")
	if err != nil {
		return nil, fmt.Errorf("index: %w", err)
	}
	for name, shard := range wm {
		if !validShardName(shard) {
			return nil, invalidf("index: tensor %q is in shard %q, which is not a relative path inside the checkpoint directory", name, shard)
		}
	}
	return &Index{Metadata: raw.Metadata, WeightMap: wm}, nil
}

func validShardName(s string) bool {
	if s == "" || strings.ContainsRune(s, 0) || strings.Contains(s, "\\") || path.IsAbs(s) {
		return false
	}
	c := path.Clean(s)
	return c == s && c != "." && c != ".." && !strings.HasPrefix(c, "../")
}

// Checkpoint is a sharded checkpoint: an index and the shards it names.
type Checkpoint struct {
	Dir       string
	IndexName string // file name of the index within Dir
	Index     *Index
	Shards    map[string]*File // by shard name as the index gives it
}

// FindIndex returns the index file in dir (a name ending in IndexSuffix),
// "" when there is none, and an error when there are several.
func FindIndex(dir string) (string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	var found []string
	for _, e := range ents {
		if !e.IsDir() && strings.HasSuffix(e.Name(), IndexSuffix) {
			found = append(found, e.Name())
		}
	}
	switch len(found) {
	case 0:
		return "", nil
	case 1:
		return found[0], nil
	}
	return "", fmt.Errorf("%s: %d index files (%s): cannot tell which describes the checkpoint", dir, len(found), strings.Join(found, ", "))
}

// OpenCheckpoint reads the index named indexName in dir and the header of
// every shard it names, and checks that each tensor the index lists is in
// its shard. Shards are read through their headers only.
func OpenCheckpoint(dir, indexName string) (*Checkpoint, error) {
	b, err := readLimited(filepath.Join(dir, indexName), maxIndexSize)
	if err != nil {
		return nil, err
	}
	x, err := ParseIndex(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", indexName, err)
	}
	c := &Checkpoint{Dir: dir, IndexName: indexName, Index: x, Shards: map[string]*File{}}
	for _, s := range x.Shards() {
		f, err := ReadFileHeader(filepath.Join(dir, filepath.FromSlash(s)))
		if err != nil {
			return nil, err
		}
		c.Shards[s] = f
	}
	for name, s := range x.WeightMap {
		if _, ok := c.Shards[s].Lookup(name); !ok {
			return nil, invalidf("%s: tensor %q should be in %s, which does not hold it", indexName, name, s)
		}
	}
	return c, nil
}

// ReadFileHeader opens a file and parses its safetensors header.
func ReadFileHeader(name string) (*File, error) {
	fh, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "open", Path: name, Err: errors.New("not a regular file")}
	}
	f, err := Read(fh, fi.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return f, nil
}

func readLimited(name string, limit int64) ([]byte, error) {
	fh, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	if fi.Size() > limit {
		return nil, fmt.Errorf("%s: %d bytes is larger than the %d-byte limit", name, fi.Size(), limit)
	}
	b := make([]byte, 0, fi.Size())
	buf := bytes.NewBuffer(b)
	_, err = buf.ReadFrom(fh)
	return buf.Bytes(), err
}
