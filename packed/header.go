package packed

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/glyd/glyd/safetensors"
)

// The header is kept byte for byte. Most of a header's bytes that a
// compressor cannot predict are the data_offsets numbers, yet they follow
// from the tensors' sizes and order: the packed form writes each
// "[begin,end]" that is written the plain way as "[]" (the skeleton), and
// the reader puts the numbers back.

// skeleton returns the header with predictable data_offsets emptied, and
// the data order to store (nil when it is the header order), or ok false
// when nothing can be left out.
func skeleton(h *safetensors.Header) (sk []byte, order []int, ok bool) {
	var out []byte
	last := 0
	elided := 0
	for i := range h.Tensors {
		t := &h.Tensors[i]
		text := h.Raw[t.OffsetsText[0]:t.OffsetsText[1]]
		out = append(out, h.Raw[last:t.OffsetsText[0]]...)
		if bytes.Equal(text, safetensors.FormatOffsets(t.Begin, t.End)) {
			out = append(out, '[', ']')
			elided++
		} else {
			out = append(out, text...)
		}
		last = t.OffsetsText[1]
	}
	if elided == 0 {
		return nil, nil, false
	}
	out = append(out, h.Raw[last:]...)
	order = h.DataOrder()
	identity := true
	for i, v := range order {
		identity = identity && i == v
	}
	if identity {
		order = nil
	}
	return out, order, true
}

// rebuildHeader puts the data_offsets back into a skeleton: tensors, taken
// in data order (order, or header order when nil), lie one after another
// from 0, each as long as its shape and dtype make it.
func rebuildHeader(sk []byte, order []int) ([]byte, error) {
	h, err := safetensors.ParseSkeleton(sk)
	if err != nil {
		return nil, formatErrorf("header skeleton: %v", err)
	}
	n := len(h.Tensors)
	if order != nil && len(order) != n {
		return nil, formatErrorf("header skeleton has %d tensors, the tensor order %d", n, len(order))
	}
	begin := make([]int64, n)
	var pos int64
	for k := range n {
		i := k
		if order != nil {
			i = order[k]
		}
		begin[i] = pos
		pos += h.Tensors[i].ShapeBytes()
	}
	out := make([]byte, 0, len(sk)+16*n)
	last := 0
	for i := range h.Tensors {
		t := &h.Tensors[i]
		if t.Begin >= 0 {
			continue // kept as written
		}
		out = append(out, sk[last:t.OffsetsText[0]]...)
		out = append(out, safetensors.FormatOffsets(begin[i], begin[i]+t.ShapeBytes())...)
		last = t.OffsetsText[1]
	}
	return append(out, sk[last:]...), nil
}

// The structured header coding: a header exactly as the reference writers
// produce it (compact JSON, __metadata__ and then the tensors, each as
// {"dtype":…,"shape":[…],"data_offsets":[…]}, padded with spaces) is
// stored as columns that compress far better than the text: the metadata,
// the tensor names front-coded, their dtypes, their shapes. The reader
// writes the JSON back; the writer uses this coding only when that gives
// the original bytes.

// Escaping styles of JSON strings.
const (
	escapeRaw   = 0 // non-ASCII written as UTF-8 (serde_json, Go with SetEscapeHTML(false))
	escapeASCII = 1 // non-ASCII written as \uXXXX (Python's json with ensure_ascii)
)

func appendJSONString(b []byte, s string, style byte) []byte {
	plain := true
	for i := 0; i < len(s) && plain; i++ {
		c := s[i]
		plain = c >= 0x20 && c != '"' && c != '\\' && (c < 0x80 || style == escapeRaw)
	}
	if plain {
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"')
	}
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for _, r := range s {
		switch {
		case r == '"':
			b = append(b, '\\', '"')
		case r == '\\':
			b = append(b, '\\', '\\')
		case r == '\n':
			b = append(b, '\\', 'n')
		case r == '\r':
			b = append(b, '\\', 'r')
		case r == '\t':
			b = append(b, '\\', 't')
		case r == '\b':
			b = append(b, '\\', 'b')
		case r == '\f':
			b = append(b, '\\', 'f')
		case r < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[r>>4], hex[r&15])
		case r < 0x80 || style == escapeRaw:
			b = utf8.AppendRune(b, r)
		default:
			for _, u := range utf16.Encode([]rune{r}) {
				b = append(b, '\\', 'u', hex[u>>12], hex[u>>8&15], hex[u>>4&15], hex[u&15])
			}
		}
	}
	return append(b, '"')
}

