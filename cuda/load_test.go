package cuda

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/glyd/glyd/internal/fp8"
	"github.com/glyd/glyd/packed"
	"github.com/glyd/glyd/safetensors"
	"github.com/glyd/glyd/tensor"
)

type synthTensor struct {
	name  string
	dtype safetensors.Dtype
	shape []int64
}

// synthFile builds a safetensors file of the given tensors: normal
// weights for the float types, small integers for the rest, in data order
// as listed (so odd-sized tensors put the next ones at odd offsets).
func synthFile(t testing.TB, seed uint64, ts []synthTensor) []byte {
	r := rand.New(rand.NewPCG(seed, 3))
	var data []byte
	type entry struct {
		Dtype       safetensors.Dtype `json:"dtype"`
		Shape       []int64           `json:"shape"`
		DataOffsets [2]int            `json:"data_offsets"`
	}
	hdr := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	for _, st := range ts {
		n := int64(1)
		for _, d := range st.shape {
			n *= d
		}
		begin := len(data)
		sigma := 0.01 + r.Float64()*0.1
		for range n {
			f := float32(r.NormFloat64() * sigma)
			switch st.dtype {
			case safetensors.BF16:
				data = binary.LittleEndian.AppendUint16(data, uint16(math.Float32bits(f)>>16))
			case safetensors.F16:
				data = binary.LittleEndian.AppendUint16(data, uint16(r.Uint32()&0x3bff))
			case safetensors.F32:
				data = binary.LittleEndian.AppendUint32(data, math.Float32bits(f))
			case safetensors.I64:
				data = binary.LittleEndian.AppendUint64(data, uint64(r.IntN(1000)))
			case safetensors.BOOL, safetensors.U8:
				data = append(data, byte(r.IntN(2)))
			case safetensors.F8E4M3:
				data = append(data, fp8.E4M3(r.NormFloat64()))
			default:
				t.Fatalf("synth: dtype %s", st.dtype)
			}
		}
		hdr[st.name] = entry{st.dtype, st.shape, [2]int{begin, len(data)}}
	}
	h, err := json.Marshal(hdr)
	if err != nil {
		t.Fatal(err)
	}
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	return append(append(out, h...), data...)
}

// A model of every kind: bf16, f16 and f32 weights (several coded spans),
// odd-sized tensors of other types between them (stored spans, and coded
// spans at odd offsets of the data section), a scalar, a one-value tensor.
func mixedModel(t testing.TB, seed uint64) []byte {
	return synthFile(t, seed, []synthTensor{
		{"a.weight", safetensors.BF16, []int64{300, 97}},
		{"a.bias", safetensors.BF16, []int64{97}},
		{"mask", safetensors.BOOL, []int64{33}},
		{"b.weight", safetensors.BF16, []int64{128, 200}},
		{"b.scale", safetensors.BF16, []int64{}},
		{"ids", safetensors.I64, []int64{21}},
		{"emb", safetensors.F16, []int64{1000, 13}},
		{"flag", safetensors.U8, []int64{3}},
		{"head", safetensors.F32, []int64{700, 9}},
		{"one", safetensors.F32, []int64{1}},
		{"z.big", safetensors.BF16, []int64{70001}},
	})
}

