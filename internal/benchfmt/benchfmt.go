// Package benchfmt holds what the benchmark reports (make bench-store,
// make bench-fs) share: markdown tables, number formatting, targets.
package benchfmt

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
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

// Table renders a markdown table.
type Table struct {
	Head  []string
	Align string // one of l, r per column
	rows  [][]string
}

func (t *Table) Add(cells ...string) { t.rows = append(t.rows, cells) }

func (t *Table) Markdown(w io.Writer) {
	fmt.Fprintf(w, "| %s |\n", strings.Join(t.Head, " | "))
	seps := make([]string, len(t.Head))
	for i := range seps {
		seps[i] = "---"
		if i < len(t.Align) && t.Align[i] == 'r' {
			seps[i] = "---:"
		}
	}
	fmt.Fprintf(w, "|%s|\n", strings.Join(seps, "|"))
	for _, r := range t.rows {
		cells := make([]string, len(t.Head))
		copy(cells, r)
		for i, c := range cells {
			cells[i] = strings.ReplaceAll(c, "|", `\|`)
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(cells, " | "))
	}
}

// ErrWriter remembers the first write error and writes nothing after it.
type ErrWriter struct {
	W   io.Writer
	Err error // the first write error
}

func (e *ErrWriter) Write(p []byte) (int, error) {
	if e.Err != nil {
		return 0, e.Err
	}
	n, err := e.W.Write(p)
	e.Err = err
	return n, err
}

// Commas writes n with thousands separators: 1234567 → "1,234,567".
func Commas(n int64) string {
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

// Pct is a as a percentage of b, two decimals.
func Pct(a, b int64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f%%", 100*float64(a)/float64(b))
}

// MBs is n bytes in d as MB/s (10^6 bytes per second).
func MBs(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds() / 1e6
}

// FmtRate writes MB/s, switching to GB/s from 1000 MB/s.
func FmtRate(v float64) string {
	switch {
	case v >= 1000:
		return fmt.Sprintf("%.2f GB/s", v/1000)
	case v >= 100:
		return fmt.Sprintf("%.0f MB/s", v)
	}
	return fmt.Sprintf("%.1f MB/s", v)
}

// FmtSeconds writes a duration in seconds, two decimals.
func FmtSeconds(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

// SizeName writes a power-of-two size briefly: 65536 → "64 KiB".
func SizeName(n int64) string {
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

// Quantile returns the q-quantile of sorted durations by nearest rank: the
// smallest value with at least q of the values at or below it.
func Quantile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	k := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(k, 0), len(sorted)-1)]
}

// Median of unsorted durations (the lower middle for an even count).
func Median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return Quantile(s, 0.5)
}
