package bench

import (
	"bufio"
	"fmt"
	"io"
	"runtime"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dustin/go-humanize"

	"github.com/glyd/glyd/internal/machine"
)

// Report is the outcome of Run.
type Report struct {
	Config  Config
	Machine Machine
	Paths   []string // the corpus paths as given; set by the caller
	Inputs  []Input
	Codecs  []codecInfo       // table order
	Tools   map[string]string // C tool binary -> version line
	Results []Result          // per input, per codec, inputs in order
	Multi   *MultiCore
	Notes   []string
	Started time.Time
	Elapsed time.Duration
}

type codecInfo struct {
	Name   string
	Kind   Kind
	Multi  bool
	Detail string
}

// Machine describes where the run happened.
type Machine struct {
	CPU        string
	Cores      int
	GOMAXPROCS int
	Kernel     string
	Go         string
	OS         string
	LoadStart  string // /proc/loadavg's 1, 5 and 15 minute averages when the run began
	LoadEnd    string // and when it ended
}

// busy reports whether a 1-minute load average (as loadAvg formats it)
// shows other work on a good part of the cores.
func busy(load string, cores int) bool {
	var l float64
	if _, err := fmt.Sscan(load, &l); err != nil {
		return false
	}
	return l >= 0.5*float64(cores)
}

func machineInfo() Machine {
	return Machine{
		CPU:        machine.CPU(),
		Cores:      runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		Kernel:     machine.Kernel(),
		Go:         runtime.Version(),
		OS:         runtime.GOOS + "/" + runtime.GOARCH,
		LoadStart:  machine.LoadAvg(),
	}
}

// Total sums results per codec, in the order of codecs: sizes add up, and
// each speed is total bytes over total time (a time is kept only when every
// file has it). Codecs without results are left out.
func Total(results []Result, order []string, file string) []Result {
	byCodec := map[string]*Result{}
	missing := map[string][5]bool{}
	for _, r := range results {
		t, ok := byCodec[r.Codec]
		if !ok {
			t = &Result{File: file, Group: r.Group, Codec: r.Codec, Kind: r.Kind}
			byCodec[r.Codec] = t
		}
		if t.Group != r.Group {
			t.Group = ""
		}
		t.Orig += r.Orig
		t.Comp += r.Comp
		m := missing[r.Codec]
		for i, p := range []struct {
			dst *time.Duration
			v   time.Duration
		}{{&t.Comp1, r.Comp1}, {&t.CompN, r.CompN}, {&t.Dec1, r.Dec1}, {&t.DecN, r.DecN}, {&t.DecProc, r.DecProc}} {
			if p.v <= 0 {
				m[i] = true
			}
			*p.dst += p.v
		}
		missing[r.Codec] = m
	}
	var out []Result
	for _, name := range order {
		t, ok := byCodec[name]
		if !ok {
			continue
		}
		m := missing[name]
		for i, d := range []*time.Duration{&t.Comp1, &t.CompN, &t.Dec1, &t.DecN, &t.DecProc} {
			if m[i] {
				*d = 0
			}
		}
		out = append(out, *t)
	}
	return out
}

func (r *Report) codecOrder() []string {
	names := make([]string, len(r.Codecs))
	for i, c := range r.Codecs {
		names[i] = c.Name
	}
	return names
}

// Totals is the TOTAL row of every codec over all inputs.
func (r *Report) Totals() []Result { return Total(r.Results, r.codecOrder(), "TOTAL") }

func (r *Report) groups() []string {
	var gs []string
	seen := map[string]bool{}
	for _, in := range r.Inputs {
		if !seen[in.Group] {
			seen[in.Group] = true
			gs = append(gs, in.Group)
		}
	}
	return gs
}

// Target is one line of the summary.
type Target struct {
	Name      string
	Glyd      string // the glyd figure, formatted
	Peer      string // the peer figure, formatted; "" for an absolute goal
	Value     float64
	Goal      float64
	Available bool
	Why       string // when not available
}

// Met reports whether the target is reached.
func (t Target) Met() bool { return t.Available && t.Value >= t.Goal }

// Status is "met", "not met" or "n/a (...)".
func (t Target) Status() string {
	switch {
	case !t.Available:
		return "n/a (" + t.Why + ")"
	case t.Met():
		return "met"
	}
	return "not met"
}