func writeTemp(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func packFile(t testing.TB, file []byte, gl int) []byte {
	t.Helper()
	p, err := packed.Encode(file, packed.Options{GroupLog2: gl, Threads: 2})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The layout of a packed file, run through the emulated kernel over the
// bytes that would be uploaded, rebuilds the original data section.
func TestPackedLayoutEmulated(t *testing.T) {
	dir := t.TempDir()
	for _, gl := range []int{8, 12} {
		orig := mixedModel(t, uint64(gl))
		path := writeTemp(t, dir, "m.glyt", packFile(t, orig, gl))
		l, err := FileLayout(path)
		if err != nil {
			t.Fatal(err)
		}
		if !l.Packed || l.Plan == nil || len(l.Plan.Spans) < 3 || len(l.Host) == 0 {
			t.Fatalf("gl %d: packed %v, plan %v, %d host ranges: want coded and stored spans", gl, l.Packed, l.Plan != nil, len(l.Host))
		}
		got, err := EmulateFile(l)
		l.Close()
		if err != nil {
			t.Fatal(err)
		}
		st, _ := safetensors.Parse(orig)
		if !bytes.Equal(got, orig[st.DataStart:]) {
			t.Fatalf("gl %d: emulated load differs from the original data", gl)
		}
		odd := false
		for _, s := range l.Plan.Spans {
			odd = odd || s.Out%4 != 0
		}
		if !odd {
			t.Errorf("gl %d: no coded span at an unaligned data offset; the test lost its point", gl)
		}
	}
}

// The whole load path but the driver's: staging, upload in chunks, the
// CPU's ranges, the kernel (emulated) and its status words, the copy back
// and the bit-for-bit comparison; a directory of shards; the plain path.
func TestLoaderEmulated(t *testing.T) {
	dir := t.TempDir()
	orig := mixedModel(t, 1)
	pk := packFile(t, orig, 8)
	path := writeTemp(t, dir, "model.glyt", pk)
	plain := writeTemp(t, dir, "model.safetensors", orig)
	l := NewEmulatedLoader()
	defer l.Close()

	st, bad, err := l.Verify(path)
	if err != nil || len(bad) > 0 {
		t.Fatalf("verify: %v %v", err, bad)
	}
	if st.Packed != 1 || st.Spans == 0 || st.Groups == 0 || st.TensorBytes != int64(len(orig))-8-int64(binary.LittleEndian.Uint64(orig)) {
		t.Fatalf("stats %+v", st)
	}
	if st.Launches < 1 {
		t.Fatalf("%d launches", st.Launches)
	}
	if _, bad, err := l.Verify(plain); err != nil || len(bad) > 0 {
		t.Fatalf("verify plain: %v %v", err, bad)
	}
	m, err := l.LoadPlain(plain)
	if err != nil {
		t.Fatal(err)
	}
	if m.Stats.Packed != 0 || len(m.Tensors) != 11 {
		t.Fatalf("plain load: %+v, %d tensors", m.Stats, len(m.Tensors))
	}
	m.Free()
	// Tensors: names, shapes and where their bytes are on the device.
	m, err = l.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := safetensors.Parse(orig)
	for _, tn := range m.Tensors {
		ot, ok := f.Lookup(tn.Name)
		if !ok || ot.Size() != tn.Size || ot.Dtype != tn.Dtype || len(ot.Shape) != len(tn.Shape) {
			t.Fatalf("tensor %s: %+v vs %+v", tn.Name, tn, ot)
		}
		got := make([]byte, tn.Size)
		if err := l.dev.copyOut(got, tn.Ptr); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, f.Data(orig, ot)) {
			t.Fatalf("tensor %s: wrong bytes on the device", tn.Name)
		}
	}
	m.Free()

	// A sharded checkpoint as glyd pack lays it out: the index as it was,
	// each SHARD as SHARD.glyt.
	sd := filepath.Join(dir, "sharded")
	os.Mkdir(sd, 0o755)
	wm := map[string]string{}
	var want int64
	for i := range 3 {
		tn := "s" + string(rune('a'+i))
		shard := synthFile(t, uint64(10+i), []synthTensor{{tn, safetensors.BF16, []int64{4000 + int64(i)}}})
		name := "model-0000" + string(rune('1'+i)) + "-of-00003.safetensors"
		writeTemp(t, sd, name+PackedSuffix, packFile(t, shard, 12))
		wm[tn] = name
		want += 2 * (4000 + int64(i))
	}
	idx, _ := json.Marshal(map[string]any{"metadata": map[string]any{}, "weight_map": wm})
	writeTemp(t, sd, "model.safetensors.index.json", idx)
	files, err := Files(sd, true)
	if err != nil || len(files) != 3 || !strings.HasSuffix(files[0], "00001-of-00003.safetensors.glyt") {
		t.Fatalf("Files: %v %v", files, err)
	}
	st, bad, err = l.Verify(sd)
	if err != nil || len(bad) > 0 || st.Files != 3 || st.Packed != 3 || st.TensorBytes != want {
		t.Fatalf("sharded: %v %v %+v", err, bad, st)
	}
	// Small shards load as one batch: one data buffer, one plan.
	m, err = l.Load(sd)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.allocs) != 1 || m.Stats.Launches > 3 || m.files[1].data <= m.files[0].data {
		t.Fatalf("sharded load: %d device buffers, %d launches", len(m.allocs), m.Stats.Launches)
	}
	m.Free()
}

