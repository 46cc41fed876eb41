// Package cputime measures the CPU time the calling goroutine's thread
// uses, for per-core speed figures that a busy machine does not distort
// (time spent waiting for a core does not count).
package cputime

import (
	"runtime"
	"time"
)

// Measure runs fn on one locked OS thread and returns the CPU time that
// thread spent in it, or the wall time where thread CPU time is not
// available (reported by the second result being false).
func Measure(fn func()) (time.Duration, bool) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t0, ok := threadTime()
	w0 := time.Now()
	fn()
	if t1, ok2 := threadTime(); ok && ok2 {
		return t1 - t0, true
	}
	return time.Since(w0), false
}

// Best returns the least time of reps runs of fn (at least one).
func Best(reps int, fn func()) (time.Duration, bool) {
	best, cpu := Measure(fn)
	for range reps - 1 {
		d, _ := Measure(fn)
		best = min(best, d)
	}
	return best, cpu
}
