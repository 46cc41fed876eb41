package packed

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/glyd/glyd/internal/fp8"

	"github.com/glyd/glyd/safetensors"
)

// corpusFiles returns the corpus's weights files, skipping the test when
// the corpus is absent.
func corpusFiles(t testing.TB) []string {
	dir := os.Getenv("GLYD_CORPUS")
	if dir == "" {
		dir = "../../shared/corpus"
	}
	files, _ := filepath.Glob(filepath.Join(dir, "weights", "*", "*.safetensors"))
	if len(files) == 0 {
		t.Skip("corpus weights not found (set GLYD_CORPUS)")
	}
	return files
}

// synth builds a safetensors file: the given tensors with random data of
// realistic shape (normal weights), plus small int tensors between them.
type synthTensor struct {
	name  string
	dtype safetensors.Dtype
	shape []int64
}

func synth(t testing.TB, seed uint64, meta map[string]string, ts []synthTensor) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	var data []byte
	hdr := map[string]any{}
	if meta != nil {
		hdr[safetensors.MetadataKey] = meta
	}
	for _, st := range ts {
		n := int64(1)
		for _, d := range st.shape {
			n *= d
		}
		begin := len(data)
		sigma := 0.02 + r.Float64()*0.2
		for range n {
			f := float32(r.NormFloat64() * sigma)
			if strings.HasPrefix(st.name, "q.") {
				// Quantized: 64 levels.
				f = float32(math.Round(float64(f)/sigma*8)) * float32(sigma) / 8
			}
			switch st.dtype {
			case safetensors.BF16:
				b := math.Float32bits(f)
				data = binary.LittleEndian.AppendUint16(data, uint16((b+0x7fff+(b>>16)&1)>>16))
			case safetensors.F16:
				data = binary.LittleEndian.AppendUint16(data, f16bits(f))
			case safetensors.F32:
				data = binary.LittleEndian.AppendUint32(data, math.Float32bits(f))
			case safetensors.I32:
				data = binary.LittleEndian.AppendUint32(data, uint32(r.IntN(100)))
			case safetensors.I64:
				data = binary.LittleEndian.AppendUint64(data, uint64(r.IntN(1000)))
			case safetensors.U8, safetensors.BOOL:
				data = append(data, byte(r.IntN(4)))
			case safetensors.F8E4M3:
				data = append(data, fp8.E4M3(float64(f)/sigma))
			case safetensors.F64:
				data = binary.LittleEndian.AppendUint64(data, math.Float64bits(float64(f)))
			default:
				t.Fatalf("synth: dtype %s", st.dtype)
			}
		}
		hdr[st.name] = map[string]any{"dtype": st.dtype, "shape": st.shape, "data_offsets": []int{begin, len(data)}}
	}
	// encoding/json sorts keys: data order then differs from header order,
	// as in files written by the reference library.
	h, err := json.Marshal(hdr)
	if err != nil {
		t.Fatal(err)
	}
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	out = append(out, h...)
	return append(out, data...)
}

func f16bits(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23&0xff) - 127 + 15
	if exp <= 0 {
		return sign
	}
	if exp >= 31 {
		return sign | 0x7c00
	}
	return sign | uint16(exp)<<10 | uint16(b>>13)&0x3ff
}

func mixed(t testing.TB, seed uint64) []byte {
	return synth(t, seed, map[string]string{"format": "pt"}, []synthTensor{
		{"layer.0.weight", safetensors.BF16, []int64{64, 96}},
		{"layer.0.bias", safetensors.BF16, []int64{96}},
		{"layer.0.step", safetensors.I32, []int64{2}},
		{"layer.1.weight", safetensors.BF16, []int64{96, 128}},
		{"layer.1.scale", safetensors.BF16, []int64{}},
		{"emb", safetensors.F16, []int64{300, 17}},
		{"head", safetensors.F32, []int64{1000, 3}},
		{"ids", safetensors.I64, []int64{50}},
		{"mask", safetensors.BOOL, []int64{33}},
		{"fp8", safetensors.F8E4M3, []int64{77}},
		{"fp8.big", safetensors.F8E4M3, []int64{240, 250}},
		{"double", safetensors.F64, []int64{9}},
		{"empty", safetensors.BF16, []int64{0, 4}},
		{"z.big", safetensors.BF16, []int64{70000}},
		{"q.weight", safetensors.BF16, []int64{50000}},
	})
}

