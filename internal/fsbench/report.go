package fsbench

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/glyd/glyd/internal/benchfmt"
)

// Goals glydfs is measured against.
const (
	GoalVsGlydD   = 0.70 // cold sequential read ≥ 70% of `glyd -d` of the same bytes
	GoalVsSquash  = 1.5  // sequential read ≥ 1.5× squashfuse on a zstd image
	GoalVsSquashT = "≥ 1.50×"
)

// Read returns the sequential-read run of target, or nil.
func (r *Report) Read(target string, cold bool) *ReadRun {
	for i := range r.Seq {
		if s := &r.Seq[i]; s.Target == target && s.Cold == cold {
			return s
		}
	}
	return nil
}

// FioOf returns the fio run of target, or nil.
func (r *Report) FioOf(target string, cached bool) *FioRun {
	for i := range r.Fio {
		if f := &r.Fio[i]; f.Target == target && f.Cached == cached {
			return f
		}
	}
	return nil
}

// readRatio is a's median throughput over b's, 0 when either is missing.
func readRatio(a, b *ReadRun) float64 {
	if a == nil || b == nil || a.MBs() == 0 || b.MBs() == 0 {
		return 0
	}
	return a.MBs() / b.MBs()
}

func cacheName(cold bool) string {
	if cold {
		return "cold"
	}
	return "warm"
}

// Targets compares the run with the goals.
func (r *Report) Targets() []Target {
	var ts []Target
	g := r.Read(tgtGlydfs, true)
	t := Target{Name: "sequential read, cold: glydfs vs `glyd -d` of the same bytes (default tier)", Goal: fmt.Sprintf("≥ %.2f×", GoalVsGlydD)}
	if v := readRatio(g, r.Read(tgtGlydD, true)); v > 0 {
		t.Available, t.Met = true, v >= GoalVsGlydD
		t.Measured = fmt.Sprintf("%.2f× (%s vs %s)", v, benchfmt.FmtRate(g.MBs()), benchfmt.FmtRate(r.Read(tgtGlydD, true).MBs()))
	}
	ts = append(ts, t)
	for _, cold := range []bool{true, false} {
		g, s := r.Read(tgtGlydfs, cold), r.Read(tgtSquash, cold)
		t := Target{Name: "sequential read, " + cacheName(cold) + ": glydfs vs squashfuse (zstd squashfs)", Goal: GoalVsSquashT}
		if v := readRatio(g, s); v > 0 {
			t.Available, t.Met = true, v >= GoalVsSquash
			t.Measured = fmt.Sprintf("%.2f× (%s vs %s)", v, benchfmt.FmtRate(g.MBs()), benchfmt.FmtRate(s.MBs()))
		}
		ts = append(ts, t)
	}
	return ts
}