// headerFields is what the structured coding keeps of a header.
type headerFields struct {
	style     byte
	metaIndex int // tensors before __metadata__, -1 without one
	metaKeys  []string
	metaVals  []string
	names     []string
	dtypes    []string
	shapes    [][]int64
	padding   int
}

// text writes the header out, with data offsets begin[i], begin[i]+size,
// into a buffer of capacity hint (the length it should come out).
func (h *headerFields) text(begin, size []int64, hint int) []byte {
	b := make([]byte, 0, hint)
	b = append(b, '{')
	meta := func() {
		b = appendJSONString(b, safetensors.MetadataKey, h.style)
		b = append(b, ':', '{')
		for i, k := range h.metaKeys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k, h.style)
			b = append(b, ':')
			b = appendJSONString(b, h.metaVals[i], h.style)
		}
		b = append(b, '}')
	}
	for i := range h.names {
		if i == h.metaIndex {
			meta()
			b = append(b, ',')
		}
		b = appendJSONString(b, h.names[i], h.style)
		b = append(b, `:{"dtype":`...)
		b = appendJSONString(b, h.dtypes[i], h.style)
		b = append(b, `,"shape":[`...)
		for k, d := range h.shapes[i] {
			if k > 0 {
				b = append(b, ',')
			}
			b = strconv.AppendInt(b, d, 10)
		}
		b = append(b, `],"data_offsets":`...)
		b = safetensors.AppendOffsets(b, begin[i], begin[i]+size[i])
		b = append(b, '}')
		if i+1 < len(h.names) || h.metaIndex == len(h.names) {
			b = append(b, ',')
		}
	}
	if h.metaIndex == len(h.names) {
		meta()
	}
	b = append(b, '}')
	for range h.padding {
		b = append(b, ' ')
	}
	return b
}

func (h *headerFields) append(b []byte) []byte {
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = append(b, h.style)
	b = binary.AppendUvarint(b, uint64(len(h.names)))
	b = binary.AppendUvarint(b, uint64(h.metaIndex+1))
	if h.metaIndex >= 0 {
		b = binary.AppendUvarint(b, uint64(len(h.metaKeys)))
		for i, k := range h.metaKeys {
			str(k)
			str(h.metaVals[i])
		}
	}
	b = binary.AppendUvarint(b, uint64(h.padding))
	// Names front-coded: the length of the prefix shared with the name
	// before, then the rest.
	prev := ""
	for _, n := range h.names {
		l := 0
		for l < len(prev) && l < len(n) && prev[l] == n[l] {
			l++
		}
		b = binary.AppendUvarint(b, uint64(l))
		str(n[l:])
		prev = n
	}
	for _, d := range h.dtypes {
		str(d)
	}
	for _, s := range h.shapes {
		b = binary.AppendUvarint(b, uint64(len(s)))
		for _, d := range s {
			b = binary.AppendUvarint(b, uint64(d))
		}
	}
	return b
}

