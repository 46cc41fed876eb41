package bench

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// cliTool is a C command-line compressor run as a subprocess. Every tool is
// pinned to one thread.
type cliTool struct {
	name string
	bin  string
	ext  string
	comp []string // compress FILE to stdout
	dec  []string // decompress FILE to stdout
	// bench, when set, runs the tool's built-in in-memory benchmark on the
	// original file (%d is replaced by the -i seconds); its compress and
	// decompress speeds are the ones the tables show. Without it (xz) both
	// speeds are subprocess wall times.
	bench []string
}

func cliTools() []cliTool {
	return []cliTool{
		{name: NameLZ4CLI, bin: "lz4", ext: "lz4",
			comp:  []string{"-1", "-q", "-c"},
			dec:   []string{"-d", "-q", "-c"},
			bench: []string{"-b1", "-e1", "-i%d"}},
		{name: NameZstd1CLI, bin: "zstd", ext: "zst",
			comp:  []string{"-1", "-T1", "-q", "-c"},
			dec:   []string{"-d", "-T1", "-q", "-c"},
			bench: []string{"-b1", "-e1", "-T1", "-i%d"}},
		{name: NameZstd3CLI, bin: "zstd", ext: "zst",
			comp:  []string{"-3", "-T1", "-q", "-c"},
			dec:   []string{"-d", "-T1", "-q", "-c"},
			bench: []string{"-b3", "-e3", "-T1", "-i%d"}},
		{name: NameZstd19CLI, bin: "zstd", ext: "zst",
			comp:  []string{"-19", "--long=27", "-T1", "-q", "-c"},
			dec:   []string{"-d", "--long=27", "-T1", "-q", "-c"},
			bench: []string{"-b19", "-e19", "--long=27", "-T1", "-i%d"}},
		{name: NameXzCLI, bin: "xz", ext: "xz",
			comp: []string{"-9", "-T1", "-c"},
			dec:  []string{"-d", "-T1", "-c"}},
	}
}

// cliCommand renders a tool invocation for the report's legend.
func (t cliTool) describe() string {
	s := fmt.Sprintf("`%s %s FILE`, `%s %s FILE.%s`", t.bin, strings.Join(t.comp, " "), t.bin, strings.Join(t.dec, " "), t.ext)
	if t.bench != nil {
		s += fmt.Sprintf("; speeds from `%s %s FILE`", t.bin, strings.ReplaceAll(strings.Join(t.bench, " "), "%d", "N"))
	} else {
		s += "; speeds are subprocess wall times"
	}
	return s
}

// toolVersion returns the first line the tool prints for --version.
func toolVersion(bin string) string {
	out, _ := exec.Command(bin, "--version").CombinedOutput()
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return strings.Trim(strings.TrimSpace(line), "* ")
}

