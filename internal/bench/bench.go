// Package bench measures glyd's tiers against peer codecs on files: sizes,
// ratios and compress/decompress speeds at one thread and at all threads,
// with every decode checked byte for byte against the original. Report
// turns the results into per-file and total tables and the summary of
// glyd's targets, as plain text or Markdown.
package bench

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/glyd/glyd/codec"
	"github.com/glyd/glyd/internal/machine"
)

// Config controls a benchmark run. The zero value of every field means its
// default.
type Config struct {
	// MinTime is how long one timing run repeats an operation (default
	// 300ms); the best of Runs runs counts. C tools' built-in benchmarks get
	// -i with MinTime rounded up to whole seconds.
	MinTime time.Duration
	// Runs is the number of timing runs to take the best of (default 3).
	Runs int
	// Threads is the thread count of the all-threads columns and the
	// multi-core row (default runtime.NumCPU()).
	Threads int
	// CLI adds the C command-line tools found on PATH.
	CLI bool
	// GlydProc is a command that decompresses the .glyd file appended to it
	// to standard output at one thread (e.g. glyd compress -d -c -q -T 1);
	// with CLI it times glyd through a subprocess like the C tools. Empty
	// leaves that column out for glyd. GlydProcEnv is added to its
	// environment.
	GlydProc    []string
	GlydProcEnv []string
	// MultiCoreMin is the smallest input for the multi-core row (default
	// 64 MiB); smaller corpora are concatenated in memory up to it.
	MultiCoreMin int64
	// Log receives progress lines; nil discards them.
	Log io.Writer
}

func (c Config) withDefaults() Config {
	if c.MinTime <= 0 {
		c.MinTime = 300 * time.Millisecond
	}
	if c.Runs <= 0 {
		c.Runs = 3
	}
	if c.Threads <= 0 {
		c.Threads = runtime.NumCPU()
	}
	if c.MultiCoreMin <= 0 {
		c.MultiCoreMin = 64 << 20
	}
	if c.Log == nil {
		c.Log = io.Discard
	}
	return c
}

// Input is one file to measure.
type Input struct {
	Path  string // as opened
	Rel   string // shown in tables: relative to the directory given, slash-separated
	Group string // top-level folder under the directory given; TopLevel or Files otherwise
	Size  int64
}

// Group names for inputs not inside a folder.
const (
	TopLevel = "(top level)" // files directly in a directory argument
	Files    = "(files)"     // files given by name
)

