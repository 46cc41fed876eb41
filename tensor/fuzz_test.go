package tensor

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// FuzzDecode gives both decoders the same code table and payload: neither
// may panic, and they must agree on the bytes or both refuse.
func FuzzDecode(f *testing.F) {
	// Groups of 2^8, and of 2^12, which the amd64 lanes decode.
	for _, k := range []Kind{BF16, F16, F32, V16, B8} {
		for _, s := range []struct {
			gl     byte
			values int
		}{{8, 700}, {12, 9000}} {
			if k == V16 && s.gl == 12 {
				continue // too many distinct words; V16 does not use the lanes
			}
			words := gaussian(k, s.values, 0.1, uint64(k))
			c := codeFor(f, k, words)
			p, err := Encode(nil, c, words, int(s.gl), 1)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(byte(k), s.gl, uint16(s.values), c.AppendTable(nil), p)
		}
	}
	f.Fuzz(func(t *testing.T, kind, gl byte, values uint16, table, payload []byte) {
		c, _, err := ParseTable(Kind(kind), table)
		if err != nil || values == 0 {
			return
		}
		ref, rerr := DecodeReference(c, int(values), int(gl), payload)
		d, err := NewDecoder(c, int(values), int(gl), payload)
		var out []byte
		if err == nil {
			out = make([]byte, int(values)*c.Kind.WordSize())
			err = d.Decode(out, 2)
		}
		if (err == nil) != (rerr == nil) {
			t.Fatalf("fast decoder: %v; reference: %v", err, rerr)
		}
		if err == nil && !bytes.Equal(out, ref) {
			t.Fatal("decoders disagree")
		}
	})
}

// FuzzRoundTrip codes arbitrary values of every kind and decodes them back.
func FuzzRoundTrip(f *testing.F) {
	f.Add(byte(1), byte(8), []byte{1, 2, 3, 4, 0x80, 0x3f, 0, 0})
	f.Add(byte(4), byte(9), bytes.Repeat([]byte{7, 0}, 600))
	f.Add(byte(4), byte(10), bytes.Repeat([]byte{0x38, 0xb8, 0x30, 0x3c, 0x40}, 900))
	f.Add(byte(0), byte(3), gaussian(BF16, 9000, 0.05, 3))
	f.Add(byte(4), byte(3), gaussian(B8, 9000, 0.05, 4))
	f.Fuzz(func(t *testing.T, kind, gl byte, words []byte) {
		k := []Kind{BF16, F16, F32, V16, B8}[kind%5]
		g := []int{MinGroupLog2, MinGroupLog2 + 1, MinGroupLog2 + 2, 12}[gl%4]
		words = words[:len(words)/k.WordSize()*k.WordSize()]
		if len(words) == 0 {
			return
		}
		var c *Code
		var err error
		if k == V16 {
			dict, freq := WordHistogram(words, MaxSymbols)
			c, err = NewCode(k, freq, dict)
		} else {
			freq := make([]uint64, 256)
			Histogram(k, words, freq)
			c, err = NewCode(k, freq, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
		p, err := Encode(nil, c, words, g, 2)
		if err != nil {
			t.Fatal(err)
		}
		n := len(words) / k.WordSize()
		ref, err := DecodeReference(c, n, g, p)
		if err != nil || !bytes.Equal(ref, words) {
			t.Fatalf("reference: %v", err)
		}
		d, err := NewDecoder(c, n, g, p)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]byte, len(words))
		if err := d.Decode(out, 1); err != nil || !bytes.Equal(out, words) {
			t.Fatalf("fast: %v", err)
		}
		_ = binary.LittleEndian
	})
}
