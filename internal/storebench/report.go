package storebench

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
)

// Goals the store is measured against.
const (
	GoalPatchRatio = 1.25   // series: glyd stored ≤ 1.25 × the zstd patch chain
	GoalPutMBs     = 150.0  // put of new data, MB/s
	GoalGetMBs     = 1000.0 // get without deltas, MB/s
	GoalDeltaMBs   = 500.0  // get through delta chains, MB/s
	GoalP99        = 5 * time.Millisecond
)

// Target is one goal with what this run measured.
type Target struct {
	Name      string
	Measured  string
	Goal      string
	Available bool
	Met       bool
}

// Status is "met", "not met" or "not measured".
func (t Target) Status() string {
	switch {
	case !t.Available:
		return "not measured"
	case t.Met:
		return "met"
	}
	return "not met"
}

// Targets compares the run with the goals.
func (r *Report) Targets() []Target {
	var ts []Target
	if r.Series != nil {
		patch := r.Series.Column(colPatch)
		for _, name := range []string{colGlydDefault, colGlydMax} {
			t := Target{Name: "release series: " + name + " vs the zstd patch chain", Goal: fmt.Sprintf("≤ %.2f×", GoalPatchRatio)}
			if g := r.Series.Column(name); g != nil && g.Err == "" && patch != nil && patch.Err == "" && patch.Total > 0 {
				v := float64(g.Total) / float64(patch.Total)
				t.Available, t.Met = true, v <= GoalPatchRatio
				t.Measured = fmt.Sprintf("%.3f× (%s vs %s bytes)", v, commas(g.Total), commas(patch.Total))
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
		t := Target{Name: name, Goal: fmt.Sprintf("≥ %s", fmtRate(goal))}
		if g.Err == "" {
			v := g.MBs()
			t.Available, t.Met, t.Measured = true, v >= goal, fmtRate(v)
		}
		ts = append(ts, t)
	}
	t = Target{Name: "random 64 KiB ReadAt p99, cold (1 GiB-class object)", Goal: "≤ " + fmtDur(GoalP99)}
	if rr := r.Random; rr != nil && rr.Err == "" {
		t.Name = fmt.Sprintf("random %s ReadAt p99, cold, %s object", sizeName(int64(rr.ReadSize)), sizeName(rr.Size))
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
	ew := &errWriter{w: w}
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
	hdr := &table{head: []string{"", ""}, align: "ll"}
	hdr.add("machine", m.CPU)
	hdr.add("cores", fmt.Sprintf("%d logical; the store's put and read workers: %d", m.Cores, r.Threads))
	hdr.add("date", r.Started.UTC().Format("2006-01-02 15:04 MST"))
	hdr.add("Go", m.Go+" "+m.OS)
	hdr.add("kernel", m.Kernel)
	hdr.add("load average (1/5/15 min)", fmt.Sprintf("%s at the start, %s at the end", m.LoadStart, m.LoadEnd))
	hdr.add("run time", r.Elapsed.Round(time.Second).String())
	hdr.add("glyd", r.Build)
	if r.Series != nil && len(r.Series.Glyd) > 0 {
		c := r.Series.Glyd[0].Chunking
		hdr.add("store chunking", fmt.Sprintf("min %s, average %s, max %s (the store's defaults)", sizeName(int64(c.Min)), sizeName(int64(c.Avg)), sizeName(int64(c.Max))))
	}
	if r.Corpus != nil {
		hdr.add("corpus", fmt.Sprintf("`%s`: %d files, %s bytes", r.Config.Corpus, len(r.Corpus.Files), commas(r.Corpus.Usage.Logical)))
	}
	hdr.add("peers", strings.Join(tools, "; "))
	hdr.markdown(ew)
	p("\nUnits: MB = 10^6 bytes, MB/s = 10^6 bytes per second, GB/s = 10^9 bytes per second; KiB/MiB/GiB are powers of two. ")
	p("Sizes of restic and borg repositories and of glyd store directories are apparent sizes (the sum of the files' lengths, `du -sb`).\n\n")

	p("## Targets\n\n")
	tt := &table{head: []string{"target", "measured", "goal", "status"}, align: "lrrl"}
	for _, t := range r.Targets() {
		meas := t.Measured
		if !t.Available {
			meas = "-"
		}
		tt.add(t.Name, meas, t.Goal, "**"+t.Status()+"**")
	}
	tt.markdown(ew)
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
	return ew.err
}

func (r *Report) writeSeries(w io.Writer, s *Series) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	n := len(s.Files)
	p("## 1. Release series\n\n")
	p("`%s`: %d consecutive release tarballs (%s … %s), %s bytes raw, stored one after another in release order. ", s.Dir, n, s.Files[0].Name, s.Files[n-1].Name, commas(s.Raw))
	p("glyd's figure is the store's `Usage().Stored` (the bytes of all chunk frames) after the last version; the peers' are the size of what they wrote.\n\n")
	patch := s.Column(colPatch)
	t := &table{head: []string{"method", "stored bytes", "% of raw", "× patch chain", "time"}, align: "lrrrr"}
	t.add("raw tarballs", commas(s.Raw), "100.00%", "", "")
	for _, c := range s.Columns {
		if c.Err != "" {
			t.add(c.Name, "not measured: "+c.Err, "", "", "")
			continue
		}
		x := ""
		if patch != nil && patch.Err == "" && patch.Total > 0 {
			x = fmt.Sprintf("%.3f×", float64(c.Total)/float64(patch.Total))
		}
		t.add(c.Name, commas(c.Total), pct(c.Total, s.Raw), x, fmtSeconds(c.Time))
	}
	t.markdown(w)
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
	ct := &table{head: head, align: align}
	var raw int64
	for i, f := range s.Files {
		raw += f.Size
		row := []string{f.Name, commas(raw)}
		for _, c := range cols {
			row = append(row, fmt.Sprintf("%s (%s)", commas(c.Cum[i]), pct(c.Cum[i], raw)))
		}
		ct.add(row...)
	}
	ct.markdown(w)
	p("\n")

	// glyd per put.
	p("### What each glyd put stored\n\n")
	gt := &table{head: []string{"version", "size"}, align: "lr"}
	for _, g := range s.Glyd {
		gt.head = append(gt.head, g.Tier+": chunks / new / deltas", g.Tier+": stored", g.Tier+": put")
		gt.align += "rrr"
	}
	for i, f := range s.Files {
		row := []string{f.Name, commas(f.Size)}
		for _, g := range s.Glyd {
			ps := g.Puts[i]
			row = append(row, fmt.Sprintf("%d / %d / %d", ps.Chunks, ps.New, ps.Deltas), commas(ps.Stored), fmtRate(mbs(ps.Size, g.Times[i])))
		}
		gt.add(row...)
	}
	gt.markdown(w)
	p("\n")
	for _, g := range s.Glyd {
		c := s.Column(colGlydDefault)
		if g.Tier != "default" {
			c = s.Column(colGlydMax)
		}
		p("- %s tier: the store directory takes %s bytes on disk after `Close` (%s of raw), against %s bytes of chunk frames: the rest is badger's LSM tree (chunk records, super-feature index, manifests), its value-log headers and its fixed files.\n",
			g.Tier, commas(g.Disk), pct(g.Disk, s.Raw), commas(c.Total))
	}
	p("\n")
}

func (r *Report) writeCorpus(w io.Writer, c *CorpusRun) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	u := c.Usage
	p("## 2. The whole corpus in one store\n\n")
	p("Every regular file of `%s` (%d files) put into one fresh default-tier store, in path order, each under its path relative to the corpus.\n\n", r.Config.Corpus, len(c.Files))
	t := &table{head: []string{"", "bytes", "% of logical"}, align: "lrr"}
	t.add("logical (all objects)", commas(u.Logical), "100.00%")
	t.add("unique (distinct chunks)", commas(u.Unique), pct(u.Unique, u.Logical))
	t.add("**stored (chunk frames)**", "**"+commas(u.Stored)+"**", "**"+pct(u.Stored, u.Logical)+"**")
	t.add("store directory after Close", commas(c.Disk), pct(c.Disk, u.Logical))
	t.add("saved by dedup", commas(u.DedupSaved), pct(u.DedupSaved, u.Logical))
	t.add("saved by compression (chunks coded alone)", commas(u.CompressSaved), pct(u.CompressSaved, u.Logical))
	t.add("saved by deltas (over coding those chunks alone)", commas(u.DeltaSaved), pct(u.DeltaSaved, u.Logical))
	t.markdown(w)
	p("\nRatio logical / stored: **%.3f** (%d chunks, %d of them deltas).\n\n", ratio(u.Logical, u.Stored), u.Chunks, u.DeltaChunks)
	p("Per top-level folder (a put's new bytes are charged to the object that first stored them, so a folder's figure includes deltas against folders put before it):\n\n")
	gt := &table{head: []string{"folder", "files", "bytes", "stored", "% of bytes", "chunks / new / deltas", "put time", "put MB/s"}, align: "lrrrrrrr"}
	for _, g := range c.Groups {
		gt.add(g.Name, strconv.Itoa(g.Files), commas(g.Size), commas(g.Stored), pct(g.Stored, g.Size), fmt.Sprintf("%d / %d / %d", g.Chunks, g.New, g.Deltas), fmtSeconds(g.Time), fmtRate(mbs(g.Size, g.Time)))
	}
	gt.markdown(w)
	p("\n")
}

func (r *Report) writeSpeed(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	p("## 3. Speed on this machine\n\n")
	p("The store runs with its defaults: %d put and read workers (GOMAXPROCS), a 64 MiB chunk cache. ", r.Threads)
	p("Inputs were read once beforehand, so the page cache serves them; every put returns only when its object is durable (synced).\n\n")
	p("### Put\n\n")
	t := &table{head: []string{"what", "bytes", "wall time", "MB/s", "CPU time (cores busy)"}, align: "lrrrr"}
	if c := r.Corpus; c != nil {
		t.add(fmt.Sprintf("**whole corpus into a fresh store** (%d puts)", len(c.Files)), commas(c.Usage.Logical), fmtSeconds(c.PutTime), "**"+fmtRate(c.PutMBs())+"**", cpuCell(c.PutCPU, c.PutTime))
		t.add("… then `Close`", "", fmtSeconds(c.CloseTime), "", "")
		t.add("… puts and `Close` together", commas(c.Usage.Logical), fmtSeconds(c.PutTime+c.CloseTime), fmtRate(mbs(c.Usage.Logical, c.PutTime+c.CloseTime)), "")
	}
	if s := r.Series; s != nil {
		for _, g := range s.Glyd {
			var tot time.Duration
			for _, d := range g.Times {
				tot += d
			}
			t.add(fmt.Sprintf("release series, %s tier (%d puts, mostly deltas after the first)", g.Tier, len(g.Times)), commas(s.Raw), fmtSeconds(tot), fmtRate(mbs(s.Raw, tot)), "")
			t.add(fmt.Sprintf("… its first release alone (no deltas possible), %s tier", g.Tier), commas(s.Files[0].Size), fmtSeconds(g.Times[0]), fmtRate(mbs(s.Files[0].Size, g.Times[0])), "")
		}
	}
	if rr := r.Random; rr != nil && rr.Err == "" {
		t.add(fmt.Sprintf("the %s object of the random-read test", sizeName(rr.Size)), commas(rr.Size), fmtSeconds(rr.PutTime), fmtRate(mbs(rr.Size, rr.PutTime)), cpuCell(rr.PutCPU, rr.PutTime))
	}
	t.markdown(w)
	p("\nCPU time is this process's user plus system time over the same interval (badger's background work included); with %d cores, \"cores busy\" near %d means the put was CPU-bound and had the machine to itself, well below it means it waited (on syncs, on the pipeline, or on other processes).\n", r.Machine.Cores, r.Machine.Cores)
	p("\n### Get (whole object, `Object.WriteTo` to a discarding writer)\n\n")
	p("Median of %d timed reads. *Hot*: the store stays open and the object was read once before, so its chunks sit decoded in the chunk cache (this measures the cache and the copy, not decoding). ", r.Config.Runs)
	p("*Cold*: the store is closed and reopened before each timed read (the reopen is not timed, `OpenObject` is), so every chunk and every delta base is read and decoded; the store's files are in the page cache.\n\n")
	gt := &table{head: []string{"object", "store", "put: chunks / new / deltas", "chunk cache", "bytes", "median", "MB/s", "runs (min – max MB/s)"}, align: "llrlrrrr"}
	for _, g := range r.Gets {
		if g.Err != "" {
			gt.add(g.Object, g.Store, "", cacheWord(g.Cold), "", "", "not measured: "+g.Err, "")
			continue
		}
		lo, hi := g.Runs[0], g.Runs[0]
		for _, d := range g.Runs {
			lo, hi = min(lo, d), max(hi, d)
		}
		what := g.Object + " (" + g.Label + ")"
		gt.add(what, g.Store, fmt.Sprintf("%d / %d / %d", g.Put.Chunks, g.Put.New, g.Put.Deltas), strings.TrimSuffix(cacheWord(g.Cold), " chunk cache"),
			commas(g.Size), fmtDur(g.Median), "**"+fmtRate(g.MBs())+"**", fmt.Sprintf("%s – %s", fmtRate(mbs(g.Size, hi)), fmtRate(mbs(g.Size, lo))))
	}
	gt.markdown(w)
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
		commas(rr.Size), sizeName(rr.Size), commas(rr.Round), FlipsPerBlock, sizeName(FlipBlock), rr.Seed)
	p("Its put: %d chunks, %d new, %d deltas, %s bytes of new frames (%s of the object), %s dedup hits.\n\n", rr.Put.Chunks, rr.Put.New, rr.Put.Deltas, commas(rr.Put.Stored), pct(rr.Put.Stored, rr.Size), commas(rr.Put.Duplicate))
	p("Then the store was closed and %s; reopening it took %s (with `OpenObject`). %d `ReadAt` calls of %s followed at uniformly random offsets, one after another, each timed alone, starting with an empty chunk cache. Every read was checked against the generator afterwards.\n\n",
		rr.DropNote, fmtDur(rr.OpenTime), rr.Reads, sizeName(int64(rr.ReadSize)))
	lt := &table{head: []string{"p50", "p90", "p99", "max", "mean"}, align: "rrrrr"}
	lt.add(fmtDur(rr.Quantile(0.5)), fmtDur(rr.Quantile(0.9)), "**"+fmtDur(rr.Quantile(0.99))+"**", fmtDur(rr.Quantile(1)), fmtDur(rr.Mean()))
	lt.markdown(w)
	p("\n")
}

