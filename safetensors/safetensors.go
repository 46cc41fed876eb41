// Package safetensors reads and validates safetensors files (an 8-byte
// little-endian header length, a JSON header naming every tensor's dtype,
// shape and byte range, then the tensor data) and sharded checkpoints with
// their model.safetensors.index.json.
//
// Validation is strict: a file is accepted only when its header is valid
// JSON with known dtypes, every tensor's byte range matches its shape and
// dtype, and the ranges tile the data section exactly (sorted, no gaps, no
// overlaps). Malformed input gives an error wrapping ErrInvalid, never a
// panic, and no allocation beyond the header's own size (capped at
// MaxHeaderSize).
package safetensors

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"sort"
	"strconv"
)

// MaxHeaderSize caps the JSON header: larger claims are refused before any
// allocation. (The reference implementation's cap is 100 MB.)
const MaxHeaderSize = 100 << 20

// MetadataKey is the header entry that holds free-form string metadata.
const MetadataKey = "__metadata__"

// ErrInvalid is wrapped by every error about a malformed file.
var ErrInvalid = errors.New("invalid safetensors")

type invalidError struct{ msg string }

func (e *invalidError) Error() string { return "safetensors: " + e.msg }
func (e *invalidError) Unwrap() error { return ErrInvalid }

func invalidf(format string, args ...any) error {
	return &invalidError{fmt.Sprintf(format, args...)}
}

// Tensor is one entry of the header.
type Tensor struct {
	Name  string
	Dtype Dtype
	Shape []int64
	// Begin and End are data_offsets: the tensor's bytes, counted from the
	// start of the data section (just after the header).
	Begin, End int64
	// OffsetsText is where, in the header bytes, the data_offsets array is
	// written: from its '[' to just past its ']'.
	OffsetsText [2]int

	shapeBytes int64
}

// ShapeBytes is the size in bytes that the shape and dtype call for (equal
// to Size once the header is validated).
func (t *Tensor) ShapeBytes() int64 { return t.shapeBytes }

// Size is the tensor's length in bytes.
func (t *Tensor) Size() int64 { return t.End - t.Begin }

// NumElements is the product of the shape (1 for a scalar).
func (t *Tensor) NumElements() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= d // checked for overflow when parsed
	}
	return n
}

// Header is a parsed safetensors header.
type Header struct {
	// Raw is the header exactly as stored: the JSON text and any padding.
	Raw []byte
	// Metadata is the __metadata__ object, nil when the header has none.
	Metadata map[string]string
	// MetadataKeys are Metadata's keys in the order the header writes them.
	MetadataKeys []string
	// MetadataIndex is how many tensors the header lists before
	// __metadata__ (-1 when it has none).
	MetadataIndex int
	// Tensors are in the order the header lists them.
	Tensors []Tensor
	// DataSize is the length of the data section the tensors tile.
	DataSize int64

	byName    map[string]int
	dataOrder []int
}

// Lookup finds a tensor by name.
func (h *Header) Lookup(name string) (*Tensor, bool) {
	i, ok := h.byName[name]
	if !ok {
		return nil, false
	}
	return &h.Tensors[i], true
}

// DataOrder returns the indices of Tensors sorted by their position in the
// data section.
func (h *Header) DataOrder() []int { return h.dataOrder }

// ParseHeader parses and validates the JSON header (the bytes after the
// 8-byte length). The tensors' byte ranges must tile [0, DataSize) exactly.
func ParseHeader(raw []byte) (*Header, error) {
	h, err := parseHeader(raw, false)
	if err != nil {
		return nil, err
	}
	if err := h.checkOffsets(); err != nil {
		return nil, err
	}
	return h, nil
}

// ParseSkeleton parses a header whose data_offsets may be written as an
// empty array "[]" (the packed form leaves out offsets that follow from the
// sizes); such tensors get Begin and End -1. Everything else is checked as
// ParseHeader checks it, except that the byte ranges are not required to
// tile the data section.
func ParseSkeleton(raw []byte) (*Header, error) {
	return parseHeader(raw, true)
}

