package cuda

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"regexp"
	"strconv"
	"testing"

	"github.com/glyd/glyd/tensor"
)

// testWords returns n values of kind k: gaussian for the split kinds, a few
// quantized levels for V16, or one repeated value (a zero-bit code).
func testWords(k tensor.Kind, n int, seed uint64, constant bool) []byte {
	r := rand.New(rand.NewPCG(seed, 11))
	out := make([]byte, n*k.WordSize())
	levels := make([]uint16, 37)
	for i := range levels {
		levels[i] = uint16(math.Float32bits(float32(i-18)*0.01) >> 16)
	}
	for i := range n {
		f := float32(r.NormFloat64() * 0.03)
		if constant {
			f = 0.5
		}
		bits := math.Float32bits(f)
		switch k {
		case tensor.BF16:
			binary.LittleEndian.PutUint16(out[2*i:], uint16(bits>>16))
		case tensor.F16:
			binary.LittleEndian.PutUint16(out[2*i:], uint16(r.Uint32()&0x3fff)|uint16(bits>>16)&0x8000)
		case tensor.F32:
			binary.LittleEndian.PutUint32(out[4*i:], bits)
		case tensor.V16:
			w := levels[min(len(levels)-1, max(0, int(r.NormFloat64()*6)+18))]
			if constant {
				w = levels[3]
			}
			binary.LittleEndian.PutUint16(out[2*i:], w)
		}
	}
	return out
}

func testCode(t *testing.T, k tensor.Kind, words []byte) *tensor.Code {
	t.Helper()
	var c *tensor.Code
	var err error
	if k == tensor.V16 {
		dict, freq := tensor.WordHistogram(words, tensor.MaxSymbols)
		c, err = tensor.NewCode(k, freq, dict)
	} else {
		freq := make([]uint64, 256)
		tensor.Histogram(k, words, freq)
		c, err = tensor.NewCode(k, freq, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	// What a loader has: the table as stored, parsed back.
	tab := c.AppendTable(nil)
	c2, _, err := tensor.ParseTable(k, tab)
	if err != nil {
		t.Fatal(err)
	}
	return c2
}

type testSpan struct {
	words   []byte
	payload []byte
	span    Span
}

// buildBlob places spans' payloads at odd offsets of one packed buffer and
// their outputs at odd offsets of the output buffer, with gaps between
// (a data section's other tensors).
func buildBlob(t *testing.T, specs []testSpan) ([]byte, []Span, int64) {
	t.Helper()
	r := rand.New(rand.NewPCG(7, 7))
	var blob []byte
	var spans []Span
	var out int64
	for i := range specs {
		s := &specs[i]
		// junk between payloads (a packed file's other bytes)
		junk := make([]byte, r.IntN(13))
		for j := range junk {
			junk[j] = byte(r.Uint32())
		}
		blob = append(blob, junk...)
		s.span.Payload = int64(len(blob))
		s.span.PayloadLen = int64(len(s.payload))
		s.span.Out = out
		blob = append(blob, s.payload...)
		out += int64(len(s.words)) + int64(r.IntN(7))
		spans = append(spans, s.span)
	}
	return blob, spans, out + int64(r.IntN(5))
}

// padded appends PackedPad bytes of junk: the device's pad is not cleared,
// and what it holds must not matter.
func padded(blob []byte) []byte {
	return append(append([]byte(nil), blob...), bytes.Repeat([]byte{0xff, 0x5a}, PackedPad/2)...)
}

func makeSpan(t *testing.T, k tensor.Kind, n, gl int, seed uint64, constant bool) testSpan {
	t.Helper()
	words := testWords(k, n, seed, constant)
	c := testCode(t, k, words)
	payload, err := tensor.Encode(nil, c, words, gl, 2)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := tensor.DecodeReference(c, n, gl, payload)
	if err != nil || !bytes.Equal(ref, words) {
		t.Fatalf("reference decode: %v", err)
	}
	name := k.String() + "/" + strconv.Itoa(n) + "/" + strconv.Itoa(gl)
	return testSpan{words: words, payload: payload, span: Span{Name: name, Code: c, Values: int64(n), GroupLog2: gl}}
}

// The emulated kernel, over the exact buffers the GPU would get, gives back
// the original bytes for every kind, odd sizes, one-symbol codes, partial
// last groups and payloads at every alignment.
func TestEmulateRoundTrip(t *testing.T) {
	var specs []testSpan
	seed := uint64(1)
	for _, k := range []tensor.Kind{tensor.BF16, tensor.F16, tensor.F32, tensor.V16} {
		for _, n := range []int{1, 2, 3, 255, 256, 257, 4095, 4097, 40000} {
			for _, gl := range []int{8, 12} {
				if gl == 8 && n > 5000 {
					gl = 9
				}
				seed++
				specs = append(specs, makeSpan(t, k, n, gl, seed, false))
			}
		}
		specs = append(specs, makeSpan(t, k, 3001, 8, seed, true))
	}
	// Many groups in one span: several blocks.
	specs = append(specs, makeSpan(t, tensor.BF16, 300*256+17, 8, 99, false))
	blob, spans, outLen := buildBlob(t, specs)
	p, err := NewPlan(spans, int64(len(blob)), outLen)
	if err != nil {
		t.Fatal(err)
	}
	if p.Blocks < len(spans)+2 {
		t.Fatalf("%d blocks for %d spans", p.Blocks, len(spans))
	}
	checkEmulated(t, p, blob, specs, spans, outLen)
	// Each span alone, its payload the last bytes of the buffer: no read
	// past PackedPad (the emulator's slices are the device buffers'
	// bounds).
	for _, s := range specs {
		blob, spans, outLen := buildBlob(t, []testSpan{s})
		p, err := NewPlan(spans, int64(len(blob)), outLen)
		if err != nil {
			t.Fatal(err)
		}
		checkEmulated(t, p, blob, []testSpan{s}, spans, outLen)
	}
}

// checkEmulated runs the emulated kernel and checks every span's output
// and that no byte outside them was written.
func checkEmulated(t *testing.T, p *Plan, blob []byte, specs []testSpan, spans []Span, outLen int64) {
	t.Helper()
	out := bytes.Repeat([]byte{0xa5}, int(outLen))
	status, failed, first, err := Emulate(p, padded(blob), out)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Check(status, failed, first); err != nil {
		t.Fatal(err)
	}
	if failed != 0 || first != 0xffffffff {
		t.Fatalf("summary %d, %d", failed, first)
	}
	for i, s := range specs {
		got := out[spans[i].Out : spans[i].Out+int64(len(s.words))]
		if !bytes.Equal(got, s.words) {
			for j := range got {
				if got[j] != s.words[j] {
					t.Fatalf("%s (out at %d): first wrong byte at %d", s.span.Name, spans[i].Out, j)
				}
			}
		}
		clear(got)
	}
	for i, b := range out {
		if b != 0xa5 && b != 0 {
			t.Fatalf("byte %d outside every span written", i)
		}
	}
}

var groupRE = regexp.MustCompile(`group (\d+)`)

// Damage anywhere in a payload is caught exactly where the reference
// decoder catches it: the same verdict, and the first failed group is the
// group the reference names.
func TestEmulateCorrupt(t *testing.T) {
	kinds := []tensor.Kind{tensor.BF16, tensor.F32, tensor.V16, tensor.F16}
	r := rand.New(rand.NewPCG(5, 6))
	agree := 0
	for trial := range 240 {
		k := kinds[trial%len(kinds)]
		s := makeSpan(t, k, 3000+trial, 8, uint64(trial), false)
		bad := bytes.Clone(s.payload)
		switch trial % 3 {
		case 0:
			bad[r.IntN(len(bad))] ^= byte(1 << r.IntN(8))
		case 1: // in the stream area
			i := len(bad) - 1 - r.IntN(len(bad)/3)
			bad[i] ^= byte(1 << r.IntN(8))
		case 2:
			i := r.IntN(len(bad) - 4)
			binary.LittleEndian.PutUint32(bad[i:], r.Uint32())
		}
		_, rerr := tensor.DecodeReference(s.span.Code, int(s.span.Values), s.span.GroupLog2, bad)
		s.payload = bad
		blob, spans, outLen := buildBlob(t, []testSpan{s})
		p, err := NewPlan(spans, int64(len(blob)), outLen)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]byte, outLen)
		status, failed, first, _ := Emulate(p, padded(blob), out)
		if (failed == 0) != (rerr == nil) {
			t.Fatalf("trial %d: kernel %d failed groups, reference %v", trial, failed, rerr)
		}
		if rerr == nil {
			if !bytes.Equal(out[:len(s.words)], s.words) {
				t.Fatalf("trial %d: damage went unnoticed", trial)
			}
			continue
		}
		if m := groupRE.FindStringSubmatch(rerr.Error()); m != nil {
			if g, _ := strconv.Atoi(m[1]); uint32(g) != first {
				t.Fatalf("trial %d: kernel's first failed group %d (%s), reference: %v", trial, first, StatusText(status[first]), rerr)
			}
			agree++
		}
		if err := p.Check(status, failed, first); err == nil {
			t.Fatalf("trial %d: Check passed a failed launch", trial)
		}
	}
	if agree < 100 {
		t.Fatalf("only %d trials named a group", agree)
	}
}