// Targets computes the summary from the TOTAL rows and the multi-core row.
func (r *Report) Targets() []Target {
	tot := map[string]Result{}
	for _, t := range r.Totals() {
		tot[t.Codec] = t
	}
	missing := func(name string) string {
		if r.Config.CLI {
			return name + " not measured (tool missing)"
		}
		return "needs --cli"
	}
	dec := func(x Result) float64 { return mbps(x.Orig, x.Dec1) }
	ratio := func(glyd, peer, what string, goal float64, f func(Result) float64, unit string) Target {
		t := Target{Name: what, Goal: goal}
		g, okG := tot[glyd]
		p, okP := tot[peer]
		switch {
		case !okG:
			t.Why = glyd + " not measured"
		case !okP:
			t.Why = missing(peer)
		case f(p) <= 0 || f(g) <= 0:
			t.Why = "no figure"
		default:
			t.Available = true
			t.Value = f(g) / f(p)
			if unit == "" { // a compression ratio
				t.Glyd, t.Peer = fmt.Sprintf("%.3f", f(g)), fmt.Sprintf("%.3f", f(p))
			} else {
				t.Glyd = fmt.Sprintf("%s %s", fmtFloat(f(g)), unit)
				t.Peer = fmt.Sprintf("%s %s", fmtFloat(f(p)), unit)
			}
		}
		return t
	}
	rat := func(x Result) float64 { return x.Ratio() }
	ts := []Target{
		ratio(NameGlydDefault, NameLZ4CLI, "glyd default decode ÷ C `lz4 -d` decode", 1.0, dec, "MB/s"),
		ratio(NameGlydDefault, NameLZ4CLI, "glyd default ratio ÷ `lz4 -1` ratio", 1.0, rat, ""),
	}
	comp := Target{Name: "glyd default compress MB/s (1 thread)", Goal: 250}
	if g, ok := tot[NameGlydDefault]; ok && g.Comp1 > 0 {
		comp.Available = true
		comp.Value = mbps(g.Orig, g.Comp1)
		comp.Glyd = fmtFloat(comp.Value) + " MB/s"
	} else {
		comp.Why = "not measured"
	}
	ts = append(ts, comp,
		ratio(NameGlydMax, NameZstd3CLI, "glyd max ratio ÷ `zstd -3` ratio", 1.0, rat, ""),
		ratio(NameGlydMax, NameZstd3CLI, "glyd max decode ÷ C `zstd -d` (the -3 file)", 1.0, dec, "MB/s"),
		ratio(NameGlydMax, NameZstdGoDef, "glyd max decode ÷ klauspost zstd decode (SpeedDefault)", 1.5, dec, "MB/s"),
		ratio(NameGlydCold, NameZstd19CLI, "glyd cold ratio ÷ `zstd -19 --long=27` ratio", 1.0, rat, ""),
		ratio(NameGlydCold, NameZstd19CLI, "glyd cold decode ÷ C `zstd -d` (the -19 --long=27 file)", 1.0, dec, "MB/s"),
	)
	n := r.Config.Threads
	mc := Target{Name: fmt.Sprintf("multi-core: glyd default decode %d threads ÷ 1 thread", n), Goal: 0.9 * float64(n)}
	if r.Multi != nil {
		for _, x := range r.Multi.Results {
			if x.Codec == NameGlydDefault && x.Dec1 > 0 && x.DecN > 0 {
				mc.Available = true
				mc.Value = x.Dec1.Seconds() / x.DecN.Seconds()
				mc.Glyd = fmtFloat(mbps(x.Orig, x.DecN)) + " MB/s"
				mc.Peer = fmtFloat(mbps(x.Orig, x.Dec1)) + " MB/s"
			}
		}
	}
	if !mc.Available {
		mc.Why = "not measured"
	}
	ts = append(ts, mc)
	return ts
}

