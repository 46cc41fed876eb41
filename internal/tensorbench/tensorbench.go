// Package tensorbench measures glyd's packed safetensors on the corpus's
// model weights — bits per value against the order-0 floor, size against
// zstd -19, decode speed per core — and on a synthetic checkpoint series,
// and writes the report docs/benchmarks/tensors.md (make bench-tensors).
package tensorbench

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/glyd/glyd/internal/cputime"
	"github.com/glyd/glyd/internal/machine"
	"github.com/glyd/glyd/packed"
	"github.com/glyd/glyd/safetensors"
	"github.com/glyd/glyd/tensor"
)

// Goals the packed format is measured against.
const (
	GoalFloorGap  = 0.1 // bits per value above 8 + H(exponent)
	GoalDecodeGBs = 2.0 // decode, GB/s of output per core
)

// Config says what to measure.
type Config struct {
	Corpus string    // directory with weights/<set>/*.safetensors
	Reps   int       // timed decodes per file (the fastest counts)
	Zstd   string    // the zstd binary ("" to skip the peer)
	Seed   uint64    // the synthetic series' nudges
	Big    int       // values of the synthetic large tensor
	Log    io.Writer // progress, or nil
}

// FileResult is one corpus file.
type FileResult struct {
	Set, Name   string
	Size        int64
	Tensors     int
	FloatValues int64
	Dtype       string  // the float dtype most values have
	H           float64 // empirical order-0 entropy of the exponent field, bits
	Floor       float64 // raw bits besides the exponent + H, per value
	Packed      int64
	Zstd        int64   // -1: not measured
	DecodeGBs   float64 // Open and DecodeTo
	DataGBs     float64 // DecodeTo of an open file
	OpenTime    time.Duration
	EncodeMBs   float64
	CPUTime     bool // decode timed in thread CPU time
}

// Bits is the packed file's bits per float value, everything included.
func (f *FileResult) Bits() float64 { return 8 * float64(f.Packed) / float64(f.FloatValues) }

// SeriesResult is one file's synthetic second version.
type SeriesResult struct {
	Set, Name      string
	Tensors        int
	Nudged         int   // tensors changed
	NudgedValues   int64 // values changed
	Alone, Against int64 // packed bytes of v2 alone and against v1
	ZstdPatch      int64 // zstd -19 --patch-from=v1 v2; -1: not measured
}

// Report is one run.
type Report struct {
	Start, End     time.Time
	LoadStart      string
	LoadEnd        string
	Config         Config
	ZstdVersion    string
	Files          []FileResult
	Series         []SeriesResult
	BigGBs         float64 // synthetic large tensor, one core
	BigGBsAll      float64 // all cores, wall time
	BigBits        float64
	Threads        int
	BigCPUTime     bool
	AsmDecoder     bool
	FloatValuesAll int64
}

func (c *Config) logf(format string, args ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, format+"\n", args...)
	}
}

// Run measures everything.
func Run(cfg Config) (*Report, error) {
	if cfg.Reps <= 0 {
		cfg.Reps = 5
	}
	if cfg.Big <= 0 {
		cfg.Big = 16 << 20
	}
	r := &Report{Start: time.Now(), LoadStart: machine.LoadAvg(), Config: cfg, Threads: runtime.GOMAXPROCS(0)}
	if cfg.Zstd != "" {
		out, err := exec.Command(cfg.Zstd, "--version").Output()
		if err != nil {
			cfg.logf("zstd: %v; measuring without it", err)
			cfg.Zstd = ""
		} else {
			r.ZstdVersion = strings.TrimSpace(string(out))
		}
		r.Config.Zstd = cfg.Zstd
	}
	sets, _ := filepath.Glob(filepath.Join(cfg.Corpus, "weights", "*"))
	sort.Strings(sets)
	for _, set := range sets {
		files, _ := filepath.Glob(filepath.Join(set, "*.safetensors"))
		sort.Strings(files)
		for _, name := range files {
			cfg.logf("%s", name)
			fr, sr, err := measureFile(&cfg, filepath.Base(set), name)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			r.Files = append(r.Files, *fr)
			r.Series = append(r.Series, *sr)
		}
	}
	if len(r.Files) == 0 {
		return nil, fmt.Errorf("no weights under %s/weights/*/", cfg.Corpus)
	}
	if err := r.measureFP8(&cfg); err != nil {
		return nil, err
	}
	cfg.logf("synthetic large tensor (%d values)", cfg.Big)
	if err := r.measureBig(); err != nil {
		return nil, err
	}
	r.AsmDecoder = tensor.AsmDecoder()
	r.End, r.LoadEnd = time.Now(), machine.LoadAvg()
	return r, nil
}

