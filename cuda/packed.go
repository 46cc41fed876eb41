package cuda

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/glyd/glyd/packed"
	"github.com/glyd/glyd/safetensors"
	"github.com/glyd/glyd/tensor"
)

// isPacked reports whether the file at path starts like a packed file.
func isPacked(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	var b [4]byte
	if _, err := io.ReadFull(f, b[:]); err != nil {
		return false, nil
	}
	return packed.IsPacked(b[:]), nil
}

// PackedLayout lays out a packed file (docs/tensors.md): its payload
// section is uploaded as it is and its coded spans become the kernel's
// plan, each decoded to its place in the data section; the other spans
// (tensors kept in the meta section) are listed in Host, their bytes
// produced by FillHost. The file stays mapped until Close.
func PackedLayout(path string) (*Layout, error) {
	return openLayout(path, func(fh *os.File) (*Layout, error) {
		fi, err := fh.Stat()
		if err != nil {
			return nil, err
		}
		return packedLayoutOf(path, fh, fi.Size())
	})
}

// packedLayoutOf lays out the packed file open as fh, mapping it.
func packedLayoutOf(path string, fh *os.File, size int64) (*Layout, error) {
	b, unmap, err := mapFile(fh, size)
	if err != nil {
		return nil, err
	}
	l, err := packedLayout(path, b)
	if err != nil {
		unmap()
		return nil, err
	}
	l.close = unmap
	return l, nil
}

// packedLayout lays out the packed file b (held in memory or mapped).
func packedLayout(path string, b []byte) (*Layout, error) {
	if packed.NeedsBase(b) {
		return nil, fmt.Errorf("%s: packed against a base file (glyd pack --base); the GPU loader needs a file packed alone: unpack it first", path)
	}
	f, err := packed.Open(b, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	st, err := f.Header()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	off, n := f.PayloadSection()
	l := &Layout{Path: path, Packed: true, Size: int64(len(b)), UploadOff: off, UploadLen: n, DataLen: st.DataSize,
		Tensors: tensorLayouts(st), pf: f}
	var spans []Span
	for _, s := range f.Spans() {
		if s.Coded && !s.XOR && kernelKind(s.Code.Kind) {
			spans = append(spans, Span{Name: l.spanName(s.DataOff, s.Len), Code: s.Code, Values: s.Values,
				GroupLog2: f.GroupLog2(), Payload: s.PayloadOff, PayloadLen: s.PayloadLen, Out: s.DataOff})
			continue
		}
		// Produced on the CPU; neighbours merge into one upload.
		if k := len(l.Host); k > 0 && l.Host[k-1].Off+l.Host[k-1].Len == s.DataOff {
			l.Host[k-1].Len += s.Len
		} else {
			l.Host = append(l.Host, HostRange{Off: s.DataOff, Len: s.Len})
		}
	}
	if len(spans) > 0 {
		if l.Plan, err = NewPlan(spans, n, st.DataSize); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return l, nil
}

// spanName names the tensors a data range holds, for messages.
func (l *Layout) spanName(off, n int64) string {
	i := sort.Search(len(l.Tensors), func(i int) bool { return l.Tensors[i].Off+l.Tensors[i].Size > off })
	var names []string
	for ; i < len(l.Tensors) && l.Tensors[i].Off < off+n; i++ {
		if l.Tensors[i].Size > 0 {
			names = append(names, l.Tensors[i].Name)
		}
	}
	switch len(names) {
	case 0:
		return fmt.Sprintf("data bytes %d to %d", off, off+n)
	case 1:
		return "tensor " + names[0]
	}
	return fmt.Sprintf("tensors %s … %s (%d)", names[0], names[len(names)-1], len(names))
}

// kernelKind reports whether the decode kernel knows kind k. B8 (fp8
// values) is not in the kernel yet: such spans are decoded on the CPU, as
// the tensors the meta section keeps.
func kernelKind(k tensor.Kind) bool {
	switch k {
	case tensor.BF16, tensor.F16, tensor.F32, tensor.V16:
		return true
	}
	return false
}

// FillHost produces the bytes of the Host ranges on the CPU (packed files:
// the tensors kept in the meta section).
func (l *Layout) FillHost() error {
	for i := range l.Host {
		h := &l.Host[i]
		if h.Bytes != nil {
			continue
		}
		h.Bytes = make([]byte, h.Len)
		if err := l.pf.DataAt(h.Bytes, h.Off); err != nil {
			return fmt.Errorf("%s: %w", l.Path, err)
		}
	}
	return nil
}

// Close releases what the layout holds (a packed file's mapping, the
// open file).
func (l *Layout) Close() {
	if l.close != nil {
		l.close()
		l.close = nil
	}
	if l.file != nil {
		l.file.Close()
		l.file = nil
	}
	l.pf = nil
}

// CPUData returns a file's data section as the CPU decodes it: a plain
// file's bytes after the header, a packed file unpacked (the reference a
// GPU load is verified against).
func CPUData(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if packed.IsPacked(b) {
		if packed.NeedsBase(b) {
			return nil, errors.New(path + ": packed against a base file")
		}
		if b, err = packed.Decode(b, nil, 0); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	f, err := safetensors.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return b[f.DataStart:], nil
}
