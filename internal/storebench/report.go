package storebench

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/glyd/glyd/internal/benchfmt"
)

// Goals the store is measured against.
const (
	GoalPatchRatio = 1.25   // series: glyd stored ≤ 1.25 × the zstd patch chain
	GoalPutMBs     = 150.0  // put of new data, MB/s
	GoalGetMBs     = 1000.0 // get without deltas, MB/s
	GoalDeltaMBs   = 500.0  // get through delta chains, MB/s
	GoalP99        = 5 * time.Millisecond
)

// Targets compares the run with the goals.
func (r *Report) Targets() []Target {
	var ts []Target
	if r.Series != nil {
		patch := r.Series.Column(colPatch)
		for _, name := range []string{colGlydDefault, colGlydMax, colGlydCold} {
			t := Target{Name: "release series: " + name + " vs the zstd patch chain", Goal: fmt.Sprintf("≤ %.2f×", GoalPatchRatio)}
			if g := r.Series.Column(name); g != nil && g.Err == "" && patch != nil && patch.Err == "" && patch.Total > 0 {
				v := float64(g.Total) / float64(patch.Total)
				t.Available, t.Met = true, v <= GoalPatchRatio
				t.Measured = fmt.Sprintf("%.3f× (%s vs %s bytes)", v, benchfmt.Commas(g.Total), benchfmt.Commas(patch.Total))
			}
			ts = append(ts, t)
		}
	}
	t := Target{Name: "put of new data (whole corpus, fresh store, wall time)", Goal: fmt.Sprintf("≥ %.0f MB/s", GoalPutMBs)}
	if r.Corpus != nil {
		v := r.Corpus.PutMBs()
		t.Available, t.Met, t.Measured = true, v >= GoalPutMBs, fmt.Sprintf("%.1f MB/s", v)
	}
	ts = append(ts, t)
	for _, g := range r.Gets {
		if g.Label == "deltas" && !strings.Contains(g.Store, "default") {
			continue // the max tier is reported, not targeted
		}
		goal := GoalGetMBs
		name := "get without deltas"
		if g.Label == "deltas" {
			goal, name = GoalDeltaMBs, "get through delta chains"
		}
		name += ", " + cacheWord(g.Cold) + " (" + g.Object + ")"
		t := Target{Name: name, Goal: fmt.Sprintf("≥ %s", benchfmt.FmtRate(goal))}
		if g.Err == "" {
			v := g.MBs()
			t.Available, t.Met, t.Measured = true, v >= goal, benchfmt.FmtRate(v)
		}
		ts = append(ts, t)
	}
	t = Target{Name: "random 64 KiB ReadAt p99, cold (1 GiB-class object)", Goal: "≤ " + fmtDur(GoalP99)}
	if rr := r.Random; rr != nil && rr.Err == "" {
		t.Name = fmt.Sprintf("random %s ReadAt p99, cold, %s object", benchfmt.SizeName(int64(rr.ReadSize)), benchfmt.SizeName(rr.Size))
		if !rr.Dropped {
			t.Name += " (page cache NOT dropped)"
		}
		v := rr.Quantile(0.99)
		t.Available, t.Met, t.Measured = true, v <= GoalP99, fmtDur(v)
	}
	ts = append(ts, t)
	return ts
}

func cacheWord(cold bool) string {
	if cold {
		return "cold chunk cache"
	}
	return "hot chunk cache"
}