func parseHeader(raw []byte, skeleton bool) (*Header, error) {
	if len(raw) > MaxHeaderSize {
		return nil, invalidf("header of %d bytes is larger than the %d-byte limit", len(raw), MaxHeaderSize)
	}
	s := &scanner{b: raw}
	if s.peek() != '{' {
		return nil, invalidf("header does not start with a JSON object")
	}
	s.pos++
	h := &Header{Raw: raw, byName: map[string]int{}, MetadataIndex: -1}
	seenMeta := false
	if s.peek() == '}' {
		s.pos++
	} else {
		for {
			name, err := s.str()
			if err != nil {
				return nil, err
			}
			if err := s.expect(':'); err != nil {
				return nil, err
			}
			if name == MetadataKey {
				if seenMeta {
					return nil, s.errorf("duplicate %s", MetadataKey)
				}
				seenMeta = true
				if h.Metadata, h.MetadataKeys, err = parseStrings(s, MetadataKey); err != nil {
					return nil, err
				}
				h.MetadataIndex = len(h.Tensors)
			} else {
				if _, dup := h.byName[name]; dup {
					return nil, s.errorf("duplicate tensor name %q", name)
				}
				t, err := parseTensor(s, name, skeleton)
				if err != nil {
					return nil, err
				}
				h.byName[name] = len(h.Tensors)
				h.Tensors = append(h.Tensors, t)
			}
			c := s.peek()
			if c == ',' {
				s.pos++
				continue
			}
			if c == '}' {
				s.pos++
				break
			}
			return nil, s.errorf("want ',' or '}' after an entry")
		}
	}
	if s.peek() != 0 {
		return nil, s.errorf("unexpected bytes after the header object")
	}
	return h, nil
}

// parseStrings reads a JSON object of string values (what names it in errors).
func parseStrings(s *scanner, what string) (map[string]string, []string, error) {
	if err := s.expect('{'); err != nil {
		return nil, nil, err
	}
	m := map[string]string{}
	var keys []string
	if s.peek() == '}' {
		s.pos++
		return m, keys, nil
	}
	for {
		k, err := s.str()
		if err != nil {
			return nil, nil, err
		}
		if err := s.expect(':'); err != nil {
			return nil, nil, err
		}
		if s.peek() != '"' {
			return nil, nil, s.errorf("%s value for %q is not a string", what, k)
		}
		v, err := s.str()
		if err != nil {
			return nil, nil, err
		}
		if _, dup := m[k]; dup {
			return nil, nil, s.errorf("duplicate %s key %q", what, k)
		}
		m[k] = v
		keys = append(keys, k)
		switch s.peek() {
		case ',':
			s.pos++
		case '}':
			s.pos++
			return m, keys, nil
		default:
			return nil, nil, s.errorf("want ',' or '}' in %s", what)
		}
	}
}

func parseTensor(s *scanner, name string, skeleton bool) (Tensor, error) {
	t := Tensor{Name: name}
	if err := s.expect('{'); err != nil {
		return t, fmt.Errorf("tensor %q: %w", name, err)
	}
	var haveDtype, haveShape, haveOffsets bool
	var offsets []int64
	if s.peek() != '}' {
		for {
			kb, _, err := s.rawStr()
			if err != nil {
				return t, err
			}
			if err := s.expect(':'); err != nil {
				return t, err
			}
			dup := false
			switch k := string(kb); k {
			case "dtype":
				dup, haveDtype = haveDtype, true
				v, _, err := s.rawStr()
				if err != nil {
					return t, err
				}
				t.Dtype = DtypeOf(v)
			case "shape":
				dup, haveShape = haveShape, true
				if t.Shape, err = s.uints(); err != nil {
					return t, err
				}
			case "data_offsets":
				dup, haveOffsets = haveOffsets, true
				s.ws()
				start := s.pos
				if offsets, err = s.uints(); err != nil {
					return t, err
				}
				t.OffsetsText = [2]int{start, s.pos}
			default:
				if err := s.skip(0); err != nil {
					return t, err
				}
			}
			if dup {
				return t, s.errorf("tensor %q: duplicate key %q", name, string(kb))
			}
			c := s.peek()
			if c == ',' {
				s.pos++
				continue
			}
			if c == '}' {
				break
			}
			return t, s.errorf("tensor %q: want ',' or '}'", name)
		}
	}
	s.pos++
	switch {
	case !haveDtype:
		return t, invalidf("tensor %q has no dtype", name)
	case !haveShape:
		return t, invalidf("tensor %q has no shape", name)
	case !haveOffsets:
		return t, invalidf("tensor %q has no data_offsets", name)
	case !t.Dtype.Known():
		return t, invalidf("tensor %q: unknown dtype %q", name, string(t.Dtype))
	case skeleton && len(offsets) == 0:
		t.Begin, t.End = -1, -1
	case len(offsets) != 2:
		return t, invalidf("tensor %q: data_offsets has %d numbers, want 2", name, len(offsets))
	default:
		t.Begin, t.End = offsets[0], offsets[1]
		if t.Begin > t.End {
			return t, invalidf("tensor %q: data_offsets [%d,%d] end before they begin", name, t.Begin, t.End)
		}
	}
	numel := uint64(1)
	for _, d := range t.Shape {
		hi, lo := bits.Mul64(numel, uint64(d))
		if hi != 0 || lo > 1<<62 {
			return t, invalidf("tensor %q: shape %v overflows", name, t.Shape)
		}
		numel = lo
	}
	size, ok := byteSize(t.Dtype, numel)
	if !ok {
		return t, invalidf("tensor %q: shape %v of %s is not a whole number of bytes", name, t.Shape, t.Dtype)
	}
	t.shapeBytes = int64(size)
	if t.Begin >= 0 && uint64(t.End-t.Begin) != size {
		return t, invalidf("tensor %q: shape %v of %s needs %d bytes, data_offsets [%d,%d] hold %d",
			name, t.Shape, t.Dtype, size, t.Begin, t.End, t.End-t.Begin)
	}
	return t, nil
}