// WriteFile writes the report as markdown to path, creating its folder.
func (r *Report) WriteFile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := r.WriteMarkdown(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// WriteMarkdown writes docs/benchmarks/fs.md.
func (r *Report) WriteMarkdown(w io.Writer) error {
	ew := &benchfmt.ErrWriter{W: w}
	p := func(format string, args ...any) { fmt.Fprintf(ew, format, args...) }
	m := r.Machine

	p("# glydfs: benchmark of the mount against its peers\n\n")
	p("Written by `make bench-fs` (`cmd/glyd-fsbench`, package `internal/fsbench`). ")
	p("Every number below comes from the one run described here, the peers measured in the same run on the same bytes; rerun the target to refresh the page.\n\n")
	hdr := &benchfmt.Table{Head: []string{"", ""}, Align: "ll"}
	hdr.Add("machine", m.CPU)
	hdr.Add("cores", fmt.Sprintf("%d logical", m.Cores))
	if m.Memory > 0 {
		hdr.Add("memory", fmt.Sprintf("%.1f GiB (the page cache can hold the %s test file)", float64(m.Memory)/(1<<30), benchfmt.SizeName(r.Config.Size)))
	}
	hdr.Add("date", r.Started.UTC().Format("2006-01-02 15:04 MST"))
	hdr.Add("Go", m.Go+" "+m.OS)
	hdr.Add("kernel", m.Kernel)
	hdr.Add("load average (1/5/15 min)", fmt.Sprintf("%s at the start, %s at the end", m.LoadStart, m.LoadEnd))
	rt := r.Elapsed.Round(time.Second).String()
	if r.CPU > 0 {
		rt += fmt.Sprintf(" (%s of CPU time, the benchmark and the processes it ran; well under cores × run time means it waited, on the disk or on other work)", r.CPU.Round(time.Second))
	}
	hdr.Add("run time", rt)
	hdr.Add("command", "`"+r.Config.CmdLine+"`")
	hdr.Add("glyd, glydfs", r.Build+"; glydfs mounted with its defaults (`bin/glydfs -f STORE MNT`: default tier, 64 MiB chunk cache, 8 MiB read-ahead, 32 versions kept)")
	hdr.Add("local disk", m.WorkFS)
	drop := "yes: `sync; echo 3 > /proc/sys/vm/drop_caches` before every cold run"
	if !r.Dropped {
		drop = "**no** (see the notes): cold runs only restart the FUSE servers"
	}
	hdr.Add("page cache dropped", drop)
	var tools []string
	for _, t := range r.Tools {
		v := t.Version
		if v == "" {
			v = "not installed"
		}
		tools = append(tools, fmt.Sprintf("%s: %s", t.Name, v))
	}
	hdr.Add("peers", strings.Join(tools, "; "))
	hdr.Add("runs", fmt.Sprintf("%d timed runs per measurement, the median counts (fio: one job each)", r.Config.Runs))
	hdr.Add("mounts left at the end", r.Leftover)
	hdr.Markdown(ew)
	p("\nUnits: MB = 10^6 bytes, MB/s = 10^6 bytes per second, GB/s = 10^9 bytes per second; KiB/MiB/GiB are powers of two. ")
	p("*Cold*: the page cache dropped and the FUSE server (glydfs or squashfuse) unmounted and started again before the run, so the bytes come from the disk and glydfs's chunk cache is empty. *Warm*: the file read once just before, untimed.\n\n")

	if len(r.Problems) > 0 {
		p("## glydfs problems found in this run\n\n")
		for _, s := range r.Problems {
			p("- %s\n", s)
		}
		p("\n")
	}

	p("## Targets\n\n")
	tt := &benchfmt.Table{Head: []string{"target", "measured", "goal", "status"}, Align: "lrrl"}
	for _, t := range r.Targets() {
		meas := t.Measured
		if !t.Available {
			meas = "-"
		}
		tt.Add(t.Name, meas, t.Goal, "**"+t.Status()+"**")
	}
	tt.Markdown(ew)
	p("\n")

	r.writeSummary(ew)
	r.writeSeq(ew)
	r.writeFio(ew)
	r.writeWrites(ew)
	r.writeSeries(ew)
	r.writeModels(ew)
	if len(r.Notes) > 0 {
		p("## Notes\n\n")
		for _, n := range r.Notes {
			p("- %s\n", n)
		}
		p("\n")
	}
	return ew.Err
}

// cell helpers: a run's value, or why it is missing.
func readCell(rr *ReadRun) string {
	switch {
	case rr == nil:
		return "-"
	case rr.Err != "":
		return "failed"
	}
	return benchfmt.FmtRate(rr.MBs())
}

func fioCell(f *FioRun) string {
	switch {
	case f == nil:
		return "-"
	case f.Err != "":
		return "failed"
	}
	return fmtDur(f.P50) + " / " + fmtDur(f.P99)
}

func (r *Report) writeSummary(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	t := r.Test
	if t == nil {
		return
	}
	p("## Summary\n\n")
	p("The %s test file, the release tarball, the release series and the model weights are described in the sections below. The last column is glydfs's figure over squashfuse's, `glyd -d`'s and the local disk's, in that order (for times and latencies the other way round: above 1 always means glydfs is better).\n\n", benchfmt.SizeName(t.Size))
	st := &benchfmt.Table{Head: []string{"measurement", "glydfs", "local disk", "glyd -d", "squashfuse", "glydfs vs squashfuse / glyd -d / local"}, Align: "lrrrrr"}
	for _, cold := range []bool{true, false} {
		g, l, d, s := r.Read(tgtGlydfs, cold), r.Read(tgtLocal, cold), r.Read(tgtGlydD, cold), r.Read(tgtSquash, cold)
		st.Add(fmt.Sprintf("sequential read, %s, MB/s", cacheName(cold)), "**"+readCell(g)+"**", readCell(l), readCell(d), readCell(s),
			fmt.Sprintf("%s / %s / %s", times(readRatio(g, s)), times(readRatio(g, d)), times(readRatio(g, l))))
	}
	for _, cached := range []bool{false, true} {
		g, l, s := r.FioOf(tgtGlydfs, cached), r.FioOf(tgtLocal, cached), r.FioOf(tgtSquash, cached)
		word := "uncached"
		if cached {
			word = "cached"
		}
		st.Add("4 KiB random read, "+word+", p50 / p99", "**"+fioCell(g)+"**", fioCell(l), "", fioCell(s),
			fmt.Sprintf("p99: %s / - / %s", times(p99Ratio(s, g)), times(p99Ratio(l, g))))
	}
	if len(r.Unpack) == 2 {
		l, g := &r.Unpack[0], &r.Unpack[1]
		if g.Err == "" && l.Err == "" && len(g.Runs) > 0 && len(l.Runs) > 0 {
			gm, lm := g.Median(), l.Median()
			st.Add(fmt.Sprintf("unpack %s (%d entries): tar / tar+sync", g.Tarball, g.Entries),
				"**"+benchfmt.FmtSeconds(gm.Tar)+" / "+benchfmt.FmtSeconds(gm.Tar+gm.Sync)+"**", benchfmt.FmtSeconds(lm.Tar)+" / "+benchfmt.FmtSeconds(lm.Tar+lm.Sync), "", "",
				fmt.Sprintf("- / - / %s (with sync %s)", times(lm.Tar.Seconds()/gm.Tar.Seconds()), times((lm.Tar+lm.Sync).Seconds()/(gm.Tar+gm.Sync).Seconds())))
		}
	}
	if len(r.Write) >= 2 {
		l, g := &r.Write[0], &r.Write[1]
		if g.Err == "" && l.Err == "" && len(g.Runs) > 0 {
			gm, lm := g.Median(), l.Median()
			st.Add(fmt.Sprintf("write the %s file: until closed / until fsynced, MB/s", benchfmt.SizeName(g.Size)),
				"**"+benchfmt.FmtRate(benchfmt.MBs(g.Size, gm.Closed()))+" / "+benchfmt.FmtRate(benchfmt.MBs(g.Size, gm.Total()))+"**",
				benchfmt.FmtRate(benchfmt.MBs(l.Size, lm.Closed()))+" / "+benchfmt.FmtRate(benchfmt.MBs(l.Size, lm.Total())), "", "",
				fmt.Sprintf("- / - / %s (until closed %s)", times(lm.Total().Seconds()/gm.Total().Seconds()), times(lm.Closed().Seconds()/gm.Closed().Seconds())))
		}
	}
	if s := r.Series; s != nil {
		patch := s.zstd("patch-from")
		for _, g := range s.Glydfs {
			if g.Err != "" || len(g.Steps) == 0 {
				continue
			}
			vs := "-"
			if patch != nil && patch.Err == "" && patch.Total > 0 {
				vs = fmt.Sprintf("zstd patch chain %s bytes (%s); glydfs is %s of it", benchfmt.Commas(patch.Total), benchfmt.Pct(patch.Total, s.Raw), times(float64(g.Stored())/float64(patch.Total)))
			}
			st.Add(fmt.Sprintf("release series (%d tars, %s bytes), %s: stored bytes", len(s.Files), benchfmt.Commas(s.Raw), g.Mode),
				fmt.Sprintf("**%s (%s)**", benchfmt.Commas(g.Stored()), benchfmt.Pct(g.Stored(), s.Raw)), "", "", "", vs)
		}
	}
	r.modelSummaryRows(st)
	st.Markdown(w)
	p("\n")
}

func p99Ratio(peer, g *FioRun) float64 {
	if peer == nil || g == nil || peer.Err != "" || g.Err != "" || g.P99 <= 0 {
		return 0
	}
	return float64(peer.P99) / float64(g.P99)
}

func (s *Series) zstd(substr string) *PeerColumn {
	for i := range s.Peers {
		if strings.Contains(s.Peers[i].Name, substr) {
			return &s.Peers[i]
		}
	}
	return nil
}

func (r *Report) writeSeq(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	t := r.Test
	if t == nil {
		return
	}
	p("## 1. Sequential read of a %s file\n\n", benchfmt.SizeName(t.Size))
	p("The test file (%s bytes, SHA-256 `%s…`) is round after round of %d compressible corpus files (%s: the x-tools release tarballs, `text/`, `records/`; %s bytes a round), concatenated in a different seeded order each round, with %d bytes XORed at pseudo-random places in every %s block (seed %d). ",
		benchfmt.Commas(t.Size), t.SHA256[:16], len(t.Sources), "`"+r.Config.Corpus+"`", benchfmt.Commas(t.Round), FlipsPerBlock, benchfmt.SizeName(FlipBlock), t.Seed)
	p("The flips keep glydfs from finding later rounds again as whole duplicate chunks: it has to store them as deltas against earlier rounds and decode those deltas when reading, as it would for a file that was really written that way. squashfs and the `.glyd` file do not deduplicate within a file, so the flips cost them nothing.\n\n")
	p("glydfs holds the file that section 3's write test copied into it (the last of its runs); each read is `open`, 1 MiB `read(2)` calls to the end, `close`, made as `dd bs=1M` makes them (a Go `os.File.Read` loop costs the reader itself ~0.35 s more CPU a GiB in the scheduler's blocking-syscall path, CPU a 2-core machine takes from the server being measured). ")
	p("The runs go round-robin over the readers (one cold run of each, then the next round; then the same for warm runs), so a burst of load on the machine hits them all alike. ")
	p("`glyd -d` is `%s -d -c big.bin.glyd > /dev/null`, the file compressed beforehand with the default tier (`glyd -k big.bin`). ", "bin/glyd")
	p("squashfuse mounts an image made with `%s` and reads the same file from it. ", t.SquashHow)
	p("*%s* reads the object that holds the file in glydfs's store directly, with the store's Go API (`Object.WriteTo`, what `glyd store get` does), glydfs unmounted: the store's share of glydfs's time.\n\n", tgtStore)
	st := &benchfmt.Table{Head: []string{"", "bytes", "% of the file", "time to make"}, Align: "lrrr"}
	st.Add("the test file", benchfmt.Commas(t.Size), "100.00%", "")
	if t.GlydfsStored > 0 {
		s := t.GlydfsStats
		st.Add(fmt.Sprintf("glydfs: chunk frames (`stored` in `user.glyd.stats`; %d chunks, %d of them deltas)", s.Chunks, s.Deltas), benchfmt.Commas(t.GlydfsStored), benchfmt.Pct(t.GlydfsStored, t.Size), "section 3")
		st.Add("glydfs: the store directory after unmounting (apparent / allocated)", benchfmt.Commas(t.GlydfsDisk.Apparent)+" / "+benchfmt.Commas(t.GlydfsDisk.Allocated), benchfmt.Pct(t.GlydfsDisk.Apparent, t.Size)+" / "+benchfmt.Pct(t.GlydfsDisk.Allocated, t.Size), "")
	}
	if t.GlydSize > 0 {
		st.Add("`glyd` default tier, one `.glyd` file", benchfmt.Commas(t.GlydSize), benchfmt.Pct(t.GlydSize, t.Size), benchfmt.FmtSeconds(t.GlydTime))
	}
	if t.SquashSize > 0 {
		st.Add("squashfs image, zstd", benchfmt.Commas(t.SquashSize), benchfmt.Pct(t.SquashSize, t.Size), benchfmt.FmtSeconds(t.SquashTime))
	}
	st.Markdown(w)
	p("\nglydfs's few percent are the test file's rounds coded as deltas of one another, a consequence of how the file was made, not a ratio to expect of ordinary data; the `.glyd` file and the squashfs image show what compressing it without cross-round deltas gives.\n\n")

	rt := &benchfmt.Table{Head: []string{"reader", "cache", "median", "MB/s", "runs (min – max)", "glydfs ÷ this"}, Align: "llrrrr"}
	for _, cold := range []bool{true, false} {
		g := r.Read(tgtGlydfs, cold)
		for _, tg := range []string{tgtGlydfs, tgtStore, tgtGlydD, tgtSquash, tgtLocal} {
			rr := r.Read(tg, cold)
			if rr == nil {
				continue
			}
			name := tg
			if tg == tgtGlydfs {
				name = "**glydfs**"
			}
			if rr.Err != "" {
				rt.Add(name, cacheName(cold), "", "not measured: "+rr.Err, "", "")
				continue
			}
			ratio := ""
			if tg != tgtGlydfs {
				ratio = times(readRatio(g, rr))
			}
			rt.Add(name, cacheName(cold), benchfmt.FmtSeconds(rr.Median()), "**"+benchfmt.FmtRate(rr.MBs())+"**", spread(rr.Size, rr.Runs), ratio)
		}
	}
	rt.Markdown(w)
	p("\n")

	// What this means.
	gc, gw := r.Read(tgtGlydfs, true), r.Read(tgtGlydfs, false)
	dc, sc, sw, lc := r.Read(tgtGlydD, true), r.Read(tgtSquash, true), r.Read(tgtSquash, false), r.Read(tgtLocal, true)
	p("**What this means.** ")
	if v := readRatio(gc, dc); v > 0 {
		p("From a cold cache glydfs delivers %s of what `glyd -d` decodes from the same disk (%s vs %s): that is the cost of the mount (FUSE round trips, delta chains, chunk lookups) over the raw codec", pctf(v), benchfmt.FmtRate(gc.MBs()), benchfmt.FmtRate(dc.MBs()))
		if v >= GoalVsGlydD {
			p(", within the %.0f%% target. ", 100*GoalVsGlydD)
		} else {
			p(", short of the %.0f%% target. ", 100*GoalVsGlydD)
		}
	}
	if v := readRatio(gc, r.Read(tgtStore, true)); v > 0 {
		p("Reading the same object straight from the chunk store, without FUSE, runs at %s, so the mount delivers %s of what its store can: ", benchfmt.FmtRate(r.Read(tgtStore, true).MBs()), pctf(v))
		if v >= 0.8 {
			p("the limit is the store's read path (fetching chunks, decoding delta chains), not FUSE. ")
		} else {
			p("FUSE and glydfs's read path cost the rest. ")
		}
	}
	if v := readRatio(gc, sc); v > 0 {
		p("Against squashfuse on a zstd image, the read-only compressed filesystem one would use for the same job, glydfs reads %s as fast cold", times(v))
		if v2 := readRatio(gw, sw); v2 > 0 {
			p(" and %s as fast warm", times(v2))
		}
		p(". ")
	}
	if v := readRatio(gc, lc); v > 0 {
		p("Compared with reading the raw file from the local disk cold, glydfs runs at %s", times(v))
		if v > 1 {
			p(": it reads only its compressed chunk frames from the disk, so a disk slower than decoding makes the compressed mount faster than the plain file")
		}
		p(". ")
	}
	if gw != nil && gw.Err == "" {
		p("Warm reads come from the kernel's page cache (glydfs opens files with `FOPEN_KEEP_CACHE`), so they measure FUSE's cached read path rather than glydfs.")
	}
	p("\n\n")
}

func pctf(v float64) string { return fmt.Sprintf("%.0f%%", 100*v) }

func (r *Report) writeFio(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	if len(r.Fio) == 0 || r.Test == nil {
		return
	}
	p("## 2. Random 4 KiB reads (fio)\n\n")
	p("fio, one job, synchronous `pread` of 4 KiB at uniformly random 4 KiB-aligned offsets of the %s test file (no block twice), `fadvise(RANDOM)` so the kernel reads nothing ahead; latency is fio's completion latency of each read. ", benchfmt.SizeName(r.Test.Size))
	p("*Uncached*: the page cache was dropped and the FUSE server started afresh (empty chunk cache) just before the job, which then does %d reads, touching well under the whole file, so nearly every read has to fetch and decode a chunk (glydfs: a chunk of ~64 KiB, plus its delta base when it is a delta; squashfuse: a 128 KiB zstd block) from the disk. ", r.Config.FioIOs)
	p("It is not `O_DIRECT`: FUSE mounts without `direct_io` do not honour it, so dropping the caches and remounting is how \"uncached\" is made. ")
	p("*Cached*: the file was read whole just before and the job runs for %v with the page cache kept (`--invalidate=0`), so reads never reach the FUSE server.\n\n", r.Config.FioTime)
	t := &benchfmt.Table{Head: []string{"reader", "cache", "reads", "p50", "p90", "p99", "p99.9", "mean", "IOPS", "p99: this ÷ glydfs"}, Align: "llrrrrrrrr"}
	for _, cached := range []bool{false, true} {
		g := r.FioOf(tgtGlydfs, cached)
		for _, tg := range []string{tgtGlydfs, tgtSquash, tgtLocal} {
			f := r.FioOf(tg, cached)
			if f == nil {
				continue
			}
			word := "uncached"
			if cached {
				word = "cached"
			}
			name := tg
			if tg == tgtGlydfs {
				name = "**glydfs**"
			}
			if f.Err != "" {
				t.Add(name, word, "not measured: "+f.Err)
				continue
			}
			ratio := ""
			if tg != tgtGlydfs {
				ratio = times(p99Ratio(f, g))
			}
			t.Add(name, word, benchfmt.Commas(f.IOs), fmtDur(f.P50), fmtDur(f.P90), "**"+fmtDur(f.P99)+"**", fmtDur(f.P999), fmtDur(f.Mean), fmt.Sprintf("%.0f", f.IOPS), ratio)
		}
	}
	t.Markdown(w)
	if f := r.FioOf(tgtGlydfs, false); f != nil && f.Args != "" {
		p("\nThe glydfs uncached job: `%s`.\n", f.Args)
	}
	gu, su, lu := r.FioOf(tgtGlydfs, false), r.FioOf(tgtSquash, false), r.FioOf(tgtLocal, false)
	p("\n**What this means.** ")
	if gu != nil && gu.Err == "" {
		p("A random 4 KiB read that misses every cache costs glydfs %s at the median and %s at p99", fmtDur(gu.P50), fmtDur(gu.P99))
		if su != nil && su.Err == "" {
			p(", against squashfuse's %s and %s", fmtDur(su.P50), fmtDur(su.P99))
		}
		if lu != nil && lu.Err == "" {
			p("; the raw file on the local disk takes %s and %s, so the rest is fetching and decoding whole chunks and the FUSE round trip", fmtDur(lu.P50), fmtDur(lu.P99))
		}
		p(". ")
	}
	if gc := r.FioOf(tgtGlydfs, true); gc != nil && gc.Err == "" {
		p("Once the file sits in the page cache a read takes %s (p99 %s) whichever filesystem is underneath: the kernel answers it.", fmtDur(gc.P50), fmtDur(gc.P99))
	}
	p("\n\n")
}

func (r *Report) writeWrites(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	if len(r.Unpack) < 2 && len(r.Write) < 2 {
		return
	}
	p("## 3. Writing into the mount\n\n")
	if len(r.Unpack) == 2 {
		l, g := &r.Unpack[0], &r.Unpack[1]
		p("### Unpacking a release tarball\n\n")
		p("`tar -xf %s -C DIR` (%d entries made: %d regular files of %s bytes and the directories they imply; the tarball itself in the page cache), into a new directory on the local disk and into a freshly created glydfs store (a new store each run, so nothing deduplicates against an earlier run). ", g.Tarball, g.Entries, g.Files, benchfmt.Commas(g.Bytes))
		p("glydfs commits each file as it is closed, not durably; *sync* is what it then takes to make everything durable: `syncfs` on the directory and an `fsync` of one unpacked file (on glydfs any `fsync` syncs the whole store; on the local disk `syncfs` writes everything). ")
		p("After the last run the glydfs tree was compared with the local one: names, types, modes, sizes, bytes, link targets.\n\n")
		t := &benchfmt.Table{Head: []string{"target", "tar (median)", "entries/s", "MB/s", "sync", "tar + sync", "runs: tar (min – max)", "unmount afterwards"}, Align: "lrrrrrrr"}
		for _, u := range []*UnpackRun{g, l} {
			name := u.Target
			if u.Target == tgtGlydfs {
				name = "**glydfs**"
			}
			if u.Err != "" || len(u.Runs) == 0 {
				t.Add(name, "not measured: "+u.Err)
				continue
			}
			m := u.Median()
			lo, hi := u.Runs[0].Tar, u.Runs[0].Tar
			for _, x := range u.Runs {
				lo, hi = min(lo, x.Tar), max(hi, x.Tar)
			}
			um := ""
			if len(u.Unmount) > 0 {
				um = benchfmt.FmtSeconds(benchfmt.Median(u.Unmount))
			}
			t.Add(name, "**"+benchfmt.FmtSeconds(m.Tar)+"**", fmt.Sprintf("%.0f", float64(u.Entries)/m.Tar.Seconds()), benchfmt.FmtRate(benchfmt.MBs(u.Bytes, m.Tar)), benchfmt.FmtSeconds(m.Sync), benchfmt.FmtSeconds(m.Tar+m.Sync),
				benchfmt.FmtSeconds(lo)+" – "+benchfmt.FmtSeconds(hi), um)
		}
		t.Markdown(w)
		p("\n")
		if g.Err == "" && l.Err == "" && len(g.Runs) > 0 && len(l.Runs) > 0 {
			gm, lm := g.Median(), l.Median()
			p("**What this means.** Unpacking into glydfs took %s the local disk's time (%s vs %s, %.0f vs %.0f entries/s); made durable, %s vs %s. ",
				times(gm.Tar.Seconds()/lm.Tar.Seconds()), benchfmt.FmtSeconds(gm.Tar), benchfmt.FmtSeconds(lm.Tar), float64(g.Entries)/gm.Tar.Seconds(), float64(l.Entries)/lm.Tar.Seconds(),
				benchfmt.FmtSeconds(gm.Tar+gm.Sync), benchfmt.FmtSeconds(lm.Tar+lm.Sync))
			p("Many small files cost a FUSE round trip for each create, write, close (a commit), chmod and utimes, and the local disk's figure is page-cache speed until the sync.\n\n")
		}
	}
	if len(r.Write) >= 2 {
		l, g := &r.Write[0], &r.Write[1]
		p("### Writing the %s file\n\n", benchfmt.SizeName(g.Size))
		p("The test file (in the page cache) copied in 1 MiB `write` calls, as `cp` or `dd bs=1M` do, to a new file on the local disk and into a freshly created glydfs store (a new store each run, the two interleaved); then `close` (glydfs chunks, deduplicates, delta-codes and compresses the staged file and commits it here), then the file reopened and `fsync`ed (glydfs: the store synced; local disk: the dirty pages written). ")
		p("*Until closed* is what `cp` waits for; *until fsynced* is what a durable copy costs. The glydfs store of the last run is the one section 1 reads. ")
		p("*%s* puts the same file into a fresh chunk store directly with the store's Go API (`Put`, durable when it returns; one run), the work glydfs does at `close` and `fsync` without the file system around it.\n\n", tgtStore)
		t := &benchfmt.Table{Head: []string{"target", "write calls", "close", "fsync", "until closed", "until fsynced", "runs, until fsynced (min – max)", "unmount afterwards"}, Align: "lrrrrrrr"}
		rows := []*WriteRun{g}
		for i := 2; i < len(r.Write); i++ {
			rows = append(rows, &r.Write[i])
		}
		rows = append(rows, l)
		for _, x := range rows {
			name := x.Target
			if x.Target == tgtGlydfs {
				name = "**glydfs**"
			}
			if x.Err != "" || len(x.Runs) == 0 {
				t.Add(name, "not measured: "+x.Err)
				continue
			}
			m := x.Median()
			if x.Direct {
				t.Add(name+": `Put`", "", "", "", "", "**"+benchfmt.FmtRate(benchfmt.MBs(x.Size, m.Total()))+"**", benchfmt.FmtSeconds(m.Total()), "")
				continue
			}
			var tots []time.Duration
			for _, y := range x.Runs {
				tots = append(tots, y.Total())
			}
			um := ""
			if len(x.Unmount) > 0 {
				um = benchfmt.FmtSeconds(benchfmt.Median(x.Unmount))
			}
			t.Add(name, benchfmt.FmtSeconds(m.Write), benchfmt.FmtSeconds(m.Close), benchfmt.FmtSeconds(m.Sync), benchfmt.FmtRate(benchfmt.MBs(x.Size, m.Closed())), "**"+benchfmt.FmtRate(benchfmt.MBs(x.Size, m.Total()))+"**", spread(x.Size, tots), um)
		}
		t.Markdown(w)
		p("\n")
		if g.Err == "" && l.Err == "" && len(g.Runs) > 0 && len(l.Runs) > 0 {
			gm, lm := g.Median(), l.Median()
			p("**What this means.** A durable copy of the file into glydfs runs at %s against the local disk's %s (%s). glydfs spends %s in the `write` calls (staging), %s in `close` (the commit: chunking and coding) and %s in `fsync`; the local disk %s, %s and %s. ",
				benchfmt.FmtRate(benchfmt.MBs(g.Size, gm.Total())), benchfmt.FmtRate(benchfmt.MBs(l.Size, lm.Total())), times(benchfmt.MBs(g.Size, gm.Total())/benchfmt.MBs(l.Size, lm.Total())),
				benchfmt.FmtSeconds(gm.Write), benchfmt.FmtSeconds(gm.Close), benchfmt.FmtSeconds(gm.Sync), benchfmt.FmtSeconds(lm.Write), benchfmt.FmtSeconds(lm.Close), benchfmt.FmtSeconds(lm.Sync))
			if len(r.Write) > 2 {
				if d := &r.Write[2]; d.Err == "" && len(d.Runs) > 0 {
					v := benchfmt.MBs(d.Size, d.Median().Total())
					p("The chunk store alone puts the file at %s, so ", benchfmt.FmtRate(v))
					if q := benchfmt.MBs(g.Size, gm.Total()) / v; q >= 0.8 {
						p("the store's coding is what limits glydfs's write speed (the mount reaches %s of it). ", pctf(q))
					} else {
						p("the mount reaches %s of its store's speed: staging and the commit path cost the rest. ", pctf(q))
					}
				}
			}
			if r.Test != nil && r.Test.GlydfsStored > 0 {
				p("glydfs wrote %s bytes of chunk frames (%s of the file) for it.", benchfmt.Commas(r.Test.GlydfsStored), benchfmt.Pct(r.Test.GlydfsStored, g.Size))
			}
			p("\n\n")
		}
	}
}

func (r *Report) writeSeries(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	s := r.Series
	if s == nil {
		return
	}
	n := len(s.Files)
	p("## 4. A release series in the mount\n\n")
	p("`%s`: %d consecutive release tarballs (%s … %s), %s bytes raw, copied into a freshly created glydfs store one after another in release order, two ways (a fresh store each). ", s.Dir, n, s.Files[0].Name, s.Files[n-1].Name, benchfmt.Commas(s.Raw))
	p("glydfs's figure is `stored` from the JSON in the mount root's extended attribute `user.glyd.stats` (the bytes of all chunk frames) after the last copy. ")
	p("After the last copy every file, and in the one-file case every kept version under `.glyd/versions/`, was compared with its tarball.\n\n")
	for _, g := range s.Glydfs {
		p("- **glydfs, %s**: %s.\n", g.Mode, g.How)
	}
	for _, z := range s.Peers {
		p("- **%s**: %s.\n", z.Name, z.How)
	}
	p("\n")
	patch := s.zstd("patch-from")
	t := &benchfmt.Table{Head: []string{"method", "stored bytes", "% of raw", "÷ zstd patch chain", "time"}, Align: "lrrrr"}
	t.Add("raw tarballs", benchfmt.Commas(s.Raw), "100.00%", "", "")
	x := func(v int64) string {
		if patch == nil || patch.Err != "" || patch.Total == 0 {
			return ""
		}
		return times(float64(v) / float64(patch.Total))
	}
	for _, g := range s.Glydfs {
		if g.Err != "" {
			t.Add("glydfs, "+g.Mode, "not measured: "+g.Err)
			continue
		}
		var d time.Duration
		for _, st := range g.Steps {
			d += st.Copy
		}
		t.Add("**glydfs, "+g.Mode+"**", "**"+benchfmt.Commas(g.Stored())+"**", benchfmt.Pct(g.Stored(), s.Raw), x(g.Stored()), benchfmt.FmtSeconds(d))
	}
	for _, z := range s.Peers {
		if z.Err != "" {
			t.Add(z.Name, "not measured: "+z.Err)
			continue
		}
		t.Add(z.Name, benchfmt.Commas(z.Total), benchfmt.Pct(z.Total, s.Raw), x(z.Total), benchfmt.FmtSeconds(z.Time))
	}
	t.Markdown(w)
	p("\nTimes are wall time for the whole series (glydfs: the copies, each including its commit at close; zstd: one thread per file, level 19), for orientation only.\n\n")

	p("### After each version\n\n")
	head := []string{"version", "raw, cumulative"}
	align := "lr"
	for _, g := range s.Glydfs {
		if g.Err == "" {
			head = append(head, "glydfs, "+g.Mode+": stored")
			align += "r"
		}
	}
	head = append(head, "glydfs, one file: history (bytes of kept versions)")
	align += "r"
	for _, z := range s.Peers {
		if z.Err == "" {
			head = append(head, z.Name)
			align += "r"
		}
	}
	ct := &benchfmt.Table{Head: head, Align: align}
	var raw int64
	for i, f := range s.Files {
		raw += f.Size
		row := []string{f.Name, benchfmt.Commas(raw)}
		var hist string
		for _, g := range s.Glydfs {
			if g.Err != "" {
				continue
			}
			if i < len(g.Steps) {
				st := g.Steps[i].Stats.Stored
				row = append(row, fmt.Sprintf("%s (%s)", benchfmt.Commas(st), benchfmt.Pct(st, raw)))
				if g.Mode == modeSame {
					hist = benchfmt.Commas(g.Steps[i].Stats.History)
				}
			} else {
				row = append(row, "")
			}
		}
		row = append(row, hist)
		for _, z := range s.Peers {
			if z.Err == "" && i < len(z.Cum) {
				row = append(row, fmt.Sprintf("%s (%s)", benchfmt.Commas(z.Cum[i]), benchfmt.Pct(z.Cum[i], raw)))
			}
		}
		ct.Add(row...)
	}
	ct.Markdown(w)
	p("\n")
	for _, g := range s.Glydfs {
		if g.Err == "" && g.Disk.Apparent > 0 {
			p("- glydfs, %s: the store directory takes %s bytes after unmounting (%s allocated), against %s bytes of chunk frames: the rest is badger's tree (file system metadata, chunk records, indexes) and its fixed files.\n", g.Mode, benchfmt.Commas(g.Disk.Apparent), benchfmt.Commas(g.Disk.Allocated), benchfmt.Commas(g.Stored()))
		}
	}
	p("\n**What this means.** ")
	var ok []GlydfsSeries
	for _, g := range s.Glydfs {
		if g.Err == "" && len(g.Steps) > 0 {
			ok = append(ok, g)
		}
	}
	describe := func(g GlydfsSeries) string {
		part := fmt.Sprintf("the %d releases take %s bytes in glydfs, %s of their raw size", n, benchfmt.Commas(g.Stored()), benchfmt.Pct(g.Stored(), s.Raw))
		if len(g.Steps) > 1 {
			later := g.Stored() - g.Steps[0].Stats.Stored
			part += fmt.Sprintf(" (the first %s, each later one %s on average)", benchfmt.Commas(g.Steps[0].Stats.Stored), benchfmt.Commas(later/int64(len(g.Steps)-1)))
		}
		return part
	}
	switch {
	case len(ok) == 2 && ok[0].Stored() == ok[1].Stored():
		p("Copied as new files or over one file (every version kept), %s: the same chunks either way. ", describe(ok[0]))
	default:
		for _, g := range ok {
			p("Copied as %s, %s. ", g.Mode, describe(g))
		}
	}
	if z := s.zstd("each tar"); z != nil && z.Err == "" && len(s.Glydfs) > 0 && s.Glydfs[0].Err == "" {
		p("That is %s of compressing each tarball alone with `zstd -19 --long`: a plain compressed filesystem would pay the full price for every release. ", times(float64(s.Glydfs[0].Stored())/float64(z.Total)))
	}
	if patch != nil && patch.Err == "" && len(s.Glydfs) > 0 && s.Glydfs[0].Err == "" {
		p("The zstd patch chain, which needs every earlier release to restore the next and offers no random access, stores %s of what glydfs does (glydfs ÷ chain = %s). ", pctf(float64(patch.Total)/float64(s.Glydfs[0].Stored())), x(s.Glydfs[0].Stored()))
	}
	if c := s.zstd("no mount"); c != nil && c.Err == "" && c.Total > 0 && len(s.Glydfs) > 0 && s.Glydfs[0].Err == "" {
		if d := float64(s.Glydfs[0].Stored())/float64(c.Total) - 1; math.Abs(d) < 0.0005 {
			p("Putting the same tarballs into a chunk store directly stores %s bytes too: the mount adds nothing to what is stored, and the gap to the patch chain is the chunk store's (docs/benchmarks/store.md).", benchfmt.Commas(c.Total))
		} else {
			p("Putting the same tarballs into a chunk store directly stores %s bytes, so the mount costs %+.1f%% over the store (staging, commits at close); the gap to the patch chain is the chunk store's (docs/benchmarks/store.md).", benchfmt.Commas(c.Total), 100*d)
		}
	}
	p("\n\n")
}
