package fsbench

import (
	"bytes"
	"crypto/sha256"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glyd/glyd/internal/benchfmt"
)

func TestParseFio(t *testing.T) {
	out := []byte(`fio: a warning line
{
  "fio version" : "fio-3.33",
  "jobs" : [
    {
      "jobname" : "rand4k",
      "error" : 0,
      "read" : {
        "io_bytes" : 4096000,
        "total_ios" : 1000,
        "iops" : 1217.5,
        "runtime" : 821,
        "clat_ns" : {
          "mean" : 817000.5,
          "percentile" : {
            "50.000000" : 569344,
            "90.000000" : 1941504,
            "99.000000" : 4489216,
            "99.900000" : 9764864
          }
        }
      }
    }
  ]
}
`)
	var r FioRun
	if err := parseFio(out, &r); err != nil {
		t.Fatal(err)
	}
	if r.IOs != 1000 || r.P50 != 569344 || r.P99 != 4489216 || r.P999 != 9764864 || r.Time != 821*time.Millisecond || r.Mean != 817000 {
		t.Errorf("parsed %+v", r)
	}
	if err := parseFio([]byte("no json"), &r); err == nil {
		t.Error("no JSON: want an error")
	}
	if err := parseFio([]byte(`{"jobs":[{"read":{"total_ios":5,"clat_ns":{"percentile":{}}}}]}`), &r); err == nil {
		t.Error("missing percentiles: want an error")
	}
}

func TestFioArgs(t *testing.T) {
	a := strings.Join(fioArgs("/m/f", 1<<30, 7, false, 500, time.Second), " ")
	for _, want := range []string{"--filename=/m/f", "--readonly", "--rw=randread", "--bs=4k", "--number_ios=500", "--invalidate=1", "--randseed=7", "--size=1073741824"} {
		if !strings.Contains(a, want) {
			t.Errorf("uncached job %q lacks %s", a, want)
		}
	}
	a = strings.Join(fioArgs("/m/f", 1<<30, 7, true, 500, 2*time.Second), " ")
	for _, want := range []string{"--invalidate=0", "--time_based", "--runtime=2000ms"} {
		if !strings.Contains(a, want) {
			t.Errorf("cached job %q lacks %s", a, want)
		}
	}
}

func TestGenReader(t *testing.T) {
	files := [][]byte{bytes.Repeat([]byte("abcdefgh"), 10000), bytes.Repeat([]byte("0123"), 30000), []byte("tail")}
	const size = 1<<20 + 12345
	read := func(chunk int) []byte {
		g, err := newGenReader(files, size, 3)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		buf := make([]byte, chunk)
		if _, err := io.CopyBuffer(&out, struct{ io.Reader }{g}, buf); err != nil {
			t.Fatal(err)
		}
		return out.Bytes()
	}
	a, b := read(1<<20), read(777)
	if len(a) != size || !bytes.Equal(a, b) {
		t.Fatalf("the stream depends on the read size (%d vs %d bytes)", len(a), len(b))
	}
	// Without the flips, every round is a permutation of the files.
	plain := append([]byte(nil), a...)
	flip(plain, 0, 3)
	round := 0
	for _, f := range files {
		round += len(f)
	}
	first := plain[:round]
	for _, f := range files {
		if !bytes.Contains(first, f) {
			t.Fatal("round 0 does not hold every file whole")
		}
	}
	// The flips: FlipsPerBlock changed bytes (at most) per block, none zero.
	diff := 0
	for i := range FlipBlock {
		if a[i] != plain[i] {
			diff++
		}
	}
	if diff == 0 || diff > FlipsPerBlock {
		t.Errorf("%d flipped bytes in the first block, want 1..%d", diff, FlipsPerBlock)
	}
	if _, err := newGenReader([][]byte{{}}, 10, 1); err == nil {
		t.Error("empty sources: want an error")
	}
}

func TestWriteTestFile(t *testing.T) {
	dir := t.TempDir()
	files := [][]byte{bytes.Repeat([]byte("x"), 5000), []byte("hello world")}
	p := filepath.Join(dir, "f")
	sum, err := writeTestFile(p, files, 100000, 9)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 100000 || sha256.Sum256(b) != sum {
		t.Errorf("file of %d bytes, or its SHA-256 does not match", len(b))
	}
}

func TestSameFileAndTree(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	for _, d := range []string{a, b} {
		os.MkdirAll(filepath.Join(d, "sub"), 0o755)
		os.WriteFile(filepath.Join(d, "sub", "f"), bytes.Repeat([]byte("q"), 3<<20), 0o644)
		os.Symlink("sub/f", filepath.Join(d, "l"))
	}
	if err := sameTree(a, b); err != nil {
		t.Fatal(err)
	}
	if err := sameFile(filepath.Join(a, "sub", "f"), filepath.Join(b, "sub", "f")); err != nil {
		t.Fatal(err)
	}
	c := bytes.Repeat([]byte("q"), 3<<20)
	c[2<<20+5] = 'z'
	os.WriteFile(filepath.Join(b, "sub", "f"), c, 0o644)
	if err := sameFile(filepath.Join(a, "sub", "f"), filepath.Join(b, "sub", "f")); err == nil || !strings.Contains(err.Error(), "2097157") {
		t.Errorf("a difference at 2097157: got %v", err)
	}
	if err := sameTree(a, b); err == nil {
		t.Error("trees differ: want an error")
	}
	os.WriteFile(filepath.Join(b, "sub", "f"), c[:100], 0o644)
	if err := sameFile(filepath.Join(a, "sub", "f"), filepath.Join(b, "sub", "f")); err == nil {
		t.Error("lengths differ: want an error")
	}
	os.WriteFile(filepath.Join(a, "extra"), nil, 0o644)
	os.WriteFile(filepath.Join(b, "sub", "f"), bytes.Repeat([]byte("q"), 3<<20), 0o644)
	if err := sameTree(a, b); err == nil {
		t.Error("an extra file: want an error")
	}
}

