package fsbench

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/glyd/glyd/internal/benchfmt"
)

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

// spread writes the fastest and slowest of runs as rates for n bytes.
func spread(n int64, runs []time.Duration) string {
	if len(runs) < 2 {
		return ""
	}
	lo, hi := slices.Min(runs), slices.Max(runs)
	return fmt.Sprintf("%s – %s", benchfmt.FmtRate(benchfmt.MBs(n, hi)), benchfmt.FmtRate(benchfmt.MBs(n, lo)))
}