// Damage in a payload stops the load with an error naming the tensor and
// group, as the CPU decoder refuses the file too.
func TestLoaderEmulatedCorrupt(t *testing.T) {
	dir := t.TempDir()
	orig := mixedModel(t, 2)
	pk := packFile(t, orig, 8)
	pf, err := packed.Open(pk, nil)
	if err != nil {
		t.Fatal(err)
	}
	off, n := pf.PayloadSection()
	l := NewEmulatedLoader()
	defer l.Close()
	r := rand.New(rand.NewPCG(9, 9))
	caught := 0
	for trial := range 20 {
		bad := bytes.Clone(pk)
		bad[off+r.Int64N(n)] ^= byte(1 << r.IntN(8))
		path := writeTemp(t, dir, "bad.glyt", bad)
		_, cpuErr := packed.Decode(bad, nil, 1)
		m, err := l.Load(path)
		if err == nil {
			m.Free()
		}
		if (err == nil) != (cpuErr == nil) {
			t.Fatalf("trial %d: GPU path %v, CPU %v", trial, err, cpuErr)
		}
		if err != nil {
			caught++
			if !strings.Contains(err.Error(), "group") || !strings.Contains(err.Error(), "tensor") {
				t.Fatalf("trial %d: error does not name the tensor and group: %v", trial, err)
			}
		}
	}
	if caught < 15 {
		t.Fatalf("only %d of 20 damaged payloads refused", caught)
	}
}

// Files lists a directory's packed and safetensors files when it has no
// index (the packed twin in place of a plain file for a packed load), and
// refuses one with neither.
func TestFiles(t *testing.T) {
	dir := t.TempDir()
	orig := synthFile(t, 1, []synthTensor{{"w", safetensors.BF16, []int64{300}}})
	writeTemp(t, dir, "b.safetensors", orig)
	writeTemp(t, dir, "b.safetensors.glyt", packFile(t, orig, 8))
	writeTemp(t, dir, "c.safetensors", orig)
	writeTemp(t, dir, "a.glyt", packFile(t, orig, 8))
	writeTemp(t, dir, "notes.txt", []byte("hello"))
	for _, c := range []struct {
		packed bool
		want   string
	}{{true, "a.glyt,b.safetensors.glyt,c.safetensors"}, {false, "b.safetensors,c.safetensors"}} {
		files, err := Files(dir, c.packed)
		if err != nil {
			t.Fatal(err)
		}
		for i := range files {
			files[i] = filepath.Base(files[i])
		}
		if !sort.StringsAreSorted(files) || strings.Join(files, ",") != c.want {
			t.Fatalf("Files(packed %v): %v, want %s", c.packed, files, c.want)
		}
	}
	empty := t.TempDir()
	if _, err := Files(empty, true); err == nil {
		t.Fatal("empty directory accepted")
	}
	if _, err := Files(filepath.Join(dir, "missing"), true); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing path: %v", err)
	}
}

// corpusWeights returns the corpus's weights files (GLYD_CORPUS or
// ../../shared/corpus), skipping when there are none.
func corpusWeights(t *testing.T) []string {
	dir := os.Getenv("GLYD_CORPUS")
	if dir == "" {
		dir = filepath.Join("..", "..", "shared", "corpus")
	}
	files, _ := filepath.Glob(filepath.Join(dir, "weights", "*", "*.safetensors"))
	if len(files) == 0 {
		t.Skip("corpus weights not found (set GLYD_CORPUS)")
	}
	return files
}