func roundTrip(t *testing.T, file []byte, opts Options) []byte {
	t.Helper()
	p, err := Encode(file, opts)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Open(p, opts.Base)
	if err != nil {
		t.Fatal(err)
	}
	for _, threads := range []int{1, 3} {
		got, err := f.Decode(threads)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, file) {
			t.Fatalf("decoded %d bytes differ from the original %d", len(got), len(file))
		}
	}
	var buf bytes.Buffer
	if n, err := f.WriteTo(&buf, 2, nil); err != nil || n != int64(len(file)) || !bytes.Equal(buf.Bytes(), file) {
		t.Fatalf("WriteTo: %d, %v", n, err)
	}
	if err := Verify(p, opts.Base, 2); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if opts.Base == nil {
		checkReaderAt(t, p, file)
	}
	return p
}

// countingReader is a ReaderAt that counts the bytes read through it.
type countingReader struct {
	b    []byte
	read atomic.Int64
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	c.read.Add(int64(len(p)))
	return bytes.NewReader(c.b).ReadAt(p, off)
}

// checkReaderAt checks that packed file p, opened through a ReaderAt,
// decodes to file whole and in random pieces.
func checkReaderAt(t *testing.T, p, file []byte) {
	t.Helper()
	cr := &countingReader{b: p}
	f, err := OpenReaderAt(cr, int64(len(p)))
	if err != nil {
		t.Fatalf("OpenReaderAt: %v", err)
	}
	got, err := f.Decode(2)
	if err != nil || !bytes.Equal(got, file) {
		t.Fatalf("OpenReaderAt: decoded bytes differ from the original (%v)", err)
	}
	r := rand.New(rand.NewPCG(uint64(len(p)), 2))
	for range 100 {
		off := r.Int64N(int64(len(file)) + 1)
		buf := make([]byte, r.IntN(30000))
		k, err := f.ReadAt(buf, off)
		want := file[off:min(int64(len(file)), off+int64(len(buf)))]
		if k != len(want) || !bytes.Equal(buf[:k], want) || (k < len(buf) && err != io.EOF) {
			t.Fatalf("OpenReaderAt: ReadAt(%d, %d): %d, %v", len(buf), off, k, err)
		}
	}
}

// TestReaderAtReadsLittle: a small read of a large tensor through a
// ReaderAt reads its groups, not the tensor's payload.
func TestReaderAtReadsLittle(t *testing.T) {
	file := synth(t, 9, nil, []synthTensor{{"big", safetensors.BF16, []int64{1 << 21}}})
	p, err := Encode(file, Options{})
	if err != nil {
		t.Fatal(err)
	}
	cr := &countingReader{b: p}
	f, err := OpenReaderAt(cr, int64(len(p)))
	if err != nil {
		t.Fatal(err)
	}
	opened := cr.read.Load()
	buf := make([]byte, 64<<10)
	off := int64(len(file)) / 2
	if _, err := f.ReadAt(buf, off); err != nil || !bytes.Equal(buf, file[off:off+int64(len(buf))]) {
		t.Fatalf("ReadAt: %v", err)
	}
	read := cr.read.Load() - opened
	t.Logf("open read %d bytes, a 64 KiB read %d bytes of a %d-byte packed file", opened, read, len(p))
	if read > 3*int64(len(buf)) || opened > 64<<10 {
		t.Errorf("open read %d bytes and a 64 KiB read %d: want only what they need", opened, read)
	}
}

func TestRoundTripSynthetic(t *testing.T) {
	file := mixed(t, 1)
	p := roundTrip(t, file, Options{})
	t.Logf("%d -> %d bytes", len(file), len(p))
	// The quantized tensor gets a dictionary code.
	f0, err := Open(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := f0.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.SpanKinds["v16"] == 0 {
		t.Errorf("no V16 span for the quantized tensor: %v", st.SpanKinds)
	}
	for _, ts := range st.Tensors {
		if ts.Name == "q.weight" && ts.BitsPerValue > 6 {
			t.Errorf("quantized tensor at %.2f bits per value", ts.BitsPerValue)
		}
	}
	for _, gl := range []int{8, 16} {
		roundTrip(t, file, Options{GroupLog2: gl, Threads: 1})
	}
	// Random reads.
	f, err := Open(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 1))
	for range 200 {
		off := r.Int64N(int64(len(file)))
		n := r.IntN(20000)
		buf := make([]byte, n)
		k, err := f.ReadAt(buf, off)
		want := file[off:min(int64(len(file)), off+int64(n))]
		if k != len(want) || !bytes.Equal(buf[:k], want) || (k < n && err != io.EOF) {
			t.Fatalf("ReadAt(%d, %d): %d, %v", n, off, k, err)
		}
	}
}

