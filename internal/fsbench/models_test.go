package fsbench

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestModelStatsJSON(t *testing.T) {
	var s ModelStats
	in := `{"files":30,"directories":3,"logical":43887412,"history":43887412,"stored":30000000,"chunks":700,"delta_chunks":2,"compression_saved":100,"packing_saved":12000000}`
	if err := json.Unmarshal([]byte(in), &s); err != nil {
		t.Fatal(err)
	}
	if s.Files != 30 || s.Logical != 43887412 || s.Stored != 30000000 || s.Chunks != 700 || s.CompSaved != 100 || s.PackSaved != 12000000 {
		t.Errorf("parsed %+v", s)
	}
}

func TestReadFiles(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "bf16"), 0o755)
	os.WriteFile(filepath.Join(dir, "bf16", "a.safetensors"), bytes.Repeat([]byte("a"), 3<<20+5), 0o644)
	os.WriteFile(filepath.Join(dir, "b.safetensors"), []byte("bb"), 0o644)
	if _, err := readFiles(dir, []string{"bf16/a.safetensors", "b.safetensors"}, []int64{3<<20 + 5, 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := readFiles(dir, []string{"b.safetensors"}, []int64{3}); err == nil {
		t.Error("a short file: want an error")
	}
}

// modelsFixture is a measured Models value: glydfs at 60% of 40 MB, the
// packed forms at 55% of their originals, every reader measured but
// squashfuse warm.
func modelsFixture() *Models {
	sec := func(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }
	const raw = 40_000_000
	return &Models{
		Dir: "corpus/weights", DirFS: "ext4 on /dev/sda1",
		Files: make([]File, 30), Raw: raw, ST: 30, STRaw: raw,
		Copy:   sec(4),
		Stats:  ModelStats{Stats: Stats{Files: 30, Logical: raw, History: raw, Stored: 24_000_000, Chunks: 500}, PackSaved: 15_000_000},
		Disk:   DiskUsage{Apparent: 25_000_000, Allocated: 25_100_000},
		Packed: 30, PackedBytes: 22_000_000, PackedOrig: raw,
		Zstd:   ModelPeer{How: "zstd", Bytes: 30_000_000, Time: sec(20)},
		Squash: ModelPeer{How: "mksquashfs", Bytes: 31_000_000, Time: sec(2)},
		Reads: []ModelRead{
			{Target: tgtModelGlydfs, Cold: true, Files: 30, Orig: raw, Bytes: raw, Runs: []time.Duration{sec(0.2), sec(0.1), sec(0.3)}},
			{Target: tgtModelGlydfs, Files: 30, Orig: raw, Bytes: raw, Runs: []time.Duration{sec(0.02)}},
			{Target: tgtModelPacked, Cold: true, Files: 30, Orig: raw, Bytes: 22_000_000, Runs: []time.Duration{sec(0.1)}},
			{Target: tgtModelPacked, Files: 30, Orig: raw, Bytes: 22_000_000, Runs: []time.Duration{sec(0.01)}},
			{Target: tgtModelLocal, Cold: true, Files: 30, Orig: raw, Bytes: raw, Runs: []time.Duration{sec(0.4)}},
			{Target: tgtModelLocal, Files: 30, Orig: raw, Bytes: raw, Runs: []time.Duration{sec(0.01)}},
			{Target: tgtModelSquash, Cold: true, Files: 30, Orig: raw, Bytes: raw, Runs: []time.Duration{sec(0.5)}},
			{Target: tgtModelSquash, Files: 30, Orig: raw, Bytes: raw, Err: "boom"},
		},
	}
}

func TestModelReads(t *testing.T) {
	m := modelsFixture()
	g := m.Read(tgtModelGlydfs, true)
	if g == nil || g.MBs() != 200 { // 40 MB in the median 0.2 s
		t.Fatalf("glydfs cold: %+v, %v MB/s", g, g.MBs())
	}
	p := m.Read(tgtModelPacked, true)
	if p.MBs() != 400 || p.ReadMBs() != 220 {
		t.Errorf("packed cold: %v MB/s of original, %v of packed bytes", p.MBs(), p.ReadMBs())
	}
	if v := m.Read(tgtModelSquash, false).MBs(); v != 0 {
		t.Errorf("a failed run: %v MB/s", v)
	}
	if m.Read("nothing", true) != nil || (*ModelRead)(nil).MBs() != 0 {
		t.Error("a missing run")
	}
	if v := modelRatio(g, m.Read(tgtModelLocal, true)); v != 2 {
		t.Errorf("glydfs ÷ local disk = %v", v)
	}
}

func TestReportModels(t *testing.T) {
	r := &Report{
		Config:  Config{Size: 1 << 30, Runs: 3, CmdLine: "glyd-fsbench"},
		Started: time.Now(), Dropped: true, Leftover: "none",
		Test:   &TestFile{Size: 1 << 30, SHA256: strings.Repeat("ab", 32)},
		Models: modelsFixture(),
	}
	var out bytes.Buffer
	if err := r.WriteMarkdown(&out); err != nil {
		t.Fatal(err)
	}
	md := out.String()
	for _, want := range []string{
		"## 5. Model files",
		"| the original files | 40,000,000 | 100.00% |",
		"| **glydfs (decoded)** | **24,000,000** | 60.00% | 40,000,000 | **200 MB/s** | **2.00 GB/s** | 133 MB/s – 400 MB/s |",
		"55.00% (packed files ÷ their originals)",
		"22,000,000 (packed, for 40,000,000 original)",
		"**400 MB/s** (220 MB/s of packed bytes)",
		"failed: boom",
		"| zstd -19, each file alone | 30,000,000 | 75.00% |",
		"packing saved 15,000,000",
		"glyd gpu load",
		"**What this means.** glydfs keeps the weights in 60.00% of their size",
		"glydfs ÷ zstd = 0.80×",
		"2.00× the rate of the plain files on the local disk",
		// The summary rows.
		"| model weights (30 safetensors files, 40,000,000 bytes): stored bytes | **24,000,000 (60.00%)** |",
		"| model weights, every file read whole, cold, MB/s | **200 MB/s** | 100 MB/s |  | 80.0 MB/s | 2.50× / - / 2.00× |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the report lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(md)
	}

	// The copy failed: the section says so and the summary has no rows.
	r.Models = &Models{Dir: "w", Files: make([]File, 2), ST: 2, Raw: 10, Zstd: ModelPeer{Err: "x"}, Squash: ModelPeer{Err: "y"}}
	out.Reset()
	if err := r.WriteMarkdown(&out); err != nil {
		t.Fatal(err)
	}
	md = out.String()
	if !strings.Contains(md, "The copy into glydfs failed") || strings.Contains(md, "model weights (") {
		t.Errorf("a failed copy:\n%s", md)
	}

	// Not measured: no section.
	r.Models = nil
	out.Reset()
	if err := r.WriteMarkdown(&out); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "Model files") {
		t.Error("no Models: want no section")
	}
}
