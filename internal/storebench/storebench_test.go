package storebench

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glyd/glyd/chunkstore"
	"github.com/glyd/glyd/internal/benchfmt"
)

func TestQuantile(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 300; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 150 * time.Millisecond}, {0.99, 297 * time.Millisecond}, {1, 300 * time.Millisecond}, {0, time.Millisecond}} {
		if got := benchfmt.Quantile(ds, c.q); got != c.want {
			t.Errorf("benchfmt.Quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if benchfmt.Quantile(nil, 0.5) != 0 {
		t.Error("quantile of nothing should be 0")
	}
	if got := benchfmt.Median([]time.Duration{5, 1, 3, 2, 4}); got != 3 {
		t.Errorf("median = %v, want 3", got)
	}
	if got := benchfmt.Median([]time.Duration{4, 1, 3, 2}); got != 2 {
		t.Errorf("median of an even count = %v, want the lower middle 2", got)
	}
}

func TestFormatting(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -1234: "-1,234"} {
		if got := benchfmt.Commas(n); got != want {
			t.Errorf("benchfmt.Commas(%d) = %q, want %q", n, got, want)
		}
	}
	if got := benchfmt.Pct(1, 8); got != "12.50%" {
		t.Errorf("pct = %q", got)
	}
	if got := benchfmt.Pct(1, 0); got != "-" {
		t.Errorf("pct of 0 = %q", got)
	}
	for v, want := range map[float64]string{1234: "1.23 GB/s", 512.4: "512 MB/s", 18.04: "18.0 MB/s"} {
		if got := benchfmt.FmtRate(v); got != want {
			t.Errorf("benchfmt.FmtRate(%v) = %q, want %q", v, got, want)
		}
	}
	for d, want := range map[time.Duration]string{1500 * time.Microsecond: "1.50 ms", 250 * time.Microsecond: "250 µs", 12345 * time.Microsecond: "12.3 ms"} {
		if got := fmtDur(d); got != want {
			t.Errorf("fmtDur(%v) = %q, want %q", d, got, want)
		}
	}
	for n, want := range map[int64]string{1 << 30: "1 GiB", 64 << 10: "64 KiB", 3 << 20: "3 MiB", 100: "100 bytes", 1<<20 + 1: "1.0 MiB"} {
		if got := benchfmt.SizeName(n); got != want {
			t.Errorf("benchfmt.SizeName(%d) = %q, want %q", n, got, want)
		}
	}
}

func testFiles(n int, seed uint64) [][]byte {
	rng := rand.New(rand.NewPCG(seed, 0))
	var out [][]byte
	for i := range n {
		b := make([]byte, 1000+rng.IntN(50000))
		for j := range b {
			b[j] = byte('a' + (j/7+i)%26)
		}
		out = append(out, b)
	}
	out = append(out, nil) // an empty file must not trip the layout
	return out
}

func TestBigObject(t *testing.T) {
	files := testFiles(7, 1)
	const size = 1<<20 + 12345
	obj, err := newBigObject(files, size, 42)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := io.ReadAll(obj.Reader())
	if err != nil {
		t.Fatal(err)
	}
	if len(whole) != size {
		t.Fatalf("object is %d bytes, want %d", len(whole), size)
	}
	// Random access agrees with the stream, across file and round edges.
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		off := rng.Int64N(size)
		buf := make([]byte, rng.IntN(200000))
		n, err := obj.ReadAt(buf, off)
		want := whole[off:min(off+int64(len(buf)), size)]
		if n != len(want) || !bytes.Equal(buf[:n], want) {
			t.Fatalf("ReadAt(%d, %d) disagrees with the stream", off, len(buf))
		}
		if (n < len(buf)) != (err == io.EOF) {
			t.Fatalf("ReadAt(%d, %d): n=%d err=%v", off, len(buf), n, err)
		}
	}
	if _, err := obj.ReadAt(make([]byte, 1), size); err != io.EOF {
		t.Errorf("ReadAt at the end: %v, want EOF", err)
	}
	// Round 0 without flips is the files in round 0's order; the flipped
	// object differs from it in about FlipsPerBlock bytes per block.
	obj.layout(0)
	var plain []byte
	for _, i := range obj.order {
		plain = append(plain, files[i]...)
	}
	diff := 0
	for i := range int(obj.round) {
		if plain[i] != whole[i] {
			diff++
		}
	}
	blocks := (int(obj.round) + FlipBlock - 1) / FlipBlock
	if diff < blocks*FlipsPerBlock/2 || diff > blocks*FlipsPerBlock {
		t.Errorf("%d bytes flipped in %d blocks, want about %d per block", diff, blocks, FlipsPerBlock)
	}
	// Rounds come in different orders.
	obj.layout(1)
	o1 := append([]int(nil), obj.order...)
	obj.layout(2)
	if slicesEqual(o1, obj.order) {
		t.Error("rounds 1 and 2 have the same file order")
	}
	// The same seed gives the same object; another seed another one.
	again, _ := newBigObject(files, size, 42)
	b2, _ := io.ReadAll(again.Reader())
	if !bytes.Equal(b2, whole) {
		t.Error("same seed, different object")
	}
	other, _ := newBigObject(files, size, 43)
	b3, _ := io.ReadAll(other.Reader())
	if bytes.Equal(b3, whole) {
		t.Error("different seeds, same object")
	}
	if _, err := newBigObject([][]byte{nil}, 10, 1); err == nil {
		t.Error("an object from empty files should fail")
	}
}

func slicesEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
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

func TestListFilesAndDirSize(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "b", "x"), make([]byte, 10))
	writeFile(t, filepath.Join(dir, "a"), make([]byte, 5))
	writeFile(t, filepath.Join(dir, "b", "c", "y"), make([]byte, 7))
	if err := os.Symlink(filepath.Join(dir, "a"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	fs, err := listFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range fs {
		names = append(names, f.Name)
	}
	if got := strings.Join(names, ","); got != "a,b/c/y,b/x" {
		t.Errorf("listFiles = %s", got)
	}
	n, err := dirSize(dir)
	if err != nil || n != 22 {
		t.Errorf("dirSize = %d, %v; want 22", n, err)
	}
	g := groupPuts(fs, []chunkstore.PutStats{{Size: 5, Stored: 2}, {Size: 7, Stored: 3, Deltas: 1}, {Size: 10, Stored: 4}}, []time.Duration{1, 2, 3})
	if len(g) != 2 || g[0].Name != "." || g[1].Name != "b" || g[1].Files != 2 || g[1].Size != 17 || g[1].Stored != 7 || g[1].Deltas != 1 || g[1].Time != 5 {
		t.Errorf("groupPuts = %+v", g)
	}
}

func TestRunTool(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	n, err := runTool([]string{"X_TEST=abc"}, strings.NewReader("hello"), "sh", "-c", `cat; printf %s "$X_TEST"`)
	if err != nil || n != 8 {
		t.Errorf("runTool = %d, %v; want 8 bytes", n, err)
	}
	_, err = runTool(nil, nil, "sh", "-c", "echo boom >&2; exit 3")
	if err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("runTool failure = %v, want stderr in the error", err)
	}
	if err := lookTool("no-such-tool-storebench"); err == nil {
		t.Error("lookTool found a missing tool")
	}
}

func TestTargets(t *testing.T) {
	r := &Report{
		Series: &Series{Columns: []SeriesColumn{
			{Name: colGlydDefault, Total: 130},
			{Name: colGlydMax, Total: 110},
			{Name: colGlydCold, Total: 120, Err: "failed"},
			{Name: colPatch, Total: 100},
		}},
		Corpus: &CorpusRun{Usage: chunkstore.Usage{Logical: 300e6}, PutTime: 2 * time.Second},
		Gets: []GetRun{
			{Label: "no deltas", Store: "series, default tier", Object: "a", Size: 2e9, Median: time.Second},
			{Label: "deltas", Store: "series, default tier", Object: "b", Size: 1e8, Median: time.Second, Cold: true},
			{Label: "deltas", Store: "series, max tier", Object: "b", Size: 1e8, Median: time.Second},
		},
		Random: &RandomRun{Size: 1 << 30, ReadSize: 64 << 10, Dropped: true, Latencies: []time.Duration{time.Millisecond, 6 * time.Millisecond}},
	}
	got := map[string]string{}
	for _, tg := range r.Targets() {
		got[tg.Name] = tg.Status()
	}
	want := map[string]string{
		"release series: " + colGlydDefault + " vs the zstd patch chain": "not met",
		"release series: " + colGlydMax + " vs the zstd patch chain":     "met",
		"release series: " + colGlydCold + " vs the zstd patch chain":    "not measured",
		"put of new data (whole corpus, fresh store, wall time)":         "met",
		"get without deltas, hot chunk cache (a)":                        "met",
		"get through delta chains, cold chunk cache (b)":                 "not met",
		"random 64 KiB ReadAt p99, cold, 1 GiB object":                   "not met",
	}
	if len(got) != len(want) {
		t.Errorf("targets %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("target %q: %q, want %q", k, got[k], v)
		}
	}
	r.Series.Columns[3].Err = "zstd: not installed"
	if ts := r.Targets(); ts[0].Status() != "not measured" {
		t.Errorf("without the patch chain: %s", ts[0].Status())
	}
}