func fmtFloat(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func fmtMBs(orig int64, d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return fmtFloat(mbps(orig, d))
}

// table is rendered as Markdown or as aligned plain text.
type table struct {
	head  []string
	right []bool // right-align column
	rows  [][]string
}

func (t *table) markdown(w io.Writer) {
	esc := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	cells := make([]string, len(t.head))
	for i, h := range t.head {
		cells[i] = esc(h)
	}
	fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	for i := range t.head {
		if t.right[i] {
			cells[i] = "---:"
		} else {
			cells[i] = "---"
		}
	}
	fmt.Fprintf(w, "|%s|\n", strings.Join(cells, "|"))
	for _, row := range t.rows {
		for i, c := range row {
			cells[i] = esc(c)
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
	fmt.Fprintln(w)
}

func (t *table) text(w io.Writer) {
	clean := func(s string) string { return strings.ReplaceAll(s, "`", "") }
	width := make([]int, len(t.head))
	all := append([][]string{t.head}, t.rows...)
	for _, row := range all {
		for i, c := range row {
			width[i] = max(width[i], utf8.RuneCountInString(clean(c)))
		}
	}
	for _, row := range all {
		var sb strings.Builder
		for i, c := range row {
			c = clean(c)
			pad := strings.Repeat(" ", width[i]-utf8.RuneCountInString(c))
			if i > 0 {
				sb.WriteString("  ")
			}
			if t.right[i] {
				sb.WriteString(pad + c)
			} else {
				sb.WriteString(c + pad)
			}
		}
		fmt.Fprintln(w, strings.TrimRight(sb.String(), " "))
	}
	fmt.Fprintln(w)
}

var resultHead = []string{"size", "ratio", "comp MB/s 1T", "comp MB/s all", "dec MB/s 1T", "dec MB/s all", "dec MB/s proc"}

func resultCells(r Result) []string {
	return []string{
		humanize.Comma(r.Comp), fmt.Sprintf("%.3f", r.Ratio()),
		fmtMBs(r.Orig, r.Comp1), fmtMBs(r.Orig, r.CompN),
		fmtMBs(r.Orig, r.Dec1), fmtMBs(r.Orig, r.DecN), fmtMBs(r.Orig, r.DecProc),
	}
}

func codecTable(rs []Result) *table {
	t := &table{head: append([]string{"codec", "original"}, resultHead...)}
	t.right = []bool{false, true, true, true, true, true, true, true, true}
	for _, r := range rs {
		t.rows = append(t.rows, append([]string{r.Codec, humanize.Comma(r.Orig)}, resultCells(r)...))
	}
	return t
}

func fileTable(rs []Result) *table {
	t := &table{head: append([]string{"file", "codec", "original"}, resultHead...)}
	t.right = []bool{false, false, true, true, true, true, true, true, true, true}
	last := ""
	for _, r := range rs {
		name := r.File
		if name == last {
			name = ""
		}
		last = r.File
		t.rows = append(t.rows, append([]string{name, r.Codec, humanize.Comma(r.Orig)}, resultCells(r)...))
	}
	return t
}

func (r *Report) summaryTable() *table {
	t := &table{head: []string{"target", "glyd", "peer", "ratio / value", "goal", "status"}, right: []bool{false, true, true, true, true, false}}
	for _, x := range r.Targets() {
		val := "-"
		if x.Available {
			if x.Peer != "" {
				val = fmt.Sprintf("%.3f", x.Value)
			} else {
				val = fmtFloat(x.Value)
			}
		}
		goal := fmt.Sprintf("≥ %.2f", x.Goal)
		if x.Peer == "" && x.Available {
			goal = fmt.Sprintf("≥ %s", fmtFloat(x.Goal))
		}
		glyd, peer := x.Glyd, x.Peer
		if glyd == "" {
			glyd = "-"
		}
		if peer == "" {
			peer = "-"
		}
		t.rows = append(t.rows, []string{x.Name, glyd, peer, val, goal, x.Status()})
	}
	return t
}

func (r *Report) multiTable() *table {
	t := &table{head: []string{"tier", "original", "size", "ratio", "comp MB/s all", "dec MB/s 1T", fmt.Sprintf("dec MB/s %dT", r.Multi.Threads), "speed-up"},
		right: []bool{false, true, true, true, true, true, true, true}}
	for _, x := range r.Multi.Results {
		t.rows = append(t.rows, []string{x.Codec, humanize.Comma(x.Orig), humanize.Comma(x.Comp), fmt.Sprintf("%.3f", x.Ratio()),
			fmtMBs(x.Orig, x.CompN), fmtMBs(x.Orig, x.Dec1), fmtMBs(x.Orig, x.DecN), fmt.Sprintf("%.2f×", x.Dec1.Seconds()/x.DecN.Seconds())})
	}
	return t
}

func (r *Report) totalBytes() int64 {
	var n int64
	for _, in := range r.Inputs {
		n += in.Size
	}
	return n
}

func (r *Report) inGroup(g string) (files int, bytes int64, rs []Result) {
	for _, in := range r.Inputs {
		if in.Group == g {
			files++
			bytes += in.Size
		}
	}
	for _, x := range r.Results {
		if x.Group == g {
			rs = append(rs, x)
		}
	}
	return
}

// WriteText writes the plain-text report: summary, totals, multi-core row
// and per-file tables.
func (r *Report) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	m := r.Machine
	fmt.Fprintf(bw, "glyd bench: %s, %d cores (GOMAXPROCS %d), kernel %s, %s, %s\n", m.CPU, m.Cores, m.GOMAXPROCS, m.Kernel, m.Go, r.Started.Format(time.RFC3339))
	fmt.Fprintf(bw, "load average: %s at start, %s at end\n", m.LoadStart, m.LoadEnd)
	fmt.Fprintf(bw, "corpus: %s: %d files, %s bytes; timing: best of %d runs of >= %v; all threads = %d\n\n",
		strings.Join(r.Paths, " "), len(r.Inputs), humanize.Comma(r.totalBytes()), r.Config.Runs, r.Config.MinTime, r.Config.Threads)
	fmt.Fprintln(bw, "SUMMARY")
	r.summaryTable().text(bw)
	fmt.Fprintln(bw, "TOTAL (all files)")
	codecTable(r.Totals()).text(bw)
	if r.Multi != nil {
		fmt.Fprintf(bw, "MULTI-CORE (%s)\n", r.Multi.Source)
		r.multiTable().text(bw)
	}
	for _, g := range r.groups() {
		files, bytes, rs := r.inGroup(g)
		fmt.Fprintf(bw, "GROUP %s (%d files, %s bytes)\n", g, files, humanize.Comma(bytes))
		fileTable(append(rs, Total(rs, r.codecOrder(), "TOTAL "+g)...)).text(bw)
	}
	for _, n := range r.Notes {
		fmt.Fprintln(bw, "note:", strings.ReplaceAll(n, "`", ""))
	}
	return bw.Flush()
}

// WriteMarkdown writes the report as a Markdown document.
func (r *Report) WriteMarkdown(w io.Writer) error {
	bw := bufio.NewWriter(w)
	m := r.Machine
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	p("# glyd codec benchmarks\n\n")
	p("Generated by `glyd bench%s` on %s (run took %s). Do not edit by hand: rerun `make bench`.\n\n",
		map[bool]string{true: " --cli", false: ""}[r.Config.CLI], r.Started.Format("2006-01-02 15:04 MST"), r.Elapsed.Round(time.Second))
	p("## Machine and settings\n\n")
	p("- CPU: %s; %d cores (GOMAXPROCS %d)\n", m.CPU, m.Cores, m.GOMAXPROCS)
	p("- Kernel: %s; %s; %s\n", m.Kernel, m.OS, m.Go)
	p("- Date: %s\n", r.Started.Format(time.RFC1123))
	p("- Load average (1, 5, 15 min): %s at the start, %s at the end (anything above 0 is other work sharing the cores during the run)\n", m.LoadStart, m.LoadEnd)
	p("- Corpus: `%s`: %d files, %s bytes (%s)\n", strings.Join(r.Paths, "`, `"), len(r.Inputs), humanize.Comma(r.totalBytes()), humanize.Bytes(uint64(r.totalBytes())))
	p("- Timing: best of %d runs, each repeating the operation for at least %v; all-threads columns use %d threads\n", r.Config.Runs, r.Config.MinTime, r.Config.Threads)
	if len(r.Tools) > 0 {
		bins := make([]string, 0, len(r.Tools))
		for b := range r.Tools {
			bins = append(bins, b)
		}
		sort.Strings(bins)
		for _, b := range bins {
			p("- `%s`: %s\n", b, r.Tools[b])
		}
	}
	p("\n## Summary: targets\n\n")
	p("Ratios of glyd to the peer from the TOTAL rows below (speeds are total bytes over total time, one thread). ")
	p("C tool speeds are from their built-in in-memory benchmarks (`lz4 -b`, `zstd -b`).\n\n")
	r.summaryTable().markdown(bw)
	p("## TOTAL (all files)\n\n")
	codecTable(r.Totals()).markdown(bw)
	if r.Multi != nil {
		p("## Multi-core\n\n")
		p("glyd decoding one large buffer at 1 and %d threads. Buffer: %s. Encoded with %d threads.\n\n", r.Multi.Threads, r.Multi.Source, r.Multi.Threads)
		r.multiTable().markdown(bw)
	}
	p("## Method\n\n")
	p("- Sizes are whole-file outputs; ratio = original ÷ compressed; MB/s = original bytes ÷ time, decimal (10^6).\n")
	p("- In-process codecs (glyd tiers and the Go peers) work on the whole file held in memory. Encoders allocate their output (as `codec.Encode` does). ")
	p("Decoders write into one output buffer reused from call to call, as the C tools' benchmarks do (glyd: `File.ReadAt` over the whole output, the same parallel unit loop as `codec.Decode` without the allocation), so page-fault noise of fresh buffers stays out of the figures. ")
	p("A timing run repeats the operation for at least %v; the best of %d runs counts (one run when a single operation outlasts the whole budget). ", r.Config.MinTime, r.Config.Runs)
	p("The output buffer starts as the complement of the original and is compared byte for byte with it after every timing loop; glyd's output of `codec.Decode` is checked too. Any difference stops the run.\n")
	p("- \"1T\" is one thread (glyd: `Options.Threads` 1 to encode, 1 decoding thread); \"all\" is %d threads for glyd. ", r.Config.Threads)
	p("The Go peers are timed through their one-shot single-thread APIs (zstd `EncodeAll`/`DecodeAll` with concurrency 1, s2 and lz4 block APIs), which have no multi-thread mode, so their \"all\" columns are \"-\"; the C tools are pinned to one thread (`zstd -T1`, `xz -T1`).\n")
	p("- C tools: the size is that of the file the CLI writes, and every file is decompressed by the CLI and compared with the original. ")
	p("The 1T speeds of `lz4` and `zstd` are what their built-in benchmark prints (`lz4 -b1 -e1 -iN`, `zstd -bL -eL -T1 -iN`, N = %d s): in memory, no process start or file I/O, like the Go numbers. ", max(1, int(ceilSeconds(r.Config.MinTime))))
	p("`lz4 -b` times raw LZ4 blocks, without the frame checksum `lz4 -d` verifies; glyd verifies its CRC-32C on every block. ")
	p("`xz` has no such mode: its speeds are subprocess wall times.\n")
	p("- \"dec MB/s proc\" is the best wall time of `TOOL -d -c FILE > /dev/null` as a subprocess (file in the page cache): it includes process start and file I/O, which dominate on small files. ")
	if len(r.Config.GlydProc) > 0 {
		p("The glyd figure in that column goes through the same path, glyd's own command line: `glyd %s FILE.glyd > /dev/null`.\n", strings.Join(r.Config.GlydProc[1:], " "))
	} else {
		p("glyd has no figure in that column in this run.\n")
	}
	p("- Groups are the top-level folders of the corpus; rows are sorted by file.\n")
	if len(r.Notes) > 0 {
		p("\n## Notes\n\n")
		for _, n := range r.Notes {
			p("- %s\n", n)
		}
	}
	p("\n## Codecs\n\n")
	for _, c := range r.Codecs {
		d := c.Detail
		if d == "" {
			d = codecDetail(c.Name)
		}
		p("- **%s** (%s): %s\n", c.Name, c.Kind, d)
	}
	p("\n## Per file\n\n")
	for _, g := range r.groups() {
		files, bytes, rs := r.inGroup(g)
		p("### %s\n\n%d files, %s bytes. Group totals:\n\n", g, files, humanize.Comma(bytes))
		codecTable(Total(rs, r.codecOrder(), "TOTAL "+g)).markdown(bw)
		fileTable(rs).markdown(bw)
	}
	return bw.Flush()
}

func ceilSeconds(d time.Duration) float64 {
	s := d.Seconds()
	if s != float64(int(s)) {
		return float64(int(s) + 1)
	}
	return s
}

func codecDetail(name string) string {
	switch name {
	case NameGlydDefault:
		return "`codec.Encode` with `Tier: codec.Default`"
	case NameGlydMax:
		return "`codec.Encode` with `Tier: codec.Max`"
	case NameGlydCold:
		return "`codec.Encode` with `Tier: codec.Cold`"
	case "zstd-go fastest":
		return "klauspost/compress zstd `SpeedFastest`, `EncodeAll`/`DecodeAll`, concurrency 1"
	case NameZstdGoDef:
		return "klauspost/compress zstd `SpeedDefault`, `EncodeAll`/`DecodeAll`, concurrency 1"
	case "zstd-go best":
		return "klauspost/compress zstd `SpeedBestCompression`, `EncodeAll`/`DecodeAll`, concurrency 1"
	case "s2-go":
		return "klauspost/compress s2 `Encode` / `Decode` (block)"
	case "s2-go better":
		return "klauspost/compress s2 `EncodeBetter` / `Decode` (block)"
	case "s2-go best":
		return "klauspost/compress s2 `EncodeBest` / `Decode` (block)"
	case "lz4-go fast":
		return "pierrec/lz4/v4 block API, `Compressor` (fast level) / `UncompressBlock`"
	}
	return ""
}
