package packed

import "github.com/glyd/glyd/tensor"

// TensorStats is what one tensor costs in the packed file.
type TensorStats struct {
	Name   string  `json:"name"`
	Dtype  string  `json:"dtype"`
	Shape  []int64 `json:"shape"`
	Bytes  int64   `json:"bytes"`        // in the original
	Values int64   `json:"values"`       // elements
	Coding string  `json:"coding"`       // bf16, f16, f32, v16, stored, base, mixed
	Packed float64 `json:"packed_bytes"` // share of the packed file
	// BitsPerValue is 8 × Packed / Values (0 for empty tensors).
	BitsPerValue float64 `json:"bits_per_value"`
}

// Stats describes a packed file.
type Stats struct {
	OriginalSize int64 `json:"original_size"`
	PackedSize   int64 `json:"packed_size"`
	HeaderBytes  int64 `json:"header_bytes"` // the safetensors header's length
	// HeaderPacked is what the header, the directory and the fixed parts
	// cost: everything not charged to a tensor.
	HeaderPacked float64        `json:"header_packed_bytes"`
	GroupSize    int            `json:"group_size"`
	BaseCoded    bool           `json:"coded_against_base"`
	Spans        int            `json:"spans"`
	SpanKinds    map[string]int `json:"span_kinds"`
	// FloatValues counts the values of BF16, F16 and F32 tensors;
	// BitsPerFloat is 8 × PackedSize / FloatValues, everything included.
	FloatValues  int64         `json:"float_values"`
	BitsPerFloat float64       `json:"bits_per_float_value"`
	Tensors      []TensorStats `json:"tensors"`
}

func spanName(s *span) string {
	switch {
	case s.kind == spanStored && s.flags&spanXOR != 0:
		return "stored-xor"
	case s.kind == spanStored:
		return "stored"
	case s.kind == spanCopy:
		return "base"
	case s.flags&spanXOR != 0:
		return tensor.Kind(s.kind).String() + "-xor"
	}
	return tensor.Kind(s.kind).String()
}

// Stats charges every byte of the packed file to a tensor or to the
// header: a group's bytes (its stream, raw bytes, offset and CRC) to the
// tensors its values belong to, in proportion; a span's table and padding
// likewise; stored bytes their share of the compressed meta section.
func (f *File) Stats() (*Stats, error) {
	hdr, err := f.Header()
	if err != nil {
		return nil, err
	}
	st := &Stats{
		OriginalSize: f.Size(),
		PackedSize:   f.size,
		HeaderBytes:  f.dir.headerLen,
		GroupSize:    1 << f.hdr.groupLog2,
		BaseCoded:    f.hdr.flags&flagBase != 0,
		Spans:        len(f.dir.spans),
		SpanKinds:    map[string]int{},
	}
	// Cost per data byte, piecewise: a list of (begin, end, cost) runs.
	type run struct {
		begin, end int64
		cost       float64
	}
	var runs []run
	charged := 0.0
	metaPerByte := float64(f.hdr.metaLen) / float64(max(1, f.metaLen))
	for i := range f.dir.spans {
		s := &f.dir.spans[i]
		st.SpanKinds[spanName(s)]++
		switch {
		case s.kind == spanStored:
			c := metaPerByte * float64(s.length)
			runs = append(runs, run{s.begin, s.begin + s.length, c})
			charged += c
		case s.kind == spanCopy:
			runs = append(runs, run{s.begin, s.begin + s.length, 0})
		default:
			d, err := f.decoder(i)
			if err != nil {
				return nil, err
			}
			ws := int64(s.code.Kind.WordSize())
			rs := float64(s.code.Kind.RawSize())
			extra := metaPerByte * float64(len(s.code.AppendTable(nil)))
			perValue := extra / float64(d.Values())
			for g := range d.Groups() {
				first, n := d.Group(g)
				c := float64(d.StreamBytes(g)) + rs*float64(n) + 8 + perValue*float64(n)
				if g == d.Groups()-1 {
					c -= 4 // the last group has no end offset
				}
				b := s.begin + int64(first)*ws
				runs = append(runs, run{b, b + int64(n)*ws, c})
				charged += c
			}
		}
	}
	st.HeaderPacked = float64(st.PackedSize) - charged
	// Charge the runs to tensors (both sorted by position).
	order := hdr.DataOrder()
	st.Tensors = make([]TensorStats, len(hdr.Tensors))
	coding := make([]string, len(hdr.Tensors))
	k := 0
	for _, ti := range order {
		t := &hdr.Tensors[ti]
		ts := TensorStats{Name: t.Name, Dtype: string(t.Dtype), Shape: t.Shape, Bytes: t.Size(), Values: t.NumElements()}
		for k > 0 && runs[k-1].end > t.Begin {
			k--
		}
		for ; k < len(runs) && runs[k].begin < t.End; k++ {
			r := runs[k]
			lo, hi := max(r.begin, t.Begin), min(r.end, t.End)
			if hi > lo {
				ts.Packed += r.cost * float64(hi-lo) / float64(r.end-r.begin)
			}
		}
		for i := range f.dir.spans {
			s := &f.dir.spans[i]
			if s.begin < t.End && s.begin+s.length > t.Begin {
				switch name := spanName(s); {
				case coding[ti] == "":
					coding[ti] = name
				case coding[ti] != name:
					coding[ti] = "mixed"
				}
			}
		}
		ts.Coding = coding[ti]
		if ts.Coding == "" {
			ts.Coding = "empty"
		}
		if ts.Values > 0 {
			ts.BitsPerValue = 8 * ts.Packed / float64(ts.Values)
		}
		if floatKind(t.Dtype) != 0 {
			st.FloatValues += ts.Values
		}
		st.Tensors[ti] = ts
	}
	if st.FloatValues > 0 {
		st.BitsPerFloat = 8 * float64(st.PackedSize) / float64(st.FloatValues)
	}
	return st, nil
}
