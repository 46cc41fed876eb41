package codec

import (
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/glyd/glyd/internal/machine"
)

// TestMeasureUnitSizes writes docs/benchmarks/unit-size.md: for each unit
// size, the ratio of the default and max tiers over a corpus, one-thread
// decode speed, and the cost of a random 4 KiB read (one unit decoded). It
// runs only when GLYD_UNITSIZE_OUT names the output file (make bench-unitsize).
func TestMeasureUnitSizes(t *testing.T) {
	out := os.Getenv("GLYD_UNITSIZE_OUT")
	if out == "" {
		t.Skip("set GLYD_UNITSIZE_OUT (and GLYD_CORPUS) to measure")
	}
	corpus := os.Getenv("GLYD_CORPUS")
	var files [][]byte
	filepath.WalkDir(corpus, func(p string, d fs.DirEntry, err error) error {
		// top-level files are the corpus's README and manifest
		if err != nil || !d.Type().IsRegular() || strings.Contains(p, "/weights/") || filepath.Dir(p) == filepath.Clean(corpus) {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && len(b) > 0 {
			files = append(files, b)
		}
		return nil
	})
	var total int
	for _, f := range files {
		total += len(f)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "# Unit size trade-off\n\nMachine: %s, %d cores, %s. Date: %s.\n\n", machine.CPU(), runtime.NumCPU(), runtime.Version(), time.Now().UTC().Format("2006-01-02"))
	fmt.Fprintf(&sb, "Corpus: %d files, %.1f MB from `%s` (weights excluded: they get their own coding).\n", len(files), float64(total)/1e6, corpus)
	sb.WriteString("Ratio is original/compressed over all files; decode is one thread, whole files; a random 4 KiB read decodes the one unit holding it (median of 200 reads, one thread, nothing cached).\n\n")
	sb.WriteString("| unit | default ratio | max ratio | default decode MB/s | max decode MB/s | 4 KiB read, default | 4 KiB read, max |\n|---|---|---|---|---|---|---|\n")
	for _, us := range []int{128 << 10, 256 << 10, 512 << 10, 1 << 20, 2 << 20, 4 << 20, 8 << 20} {
		row := fmt.Sprintf("| %d KiB", us>>10)
		var ratios, speeds, reads []string
		for _, tier := range []Tier{Default, Max} {
			comp, dt := 0, time.Duration(0)
			var lat []time.Duration
			r := rand.New(rand.NewPCG(1, uint64(us)))
			for _, src := range files {
				enc, _ := Encode(src, Options{Tier: tier, UnitSize: us, Threads: runtime.NumCPU()})
				comp += len(enc)
				dst := make([]byte, len(src))
				best := time.Hour
				for range 3 {
					f, _ := OpenBytes(enc, 1)
					t0 := time.Now()
					f.ReadAt(dst, 0)
					best = min(best, time.Since(t0))
				}
				dt += best
				f, _ := OpenBytes(enc, 1)
				for range 200 * len(src) / total {
					p := make([]byte, 4096)
					off := r.Int64N(int64(max(1, len(src)-4096)))
					f.cache = nil
					t0 := time.Now()
					f.ReadAt(p, off)
					lat = append(lat, time.Since(t0))
				}
			}
			ratios = append(ratios, fmt.Sprintf("%.3f", float64(total)/float64(comp)))
			speeds = append(speeds, fmt.Sprintf("%.0f", float64(total)/dt.Seconds()/1e6))
			reads = append(reads, median(lat).Round(time.Microsecond).String())
		}
		row += fmt.Sprintf(" | %s | %s | %s | %s | %s | %s |\n", ratios[0], ratios[1], speeds[0], speeds[1], reads[0], reads[1])
		sb.WriteString(row)
	}
	if err := os.WriteFile(out, []byte(sb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Log(sb.String())
}

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	for i := 1; i < len(d); i++ {
		for j := i; j > 0 && d[j] < d[j-1]; j-- {
			d[j], d[j-1] = d[j-1], d[j]
		}
	}
	return d[len(d)/2]
}