func measureFile(cfg *Config, set, name string) (*FileResult, *SeriesResult, error) {
	file, err := os.ReadFile(name)
	if err != nil {
		return nil, nil, err
	}
	st, err := safetensors.Parse(file)
	if err != nil {
		return nil, nil, err
	}
	fr := &FileResult{Set: set, Name: filepath.Base(name), Size: int64(len(file)), Tensors: len(st.Tensors), Zstd: -1}
	fr.FloatValues, fr.Dtype, fr.H, fr.Floor = floor(st, file)

	t0 := time.Now()
	p, err := packed.Encode(file, packed.Options{Threads: 1})
	if err != nil {
		return nil, nil, err
	}
	fr.EncodeMBs = float64(len(file)) / time.Since(t0).Seconds() / 1e6
	fr.Packed = int64(len(p))
	out := make([]byte, len(file))
	var derr error
	best, cpu := cputime.Best(cfg.Reps, func() {
		f, err := packed.Open(p, nil)
		if err == nil {
			err = f.DecodeTo(out, 1)
		}
		if err != nil {
			derr = err
		}
	})
	if derr != nil {
		return nil, nil, derr
	}
	if !bytes.Equal(out, file) {
		return nil, nil, fmt.Errorf("packed file does not decode to the original")
	}
	fr.DecodeGBs, fr.CPUTime = float64(len(file))/best.Seconds()/1e9, cpu
	var pf *packed.File
	fr.OpenTime, _ = cputime.Best(cfg.Reps, func() { pf, _ = packed.Open(p, nil) })
	bestData, _ := cputime.Best(cfg.Reps, func() {
		if err := pf.DecodeTo(out, 1); err != nil {
			derr = err
		}
	})
	if derr != nil {
		return nil, nil, derr
	}
	fr.DataGBs = float64(len(file)) / bestData.Seconds() / 1e9
	if cfg.Zstd != "" {
		if fr.Zstd, err = zstdSize(cfg.Zstd, "-19", "-c", name); err != nil {
			return nil, nil, err
		}
	}
	if set == FP8Set {
		return fr, nil, nil
	}
	sr, err := series(cfg, set, name, file, st)
	return fr, sr, err
}

// floor computes the float values, the main float dtype, the entropy of
// its exponent field and the order-0 floor in bits per value over all
// float values (raw bits besides the exponent + that dtype's H).
func floor(st *safetensors.File, file []byte) (int64, string, float64, float64) {
	type field struct {
		shift, bits, rest int
		counts            []uint64
		n                 int64
	}
	fields := map[safetensors.Dtype]*field{
		safetensors.BF16: {shift: 7, bits: 8, rest: 8},
		safetensors.F16:  {shift: 10, bits: 5, rest: 11},
		safetensors.F32:  {shift: 23, bits: 8, rest: 24},
		// fp8: sign, exponent, mantissa (E4M3: 1, 4, 3 bits).
		safetensors.F8E4M3: {shift: 3, bits: 4, rest: 4},
		safetensors.F8E5M2: {shift: 2, bits: 5, rest: 3},
	}
	for _, f := range fields {
		f.counts = make([]uint64, 1<<f.bits)
	}
	for i := range st.Tensors {
		t := &st.Tensors[i]
		f := fields[t.Dtype]
		if f == nil {
			continue
		}
		d := st.Data(file, t)
		ws := t.Dtype.Bits() / 8
		for k := 0; k+ws <= len(d); k += ws {
			var w uint32
			switch ws {
			case 1:
				w = uint32(d[k])
			case 2:
				w = uint32(binary.LittleEndian.Uint16(d[k:]))
			default:
				w = binary.LittleEndian.Uint32(d[k:])
			}
			f.counts[(w>>f.shift)&(1<<f.bits-1)]++
			f.n++
		}
	}
	var n int64
	var total float64
	main, mainH := "", 0.0
	var mainN int64
	for d, f := range fields {
		if f.n == 0 {
			continue
		}
		h := entropy(f.counts)
		n += f.n
		total += float64(f.n) * (float64(f.rest) + h)
		if f.n > mainN {
			main, mainH, mainN = string(d), h, f.n
		}
	}
	if n == 0 {
		return 0, "", 0, 0
	}
	return n, main, mainH, total / float64(n)
}

func entropy(counts []uint64) float64 {
	var n, s float64
	for _, c := range counts {
		if c > 0 {
			f := float64(c)
			n += f
			s += f * math.Log2(f)
		}
	}
	if n == 0 {
		return 0
	}
	return math.Log2(n) - s/n
}

func zstdSize(bin string, args ...string) (int64, error) {
	cmd := exec.Command(bin, append([]string{"-q"}, args...)...)
	var out bytes.Buffer
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("zstd %v: %v: %s", args, err, stderr.String())
	}
	return int64(out.Len()), nil
}