func TestFormatting(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1234567: "1,234,567", -1234: "-1,234"} {
		if got := benchfmt.Commas(n); got != want {
			t.Errorf("benchfmt.Commas(%d) = %q, want %q", n, got, want)
		}
	}
	for v, want := range map[float64]string{0: "-", 0.25: "0.25×", 12.34: "12.3×", 150: "150×"} {
		if got := times(v); got != want {
			t.Errorf("times(%v) = %q, want %q", v, got, want)
		}
	}
	if got := benchfmt.Median([]time.Duration{5, 1, 3}); got != 3 {
		t.Errorf("median = %v", got)
	}
	if got := spread(2e6, []time.Duration{time.Second, 2 * time.Second}); got != "1.0 MB/s – 2.0 MB/s" {
		t.Errorf("spread = %q", got)
	}
}

// A report with every section filled renders, and its targets follow the
// numbers.
func TestReport(t *testing.T) {
	sec := func(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
	size := int64(1 << 30)
	r := &Report{
		Config:  Config{Size: size, Runs: 3, FioIOs: 1000, FioTime: 5 * time.Second, Corpus: "corpus", CmdLine: "glyd-fsbench"},
		Started: time.Now(), Dropped: true, Leftover: "none",
		Test: &TestFile{Size: size, SHA256: strings.Repeat("ab", 32), Sources: []string{"a"}, Round: 100, GlydfsStored: 300 << 20, GlydSize: 500 << 20, SquashSize: 250 << 20},
		Seq: []ReadRun{
			{Target: tgtGlydfs, Cold: true, Size: size, Runs: []time.Duration{sec(1), sec(1.1), sec(0.9)}},
			{Target: tgtGlydfs, Size: size, Runs: []time.Duration{sec(0.5)}},
			{Target: tgtGlydD, Cold: true, Size: size, Runs: []time.Duration{sec(1.25)}},
			{Target: tgtSquash, Cold: true, Size: size, Runs: []time.Duration{sec(1.2)}},
			{Target: tgtSquash, Size: size, Err: "boom"},
			{Target: tgtStore, Cold: true, Size: size, Runs: []time.Duration{sec(0.9)}},
			{Target: tgtLocal, Cold: true, Size: size, Runs: []time.Duration{sec(2)}},
		},
		Fio: []FioRun{
			{Target: tgtGlydfs, IOs: 1000, P50: 500 * time.Microsecond, P99: 2 * time.Millisecond},
			{Target: tgtSquash, IOs: 1000, P50: 900 * time.Microsecond, P99: 3 * time.Millisecond},
			{Target: tgtGlydfs, Cached: true, IOs: 5, P50: 2 * time.Microsecond, P99: 3 * time.Microsecond},
		},
		Unpack: []UnpackRun{
			{Target: tgtLocal, Tarball: "t.tar", Entries: 100, Files: 90, Bytes: 1e6, Runs: []UnpackTiming{{sec(0.1), sec(0.2)}}},
			{Target: tgtGlydfs, Tarball: "t.tar", Entries: 100, Files: 90, Bytes: 1e6, Runs: []UnpackTiming{{sec(1), sec(0.1)}}, Unmount: []time.Duration{sec(0.1)}},
		},
		Write: []WriteRun{
			{Target: tgtLocal, Size: size, Runs: []WriteTiming{{sec(1), 0, sec(2)}}},
			{Target: tgtGlydfs, Size: size, Runs: []WriteTiming{{sec(3), sec(10), sec(0.1)}}},
		},
		Series: &Series{Dir: "x", Raw: 200, Files: []File{{Name: "a.tar", Size: 100}, {Name: "b.tar", Size: 100}},
			Glydfs: []GlydfsSeries{{Mode: modeNew, Steps: []SeriesStep{{Name: "a.tar", Stats: Stats{Stored: 30}}, {Name: "b.tar", Stats: Stats{Stored: 40}}}}},
			Peers: []PeerColumn{
				{Name: colStore, Cum: []int64{30, 40}, Total: 40},
				{Name: "zstd -19 --long=27, each tar alone", Cum: []int64{20, 40}, Total: 40},
				{Name: "zstd -19 --long=27 --patch-from chain", Cum: []int64{20, 25}, Total: 25},
			}},
		Problems: []string{"something odd"},
	}
	ts := r.Targets()
	if len(ts) != 3 {
		t.Fatalf("%d targets", len(ts))
	}
	if !ts[0].Available || !ts[0].Met { // 1.25 s vs 1 s: 1.25× of glyd -d
		t.Errorf("glyd -d target: %+v", ts[0])
	}
	if !ts[1].Available || ts[1].Met { // 1.2×, short of 1.5×
		t.Errorf("squashfuse cold target: %+v", ts[1])
	}
	if ts[2].Available {
		t.Errorf("squashfuse warm failed, so its target is not measured: %+v", ts[2])
	}
	var out bytes.Buffer
	if err := r.WriteMarkdown(&out); err != nil {
		t.Fatal(err)
	}
	md := out.String()
	for _, want := range []string{"## Targets", "## Summary", "## 1. Sequential read", "## 2. Random 4 KiB reads", "## 3. Writing into the mount", "## 4. A release series", "something odd", "**not met**", "**met**", "1.60×"} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
}