// NewPlan refuses geometry that does not fit the buffers.
func TestPlanChecks(t *testing.T) {
	s := makeSpan(t, tensor.BF16, 1000, 8, 1, false)
	blob, spans, outLen := buildBlob(t, []testSpan{s})
	for name, f := range map[string]func(*Span){
		"payload past end": func(s *Span) { s.PayloadLen += 100 },
		"too short":        func(s *Span) { s.PayloadLen = 10 },
		"out past end":     func(s *Span) { s.Out = 256 },
		"group size":       func(s *Span) { s.GroupLog2 = 3 },
		"no values":        func(s *Span) { s.Values = 0 },
	} {
		sp := spans[0]
		f(&sp)
		if _, err := NewPlan([]Span{sp}, int64(len(blob)), outLen); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// The table layout: counts, then symbol words in canonical order.
func TestPlanTable(t *testing.T) {
	// Lengths 1, 2, 3, 3 for exponents 127, 126, 125, 128.
	freq := make([]uint64, 256)
	freq[127], freq[126], freq[125], freq[128] = 8, 4, 2, 2
	c, err := tensor.NewCode(tensor.BF16, freq, nil)
	if err != nil {
		t.Fatal(err)
	}
	tab, tb, n, err := appendTable(nil, c)
	if err != nil || tb != 3 || n != 4 {
		t.Fatalf("tb %d n %d err %v", tb, n, err)
	}
	want := []uint16{0, 1, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 127 << 7, 126 << 7, 125 << 7, 128 << 7}
	for i, w := range want {
		if got := binary.LittleEndian.Uint16(tab[2*i:]); got != w {
			t.Fatalf("table word %d = %d, want %d", i, got, w)
		}
	}
}