// Every corpus weights file, packed, comes back byte for byte through the
// layout and the emulated kernel (-short: the smallest few).
func TestCorpusEmulated(t *testing.T) {
	files := corpusWeights(t)
	if testing.Short() {
		sort.Slice(files, func(a, b int) bool {
			fa, _ := os.Stat(files[a])
			fb, _ := os.Stat(files[b])
			return fa.Size() < fb.Size()
		})
		files = files[:3]
	}
	dir := t.TempDir()
	for _, f := range files {
		orig, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		path := writeTemp(t, dir, "x.glyt", packFile(t, orig, 0))
		l, err := FileLayout(path)
		if err != nil {
			t.Fatal(err)
		}
		got, err := EmulateFile(l)
		l.Close()
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		st, _ := safetensors.Parse(orig)
		if !bytes.Equal(got, orig[st.DataStart:]) {
			t.Fatalf("%s: emulated GPU load differs from the original", f)
		}
		spans, groups := 0, 0
		if l.Plan != nil {
			spans, groups = len(l.Plan.Spans), l.Plan.Groups
		}
		t.Logf("%s/%s: %d coded spans, %d groups, %d CPU ranges", filepath.Base(filepath.Dir(f)), filepath.Base(f), spans, groups, len(l.Host))
	}
}

// A folder of packed and plain files loads in batches: one per file when
// batches are small, one for all otherwise, with the kernel or (small
// loads) on the CPU; every tensor lands where a plain load puts it, and a
// damaged file in a batch is named.
func TestLoaderEmulatedBatches(t *testing.T) {
	dir := t.TempDir()
	want := map[string][]byte{} // file name on disk → data section
	for i := range 4 {
		orig := mixedModel(t, uint64(20+i))
		name := fmt.Sprintf("m%d.safetensors", i)
		writeTemp(t, dir, name+PackedSuffix, packFile(t, orig, 8))
		f, _ := safetensors.Parse(orig)
		want[name+PackedSuffix] = orig[f.DataStart:]
	}
	plain := mixedModel(t, 30)
	writeTemp(t, dir, "z.safetensors", plain)
	f, _ := safetensors.Parse(plain)
	want["z.safetensors"] = plain[f.DataStart:]

	l := NewEmulatedLoader()
	defer l.Close()
	check := func(what string, m *Model, buffers, cpuDecoded int) {
		t.Helper()
		if len(m.files) != 5 || len(m.allocs) != buffers || m.Stats.CPUDecoded != cpuDecoded || m.Stats.Packed != 4 {
			t.Fatalf("%s: %d files, %d device buffers, %d decoded on the CPU, %d packed", what, len(m.files), len(m.allocs), m.Stats.CPUDecoded, m.Stats.Packed)
		}
		if cpuDecoded == 4 && m.Stats.Launches != 0 {
			t.Fatalf("%s: %d launches with every file decoded on the CPU", what, m.Stats.Launches)
		}
		for _, lf := range m.files {
			got := make([]byte, lf.layout.DataLen)
			if err := l.dev.copyOut(got, lf.data); err != nil {
				t.Fatal(err)
			}
			if w := want[filepath.Base(lf.layout.Path)]; !bytes.Equal(got, w) {
				t.Fatalf("%s: %s: wrong bytes on the device", what, lf.layout.Path)
			}
		}
	}
	l.CPUBelow = 0
	m, err := l.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	check("one batch, kernel", m, 1, 0)
	m.Free()

	l.batch = 1
	m, err = l.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	check("a batch per file, kernel", m, 5, 0)
	m.Free()

	// On the CPU: each data section (over 64 KiB: several scatter
	// pieces) goes up in the blob.
	l.batch, l.CPUBelow = batchBytes, 1<<30
	if len(want["m0.safetensors"+PackedSuffix]) <= ScatterPiece {
		t.Fatalf("test model too small to need several scatter pieces")
	}
	m, err = l.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	check("one batch, CPU", m, 1, 4)
	m.Free()

	// Damage in the third file: the error names it; the loader works on.
	l.CPUBelow = 0
	pk, _ := os.ReadFile(filepath.Join(dir, "m2.safetensors"+PackedSuffix))
	pf, err := packed.Open(pk, nil)
	if err != nil {
		t.Fatal(err)
	}
	off, n := pf.PayloadSection()
	bad := bytes.Clone(pk)
	for i := off + n/3; i < off+n/3+64; i++ {
		bad[i] ^= 0x5a
	}
	writeTemp(t, dir, "m2.safetensors"+PackedSuffix, bad)
	if m, err := l.Load(dir); err == nil {
		m.Free()
		t.Fatal("a damaged payload loaded")
	} else if !strings.Contains(err.Error(), "m2.safetensors") {
		t.Fatalf("error does not name the file: %v", err)
	}
	writeTemp(t, dir, "m2.safetensors"+PackedSuffix, pk)
	m, err = l.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	check("after a failed load", m, 1, 0)
	m.Free()
}