// WriteMarkdown writes docs/benchmarks/store.md.
func (r *Report) WriteMarkdown(w io.Writer) error {
	ew := &benchfmt.ErrWriter{W: w}
	p := func(format string, args ...any) { fmt.Fprintf(ew, format, args...) }
	m := r.Machine

	p("# glyd chunk store: benchmark against its peers\n\n")
	p("Written by `make bench-store` (`cmd/glyd-storebench`, package `internal/storebench`). ")
	p("Every number below comes from the one run described here; rerun the target to refresh the page.\n\n")
	var tools []string
	for _, t := range r.Tools {
		v := t.Version
		if v == "" {
			v = "not installed"
		}
		tools = append(tools, fmt.Sprintf("%s: %s", t.Name, v))
	}
	hdr := &benchfmt.Table{Head: []string{"", ""}, Align: "ll"}
	hdr.Add("machine", m.CPU)
	hdr.Add("cores", fmt.Sprintf("%d logical; the store's put and read workers: %d", m.Cores, r.Threads))
	hdr.Add("date", r.Started.UTC().Format("2006-01-02 15:04 MST"))
	hdr.Add("Go", m.Go+" "+m.OS)
	hdr.Add("kernel", m.Kernel)
	hdr.Add("load average (1/5/15 min)", fmt.Sprintf("%s at the start, %s at the end", m.LoadStart, m.LoadEnd))
	hdr.Add("run time", r.Elapsed.Round(time.Second).String())
	hdr.Add("glyd", r.Build)
	if r.Series != nil && len(r.Series.Glyd) > 0 {
		var parts []string
		for _, g := range r.Series.Glyd {
			c := g.Chunking
			parts = append(parts, fmt.Sprintf("%s tier: min %s, average %s, max %s", g.Tier, benchfmt.SizeName(int64(c.Min)), benchfmt.SizeName(int64(c.Avg)), benchfmt.SizeName(int64(c.Max))))
		}
		hdr.Add("store chunking", strings.Join(parts, "; ")+" (each tier's default for a new store)")
	}
	if r.Corpus != nil {
		hdr.Add("corpus", fmt.Sprintf("`%s`: %d files, %s bytes", r.Config.Corpus, len(r.Corpus.Files), benchfmt.Commas(r.Corpus.Usage.Logical)))
	}
	hdr.Add("peers", strings.Join(tools, "; "))
	hdr.Markdown(ew)
	p("\nUnits: MB = 10^6 bytes, MB/s = 10^6 bytes per second, GB/s = 10^9 bytes per second; KiB/MiB/GiB are powers of two. ")
	p("Sizes of restic and borg repositories and of glyd store directories are apparent sizes (the sum of the files' lengths, `du -sb`).\n\n")

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

	if s := r.Series; s != nil {
		r.writeSeries(ew, s)
	}
	if c := r.Corpus; c != nil {
		r.writeCorpus(ew, c)
	}
	r.writeSpeed(ew)
	if len(r.Notes) > 0 {
		p("## Notes\n\n")
		for _, n := range r.Notes {
			p("- %s\n", n)
		}
		p("\n")
	}
	return ew.Err
}

