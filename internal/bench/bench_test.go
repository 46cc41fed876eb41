package bench

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glyd/glyd/codec"
)

// The test binary doubles as glyd's decompress command for the process
// column: with this variable set it decodes the file named last on the
// command line to stdout.
const envTestChild = "GLYD_BENCH_TEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(envTestChild) == "1" {
		comp, err := os.ReadFile(os.Args[len(os.Args)-1])
		if err == nil {
			var out []byte
			if out, err = codec.Decode(comp, 1); err == nil {
				_, err = os.Stdout.Write(out)
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// sample is compressible text-like data with some noise.
func sample(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 1))
	words := []string{"alpha ", "beta ", "gamma ", "delta\n", "epsilon ", "{\"k\":1} "}
	var b bytes.Buffer
	for b.Len() < n {
		if r.IntN(8) == 0 {
			b.WriteByte(byte(r.Uint32()))
		} else {
			b.WriteString(words[r.IntN(len(words))])
		}
	}
	return b.Bytes()[:n]
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCollect(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "b", "x.txt"), []byte("x"))
	writeFile(t, filepath.Join(dir, "b", "deep", "a.txt"), []byte("a"))
	writeFile(t, filepath.Join(dir, "a", "z.bin"), []byte("z"))
	writeFile(t, filepath.Join(dir, "a", "empty"), nil)
	writeFile(t, filepath.Join(dir, "top.txt"), []byte("top"))
	if err := os.Symlink(filepath.Join(dir, "top.txt"), filepath.Join(dir, "a", "link")); err != nil {
		t.Fatal(err)
	}
	single := filepath.Join(t.TempDir(), "one.dat")
	writeFile(t, single, []byte("one"))

	// The directory's top.txt given again by name is listed once.
	ins, err := Collect([]string{dir, single, filepath.Join(dir, "top.txt")})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, in := range ins {
		got = append(got, in.Group+":"+in.Rel)
	}
	want := []string{"(files):one.dat", "(top level):top.txt", "a:a/z.bin", "b:b/deep/a.txt", "b:b/x.txt"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("Collect = %q, want %q", got, want)
	}
	if _, err := Collect([]string{filepath.Join(dir, "a", "empty")}); err == nil {
		t.Error("Collect of only an empty file: no error")
	}
	if _, err := Collect([]string{filepath.Join(dir, "missing")}); err == nil {
		t.Error("Collect of a missing path: no error")
	}
}

func TestMeasure(t *testing.T) {
	calls := 0
	d, err := measure(20*time.Millisecond, 3, func() error {
		calls++
		time.Sleep(100 * time.Microsecond)
		return nil
	})
	if err != nil || d < 100*time.Microsecond || d > 50*time.Millisecond {
		t.Errorf("measure = %v, %v; want about 100µs", d, err)
	}
	if calls < 3 {
		t.Errorf("op called %d times, want several", calls)
	}
	// An op slower than the whole budget runs once.
	calls = 0
	if _, err := measure(time.Millisecond, 3, func() error { calls++; time.Sleep(5 * time.Millisecond); return nil }); err != nil || calls != 1 {
		t.Errorf("slow op: %d calls, %v; want 1 call", calls, err)
	}
	boom := errors.New("boom")
	if _, err := measure(time.Millisecond, 3, func() error { return boom }); !errors.Is(err, boom) {
		t.Errorf("measure error = %v, want boom", err)
	}
	if got := mbps(2_000_000, time.Second); got != 2 {
		t.Errorf("mbps = %v, want 2", got)
	}
}

func TestParseBench(t *testing.T) {
	lz4Out := "\r                                  \r |-dpkg-status.csv   :    581494 ->\r /-dpkg-status.csv   :    581494 ->    249127 (2.334), 616.0 MB/s\r =-dpkg-status.csv   :    581494 ->    249127 (2.334), 616.0 MB/s ,6625.8 MB/s\r\n 1#\n"
	r, err := parseBench(lz4Out)
	if err != nil || r.orig != 581494 || r.comp != 249127 || r.compMBs != 616.0 || r.decMBs != 6625.8 {
		t.Errorf("lz4: %+v, %v", r, err)
	}
	if want := secondsFor(581494, 6625.8); r.decTime != want || r.decTime < 87*time.Microsecond || r.decTime > 88*time.Microsecond {
		t.Errorf("lz4 decode time %v, want %v", r.decTime, want)
	}
	zstdOut := "Loading f...       \r\r       \r |-dpkg-status.csv   :    581494 -> \r |-dpkg-status.csv   :    581494 ->    152140 (x3.822),  244.6 MB/s \r |-dpkg-status.csv   :    581494 ->    152140 (x3.822),  244.6 MB/s, 1747.4 MB/s\r 3#\n"
	r, err = parseBench(zstdOut)
	if err != nil || r.orig != 581494 || r.comp != 152140 || r.compMBs != 244.6 || r.decMBs != 1747.4 {
		t.Errorf("zstd: %+v, %v", r, err)
	}
	r, err = parseBench(" 1#f : 1000 -> 500 (x2.000), 1.5 GB/s, 2.0 GB/s\n")
	if err != nil || r.compMBs != 1500 || r.decMBs != 2000 {
		t.Errorf("GB/s: %+v, %v", r, err)
	}
	if _, err := parseBench("Loading f...\r |-f : 1000 -> \r"); err == nil {
		t.Error("no result line: no error")
	}
}

