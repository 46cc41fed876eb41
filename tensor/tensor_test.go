package tensor

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/glyd/glyd/internal/fp8"
)

// gaussian returns n values ~ N(0, sigma) in the kind's encoding.
func gaussian(k Kind, n int, sigma float64, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	out := make([]byte, n*k.WordSize())
	for i := range n {
		f := float32(r.NormFloat64() * sigma)
		switch k {
		case BF16:
			binary.LittleEndian.PutUint16(out[2*i:], bf16(f))
		case F16, V16:
			binary.LittleEndian.PutUint16(out[2*i:], f16(f))
		case F32:
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(f))
		case B8:
			out[i] = fp8.E4M3(float64(f))
		}
	}
	return out
}

// bf16 rounds to nearest even.
func bf16(f float32) uint16 {
	b := math.Float32bits(f)
	return uint16((b + 0x7fff + (b>>16)&1) >> 16)
}

// f16 converts (truncating; good enough for test data).
func f16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23&0xff) - 127 + 15
	mant := uint16(b>>13) & 0x3ff
	switch {
	case exp <= 0:
		return sign
	case exp >= 31:
		return sign | 0x7c00
	}
	return sign | uint16(exp)<<10 | mant
}

func codeFor(t testing.TB, k Kind, words []byte) *Code {
	t.Helper()
	var c *Code
	var err error
	if k == V16 {
		dict, freq := WordHistogram(words, MaxSymbols)
		if dict == nil {
			t.Fatal("too many distinct words for V16")
		}
		c, err = NewCode(k, freq, dict)
	} else {
		freq := make([]uint64, 256)
		Histogram(k, words, freq)
		c, err = NewCode(k, freq, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func roundTrip(t *testing.T, k Kind, words []byte, gl int) []byte {
	t.Helper()
	c := codeFor(t, k, words)
	payload, err := Encode(nil, c, words, gl, 3)
	if err != nil {
		t.Fatal(err)
	}
	// The table survives serialisation.
	tab := c.AppendTable(nil)
	c2, n, err := ParseTable(k, tab)
	if err != nil || n != len(tab) {
		t.Fatalf("ParseTable: %v (%d of %d bytes)", err, n, len(tab))
	}
	values := len(words) / k.WordSize()
	ref, err := DecodeReference(c2, values, gl, payload)
	if err != nil {
		t.Fatalf("reference decoder: %v", err)
	}
	if !bytes.Equal(ref, words) {
		t.Fatal("reference decoder: wrong bytes")
	}
	d, err := NewDecoder(c2, values, gl, payload)
	if err != nil {
		t.Fatal(err)
	}
	for _, threads := range []int{1, 4} {
		out := make([]byte, len(words))
		if err := d.Decode(out, threads); err != nil {
			t.Fatalf("fast decoder: %v", err)
		}
		if !bytes.Equal(out, words) {
			for i := range out {
				if out[i] != words[i] {
					t.Fatalf("fast decoder: first wrong byte at %d of %d", i, len(out))
				}
			}
		}
	}
	return payload
}

func TestRoundTripKinds(t *testing.T) {
	for _, k := range []Kind{BF16, F16, F32, B8} {
		for _, n := range []int{1, 2, 3, 15, 16, 17, 100, 4095, 4096, 4097, 50000} {
			words := gaussian(k, n, 0.05, uint64(n))
			for _, gl := range []int{8, 12} {
				p := roundTrip(t, k, words, gl)
				if n == 50000 && gl == 12 {
					bpv := 8 * float64(len(p)) / float64(n)
					t.Logf("%v: %.3f bits per value (raw %d)", k, bpv, 8*k.WordSize())
				}
			}
		}
	}
}

func TestRoundTripV16(t *testing.T) {
	// A quantized tensor: few distinct values.
	r := rand.New(rand.NewPCG(1, 2))
	levels := make([]uint16, 200)
	for i := range levels {
		levels[i] = bf16(float32(i-100) * 0.001)
	}
	words := make([]byte, 2*30000)
	for i := range 30000 {
		v := int(r.NormFloat64()*20) + 100
		v = max(0, min(199, v))
		binary.LittleEndian.PutUint16(words[2*i:], levels[v])
	}
	p := roundTrip(t, V16, words, 12)
	t.Logf("v16: %.3f bits per value", 8*float64(len(p))/30000)
}

func TestSpecialValues(t *testing.T) {
	// One distinct value (a zero-bit code), all zeros, infinities, NaNs,
	// subnormals, every bf16 bit pattern.
	all := make([]byte, 2*65536)
	for i := range 65536 {
		binary.LittleEndian.PutUint16(all[2*i:], uint16(i))
	}
	roundTrip(t, BF16, all, 12)
	roundTrip(t, F16, all, 12)
	roundTrip(t, BF16, make([]byte, 2*10000), 12)
	roundTrip(t, F32, make([]byte, 4*5), 8)
	roundTrip(t, V16, make([]byte, 2*7000), 8)
	same := bytes.Repeat([]byte{0x80, 0x3f}, 5000)
	roundTrip(t, BF16, same, 12)
	roundTrip(t, V16, same, 12)
	// Every f32 exponent.
	f := make([]byte, 4*512)
	for i := range 512 {
		binary.LittleEndian.PutUint32(f[4*i:], uint32(i)<<23|uint32(i*7919)&0x7fffff)
	}
	roundTrip(t, F32, f, 8)
}

func TestCodeLengths(t *testing.T) {
	// Skewed frequencies need limiting: Fibonacci weights make the
	// unlimited Huffman code as deep as the alphabet.
	freq := make([]uint64, 40)
	a, b := uint64(1), uint64(1)
	for i := range freq {
		freq[i] = a
		a, b = b, a+b
	}
	lens := codeLengths(freq, MaxCodeLen)
	if _, ok := canonical(lens); !ok {
		t.Fatalf("lengths %v not a complete code", lens)
	}
	for _, l := range lens {
		if l > MaxCodeLen {
			t.Fatalf("length %d over the limit", l)
		}
	}
	// Package-merge matches Huffman when the limit does not bind.
	freq = []uint64{5, 9, 12, 13, 16, 45}
	want := []uint8{4, 4, 3, 3, 3, 1}
	if got := codeLengths(freq, MaxCodeLen); !bytes.Equal(got, want) {
		t.Fatalf("lengths %v, want %v", got, want)
	}
	// Random alphabets up to the largest.
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{2, 3, 17, 256, 1000, 4096} {
		freq := make([]uint64, n)
		for i := range freq {
			freq[i] = uint64(r.ExpFloat64()*1000) + 1
		}
		lens := codeLengths(freq, MaxCodeLen)
		if _, ok := canonical(lens); !ok {
			t.Fatalf("n=%d: not a complete code", n)
		}
	}
}

func TestCorruptPayload(t *testing.T) {
	words := gaussian(BF16, 10000, 0.1, 9)
	c := codeFor(t, BF16, words)
	payload, err := Encode(nil, c, words, 12, 1)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	for trial := range 300 {
		bad := bytes.Clone(payload)
		switch trial % 3 {
		case 0:
			bad[r.IntN(len(bad))] ^= byte(1 << r.IntN(8))
		case 1:
			bad = bad[:r.IntN(len(bad))]
		case 2:
			i := r.IntN(len(bad) - 4)
			binary.LittleEndian.PutUint32(bad[i:], r.Uint32())
		}
		out := make([]byte, len(words))
		ref, rerr := DecodeReference(c, 10000, 12, bad)
		d, err := NewDecoder(c, 10000, 12, bad)
		if err == nil {
			err = d.Decode(out, 2)
		}
		if (err == nil) != (rerr == nil) {
			t.Fatalf("trial %d: fast decoder says %v, reference %v", trial, err, rerr)
		}
		if err == nil && (!bytes.Equal(out, words) || !bytes.Equal(ref, words)) {
			t.Fatalf("trial %d: damage went unnoticed", trial)
		}
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("trial %d: error %v does not wrap ErrCorrupt", trial, err)
		}
	}
}
