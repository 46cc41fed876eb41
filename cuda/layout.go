package cuda

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/glyd/glyd/packed"
	"github.com/glyd/glyd/safetensors"
)

// Layout is how one file's tensors reach the device, worked out on the CPU
// from the file's metadata: the tensors end up in one device buffer laid
// out as the file's data section (each tensor at its data_offsets, as a
// plain load of the safetensors file places them). For a plain file that
// buffer is the data section uploaded as it is. For a packed file one byte
// range of the file, the payload section, is uploaded as it is (the packed
// buffer), the kernel decodes the spans of Plan from it into the data
// buffer, and the few bytes the CPU decodes (the meta section's tensors)
// are uploaded to their place.
type Layout struct {
	Path   string
	Packed bool  // a packed file; false for a plain safetensors file
	Size   int64 // the file's size
	// UploadOff and UploadLen are the file range uploaded as it is: the
	// data section of a plain file, the payload section of a packed one.
	UploadOff, UploadLen int64
	// DataLen is the data section's length: the device buffer the
	// tensors live in.
	DataLen int64
	// Plan decodes the coded spans (packed files; nil when there are
	// none): payload offsets in the uploaded range, outputs in the data
	// buffer.
	Plan *Plan
	// Host are data-section ranges the CPU produces (packed files: the
	// tensors kept in the meta section), their Bytes filled by FillHost.
	Host []HostRange
	// Tensors, in data order.
	Tensors []TensorLayout

	pf    *packed.File
	close func()
	file  *os.File // open from the layout until Close (openLayout)
}

// HostRange is Len data-section bytes at Off that the CPU produces.
type HostRange struct {
	Off, Len int64
	Bytes    []byte
}

// TensorLayout is one tensor's place in the data buffer.
type TensorLayout struct {
	Name  string
	Dtype safetensors.Dtype
	Shape []int64
	Off   int64 // data_offsets begin
	Size  int64 // bytes
}

// tensorLayouts lists a header's tensors in data order.
func tensorLayouts(h *safetensors.Header) []TensorLayout {
	var out []TensorLayout
	for _, i := range h.DataOrder() {
		t := &h.Tensors[i]
		out = append(out, TensorLayout{Name: t.Name, Dtype: t.Dtype, Shape: t.Shape, Off: t.Begin, Size: t.Size()})
	}
	return out
}

// PlainLayout lays out a plain safetensors file: its data section is
// uploaded whole and every tensor is used in place (the baseline a packed
// load is measured against).
func PlainLayout(path string) (*Layout, error) {
	return openLayout(path, func(fh *os.File) (*Layout, error) { return layoutOf(path, fh, false) })
}

// FileLayout lays out a packed file or a plain safetensors file, told apart
// by their first bytes.
func FileLayout(path string) (*Layout, error) {
	return openLayout(path, func(fh *os.File) (*Layout, error) { return layoutOf(path, fh, true) })
}

// openLayout opens path once (on a mount every open is several FUSE round
// trips) and lays it out with lay; the Layout keeps the file open for the
// upload, until Close.
func openLayout(path string, lay func(fh *os.File) (*Layout, error)) (*Layout, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	l, err := lay(fh)
	if err != nil {
		fh.Close()
		return nil, err
	}
	l.file = fh
	return l, nil
}

// layoutOf lays out the file open as fh: its first bytes tell a packed file
// (when packedOK) from a plain one.
func layoutOf(path string, fh *os.File, packedOK bool) (*Layout, error) {
	fi, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "load", Path: path, Err: errors.New("not a regular file")}
	}
	var magic [4]byte
	n, _ := fh.ReadAt(magic[:], 0)
	if packedOK && packed.IsPacked(magic[:n]) {
		return packedLayoutOf(path, fh, fi.Size())
	}
	f, err := safetensors.Read(fh, fi.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &Layout{Path: path, Size: f.Size(), UploadOff: f.DataStart, UploadLen: f.DataSize, DataLen: f.DataSize,
		Tensors: tensorLayouts(f.Header)}, nil
}

// PackedSuffix ends a packed shard's name: glyd pack turns a directory's
// NAME.safetensors into NAME.safetensors.glyt and copies the index as it
// is (docs/tensors.md, "Sharded checkpoints").
const PackedSuffix = ".glyt"

// Files lists what a load of path covers: path itself when it is a file.
// For a directory: the shards its *.safetensors.index.json names, or
// without an index its *.safetensors files and (packed) any other packed
// files; sorted. With packed set each safetensors file is replaced by its
// packed twin where there is one: SHARD.glyt beside it, or the packed form
// a glydfs mount keeps of it (MountPacked).
func Files(path string, packed bool) ([]string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	pick := func(name string) string {
		if packed {
			if fi, err := os.Stat(name + PackedSuffix); err == nil && fi.Mode().IsRegular() {
				return name + PackedSuffix
			}
			if twin := MountPacked(name); twin != "" {
				return twin
			}
		}
		return name
	}
	if !fi.IsDir() {
		return []string{pick(path)}, nil
	}
	idx, err := safetensors.FindIndex(path)
	if err != nil {
		return nil, err
	}
	if idx != "" {
		b, err := os.ReadFile(filepath.Join(path, idx))
		if err != nil {
			return nil, err
		}
		x, err := safetensors.ParseIndex(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", idx, err)
		}
		var out []string
		for _, s := range x.Shards() {
			out = append(out, pick(filepath.Join(path, filepath.FromSlash(s))))
		}
		return out, nil
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	var out []string
	seen := map[string]bool{}
	for _, e := range ents {
		name := filepath.Join(path, e.Name())
		switch {
		case e.IsDir() || strings.HasPrefix(e.Name(), "."):
		case strings.HasSuffix(e.Name(), ".safetensors"):
			if p := pick(name); !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		case packed && strings.HasSuffix(e.Name(), PackedSuffix):
			if ok, err := isPacked(name); err == nil && ok && !seen[name] {
				seen[name] = true
				out = append(out, name)
			}
		}
	}
	if len(out) == 0 {
		return nil, &fs.PathError{Op: "load", Path: path, Err: errors.New("no packed or safetensors files in this directory")}
	}
	sort.Strings(out)
	return out, nil
}
