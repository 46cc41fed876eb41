// Package machine describes the machine a benchmark ran on, for the
// reports under docs/benchmarks.
package machine

import (
	"bufio"
	"io"
	"os"
	"strings"
)

// CPU names the processor: the first "model name" of /proc/cpuinfo, or the
// first "Hardware"/"Processor"/"cpu model" line that ARM and other kernels
// print instead, or "unknown".
func CPU() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	return cpuModel(f)
}

func cpuModel(r io.Reader) string {
	fallback := "unknown"
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if v == "" {
			continue
		}
		switch k {
		case "model name":
			return v
		case "Hardware", "Processor", "cpu model", "uarch":
			if fallback == "unknown" {
				fallback = v
			}
		}
	}
	return fallback
}

// LoadAvg is the 1, 5 and 15 minute load averages, or "unknown".
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// Kernel is the running kernel's release, or "unknown".
func Kernel() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}
