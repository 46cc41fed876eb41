package fsbench

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

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

// times writes a ratio as "1.23×", or "-" when it is not defined.
func times(v float64) string {
	if v <= 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return "-"
	}
	if v >= 100 {
		return fmt.Sprintf("%.0f×", v)
	}
	if v >= 10 {
		return fmt.Sprintf("%.1f×", v)
	}
	return fmt.Sprintf("%.2f×", v)
}

func mbs(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds() / 1e6
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
	if us >= 1000 {
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

// quantile returns the q-quantile of sorted durations by nearest rank: the
// smallest value with at least q of the values at or below it.
func quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	k := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(k, 0), len(sorted)-1)]
}

// median of unsorted durations (the lower middle for an even count).
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return quantile(s, 0.5)
}

// spread writes the fastest and slowest of runs as rates for n bytes.
func spread(n int64, runs []time.Duration) string {
	if len(runs) < 2 {
		return ""
	}
	lo, hi := slices.Min(runs), slices.Max(runs)
	return fmt.Sprintf("%s – %s", fmtRate(mbs(n, hi)), fmtRate(mbs(n, lo)))
}