// fp8 tensors are coded (B8), which the kernel does not decode: the loader
// decodes them on the CPU with the meta section's tensors, the bf16 ones on
// the "GPU", and every byte lands in place.
func TestLoaderFP8OnCPU(t *testing.T) {
	orig := synthFile(t, 40, []synthTensor{
		{"w", safetensors.BF16, []int64{300, 200}},
		{"w8", safetensors.F8E4M3, []int64{400, 300}},
		{"b", safetensors.BF16, []int64{300}},
	})
	pk := packFile(t, orig, 12)
	pf, err := packed.Open(pk, nil)
	if err != nil {
		t.Fatal(err)
	}
	b8 := false
	for _, s := range pf.Spans() {
		b8 = b8 || s.Coded && s.Code.Kind == tensor.B8
	}
	if !b8 {
		t.Fatal("the fp8 tensor was not coded B8")
	}
	path := writeTemp(t, t.TempDir(), "m.glyt", pk)
	l := NewEmulatedLoader()
	defer l.Close()
	lay, err := PackedLayout(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range lay.Plan.Spans {
		if s.Code.Kind == tensor.B8 {
			t.Fatal("a B8 span in the kernel's plan")
		}
	}
	lay.Close()
	st, bad, err := l.Verify(path)
	if err != nil || len(bad) > 0 {
		t.Fatalf("verify: %v %v", err, bad)
	}
	if st.Spans == 0 {
		t.Fatal("nothing decoded by the kernel")
	}
}

// The watermark moves only over a copied prefix of the pieces, and blocks
// launch as far as it reaches; whatever the order, the last piece opens
// everything.
func TestArrivalsAndLaunchable(t *testing.T) {
	ends := []int64{100, -1, 200, 300, -1}
	a := newArrivals(ends)
	steps := []struct {
		piece int
		mark  int64
		moved bool
	}{{2, 0, false}, {0, 100, true}, {1, 200, true}, {4, 0, false}, {3, 1 << 62, true}}
	for _, st := range steps {
		if mark, moved := a.arrived(st.piece); mark != st.mark || moved != st.moved {
			t.Fatalf("piece %d: mark %d moved %v, want %d %v", st.piece, mark, moved, st.mark, st.moved)
		}
	}
	need := []int64{100, 100, 250, 300}
	for _, c := range []struct {
		first int
		mark  int64
		want  int
	}{{0, 50, 0}, {0, 100, 2}, {2, 200, 2}, {2, 299, 3}, {3, 1 << 62, 4}} {
		if got := launchable(need, c.first, c.mark); got != c.want {
			t.Errorf("launchable(%d, %d) = %d, want %d", c.first, c.mark, got, c.want)
		}
	}
}

// A payload of many staging chunks (64 KiB when emulated, in whatever
// order they arrive) loads exactly, in one or more launches.
func TestLoaderManyChunks(t *testing.T) {
	orig := synthFile(t, 50, []synthTensor{
		{"a", safetensors.BF16, []int64{600, 500}},
		{"b", safetensors.BF16, []int64{500, 400}},
		{"c", safetensors.F16, []int64{700, 300}},
	})
	path := writeTemp(t, t.TempDir(), "m.glyt", packFile(t, orig, 12))
	l := NewEmulatedLoader()
	defer l.Close()
	lay, err := PackedLayout(path)
	if err != nil {
		t.Fatal(err)
	}
	up := lay.UploadLen
	lay.Close()
	if up < 8*l.chunk {
		t.Fatalf("payload of %d bytes: too small for the test", up)
	}
	st, bad, err := l.Verify(path)
	if err != nil || len(bad) > 0 {
		t.Fatalf("verify: %v %v", err, bad)
	}
	if st.Launches < 1 {
		t.Fatalf("%d launches", st.Launches)
	}
}