func parseHeaderFields(blob []byte) (*headerFields, error) {
	r := &reader{b: blob}
	h := &headerFields{}
	raw := func(what string) []byte {
		n := r.uvarint(what, uint64(len(blob)))
		if r.err != nil || uint64(len(blob)-r.pos) < n {
			r.fail("truncated %s", what)
			return nil
		}
		b := blob[r.pos : r.pos+int(n)]
		r.pos += int(n)
		return b
	}
	str := func(what string) string { return string(raw(what)) }
	h.style = r.byte("escaping style")
	if h.style > escapeASCII {
		r.fail("unknown escaping style %d", h.style)
	}
	n := int(r.uvarint("tensor count", uint64(len(blob))))
	h.metaIndex = int(r.uvarint("metadata position", uint64(n+1))) - 1
	if h.metaIndex >= 0 {
		m := int(r.uvarint("metadata count", uint64(len(blob))))
		for range m {
			if r.err != nil {
				return nil, r.err
			}
			h.metaKeys = append(h.metaKeys, str("metadata key"))
			h.metaVals = append(h.metaVals, str("metadata value"))
		}
	}
	h.padding = int(r.uvarint("padding", 1<<20))
	if r.err != nil {
		return nil, r.err
	}
	h.names = make([]string, 0, min(n, len(blob)))
	prev := ""
	for range n {
		l := int(r.uvarint("name prefix", uint64(len(prev))))
		s := prev[:l] + string(raw("name")) // one allocation
		if r.err != nil {
			return nil, r.err
		}
		h.names = append(h.names, s)
		prev = s
	}
	h.dtypes = make([]string, 0, len(h.names))
	for range n {
		h.dtypes = append(h.dtypes, string(safetensors.DtypeOf(raw("dtype"))))
		if r.err != nil {
			return nil, r.err
		}
	}
	// The shapes' dimensions share one slice (each dimension takes a byte
	// of the blob at least, so the blob bounds them).
	h.shapes = make([][]int64, 0, len(h.names))
	dims := make([]int64, 0, min(len(blob)-r.pos, 4*n))
	for range n {
		rank := int(r.uvarint("rank", uint64(len(blob))))
		start := len(dims)
		for range rank {
			dims = append(dims, int64(r.uvarint("dimension", 1<<62)))
			if r.err != nil {
				return nil, r.err
			}
		}
		h.shapes = append(h.shapes, dims[start:len(dims):len(dims)])
	}
	if r.err != nil {
		return nil, r.err
	}
	if r.pos != len(blob) {
		return nil, formatErrorf("header fields: %d bytes left over", len(blob)-r.pos)
	}
	return h, nil
}

// structure returns the structured coding of h, or ok false when writing
// it back would not give h.Raw.
func structure(h *safetensors.Header) (blob []byte, ok bool) {
	f := &headerFields{metaIndex: h.MetadataIndex, metaKeys: h.MetadataKeys}
	for _, k := range h.MetadataKeys {
		f.metaVals = append(f.metaVals, h.Metadata[k])
	}
	begin := make([]int64, len(h.Tensors))
	size := make([]int64, len(h.Tensors))
	for i := range h.Tensors {
		t := &h.Tensors[i]
		f.names = append(f.names, t.Name)
		f.dtypes = append(f.dtypes, string(t.Dtype))
		f.shapes = append(f.shapes, t.Shape)
		begin[i], size[i] = t.Begin, t.Size()
	}
	end := len(h.Raw)
	for end > 0 && h.Raw[end-1] == ' ' {
		end--
	}
	f.padding = len(h.Raw) - end
	for _, style := range []byte{escapeRaw, escapeASCII} {
		f.style = style
		if bytes.Equal(f.text(begin, size, len(h.Raw)), h.Raw) {
			return f.append(nil), true
		}
	}
	return nil, false
}

// rebuildStructured writes a structured header back as JSON.
func rebuildStructured(blob []byte, order []int, hint int) ([]byte, error) {
	f, err := parseHeaderFields(blob)
	if err != nil {
		return nil, err
	}
	n := len(f.names)
	if order != nil && len(order) != n {
		return nil, formatErrorf("header has %d tensors, the tensor order %d", n, len(order))
	}
	size := make([]int64, n)
	for i := range n {
		d := safetensors.Dtype(f.dtypes[i])
		if !d.Known() {
			return nil, formatErrorf("header fields: unknown dtype %q", f.dtypes[i])
		}
		sz, ok := safetensors.ShapeBytes(d, f.shapes[i])
		if !ok {
			return nil, formatErrorf("header fields: shape %v of %s overflows", f.shapes[i], d)
		}
		size[i] = sz
	}
	begin := make([]int64, n)
	var pos int64
	for k := range n {
		i := k
		if order != nil {
			i = order[k]
		}
		begin[i] = pos
		pos += size[i]
		if pos < 0 || pos > 1<<62 {
			return nil, formatErrorf("header fields: tensors too large")
		}
	}
	return f.text(begin, size, hint), nil
}
