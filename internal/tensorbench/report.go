package tensorbench

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/glyd/glyd/internal/machine"
)

// Target is one goal with what this run measured.
type Target struct {
	Name, Measured, Goal string
	Met                  bool
}

// Targets compares the run with the goals, per set of weights.
func (r *Report) Targets() []Target {
	var ts []Target
	for _, set := range r.sets() {
		files := r.files(set)
		if set == FP8Set {
			// Synthetic: what fp8 coding saves, against zstd, is the check.
			var p, z, v int64
			for _, f := range files {
				p, z, v = p+f.Packed, z+max(f.Zstd, 0), v+f.FloatValues
			}
			if z > 0 {
				ts = append(ts, Target{
					Name:     set + ": fewer bytes than zstd -19 (all files; fp8 coded where it pays)",
					Measured: fmt.Sprintf("%.3f× zstd, %.2f bits a value", float64(p)/float64(z), 8*float64(p)/float64(v)),
					Goal:     "< 1",
					Met:      p < z,
				})
			}
			continue
		}
		worst, worstName := -1e9, ""
		zWorst, zName := 0.0, ""
		zAll := true
		var size, t, td float64
		slow, slowName := 1e9, ""
		for _, f := range files {
			if g := f.Bits() - f.Floor; g > worst {
				worst, worstName = g, f.Name
			}
			if f.Zstd > 0 {
				if q := float64(f.Packed) / float64(f.Zstd); q > zWorst {
					zWorst, zName = q, f.Name
				}
			} else {
				zAll = false
			}
			size += float64(f.Size)
			t += float64(f.Size) / (f.DecodeGBs * 1e9)
			td += float64(f.Size) / (f.DataGBs * 1e9)
			if f.DecodeGBs < slow {
				slow, slowName = f.DecodeGBs, f.Name
			}
		}
		ts = append(ts, Target{
			Name:     set + ": bits per value within 0.1 of 8 + H (every file; worst shown)",
			Measured: fmt.Sprintf("%+.3f bits (%s)", worst, worstName),
			Goal:     fmt.Sprintf("≤ +%.1f", GoalFloorGap),
			Met:      worst <= GoalFloorGap,
		})
		if zAll {
			ts = append(ts, Target{
				Name:     set + ": fewer bytes than zstd -19 (every file; largest ratio shown)",
				Measured: fmt.Sprintf("%.3f× zstd (%s)", zWorst, zName),
				Goal:     "< 1",
				Met:      zWorst < 1,
			})
		}
		all := size / t / 1e9
		ts = append(ts, Target{
			Name:     set + ": decode per core, whole set, opening each file included (slowest file shown)",
			Measured: fmt.Sprintf("%.2f GB/s (slowest %.2f GB/s, %s)", all, slow, slowName),
			Goal:     fmt.Sprintf("≥ %.1f GB/s", GoalDecodeGBs),
			Met:      all >= GoalDecodeGBs,
		})
		data := size / td / 1e9
		ts = append(ts, Target{
			Name:     set + ": decode per core, whole set, files already open",
			Measured: fmt.Sprintf("%.2f GB/s", data),
			Goal:     fmt.Sprintf("≥ %.1f GB/s", GoalDecodeGBs),
			Met:      data >= GoalDecodeGBs,
		})
	}
	ts = append(ts, Target{
		Name:     "decode per core, large bf16 tensor (synthetic, steady state)",
		Measured: fmt.Sprintf("%.2f GB/s", r.BigGBs),
		Goal:     fmt.Sprintf("≥ %.1f GB/s", GoalDecodeGBs),
		Met:      r.BigGBs >= GoalDecodeGBs,
	})
	return ts
}

func (r *Report) sets() []string {
	var out []string
	seen := map[string]bool{}
	for _, f := range r.Files {
		if !seen[f.Set] {
			seen[f.Set] = true
			out = append(out, f.Set)
		}
	}
	return out
}

func (r *Report) files(set string) []FileResult {
	var out []FileResult
	for _, f := range r.Files {
		if f.Set == set {
			out = append(out, f)
		}
	}
	return out
}