// runProc runs one subprocess with stdout sent to out and returns its wall
// time, process start and exit included.
func runProc(out *os.File, env []string, bin string, args ...string) (time.Duration, error) {
	cmd := exec.Command(bin, args...)
	cmd.Stdout = out
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	t0 := time.Now()
	err := cmd.Run()
	d := time.Since(t0)
	if err != nil {
		return 0, fmt.Errorf("%s %s: %v: %s", bin, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return d, nil
}

// procToFile runs the command once writing to path, timed.
func procToFile(path string, env []string, bin string, args ...string) (time.Duration, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	d, err := runProc(f, env, bin, args...)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return d, err
}

// procDecode times a decompressing command: one run to a file, checked
// byte for byte against want, then timed runs to /dev/null while the budget
// lasts. It returns the best wall time.
func (b *runner) procDecode(want []byte, outPath string, env []string, bin string, args ...string) (time.Duration, error) {
	first, err := procToFile(outPath, env, bin, args...)
	if err != nil {
		return 0, err
	}
	got, err := os.ReadFile(outPath)
	os.Remove(outPath)
	if err != nil {
		return 0, err
	}
	if err := sameBytes(want, got); err != nil {
		return 0, fmt.Errorf("%s %s: round trip failed: %w", bin, strings.Join(args, " "), err)
	}
	if first >= time.Duration(b.cfg.Runs)*b.cfg.MinTime {
		return first, nil
	}
	best, err := measure(b.cfg.MinTime, b.cfg.Runs, func() error {
		_, err := runProc(b.devNull, env, bin, args...)
		return err
	})
	return min(best, first), err
}

// benchLine matches a result line of `lz4 -b` and `zstd -b`, e.g.
//
//	file : 581494 -> 249127 (2.334), 616.0 MB/s ,6625.8 MB/s
//	file : 581494 -> 152140 (x3.822),  244.6 MB/s, 1747.4 MB/s
var benchLine = regexp.MustCompile(`(\d+)\s*->\s*(\d+)\s*\(x?[0-9.]+\)\s*,\s*([0-9.]+)\s*([MG])B/s\s*,\s*([0-9.]+)\s*([MG])B/s`)

// benchResult is what a C tool's built-in benchmark printed.
type benchResult struct {
	orig, comp        int64
	compMBs, decMBs   float64
	compTime, decTime time.Duration
}

// parseBench reads the last complete result line of a tool's benchmark
// output; progress updates are separated by carriage returns.
func parseBench(out string) (benchResult, error) {
	lines := strings.FieldsFunc(out, func(r rune) bool { return r == '\r' || r == '\n' })
	for i := len(lines) - 1; i >= 0; i-- {
		m := benchLine.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		var r benchResult
		r.orig, _ = strconv.ParseInt(m[1], 10, 64)
		r.comp, _ = strconv.ParseInt(m[2], 10, 64)
		r.compMBs = unitMBs(m[3], m[4])
		r.decMBs = unitMBs(m[5], m[6])
		if r.orig <= 0 || r.compMBs <= 0 || r.decMBs <= 0 {
			return r, fmt.Errorf("implausible benchmark line %q", lines[i])
		}
		r.compTime = secondsFor(r.orig, r.compMBs)
		r.decTime = secondsFor(r.orig, r.decMBs)
		return r, nil
	}
	return benchResult{}, errors.New("no result line in benchmark output")
}

func unitMBs(v, unit string) float64 {
	f, _ := strconv.ParseFloat(v, 64)
	if unit == "G" {
		f *= 1000
	}
	return f
}

func secondsFor(orig int64, mbs float64) time.Duration {
	return time.Duration(float64(orig) / (mbs * 1e6) * float64(time.Second))
}

// runCLI measures one C tool on one input.
func (b *runner) runCLI(t cliTool, in Input, src []byte) (Result, error) {
	res := Result{File: in.Rel, Group: in.Group, Codec: t.name, Kind: KindCLI, Orig: int64(len(src))}
	comp := filepath.Join(b.tmp, "in."+t.ext)
	compTime, err := procToFile(comp, nil, t.bin, append(t.comp, in.Path)...)
	if err != nil {
		return res, err
	}
	defer os.Remove(comp)
	st, err := os.Stat(comp)
	if err != nil {
		return res, err
	}
	res.Comp = st.Size()
	if t.bench == nil && compTime < time.Duration(b.cfg.Runs)*b.cfg.MinTime {
		more, err := measure(b.cfg.MinTime, b.cfg.Runs, func() error {
			_, err := runProc(b.devNull, nil, t.bin, append(t.comp, in.Path)...)
			return err
		})
		if err != nil {
			return res, err
		}
		compTime = min(compTime, more)
	}
	res.DecProc, err = b.procDecode(src, filepath.Join(b.tmp, "out"), nil, t.bin, append(t.dec, comp)...)
	if err != nil {
		return res, err
	}
	if t.bench == nil {
		res.Comp1, res.Dec1 = compTime, res.DecProc
		return res, nil
	}
	secs := max(1, int(math.Ceil(b.cfg.MinTime.Seconds())))
	args := make([]string, 0, len(t.bench)+1)
	for _, a := range t.bench {
		args = append(args, strings.ReplaceAll(a, "%d", strconv.Itoa(secs)))
	}
	args = append(args, in.Path)
	out, err := exec.Command(t.bin, args...).CombinedOutput()
	if err != nil {
		return res, fmt.Errorf("%s %s: %v: %s", t.bin, strings.Join(args, " "), err, lastLine(string(out)))
	}
	br, err := parseBench(string(out))
	if err != nil {
		return res, fmt.Errorf("%s %s: %v", t.bin, strings.Join(args, " "), err)
	}
	if br.orig != res.Orig {
		return res, fmt.Errorf("%s %s: benchmark read %d bytes, file has %d", t.bin, strings.Join(args, " "), br.orig, res.Orig)
	}
	res.Comp1, res.Dec1 = br.compTime, br.decTime
	return res, nil
}

func lastLine(s string) string {
	lines := strings.FieldsFunc(s, func(r rune) bool { return r == '\r' || r == '\n' })
	if len(lines) == 0 {
		return ""
	}
	return strings.TrimSpace(lines[len(lines)-1])
}

// glydProc times glyd decoding comp through Config.GlydProc, a subprocess
// like the C tools'.
func (b *runner) glydProc(comp, src []byte) (time.Duration, error) {
	path := filepath.Join(b.tmp, "in.glyd")
	if err := os.WriteFile(path, comp, 0o644); err != nil {
		return 0, err
	}
	defer os.Remove(path)
	args := append(append([]string(nil), b.cfg.GlydProc[1:]...), path)
	return b.procDecode(src, filepath.Join(b.tmp, "out"), b.cfg.GlydProcEnv, b.cfg.GlydProc[0], args...)
}