// series makes a synthetic second version of file the way a fine-tuning
// step changes weights — about a tenth of the float tensors nudged, a few
// percent of their values moved by one unit in the last place — and packs
// it alone and against the first.
func series(cfg *Config, set, name string, file []byte, st *safetensors.File) (*SeriesResult, error) {
	rng := rand.New(rand.NewPCG(cfg.Seed, uint64(len(file))))
	v2 := bytes.Clone(file)
	sr := &SeriesResult{Set: set, Name: filepath.Base(name), Tensors: len(st.Tensors), ZstdPatch: -1}
	var floats []int
	for i := range st.Tensors {
		if d := st.Tensors[i].Dtype; (d == safetensors.BF16 || d == safetensors.F16) && st.Tensors[i].Size() > 0 {
			floats = append(floats, i)
		}
	}
	if len(floats) == 0 {
		return sr, nil
	}
	rng.Shuffle(len(floats), func(a, b int) { floats[a], floats[b] = floats[b], floats[a] })
	floats = floats[:max(1, len(floats)/10)]
	for _, i := range floats {
		t := &st.Tensors[i]
		d := v2[st.DataStart+t.Begin : st.DataStart+t.End]
		for k := 0; k+1 < len(d); k += 2 {
			if rng.Float64() >= 0.03 {
				continue
			}
			w := binary.LittleEndian.Uint16(d[k:])
			if w&0x7fff == 0 || w&0x7fff >= 0x7f00 {
				continue // zero, or near infinity/NaN
			}
			if rng.IntN(2) == 0 {
				w++
			} else {
				w--
			}
			binary.LittleEndian.PutUint16(d[k:], w)
			sr.NudgedValues++
		}
		sr.Nudged++
	}
	alone, err := packed.Encode(v2, packed.Options{})
	if err != nil {
		return nil, err
	}
	against, err := packed.Encode(v2, packed.Options{Base: file})
	if err != nil {
		return nil, err
	}
	back, err := packed.Decode(against, file, 0)
	if err != nil || !bytes.Equal(back, v2) {
		return nil, fmt.Errorf("series: v2 against v1 does not decode (%v)", err)
	}
	sr.Alone, sr.Against = int64(len(alone)), int64(len(against))
	if cfg.Zstd != "" {
		dir, err := os.MkdirTemp("", "tensorbench")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		p := filepath.Join(dir, "v2.safetensors")
		if err := os.WriteFile(p, v2, 0o666); err != nil {
			return nil, err
		}
		if sr.ZstdPatch, err = zstdSize(cfg.Zstd, "-19", "--patch-from="+name, "-c", p); err != nil {
			return nil, err
		}
	}
	return sr, nil
}

// measureBig times the decode of one large synthetic BF16 tensor (normal
// weights), the steady state of large models.
func (r *Report) measureBig() error {
	n := r.Config.Big
	rng := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 2*n)
	for i := range n {
		b := math.Float32bits(float32(rng.NormFloat64() * 0.02))
		binary.LittleEndian.PutUint16(data[2*i:], uint16((b+0x7fff+(b>>16)&1)>>16))
	}
	h := fmt.Sprintf(`{"w":{"dtype":"BF16","shape":[%d],"data_offsets":[0,%d]}}`, n, 2*n)
	for len(h)%8 != 0 {
		h += " "
	}
	file := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	file = append(append(file, h...), data...)
	p, err := packed.Encode(file, packed.Options{})
	if err != nil {
		return err
	}
	r.BigBits = 8 * float64(len(p)) / float64(n)
	f, err := packed.Open(p, nil)
	if err != nil {
		return err
	}
	out := make([]byte, len(file))
	var derr error
	best, cpu := cputime.Best(max(3, r.Config.Reps), func() {
		if err := f.DecodeTo(out, 1); err != nil {
			derr = err
		}
	})
	if derr != nil {
		return derr
	}
	if !bytes.Equal(out, file) {
		return fmt.Errorf("synthetic tensor does not decode to the original")
	}
	r.BigGBs, r.BigCPUTime = float64(len(file))/best.Seconds()/1e9, cpu
	wall := time.Duration(math.MaxInt64)
	for range max(3, r.Config.Reps) {
		t0 := time.Now()
		if err := f.DecodeTo(out, 0); err != nil {
			return err
		}
		wall = min(wall, time.Since(t0))
	}
	r.BigGBsAll = float64(len(file)) / wall.Seconds() / 1e9
	return nil
}

// measureFP8 measures FP8Set: every bf16 corpus file cast to F8_E4M3.
func (r *Report) measureFP8(cfg *Config) error {
	dir, err := os.MkdirTemp("", "glyd-tensorbench-fp8")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	for _, f := range r.Files {
		if f.Set != "bf16" {
			continue
		}
		file, err := os.ReadFile(filepath.Join(cfg.Corpus, "weights", f.Set, f.Name))
		if err != nil {
			return err
		}
		path, err := castFP8(file, dir, f.Name)
		if err != nil {
			return fmt.Errorf("%s: fp8 cast: %w", f.Name, err)
		}
		cfg.logf("%s (fp8 cast)", f.Name)
		fr, _, err := measureFile(cfg, FP8Set, path)
		if err != nil {
			return fmt.Errorf("%s (fp8 cast): %w", f.Name, err)
		}
		r.Files = append(r.Files, *fr)
	}
	return nil
}