// Collect lists the regular, non-empty files named by paths, walking
// directories recursively, sorted by group then file. Each file is listed
// once.
func Collect(paths []string) ([]Input, error) {
	var ins []Input
	seen := map[string]bool{}
	add := func(path, rel, group string, size int64) {
		abs, err := filepath.Abs(path)
		if err != nil {
			abs = path
		}
		if seen[abs] || size == 0 {
			return
		}
		seen[abs] = true
		ins = append(ins, Input{Path: path, Rel: rel, Group: group, Size: size})
	}
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			if !st.Mode().IsRegular() {
				return nil, fmt.Errorf("%s: not a regular file or directory", p)
			}
			add(p, filepath.ToSlash(filepath.Base(p)), Files, st.Size())
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.Type().IsRegular() {
				return nil
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(p, path)
			if err != nil {
				return err
			}
			rel = filepath.ToSlash(rel)
			group := TopLevel
			if top, _, ok := strings.Cut(rel, "/"); ok {
				group = top
			}
			add(path, rel, group, info.Size())
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	if len(ins) == 0 {
		return nil, errors.New("no non-empty regular files to measure")
	}
	sort.SliceStable(ins, func(i, j int) bool {
		if ins[i].Group != ins[j].Group {
			return ins[i].Group < ins[j].Group
		}
		return ins[i].Rel < ins[j].Rel
	})
	return ins, nil
}

// Result is one codec on one input. Times are per operation on the whole
// input; zero means not measured (shown as "-").
type Result struct {
	File  string
	Group string
	Codec string
	Kind  Kind
	Orig  int64 // original bytes
	Comp  int64 // compressed bytes

	Comp1, CompN time.Duration // compress, one thread and all threads
	Dec1, DecN   time.Duration // decompress, one thread and all threads
	// DecProc is the decompress wall time through a subprocess that reads
	// the compressed file and writes to /dev/null (C tools, and glyd at one
	// thread when Config.SelfExec is set).
	DecProc time.Duration
}

// Ratio is original over compressed size.
func (r Result) Ratio() float64 {
	if r.Comp <= 0 {
		return 0
	}
	return float64(r.Orig) / float64(r.Comp)
}

// MultiCore is the multi-core row: glyd's tiers on one large buffer.
type MultiCore struct {
	Source  string // how the buffer was made
	Threads int
	Results []Result
}

// runner holds the state of one run.
type runner struct {
	cfg     Config
	tmp     string
	devNull *os.File
}

// Run measures every codec on every input. A decode that does not give
// back the original bytes, or a tool that fails, stops the run with an
// error.
func Run(cfg Config, inputs []Input) (*Report, error) {
	cfg = cfg.withDefaults()
	rep := &Report{Config: cfg, Machine: machineInfo(), Inputs: inputs, Started: time.Now()}
	codecs, err := memCodecs()
	if err != nil {
		return nil, err
	}
	for _, c := range codecs {
		rep.Codecs = append(rep.Codecs, codecInfo{Name: c.name, Kind: c.kind, Multi: c.multi})
	}
	var tools []cliTool
	if cfg.CLI {
		for _, t := range cliTools() {
			if _, err := exec.LookPath(t.bin); err != nil {
				rep.Notes = append(rep.Notes, fmt.Sprintf("`%s` not found on PATH: %s skipped.", t.bin, t.name))
				continue
			}
			tools = append(tools, t)
			rep.Codecs = append(rep.Codecs, codecInfo{Name: t.name, Kind: KindCLI, Detail: t.describe()})
			if _, ok := rep.Tools[t.bin]; !ok {
				if rep.Tools == nil {
					rep.Tools = map[string]string{}
				}
				rep.Tools[t.bin] = toolVersion(t.bin)
			}
		}
	}
	b := &runner{cfg: cfg}
	if b.tmp, err = os.MkdirTemp("", "glyd-bench-"); err != nil {
		return nil, err
	}
	defer os.RemoveAll(b.tmp)
	if b.devNull, err = os.OpenFile(os.DevNull, os.O_WRONLY, 0); err != nil {
		return nil, err
	}
	defer b.devNull.Close()

	for i, in := range inputs {
		src, err := os.ReadFile(in.Path)
		if err != nil {
			return nil, err
		}
		t0 := time.Now()
		fmt.Fprintf(cfg.Log, "[%d/%d] %s (%d bytes)\n", i+1, len(inputs), in.Rel, len(src))
		for _, c := range codecs {
			r, err := b.runMem(c, in, src)
			if err != nil {
				return nil, fmt.Errorf("%s on %s: %w", c.name, in.Path, err)
			}
			rep.Results = append(rep.Results, r)
			fmt.Fprintf(cfg.Log, "    %-24s %s\n", c.name, progressLine(r))
		}
		for _, t := range tools {
			r, err := b.runCLI(t, in, src)
			if err != nil {
				return nil, fmt.Errorf("%s on %s: %w", t.name, in.Path, err)
			}
			rep.Results = append(rep.Results, r)
			fmt.Fprintf(cfg.Log, "    %-24s %s\n", t.name, progressLine(r))
		}
		fmt.Fprintf(cfg.Log, "    (%.1fs)\n", time.Since(t0).Seconds())
	}
	if cfg.Threads > 1 {
		mc, err := b.multiCore(inputs, codecs)
		if err != nil {
			return nil, fmt.Errorf("multi-core: %w", err)
		}
		rep.Multi = mc
	} else {
		rep.Notes = append(rep.Notes, "Multi-core row skipped: one thread.")
	}
	rep.Elapsed = time.Since(rep.Started)
	rep.Machine.LoadEnd = machine.LoadAvg()
	if busy(rep.Machine.LoadStart, rep.Machine.Cores) || busy(rep.Machine.LoadEnd, rep.Machine.Cores) {
		rep.Notes = append(rep.Notes, fmt.Sprintf("The machine was busy with other work during this run (load average %s at the start, %s at the end, on %d cores): "+
			"speeds are lower and noisier than on an idle machine, the multi-core row most of all, since a second thread only helps when a core is free.",
			rep.Machine.LoadStart, rep.Machine.LoadEnd, rep.Machine.Cores))
	}
	return rep, nil
}

func progressLine(r Result) string {
	s := fmt.Sprintf("ratio %6.3f  comp %8s MB/s  dec %8s MB/s", r.Ratio(), fmtMBs(r.Orig, r.Comp1), fmtMBs(r.Orig, r.Dec1))
	if r.DecN > 0 {
		s += fmt.Sprintf("  dec all %8s MB/s", fmtMBs(r.Orig, r.DecN))
	}
	if r.DecProc > 0 {
		s += fmt.Sprintf("  dec proc %8s MB/s", fmtMBs(r.Orig, r.DecProc))
	}
	return s
}

// runMem measures one in-process codec on one input.
func (b *runner) runMem(c memCodec, in Input, src []byte) (Result, error) {
	res := Result{File: in.Rel, Group: in.Group, Codec: c.name, Kind: c.kind, Orig: int64(len(src))}
	var err error
	var comp []byte
	if res.Comp1, err = b.timeCompress(c, src, 1, &comp); err != nil {
		return res, err
	}
	res.Comp = int64(len(comp))
	if res.Dec1, err = b.timeDecode(c, comp, src, 1); err != nil {
		return res, err
	}
	if c.multi && b.cfg.Threads > 1 {
		var compN []byte
		if res.CompN, err = b.timeCompress(c, src, b.cfg.Threads, &compN); err != nil {
			return res, err
		}
		if !bytes.Equal(comp, compN) {
			// Not expected from glyd, but then check that output too.
			if _, err = b.timeDecode(c, compN, src, 1); err != nil {
				return res, fmt.Errorf("output of the %d-thread encoder: %w", b.cfg.Threads, err)
			}
		}
		if res.DecN, err = b.timeDecode(c, comp, src, b.cfg.Threads); err != nil {
			return res, err
		}
	}
	if c.kind == KindGlyd && b.cfg.CLI && len(b.cfg.GlydProc) > 0 {
		if res.DecProc, err = b.glydProc(comp, src); err != nil {
			return res, err
		}
	}
	return res, nil
}

func (b *runner) timeCompress(c memCodec, src []byte, threads int, out *[]byte) (time.Duration, error) {
	return measure(b.cfg.MinTime, b.cfg.Runs, func() error {
		comp, err := c.compress(src, threads)
		*out = comp
		return err
	})
}

// timeDecode times decoding comp into a reused buffer and checks the
// result against want: the buffer starts as want's complement, so a byte
// the decoder never wrote cannot pass. glyd is also decoded once through
// the public codec.Decode, untimed, and checked.
func (b *runner) timeDecode(c memCodec, comp, want []byte, threads int) (time.Duration, error) {
	if c.kind == KindGlyd {
		got, err := codec.Decode(comp, threads)
		if err != nil {
			return 0, fmt.Errorf("codec.Decode at %d threads: %w", threads, err)
		}
		if err := sameBytes(want, got); err != nil {
			return 0, fmt.Errorf("codec.Decode at %d threads: round trip failed: %w", threads, err)
		}
	}
	out := make([]byte, len(want))
	for i, v := range want {
		out[i] = ^v
	}
	d, err := measure(b.cfg.MinTime, b.cfg.Runs, func() error { return c.decompress(comp, out, threads) })
	if err != nil {
		return 0, fmt.Errorf("decode at %d threads: %w", threads, err)
	}
	if err := sameBytes(want, out); err != nil {
		return 0, fmt.Errorf("decode at %d threads: round trip failed: %w", threads, err)
	}
	return d, nil
}

// sameBytes reports where got first differs from want.
func sameBytes(want, got []byte) error {
	if bytes.Equal(want, got) {
		return nil
	}
	n := min(len(want), len(got))
	i := 0
	for i < n && want[i] == got[i] {
		i++
	}
	return fmt.Errorf("decoded %d bytes, want %d; first difference at byte %d", len(got), len(want), i)
}

// multiCore measures glyd's tiers on one buffer of at least MultiCoreMin
// bytes: the largest input if one is that big, else every input
// concatenated in order (repeated if need be).
func (b *runner) multiCore(inputs []Input, codecs []memCodec) (*MultiCore, error) {
	mc := &MultiCore{Threads: b.cfg.Threads}
	largest := inputs[0]
	for _, in := range inputs {
		if in.Size > largest.Size {
			largest = in
		}
	}
	var buf []byte
	var err error
	if largest.Size >= b.cfg.MultiCoreMin {
		if buf, err = os.ReadFile(largest.Path); err != nil {
			return nil, err
		}
		mc.Source = fmt.Sprintf("largest input, %s (%d bytes)", largest.Rel, len(buf))
	} else {
		buf = make([]byte, 0, b.cfg.MultiCoreMin+largest.Size)
		files := 0
		for i := 0; int64(len(buf)) < b.cfg.MultiCoreMin; i++ {
			data, err := os.ReadFile(inputs[i%len(inputs)].Path)
			if err != nil {
				return nil, err
			}
			buf = append(buf, data...)
			files++
		}
		mc.Source = fmt.Sprintf("no input reaches %d MiB, so the inputs were concatenated in memory in table order until the buffer did", b.cfg.MultiCoreMin>>20)
		if files > len(inputs) {
			mc.Source += fmt.Sprintf(" (all %d inputs, some more than once: %d files)", len(inputs), files)
		} else {
			mc.Source += fmt.Sprintf(" (the first %d of %d inputs, %s to %s)", files, len(inputs), inputs[0].Rel, inputs[files-1].Rel)
		}
		mc.Source += fmt.Sprintf(": %d bytes", len(buf))
	}
	fmt.Fprintf(b.cfg.Log, "multi-core: %s\n", mc.Source)
	in := Input{Rel: "multi-core buffer", Group: "multi-core", Size: int64(len(buf))}
	for _, c := range codecs {
		if c.kind != KindGlyd {
			continue
		}
		res := Result{File: in.Rel, Group: in.Group, Codec: c.name, Kind: c.kind, Orig: int64(len(buf))}
		var comp []byte
		if res.CompN, err = b.timeCompress(c, buf, b.cfg.Threads, &comp); err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		res.Comp = int64(len(comp))
		if res.Dec1, err = b.timeDecode(c, comp, buf, 1); err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		if res.DecN, err = b.timeDecode(c, comp, buf, b.cfg.Threads); err != nil {
			return nil, fmt.Errorf("%s: %w", c.name, err)
		}
		fmt.Fprintf(b.cfg.Log, "    %-24s %s\n", c.name, progressLine(res))
		mc.Results = append(mc.Results, res)
	}
	return mc, nil
}