func (r *Report) writeSeries(w io.Writer, s *Series) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	n := len(s.Files)
	p("## 1. Release series\n\n")
	p("`%s`: %d consecutive release tarballs (%s … %s), %s bytes raw, stored one after another in release order. ", s.Dir, n, s.Files[0].Name, s.Files[n-1].Name, benchfmt.Commas(s.Raw))
	p("glyd's figure is the store's `Usage().Stored` (the bytes of all chunk frames) after the last version; the peers' are the size of what they wrote.\n\n")
	patch := s.Column(colPatch)
	t := &benchfmt.Table{Head: []string{"method", "stored bytes", "% of raw", "× patch chain", "time"}, Align: "lrrrr"}
	t.Add("raw tarballs", benchfmt.Commas(s.Raw), "100.00%", "", "")
	for _, c := range s.Columns {
		if c.Err != "" {
			t.Add(c.Name, "not measured: "+c.Err, "", "", "")
			continue
		}
		x := ""
		if patch != nil && patch.Err == "" && patch.Total > 0 {
			x = fmt.Sprintf("%.3f×", float64(c.Total)/float64(patch.Total))
		}
		t.Add(c.Name, benchfmt.Commas(c.Total), benchfmt.Pct(c.Total, s.Raw), x, benchfmt.FmtSeconds(c.Time))
	}
	t.Markdown(w)
	p("\nHow each was made:\n\n")
	for _, c := range s.Columns {
		p("- **%s**: %s.\n", c.Name, c.How)
	}
	p("\nTimes are wall time for the whole series on this machine (the peers' include starting their processes; zstd is pinned to one thread, glyd uses %d workers), for orientation only.\n\n", r.Threads)

	// Cumulative, per version.
	p("### Cumulative stored bytes after each version\n\n")
	head := []string{"version", "raw, cumulative"}
	align := "lr"
	var cols []SeriesColumn
	for _, c := range s.Columns {
		if c.Err == "" && c.Cum != nil {
			cols = append(cols, c)
			head = append(head, c.Name)
			align += "r"
		}
	}
	ct := &benchfmt.Table{Head: head, Align: align}
	var raw int64
	for i, f := range s.Files {
		raw += f.Size
		row := []string{f.Name, benchfmt.Commas(raw)}
		for _, c := range cols {
			row = append(row, fmt.Sprintf("%s (%s)", benchfmt.Commas(c.Cum[i]), benchfmt.Pct(c.Cum[i], raw)))
		}
		ct.Add(row...)
	}
	ct.Markdown(w)
	p("\n")

	// glyd per put.
	p("### What each glyd put stored\n\n")
	gt := &benchfmt.Table{Head: []string{"version", "size"}, Align: "lr"}
	for _, g := range s.Glyd {
		gt.Head = append(gt.Head, g.Tier+": chunks / new / deltas", g.Tier+": stored", g.Tier+": put")
		gt.Align += "rrr"
	}
	for i, f := range s.Files {
		row := []string{f.Name, benchfmt.Commas(f.Size)}
		for _, g := range s.Glyd {
			ps := g.Puts[i]
			row = append(row, fmt.Sprintf("%d / %d / %d", ps.Chunks, ps.New, ps.Deltas), benchfmt.Commas(ps.Stored), benchfmt.FmtRate(benchfmt.MBs(ps.Size, g.Times[i])))
		}
		gt.Add(row...)
	}
	gt.Markdown(w)
	p("\n")
	for _, g := range s.Glyd {
		c := s.Column(glydColumn(g.Tier))
		p("- %s tier: the store directory takes %s bytes on disk after `Close` (%s of raw), against %s bytes of chunk frames: the rest is badger's LSM tree (chunk records, similarity index, manifests), its value-log headers and its fixed files.\n",
			g.Tier, benchfmt.Commas(g.Disk), benchfmt.Pct(g.Disk, s.Raw), benchfmt.Commas(c.Total))
	}
	p("\n")
}

func (r *Report) writeCorpus(w io.Writer, c *CorpusRun) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	u := c.Usage
	p("## 2. The whole corpus in one store\n\n")
	p("Every regular file of `%s` (%d files) put into one fresh default-tier store, in path order, each under its path relative to the corpus.\n\n", r.Config.Corpus, len(c.Files))
	t := &benchfmt.Table{Head: []string{"", "bytes", "% of logical"}, Align: "lrr"}
	t.Add("logical (all objects)", benchfmt.Commas(u.Logical), "100.00%")
	t.Add("unique (distinct chunks)", benchfmt.Commas(u.Unique), benchfmt.Pct(u.Unique, u.Logical))
	t.Add("**stored (chunk frames)**", "**"+benchfmt.Commas(u.Stored)+"**", "**"+benchfmt.Pct(u.Stored, u.Logical)+"**")
	t.Add("store directory after Close", benchfmt.Commas(c.Disk), benchfmt.Pct(c.Disk, u.Logical))
	t.Add("saved by dedup", benchfmt.Commas(u.DedupSaved), benchfmt.Pct(u.DedupSaved, u.Logical))
	t.Add("saved by compression (chunks coded alone)", benchfmt.Commas(u.CompressSaved), benchfmt.Pct(u.CompressSaved, u.Logical))
	t.Add("saved by deltas (over coding those chunks alone)", benchfmt.Commas(u.DeltaSaved), benchfmt.Pct(u.DeltaSaved, u.Logical))
	t.Markdown(w)
	p("\nRatio logical / stored: **%.3f** (%d chunks, %d of them deltas).\n\n", ratio(u.Logical, u.Stored), u.Chunks, u.DeltaChunks)
	p("Per top-level folder (a put's new bytes are charged to the object that first stored them, so a folder's figure includes deltas against folders put before it):\n\n")
	gt := &benchfmt.Table{Head: []string{"folder", "files", "bytes", "stored", "% of bytes", "chunks / new / deltas", "put time", "put MB/s"}, Align: "lrrrrrrr"}
	for _, g := range c.Groups {
		gt.Add(g.Name, strconv.Itoa(g.Files), benchfmt.Commas(g.Size), benchfmt.Commas(g.Stored), benchfmt.Pct(g.Stored, g.Size), fmt.Sprintf("%d / %d / %d", g.Chunks, g.New, g.Deltas), benchfmt.FmtSeconds(g.Time), benchfmt.FmtRate(benchfmt.MBs(g.Size, g.Time)))
	}
	gt.Markdown(w)
	p("\n")
}

