package cdc

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/glyd/glyd/codec"
)

// TestMeasureChunkSizes is the measurement behind DefaultParams
// (docs/chunking.md). It runs only when GLYD_CORPUS names the project corpus,
// and writes its tables to GLYD_CHUNKING_OUT as well when that is set.
//
// It chunks the tarballs of consecutive releases in
// $GLYD_CORPUS/releases/x-tools/ (sorted by name, which is release order)
// for average sizes 4..64 KiB (Min = Avg/4, Max = 4*Avg), twice: the tar
// stream as is, and each file on its own as a store of the unpacked tree
// would. For each it reports the chunk counts, the share of the bytes of
// releases 2..n already present as identical chunks in earlier releases
// (exact dedup), and what the distinct chunks cost: raw, coded one by one
// with the codec's default tier (as the store keeps them), and the
// per-chunk metadata. Fixed 16 KiB blocks are the baseline that shows what
// content-defined boundaries buy. Last, the one-core speed of Split.
func TestMeasureChunkSizes(t *testing.T) {
	corpus := os.Getenv("GLYD_CORPUS")
	if corpus == "" {
		t.Skip("set GLYD_CORPUS to the corpus directory to measure")
	}
	paths, err := filepath.Glob(filepath.Join(corpus, "releases", "x-tools", "*"))
	if err != nil || len(paths) < 2 {
		t.Fatalf("need at least two releases in %s/releases/x-tools: %v", corpus, err)
	}
	slices.Sort(paths)
	var versions [][]byte
	total := 0
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		versions = append(versions, b)
		total += len(b)
	}
	const metaPerChunk = 100 // bytes of store metadata per distinct chunk

	var sb strings.Builder
	fmt.Fprintf(&sb, "Corpus: %d releases, %.1f MB (%s .. %s). %s, GOMAXPROCS=%d, %s.\n\n",
		len(paths), float64(total)/1e6, filepath.Base(paths[0]), filepath.Base(paths[len(paths)-1]),
		runtime.Version(), runtime.GOMAXPROCS(0), time.Now().UTC().Format("2006-01-02"))

	// The Chunker must agree with Split on real data too.
	for _, v := range versions[:2] {
		if !slices.Equal(chunkerCuts(t, iotest.HalfReader(bytes.NewReader(v)), DefaultParams()), Split(v, DefaultParams())) {
			t.Fatal("Chunker and Split disagree on a release")
		}
	}

	type row struct {
		name  string
		split func([]byte) []int
		cdc   bool
	}
	var rows []row
	for _, avg := range []int{4 << 10, 8 << 10, 16 << 10, 32 << 10, 64 << 10} {
		p := Params{Min: avg / 4, Avg: avg, Max: avg * 4}
		rows = append(rows, row{
			fmt.Sprintf("%s (%s–%s)", sizeName(p.Avg), sizeName(p.Min), sizeName(p.Max)),
			func(b []byte) []int { return Split(b, p) },
			true,
		})
	}
	rows = append(rows, row{"fixed 16KiB blocks", func(b []byte) []int {
		var cuts []int
		for off := 16 << 10; ; off += 16 << 10 {
			if off >= len(b) {
				return append(cuts, len(b))
			}
			cuts = append(cuts, off)
		}
	}, false})

	header := "| Avg (Min–Max) | chunks | mean chunk | distinct chunks | bytes of releases 2..n deduplicated | distinct bytes | distinct, each coded alone | metadata at 100 B/chunk | coded + metadata |"
	sep := "|---|---|---|---|---|---|---|---|---|"
	var tarRows, fileRows, speedRows []string
	for _, r := range rows {
		if r.cdc {
			best := time.Duration(1 << 62)
			for range 5 { // best of five: the machine is shared
				t0 := time.Now()
				for _, v := range versions {
					r.split(v)
				}
				best = min(best, time.Since(t0))
			}
			speedRows = append(speedRows, fmt.Sprintf("| %s | %.0f |", r.name, float64(total)/best.Seconds()/1e6))
		}
		for _, m := range []struct {
			rows    *[]string
			streams func([]byte) [][]byte
		}{
			{&tarRows, func(v []byte) [][]byte { return [][]byte{v} }},
			{&fileRows, tarMembers},
		} {
			d := dedup(versions, m.streams, r.split)
			meta := d.distinct * metaPerChunk
			*m.rows = append(*m.rows, fmt.Sprintf("| %s | %d | %.0f B | %d | %.1f%% | %.1f MB | %.1f MB | %.2f MB | %.1f MB |",
				r.name, d.chunks, float64(d.total)/float64(d.chunks), d.distinct, 100*d.dupShare(),
				float64(d.stored)/1e6, float64(d.coded)/1e6, float64(meta)/1e6, float64(d.coded+meta)/1e6))
		}
	}
	fmt.Fprintf(&sb, "Tar stream (each release chunked as one byte stream):\n\n%s\n%s\n%s\n\n", header, sep, strings.Join(tarRows, "\n"))
	fmt.Fprintf(&sb, "Per file (each regular file of each release chunked on its own, tar headers left out):\n\n%s\n%s\n%s\n\n", header, sep, strings.Join(fileRows, "\n"))
	fmt.Fprintf(&sb, "Chunking speed (Split over all releases, one goroutine, best of 5):\n\n| Avg (Min–Max) | MB/s |\n|---|---|\n%s\n", strings.Join(speedRows, "\n"))
	t.Log("\n" + sb.String())
	if out := os.Getenv("GLYD_CHUNKING_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(sb.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// dedupStats is the outcome of storing a series of versions chunk by chunk.
type dedupStats struct {
	chunks, distinct int // chunk references over all versions; distinct chunks
	stored           int // bytes of the distinct chunks
	coded            int // bytes of the distinct chunks each coded alone (codec default tier)
	total            int // bytes of all versions
	later, dup       int // bytes of versions 2..n; of those, bytes in chunks an earlier version had
}

func (d dedupStats) dupShare() float64 { return float64(d.dup) / float64(d.later) }

// dedup chunks every stream of every version (streams splits a version into
// the byte streams chunked independently) and counts exact duplicates. A
// chunk counts as deduplicated only against earlier versions: repeats within
// one version are not the question here.
func dedup(versions [][]byte, streams func([]byte) [][]byte, split func([]byte) []int) dedupStats {
	var d dedupStats
	seen := map[[32]byte]int{} // chunk -> first version holding it
	for i, v := range versions {
		for _, s := range streams(v) {
			d.total += len(s)
			if i > 0 {
				d.later += len(s)
			}
			prev := 0
			for _, c := range split(s) {
				h := sha256.Sum256(s[prev:c])
				d.chunks++
				first, ok := seen[h]
				switch {
				case !ok:
					seen[h] = i
					d.distinct++
					d.stored += c - prev
					enc, err := codec.Encode(s[prev:c], codec.Options{Tier: codec.Default, Threads: 1})
					if err != nil {
						panic(err)
					}
					d.coded += len(enc)
				case first < i:
					d.dup += c - prev
				}
				prev = c
			}
		}
	}
	return d
}

// tarMembers returns the contents of the regular files in a tar archive,
// without their headers: what a store of the unpacked tree would chunk. The
// headers matter for the tar stream: each names the release
// (golang.org/x/tools@v0.38.0/...), so every header changes between releases.
func tarMembers(b []byte) [][]byte {
	var out [][]byte
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err != nil {
			return out
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return out
		}
		out = append(out, data)
	}
}
