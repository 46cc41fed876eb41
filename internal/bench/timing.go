package bench

import (
	"runtime"
	"time"
)

// measure times op and returns the best (smallest) time per call.
//
// A run calls op repeatedly until at least minTime has elapsed and divides
// the elapsed time by the number of calls; measure keeps the fastest of up to
// runs runs. Once runs*minTime has passed in all, it stops early, so an op
// that alone takes longer than the whole budget is timed once (slow encoders
// on large files). op must do one complete operation per call.
func measure(minTime time.Duration, runs int, op func() error) (time.Duration, error) {
	runs = max(runs, 1)
	runtime.GC() // do not bill the previous measurement's garbage to this one
	budget := time.Duration(runs) * minTime
	best := time.Duration(-1)
	start := time.Now()
	for r := 0; r < runs; r++ {
		n := 0
		t0 := time.Now()
		var el time.Duration
		for {
			if err := op(); err != nil {
				return 0, err
			}
			n++
			if el = time.Since(t0); el >= minTime {
				break
			}
		}
		per := el / time.Duration(n)
		if best < 0 || per < best {
			best = per
		}
		if time.Since(start) >= budget {
			break
		}
	}
	return max(best, time.Nanosecond), nil
}

// mbps is decimal megabytes of original data per second.
func mbps(orig int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(orig) / d.Seconds() / 1e6
}