func TestEdgeFiles(t *testing.T) {
	for name, file := range map[string][]byte{
		"no tensors":    synth(t, 1, nil, nil),
		"metadata only": synth(t, 1, map[string]string{"a": "b"}, nil),
		"only ints":     synth(t, 2, nil, []synthTensor{{"a", safetensors.I32, []int64{100}}}),
		"one bf16":      synth(t, 3, nil, []synthTensor{{"a", safetensors.BF16, []int64{}}}),
		"all empty":     synth(t, 4, nil, []synthTensor{{"a", safetensors.BF16, []int64{0}}, {"b", safetensors.F32, []int64{3, 0}}}),
		"f32 only":      synth(t, 5, nil, []synthTensor{{"a", safetensors.F32, []int64{5000}}}),
	} {
		t.Run(name, func(t *testing.T) { roundTrip(t, file, Options{}) })
	}
	// A header written with spaces keeps them (offsets stay verbatim).
	h := []byte(`{"a": {"dtype": "BF16", "shape": [3], "data_offsets": [0, 6]}}`)
	file := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	file = append(append(file, h...), 1, 2, 3, 4, 5, 6)
	roundTrip(t, file, Options{})
}

func TestCorpus(t *testing.T) {
	files := corpusFiles(t)
	if testing.Short() {
		files = files[:2]
	}
	for _, name := range files {
		file, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		p := roundTrip(t, file, Options{})
		st, _ := safetensors.Parse(file)
		var vals int64
		for _, tt := range st.Tensors {
			if floatKind(tt.Dtype) != 0 {
				vals += tt.Size() / int64(floatKind(tt.Dtype).WordSize())
			}
		}
		t.Logf("%s/%s: %d -> %d bytes, %.3f bits per value", filepath.Base(filepath.Dir(name)), filepath.Base(name), len(file), len(p), 8*float64(len(p))/float64(vals))
	}
}

func TestBase(t *testing.T) {
	v1 := mixed(t, 7)
	st, _ := safetensors.Parse(v1)
	v2 := bytes.Clone(v1)
	// Nudge one tensor: +1 ulp on some values.
	tt, _ := st.Lookup("layer.1.weight")
	d := v2[st.DataStart+tt.Begin : st.DataStart+tt.End]
	for i := 0; i < len(d); i += 2 * 37 {
		binary.LittleEndian.PutUint16(d[i:], binary.LittleEndian.Uint16(d[i:])+1)
	}
	alone := roundTrip(t, v2, Options{})
	against := roundTrip(t, v2, Options{Base: v1})
	t.Logf("v2 alone %d bytes, against v1 %d bytes", len(alone), len(against))
	if len(against) > len(alone)/5 {
		t.Errorf("coding against the base saves too little: %d vs %d", len(against), len(alone))
	}
	if _, err := Open(against, nil); !errors.Is(err, ErrNeedBase) {
		t.Errorf("without the base: %v", err)
	}
	if _, err := Open(against, v2); !errors.Is(err, ErrWrongBase) {
		t.Errorf("with the wrong base: %v", err)
	}
}

func TestRefuseInvalid(t *testing.T) {
	if _, err := Encode([]byte("not safetensors at all"), Options{}); !errors.Is(err, safetensors.ErrInvalid) {
		t.Fatalf("Encode of garbage: %v", err)
	}
	p, err := Encode(mixed(t, 3), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(p[:len(p)-1], nil); !errors.Is(err, ErrFormat) {
		t.Fatalf("truncated: %v", err)
	}
	// Every single-byte change is caught (CRCs everywhere), or harmless.
	orig := mixed(t, 3)
	r := rand.New(rand.NewPCG(2, 2))
	for trial := range 400 {
		bad := bytes.Clone(p)
		bad[r.IntN(len(bad))] ^= byte(1 + r.IntN(255))
		got, err := Decode(bad, nil, 2)
		if err == nil && !bytes.Equal(got, orig) {
			t.Fatalf("trial %d: damage went unnoticed", trial)
		}
	}
	_ = fmt.Sprint
}