func TestTotal(t *testing.T) {
	rs := []Result{
		{File: "a", Group: "g", Codec: "x", Orig: 1000, Comp: 500, Comp1: time.Millisecond, Dec1: time.Millisecond, DecN: time.Millisecond},
		{File: "a", Group: "g", Codec: "y", Orig: 1000, Comp: 250, Comp1: time.Millisecond, Dec1: 2 * time.Millisecond},
		{File: "b", Group: "h", Codec: "x", Orig: 3000, Comp: 1000, Comp1: 3 * time.Millisecond, Dec1: 3 * time.Millisecond},
	}
	tot := Total(rs, []string{"y", "x", "z"}, "TOTAL")
	if len(tot) != 2 || tot[0].Codec != "y" || tot[1].Codec != "x" {
		t.Fatalf("Total = %+v", tot)
	}
	x := tot[1]
	if x.Orig != 4000 || x.Comp != 1500 || x.Comp1 != 4*time.Millisecond || x.Dec1 != 4*time.Millisecond {
		t.Errorf("x total = %+v", x)
	}
	if x.DecN != 0 {
		t.Errorf("x DecN = %v, want 0: file b has no all-threads figure", x.DecN)
	}
	if got := mbps(x.Orig, x.Dec1); got != 1 {
		t.Errorf("total speed %v MB/s, want 1 (4000 bytes in 4 ms)", got)
	}
	if x.Ratio() != 4000.0/1500 || x.Group != "" || x.File != "TOTAL" {
		t.Errorf("x = %+v", x)
	}
}

// A decoder that does not give back the input must stop the run.
func TestRoundTripFailure(t *testing.T) {
	b := &runner{cfg: Config{MinTime: time.Millisecond, Runs: 1, Threads: 1}.withDefaults()}
	bad := memCodec{
		name:     "bad",
		kind:     KindGo,
		compress: func(src []byte, _ int) ([]byte, error) { return append([]byte(nil), src...), nil },
		decompress: func(comp, out []byte, _ int) error {
			copy(out, comp)
			out[7] ^= 1
			return nil
		},
	}
	_, err := b.runMem(bad, Input{Rel: "f"}, sample(100, 1))
	if err == nil || !strings.Contains(err.Error(), "round trip failed") || !strings.Contains(err.Error(), "byte 7") {
		t.Errorf("err = %v, want a round-trip failure at byte 7", err)
	}
}

// A decoder that leaves part of its output unwritten is caught too, even
// though the buffer is reused.
func TestUnwrittenOutput(t *testing.T) {
	b := &runner{cfg: Config{MinTime: time.Millisecond, Runs: 2, Threads: 1}.withDefaults()}
	lazy := memCodec{
		name:     "lazy",
		kind:     KindGo,
		compress: func(src []byte, _ int) ([]byte, error) { return append([]byte(nil), src...), nil },
		decompress: func(comp, out []byte, _ int) error {
			copy(out[:len(out)-1], comp)
			return nil
		},
	}
	_, err := b.runMem(lazy, Input{Rel: "f"}, sample(100, 1))
	if err == nil || !strings.Contains(err.Error(), "byte 99") {
		t.Errorf("err = %v, want a round-trip failure at byte 99", err)
	}
}