// table renders a markdown table.
type table struct {
	head  []string
	align string // one of l, r per column
	rows  [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) markdown(w io.Writer) {
	fmt.Fprintf(w, "| %s |\n", strings.Join(t.head, " | "))
	seps := make([]string, len(t.head))
	for i := range seps {
		seps[i] = "---"
		if i < len(t.align) && t.align[i] == 'r' {
			seps[i] = "---:"
		}
	}
	fmt.Fprintf(w, "|%s|\n", strings.Join(seps, "|"))
	for _, r := range t.rows {
		cells := make([]string, len(t.head))
		copy(cells, r)
		for i, c := range cells {
			cells[i] = strings.ReplaceAll(c, "|", `\|`)
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}

// commas writes n with thousands separators: 1234567 → "1,234,567".
func commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// pct is a as a percentage of b, two decimals.
func pct(a, b int64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f%%", 100*float64(a)/float64(b))
}

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// fmtRate writes MB/s, switching to GB/s from 1000 MB/s.
func fmtRate(v float64) string {
	switch {
	case v >= 1000:
		return fmt.Sprintf("%.2f GB/s", v/1000)
	case v >= 100:
		return fmt.Sprintf("%.0f MB/s", v)
	}
	return fmt.Sprintf("%.1f MB/s", v)
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

func fmtSeconds(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

// sizeName writes a power-of-two size briefly: 65536 → "64 KiB".
func sizeName(n int64) string {
	for _, u := range []struct {
		shift uint
		name  string
	}{{30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d %s", n>>u.shift, u.name)
		}
	}
	if n >= 1<<20 {
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", n)
}

// cpuCell writes CPU time and how many cores it kept busy over wall.
func cpuCell(cpu, wall time.Duration) string {
	if cpu <= 0 || wall <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f s (%.2f)", cpu.Seconds(), cpu.Seconds()/wall.Seconds())
}