// checkOffsets sorts the tensors by position and checks that they tile the
// data section from 0 with no gap or overlap.
func (h *Header) checkOffsets() error {
	order := make([]int, len(h.Tensors))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		ta, tb := &h.Tensors[order[a]], &h.Tensors[order[b]]
		if ta.Begin != tb.Begin {
			return ta.Begin < tb.Begin
		}
		return ta.End < tb.End
	})
	var end int64
	for _, i := range order {
		t := &h.Tensors[i]
		switch {
		case t.Begin > end:
			return invalidf("gap in the data section: bytes %d to %d belong to no tensor (before %q)", end, t.Begin, t.Name)
		case t.Begin < end:
			return invalidf("tensor %q (bytes %d to %d) overlaps the one before it (ending at %d)", t.Name, t.Begin, t.End, end)
		}
		end = t.End
	}
	h.DataSize = end
	h.dataOrder = order
	return nil
}

// File is a parsed safetensors file: its header and where the data lies.
type File struct {
	*Header
	// HeaderLen is the length the 8-byte prefix gives (len(Raw)).
	HeaderLen int64
	// DataStart is the file offset of the data section: 8 + HeaderLen.
	DataStart int64
}

// Size is the length of the whole file.
func (f *File) Size() int64 { return f.DataStart + f.DataSize }

// Data returns tensor t's bytes within file, the whole file's bytes.
func (f *File) Data(file []byte, t *Tensor) []byte {
	return file[f.DataStart+t.Begin : f.DataStart+t.End]
}

// Parse validates a whole safetensors file held in memory. The file must
// end exactly where the last tensor ends.
func Parse(b []byte) (*File, error) {
	f, err := parsePrefix(b, int64(len(b)))
	if err != nil {
		return nil, err
	}
	return f, f.finish(b[8:f.DataStart], int64(len(b)))
}

// Read validates a safetensors file of the given size through r, reading
// only its header.
func Read(r io.ReaderAt, size int64) (*File, error) {
	var p [8]byte
	if _, err := r.ReadAt(p[:], 0); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, invalidf("file of %d bytes is too short for the 8-byte header length", size)
		}
		return nil, err
	}
	f, err := parsePrefix(p[:], size)
	if err != nil {
		return nil, err
	}
	raw := make([]byte, f.HeaderLen)
	if _, err := r.ReadAt(raw, 8); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, invalidf("file truncated inside the header")
		}
		return nil, err
	}
	return f, f.finish(raw, size)
}

func parsePrefix(b []byte, size int64) (*File, error) {
	if size < 8 || len(b) < 8 {
		return nil, invalidf("file of %d bytes is too short for the 8-byte header length", size)
	}
	n := binary.LittleEndian.Uint64(b)
	switch {
	case n > MaxHeaderSize:
		return nil, invalidf("header length %d is larger than the %d-byte limit (not a safetensors file?)", n, MaxHeaderSize)
	case int64(n) > size-8:
		return nil, invalidf("header length %d runs past the end of the %d-byte file", n, size)
	case n < 2:
		return nil, invalidf("header length %d is too short for a JSON object", n)
	}
	return &File{HeaderLen: int64(n), DataStart: 8 + int64(n)}, nil
}

func (f *File) finish(raw []byte, size int64) error {
	h, err := ParseHeader(raw)
	if err != nil {
		return err
	}
	f.Header = h
	if got := size - f.DataStart; got != h.DataSize {
		if got < h.DataSize {
			return invalidf("data section holds %d bytes, tensors need %d (file truncated?)", got, h.DataSize)
		}
		return invalidf("data section holds %d bytes, %d more than the tensors use", got, got-h.DataSize)
	}
	return nil
}

// FormatOffsets is how data_offsets are written by the reference writer:
// "[begin,end]".
func FormatOffsets(begin, end int64) []byte {
	return AppendOffsets(make([]byte, 0, 24), begin, end)
}

// AppendOffsets appends FormatOffsets(begin, end) to b.
func AppendOffsets(b []byte, begin, end int64) []byte {
	b = append(b, '[')
	b = strconv.AppendInt(b, begin, 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, end, 10)
	return append(b, ']')
}