// Every in-process codec round-trips and gets a size and speeds.
func TestRunInProcess(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "text", "a.txt"), sample(300<<10, 1))
	writeFile(t, filepath.Join(dir, "text", "b.txt"), sample(20<<10, 2))
	rnd := make([]byte, 5000)
	for i := range rnd {
		rnd[i] = byte(rand.Uint32())
	}
	writeFile(t, filepath.Join(dir, "bin", "random"), rnd)
	ins, err := Collect([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	rep, err := Run(Config{MinTime: time.Millisecond, Runs: 1, Threads: 2, MultiCoreMin: 1 << 20, Log: &log}, ins)
	if err != nil {
		t.Fatal(err)
	}
	rep.Paths = []string{dir}
	codecs, _ := memCodecs()
	if len(rep.Results) != len(ins)*len(codecs) {
		t.Fatalf("%d results, want %d", len(rep.Results), len(ins)*len(codecs))
	}
	for _, r := range rep.Results {
		if r.Comp <= 0 || r.Comp1 <= 0 || r.Dec1 <= 0 || r.DecProc != 0 {
			t.Errorf("%s %s: %+v", r.File, r.Codec, r)
		}
		if (r.Kind == KindGlyd) != (r.DecN > 0 && r.CompN > 0) {
			t.Errorf("%s %s: all-threads figures %v %v", r.File, r.Codec, r.CompN, r.DecN)
		}
	}
	if rep.Multi == nil || len(rep.Multi.Results) != 3 || rep.Multi.Results[0].Orig < 1<<20 {
		t.Fatalf("multi-core = %+v", rep.Multi)
	}
	if !strings.Contains(rep.Multi.Source, "concatenated") {
		t.Errorf("multi-core source %q does not say the corpus was concatenated", rep.Multi.Source)
	}
	tots := rep.Totals()
	if len(tots) != len(codecs) || tots[0].Codec != NameGlydDefault || tots[0].Orig != int64(300<<10+20<<10+5000) {
		t.Errorf("totals = %+v", tots[0])
	}
	for _, tg := range rep.Targets() {
		needsCLI := strings.Contains(tg.Name, "C `") || strings.Contains(tg.Name, "`lz4") || strings.Contains(tg.Name, "`zstd")
		if needsCLI == tg.Available {
			t.Errorf("target %q: available %v (%s)", tg.Name, tg.Available, tg.Status())
		}
		if needsCLI && tg.Status() != "n/a (needs --cli)" {
			t.Errorf("target %q: status %q", tg.Name, tg.Status())
		}
	}

	var txt, md bytes.Buffer
	if err := rep.WriteText(&txt); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"SUMMARY", "TOTAL (all files)", "GROUP bin", "GROUP text", "text/a.txt", "zstd-go best", "MULTI-CORE"} {
		if !strings.Contains(txt.String(), want) {
			t.Errorf("text report lacks %q", want)
		}
	}
	for _, want := range []string{"# glyd codec benchmarks", "## Summary: targets", "| glyd max decode ÷ klauspost zstd decode (SpeedDefault) |", "### text", "| text/a.txt | glyd default |", "## Multi-core"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("markdown report lacks %q", want)
		}
	}
	// Files sort within their group.
	if i, j := strings.Index(md.String(), "text/a.txt"), strings.Index(md.String(), "text/b.txt"); i < 0 || j < i {
		t.Error("text/a.txt not before text/b.txt")
	}
	if testing.Verbose() {
		t.Log("\n" + txt.String())
	}
}

// With --cli: the C tools found on PATH, and glyd through a subprocess.
func TestRunCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the C tools' built-in benchmarks (about a second each)")
	}
	found := 0
	for _, bin := range []string{"lz4", "zstd", "xz"} {
		if _, err := exec.LookPath(bin); err == nil {
			found++
		}
	}
	if found == 0 {
		t.Skip("none of lz4, zstd, xz on PATH")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src := sample(64<<10, 3)
	writeFile(t, filepath.Join(dir, "f.txt"), src)
	ins, err := Collect([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{MinTime: time.Millisecond, Runs: 1, Threads: 1, CLI: true,
		GlydProc: []string{exe}, GlydProcEnv: []string{envTestChild + "=1"}}
	rep, err := Run(cfg, ins)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range rep.Results {
		seen[r.Codec] = true
		if r.Kind == KindGlyd && r.DecProc <= 0 {
			t.Errorf("%s: no process figure", r.Codec)
		}
		if r.Kind != KindCLI {
			continue
		}
		if r.Comp <= 0 || r.Comp >= r.Orig || r.Comp1 <= 0 || r.Dec1 <= 0 || r.DecProc <= 0 {
			t.Errorf("%s: %+v", r.Codec, r)
		}
	}
	for _, tool := range cliTools() {
		if _, err := exec.LookPath(tool.bin); err == nil && !seen[tool.name] {
			t.Errorf("%s on PATH but %s not measured", tool.bin, tool.name)
		}
	}
	if _, err := exec.LookPath("lz4"); err == nil {
		tg := rep.Targets()[0]
		if !tg.Available || tg.Value <= 0 {
			t.Errorf("lz4 decode target: %+v", tg)
		}
	}
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "dec MB/s proc") {
		t.Error("markdown lacks the process column")
	}
	if testing.Verbose() {
		var txt bytes.Buffer
		rep.WriteText(&txt)
		t.Log("\n" + txt.String())
	}
}
