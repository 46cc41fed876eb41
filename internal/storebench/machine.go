package storebench

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"
)

// Machine describes where the run happened.
type Machine struct {
	CPU       string // "model name" from /proc/cpuinfo
	Cores     int    // logical CPUs
	Kernel    string
	Go        string // the Go release the benchmark was built with
	OS        string
	LoadStart string // /proc/loadavg's 1, 5 and 15 minute averages at the start
	LoadEnd   string // and at the end
}

func machineInfo() Machine {
	m := Machine{
		CPU:       "unknown",
		Cores:     runtime.NumCPU(),
		Kernel:    "unknown",
		Go:        runtime.Version(),
		OS:        runtime.GOOS + "/" + runtime.GOARCH,
		LoadStart: loadAvg(),
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		m.CPU = cpuModel(f)
		f.Close()
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}

// cpuModel returns the first "model name" of a /proc/cpuinfo, or the first
// "Hardware"/"Processor"/"cpu model" line that ARM and other kernels print
// instead, or "unknown".
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

func loadAvg() string {
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

// toolVersion is the first line a tool prints for its version flag, or ""
// when the tool is missing.
func toolVersion(bin string, args ...string) string {
	if _, err := exec.LookPath(bin); err != nil {
		return ""
	}
	out, err := exec.Command(bin, args...).CombinedOutput()
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if err != nil && line == "" {
		return "present (version unknown)"
	}
	return strings.TrimSpace(line)
}

// buildRevision says which commit the benchmark (and the store it links)
// was built from, and whether the tree had changes, from the VCS stamp Go
// puts in binaries built inside a repository, or failing that (a build with
// -buildvcs=false) from git in the working directory.
func buildRevision() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return gitRevision()
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	if rev == "" {
		return gitRevision()
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if modified == "true" {
		return "commit " + rev + " plus uncommitted changes"
	}
	return "commit " + rev
}

// gitRevision asks git about the working directory: make runs the
// benchmark from the root of the tree it just built.
func gitRevision() string {
	out, err := exec.Command("git", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return "unknown (no VCS stamp in the binary, no git repository here)"
	}
	rev := "commit " + strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(strings.TrimSpace(string(st))) > 0 {
		rev += " plus uncommitted changes"
	}
	return rev + " (git, working directory)"
}
