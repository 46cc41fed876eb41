package packed

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"

	"github.com/glyd/glyd/safetensors"
	"github.com/glyd/glyd/tensor"
)

// FuzzDecode opens and decodes arbitrary bytes as a packed file: no panic,
// no allocation beyond what the input's structure justifies, and whatever
// decodes is a valid safetensors file whose coded spans the reference
// decoder decodes to the same bytes.
func FuzzDecode(f *testing.F) {
	small := synth(f, 1, map[string]string{"k": "v"}, []synthTensor{
		{"w", safetensors.BF16, []int64{300}},
		{"i", safetensors.I32, []int64{3}},
		{"h", safetensors.F16, []int64{40}},
		{"s", safetensors.F32, []int64{20}},
	})
	for _, gl := range []int{8, 12} {
		p, err := Encode(small, Options{GroupLog2: gl})
		if err != nil {
			f.Fatal(err)
		}
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// Mend the header's CRC so that mutations reach the rest.
		if len(b) >= HeaderSize && IsPacked(b) {
			b = bytes.Clone(b)
			binary.LittleEndian.PutUint32(b[36:], checksum(b[:36]))
		}
		pf, err := Open(b, nil)
		if err != nil {
			return
		}
		_, _ = pf.Stats() // may find damage Open does not look for
		pf.Spans()
		if pf.Size() > 64<<20 {
			_, _ = pf.WriteTo(io.Discard, 2, nil)
			return
		}
		out, err := pf.Decode(2)
		if err != nil {
			return
		}
		if _, err := safetensors.Parse(out); err != nil {
			t.Fatalf("decoded to an invalid safetensors file: %v", err)
		}
		// Read on demand, it gives the same bytes.
		if pf.hdr.flags&flagBase == 0 {
			lf, err := OpenReaderAt(bytes.NewReader(b), int64(len(b)))
			if err != nil {
				t.Fatalf("opens in memory but not through a ReaderAt: %v", err)
			}
			if got, err := lf.Decode(2); err != nil || !bytes.Equal(got, out) {
				t.Fatalf("through a ReaderAt: %v", err)
			}
		}
		data := out[8+len(pf.header):]
		for _, s := range pf.Spans() {
			if !s.Coded {
				continue
			}
			ref, err := tensor.DecodeReference(s.Code, int(s.Values), pf.GroupLog2(), pf.payload[s.PayloadOff:s.PayloadOff+s.PayloadLen])
			if err != nil || !bytes.Equal(ref, data[s.DataOff:s.DataOff+s.Len]) {
				t.Fatalf("reference decoder disagrees: %v", err)
			}
		}
	})
}