func (r *Report) writeSpeed(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("## 3. Speed on this machine\n\n")
	p("The store runs with its defaults: %d put and read workers (GOMAXPROCS), a 64 MiB chunk cache. ", r.Threads)
	p("Inputs were read once beforehand, so the page cache serves them; every put returns only when its object is durable (synced).\n\n")
	p("### Put\n\n")
	t := &benchfmt.Table{Head: []string{"what", "bytes", "wall time", "MB/s", "CPU time (cores busy)"}, Align: "lrrrr"}
	if c := r.Corpus; c != nil {
		t.Add(fmt.Sprintf("**whole corpus into a fresh store** (%d puts)", len(c.Files)), benchfmt.Commas(c.Usage.Logical), benchfmt.FmtSeconds(c.PutTime), "**"+benchfmt.FmtRate(c.PutMBs())+"**", cpuCell(c.PutCPU, c.PutTime))
		t.Add("… then `Close`", "", benchfmt.FmtSeconds(c.CloseTime), "", "")
		t.Add("… puts and `Close` together", benchfmt.Commas(c.Usage.Logical), benchfmt.FmtSeconds(c.PutTime+c.CloseTime), benchfmt.FmtRate(benchfmt.MBs(c.Usage.Logical, c.PutTime+c.CloseTime)), "")
	}
	if s := r.Series; s != nil {
		for _, g := range s.Glyd {
			var tot time.Duration
			for _, d := range g.Times {
				tot += d
			}
			t.Add(fmt.Sprintf("release series, %s tier (%d puts, mostly deltas after the first)", g.Tier, len(g.Times)), benchfmt.Commas(s.Raw), benchfmt.FmtSeconds(tot), benchfmt.FmtRate(benchfmt.MBs(s.Raw, tot)), "")
			t.Add(fmt.Sprintf("… its first release alone (no deltas possible), %s tier", g.Tier), benchfmt.Commas(s.Files[0].Size), benchfmt.FmtSeconds(g.Times[0]), benchfmt.FmtRate(benchfmt.MBs(s.Files[0].Size, g.Times[0])), "")
		}
	}
	if rr := r.Random; rr != nil && rr.Err == "" {
		t.Add(fmt.Sprintf("the %s object of the random-read test", benchfmt.SizeName(rr.Size)), benchfmt.Commas(rr.Size), benchfmt.FmtSeconds(rr.PutTime), benchfmt.FmtRate(benchfmt.MBs(rr.Size, rr.PutTime)), cpuCell(rr.PutCPU, rr.PutTime))
	}
	t.Markdown(w)
	p("\nCPU time is this process's user plus system time over the same interval (badger's background work included); with %d cores, \"cores busy\" near %d means the put was CPU-bound and had the machine to itself, well below it means it waited (on syncs, on the pipeline, or on other processes).\n", r.Machine.Cores, r.Machine.Cores)
	p("\n### Get (whole object, `Object.WriteTo` to a discarding writer)\n\n")
	p("Median of %d timed reads. *Hot*: the store stays open and the object was read once before, so its chunks sit decoded in the chunk cache (this measures the cache and the copy, not decoding). ", r.Config.Runs)
	p("*Cold*: the store is closed and reopened before each timed read (the reopen is not timed, `OpenObject` is), so every chunk and every delta base is read and decoded; the store's files are in the page cache.\n\n")
	gt := &benchfmt.Table{Head: []string{"object", "store", "put: chunks / new / deltas", "chunk cache", "bytes", "median", "MB/s", "runs (min – max MB/s)"}, Align: "llrlrrrr"}
	for _, g := range r.Gets {
		if g.Err != "" {
			gt.Add(g.Object, g.Store, "", cacheWord(g.Cold), "", "", "not measured: "+g.Err, "")
			continue
		}
		lo, hi := g.Runs[0], g.Runs[0]
		for _, d := range g.Runs {
			lo, hi = min(lo, d), max(hi, d)
		}
		what := g.Object + " (" + g.Label + ")"
		gt.Add(what, g.Store, fmt.Sprintf("%d / %d / %d", g.Put.Chunks, g.Put.New, g.Put.Deltas), strings.TrimSuffix(cacheWord(g.Cold), " chunk cache"),
			benchfmt.Commas(g.Size), fmtDur(g.Median), "**"+benchfmt.FmtRate(g.MBs())+"**", fmt.Sprintf("%s – %s", benchfmt.FmtRate(benchfmt.MBs(g.Size, hi)), benchfmt.FmtRate(benchfmt.MBs(g.Size, lo))))
	}
	gt.Markdown(w)
	p("\n")

	rr := r.Random
	if rr == nil {
		return
	}
	p("### Random reads\n\n")
	if rr.Err != "" {
		p("Not measured: %s\n\n", rr.Err)
		return
	}
	p("A %s-byte object (%s) built from the corpus: round after round of every corpus file (%s bytes a round), concatenated in a different seeded order each round, with %d bytes XORed with a nonzero value at pseudo-random places in every %s block (seed %d), so most chunks differ from every earlier round and the store must delta-code or store them. ",
		benchfmt.Commas(rr.Size), benchfmt.SizeName(rr.Size), benchfmt.Commas(rr.Round), FlipsPerBlock, benchfmt.SizeName(FlipBlock), rr.Seed)
	p("Its put: %d chunks, %d new, %d deltas, %s bytes of new frames (%s of the object), %s dedup hits.\n\n", rr.Put.Chunks, rr.Put.New, rr.Put.Deltas, benchfmt.Commas(rr.Put.Stored), benchfmt.Pct(rr.Put.Stored, rr.Size), benchfmt.Commas(rr.Put.Duplicate))
	p("Then the store was closed and %s; reopening it took %s (with `OpenObject`). %d `ReadAt` calls of %s followed at uniformly random offsets, one after another, each timed alone, starting with an empty chunk cache. Every read was checked against the generator afterwards.\n\n",
		rr.DropNote, fmtDur(rr.OpenTime), rr.Reads, benchfmt.SizeName(int64(rr.ReadSize)))
	lt := &benchfmt.Table{Head: []string{"p50", "p90", "p99", "max", "mean"}, Align: "rrrrr"}
	lt.Add(fmtDur(rr.Quantile(0.5)), fmtDur(rr.Quantile(0.9)), "**"+fmtDur(rr.Quantile(0.99))+"**", fmtDur(rr.Quantile(1)), fmtDur(rr.Mean()))
	lt.Markdown(w)
	p("\n")
}

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// fmtDur writes a latency in ms or µs with three significant digits.
func fmtDur(d time.Duration) string {
	us := float64(d) / float64(time.Microsecond)
	switch {
	case us >= 1000:
		return strconv.FormatFloat(us/1000, 'f', sigDecimals(us/1000), 64) + " ms"
	}
	return strconv.FormatFloat(us, 'f', sigDecimals(us), 64) + " µs"
}

func sigDecimals(v float64) int {
	switch {
	case v >= 100:
		return 0
	case v >= 10:
		return 1
	}
	return 2
}

// cpuCell writes CPU time and how many cores it kept busy over wall.
func cpuCell(cpu, wall time.Duration) string {
	if cpu <= 0 || wall <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f s (%.2f)", cpu.Seconds(), cpu.Seconds()/wall.Seconds())
}