func commas(n int64) string {
	s := fmt.Sprint(n)
	if n < 0 {
		return "–"
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Markdown renders the report.
func (r *Report) Markdown() string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	timing := "thread CPU time"
	if len(r.Files) > 0 && !r.Files[0].CPUTime {
		timing = "wall time"
	}
	w("# Packed safetensors: benchmark\n\n")
	w("Written by `make bench-tensors` (`cmd/glyd-tensorbench`, package `internal/tensorbench`). Every number below comes from the one run described here; rerun the target to refresh the page. The format is specified in [docs/tensors.md](../tensors.md).\n\n")
	w("|  |  |\n|---|---|\n")
	w("| machine | %s |\n", machine.CPU())
	w("| cores | %d logical |\n", runtime.NumCPU())
	w("| date | %s |\n", r.Start.UTC().Format("2006-01-02 15:04 UTC"))
	w("| Go | %s %s/%s |\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	w("| kernel | %s |\n", machine.Kernel())
	w("| load average (1/5/15 min) | %s at the start, %s at the end |\n", r.LoadStart, r.LoadEnd)
	w("| run time | %s |\n", r.End.Sub(r.Start).Round(time.Second))
	asm := "Go loops"
	if r.AsmDecoder {
		asm = "amd64 assembly loop, four lanes (BMI2, SSE4.1, AVX2 where present)"
	}
	w("| decoder | %s; decode speeds in %s, fastest of %d runs, one thread unless noted |\n", asm, timing, r.Config.Reps)
	w("| corpus | `%s/weights` |\n", r.Config.Corpus)
	if r.ZstdVersion != "" {
		w("| peer | %s |\n", r.ZstdVersion)
	}
	w("\nUnits: GB/s = 10^9 bytes of decoded output per second. *Bits per value* is 8 × the packed file's size (header, directory, tables, every tensor) ÷ the number of floating-point values in the file. *H* is the empirical order-0 entropy of the exponent field over all of the file's values of its float dtype (8 bits for BF16, 5 for F16); the *floor* is the bits a value has besides its exponent plus H (8 + H for BF16, 11 + H for F16): what a coder of the exponents alone, with one table for the whole file, could at best reach, not counting the header. Per-span tables can go below it.\n\n")

	w("## Targets\n\n| target | measured | goal | status |\n|---|---:|---:|---|\n")
	for _, t := range r.Targets() {
		st := "**not met**"
		if t.Met {
			st = "**met**"
		}
		w("| %s | %s | %s | %s |\n", t.Name, t.Measured, t.Goal, st)
	}

	for _, set := range r.sets() {
		files := r.files(set)
		w("\n## Corpus: %s\n\n", set)
		w("| file | tensors | float values | H (bits) | floor | bits/value | vs floor | zstd -19 bytes | glyd bytes | glyd ÷ zstd | decode GB/s | open ms | decode GB/s, open file | pack MB/s |\n")
		w("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
		var tv, tp, tz, ts int64
		var tt, td, hv, fv float64
		for _, f := range files {
			zr := "–"
			if f.Zstd > 0 {
				zr = fmt.Sprintf("%.3f", float64(f.Packed)/float64(f.Zstd))
				tz += f.Zstd
			}
			w("| %s | %d | %s | %.3f | %.3f | %.3f | %+.3f | %s | %s | %s | %.2f | %.3f | %.2f | %.1f |\n", f.Name, f.Tensors, commas(f.FloatValues),
				f.H, f.Floor, f.Bits(), f.Bits()-f.Floor, commas(f.Zstd), commas(f.Packed), zr, f.DecodeGBs,
				float64(f.OpenTime.Microseconds())/1000, f.DataGBs, f.EncodeMBs)
			td += float64(f.Size) / (f.DataGBs * 1e9)
			tv += f.FloatValues
			tp += f.Packed
			ts += f.Size
			tt += float64(f.Size) / (f.DecodeGBs * 1e9)
			hv += f.H * float64(f.FloatValues)
			fv += f.Floor * float64(f.FloatValues)
		}
		zr := "–"
		if tz > 0 {
			zr = fmt.Sprintf("%.3f", float64(tp)/float64(tz))
		}
		w("| **all %d files** | | %s | %.3f | %.3f | %.3f | %+.3f | %s | %s | %s | %.2f | | %.2f | |\n", len(files), commas(tv), hv/float64(tv), fv/float64(tv),
			8*float64(tp)/float64(tv), 8*float64(tp)/float64(tv)-fv/float64(tv), commas(tz), commas(tp), zr, float64(ts)/tt/1e9, float64(ts)/td/1e9)
		w("\nOriginal size %s bytes; packed %s bytes (%.1f%%). H and floor of the total are value-weighted means of the files'.\n", commas(ts), commas(tp), 100*float64(tp)/float64(ts))
		if set == FP8Set {
			w("\n**Synthetic**: the corpus has no fp8 checkpoint, so every bf16 file above was cast to F8_E4M3 the way fp8 checkpoints are made: each bf16 tensor scaled so its largest magnitude is 448 (E4M3's largest finite value) and rounded to nearest even; other tensors kept. *H* is the entropy of the 4-bit exponent field, the floor 4 + H (sign and mantissa raw); glyd codes each fp8 value whole (kind B8, docs/tensors.md), which can go below it. The GPU loader decodes B8 spans on the CPU for now.\n")
		}
	}

	w("\n## Decode speed on a large tensor\n\n")
	w("Small models decode slower per byte than large ones: every span costs a table to build and every file a header to parse. One synthetic BF16 tensor of %s normal weights (σ = 0.02, %.3f bits per value packed) shows the steady state of large models: **%.2f GB/s on one core** (%s), **%.2f GB/s on all %d threads** (wall time).\n",
		commas(int64(r.Config.Big)), r.BigBits, r.BigGBs, timing, r.BigGBsAll, r.Threads)

	w("\n## Synthetic checkpoint series\n\n")
	w("**Synthetic**: the corpus has no series, so each file gets a made-up second version: about a tenth of its float tensors (at least one, chosen at random, seed %d) have about 3%% of their values moved by one unit in the last place (±1 on the 16-bit pattern; zeros, infinities and NaNs left alone), the way a fine-tuning step moves weights a little. Version 2 is packed alone and against version 1 (`glyd pack --base v1 v2`: unchanged tensors become base copies; a changed one becomes its XOR with version 1's tensor of the same name where that is smaller — coded whole as V16, or stored through the meta tier, whichever is smaller). zstd's `--patch-from` is the peer. Most of what remains of version 2 is its header, stored again although version 1 has the same one.\n\n", r.Config.Seed)
	w("| set | file | tensors | nudged tensors | nudged values | v2 alone | v2 against v1 | saving | zstd -19 --patch-from |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	var ta, tb, tz int64
	for _, s := range r.Series {
		if s.Nudged == 0 {
			continue
		}
		w("| %s | %s | %d | %d | %s | %s | %s | %.1f%% | %s |\n", s.Set, s.Name, s.Tensors, s.Nudged, commas(s.NudgedValues), commas(s.Alone), commas(s.Against),
			100*(1-float64(s.Against)/float64(s.Alone)), commas(s.ZstdPatch))
		ta += s.Alone
		tb += s.Against
		if s.ZstdPatch > 0 {
			tz += s.ZstdPatch
		}
	}
	if ta > 0 {
		w("| **all** | | | | | %s | %s | %.1f%% | %s |\n", commas(ta), commas(tb), 100*(1-float64(tb)/float64(ta)), commas(tz))
	}
	w("\nHow it was measured: each file is packed with `packed.Encode` (default options: groups of 4096 values, the max tier for the meta section) on one thread (*pack MB/s*, wall time), decoded with `packed.Open` + `DecodeTo` on one thread (*decode GB/s*: opening included, the fastest of the runs) and compared byte for byte with the original; *open ms* is `packed.Open` alone (meta frames, directory, rebuilding and validating the header) and *decode GB/s, open file* is `DecodeTo` of a file already open (span tables built, every group decoded and checked). zstd is the C binary (`zstd -19 -c FILE`, output bytes counted).\n")
	return b.String()
}

// WriteFile writes the markdown report.
func (r *Report) WriteFile(name string) error {
	return os.WriteFile(name, []byte(r.Markdown()), 0o666)
}