// TestRun runs the whole benchmark on a tiny synthetic corpus, without
// peers and without touching the page cache.
func TestRun(t *testing.T) {
	corpus := t.TempDir()
	rng := rand.New(rand.NewPCG(9, 9))
	base := make([]byte, 300<<10)
	for i := range base {
		base[i] = byte('a' + rng.IntN(8))
	}
	for v := 1; v <= 3; v++ {
		for range 200 { // each release edits the previous one a little
			base[rng.IntN(len(base))] = byte('A' + rng.IntN(26))
		}
		writeFile(t, filepath.Join(corpus, "releases", "x-tools", "r-0"+string(rune('0'+v))+".tar"), base)
	}
	writeFile(t, filepath.Join(corpus, "README.md"), []byte("a corpus\n"))
	writeFile(t, filepath.Join(corpus, "text", "t.txt"), bytes.Repeat([]byte("some text, "), 20000))
	var log bytes.Buffer
	rep, err := Run(Config{Corpus: corpus, BigSize: 3 << 20, Reads: 20, Runs: 2, Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Series.Raw != 3*int64(len(base)) || len(rep.Series.Glyd) != 3 {
		t.Errorf("series: raw %d, %d glyd tiers", rep.Series.Raw, len(rep.Series.Glyd))
	}
	if g := rep.Series.Glyd[0]; g.Puts[0].Deltas != 0 || len(g.Puts) != 3 {
		t.Errorf("series puts: %+v", g.Puts)
	}
	if c := rep.Corpus; len(c.Files) != 5 || c.Usage.Logical != 3*int64(len(base))+9+220000 || c.Usage.Stored <= 0 {
		t.Errorf("corpus: %d files, usage %+v", len(c.Files), c.Usage)
	}
	if len(rep.Gets) != 8 { // 2 without deltas, 2 through them per tier
		t.Errorf("%d get runs, want 8", len(rep.Gets))
	}
	for _, g := range rep.Gets {
		if g.Err != "" || g.Median <= 0 || len(g.Runs) != 2 {
			t.Errorf("get %+v", g)
		}
	}
	if rr := rep.Random; rr.Err != "" || len(rr.Latencies) != 20 || rr.Dropped {
		t.Errorf("random: %+v", rr)
	}
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"## Targets", "## 1. Release series", "## 2. The whole corpus", "### Random reads", "not measured: "} {
		if !strings.Contains(md.String(), s) {
			t.Errorf("report lacks %q", s)
		}
	}
	if _, err := os.Stat(rep.Config.Work); !os.IsNotExist(err) {
		t.Errorf("scratch directory left behind: %v", err)
	}
}

// TestZstdPeers runs the zstd columns on two small files when zstd is
// installed.
func TestZstdPeers(t *testing.T) {
	if _, err := exec.LookPath("zstd"); err != nil {
		t.Skip("zstd not installed")
	}
	dir := t.TempDir()
	a := bytes.Repeat([]byte("release one of something. "), 4000)
	b := append(append([]byte(nil), a...), []byte("and a change")...)
	writeFile(t, filepath.Join(dir, "1"), a)
	writeFile(t, filepath.Join(dir, "2"), b)
	files := []File{{Path: filepath.Join(dir, "1"), Size: int64(len(a))}, {Path: filepath.Join(dir, "2"), Size: int64(len(b))}}
	bn := &bench{cfg: Config{Work: dir}}
	per := bn.zstdPerFile(files, colZstd3, "-3")
	chain := bn.zstdPatchChain(files)
	solid := bn.zstdSolid(files)
	for _, c := range []SeriesColumn{per, chain, solid} {
		if c.Err != "" || c.Total <= 0 {
			t.Fatalf("%s: %+v", c.Name, c)
		}
	}
	if len(per.Cum) != 2 || per.Cum[1] != per.Total || chain.Cum[0] >= per.Total {
		t.Errorf("per file %v, chain %v", per.Cum, chain.Cum)
	}
	if chain.Cum[1]-chain.Cum[0] >= per.Cum[1]-per.Cum[0] {
		t.Errorf("the patch (%d bytes) should be smaller than the second file alone (%d)", chain.Cum[1]-chain.Cum[0], per.Cum[1]-per.Cum[0])
	}
}
