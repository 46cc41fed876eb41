package fsbench

import (
	"os/exec"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/glyd/glyd/internal/machine"
)

// Machine describes where the run happened.
type Machine struct {
	CPU       string // "model name" from /proc/cpuinfo
	Cores     int    // logical CPUs
	Memory    int64  // bytes of RAM (the page cache can hold the test file when it is well above it)
	Kernel    string
	Go        string // the Go release the benchmark was built with
	OS        string
	LoadStart string // /proc/loadavg's 1, 5 and 15 minute averages at the start
	LoadEnd   string // and at the end
	WorkFS    string // file system and device of the scratch directory ("local disk")
}

func machineInfo() Machine {
	return Machine{
		CPU:       machine.CPU(),
		Cores:     runtime.NumCPU(),
		Memory:    memTotal(),
		Kernel:    machine.Kernel(),
		Go:        runtime.Version(),
		OS:        runtime.GOOS + "/" + runtime.GOARCH,
		LoadStart: machine.LoadAvg(),
	}
}

// toolVersion is the first line a tool prints for its version flag, or ""
// when the tool is missing.
func toolVersion(bin string, args ...string) string {
	if _, err := exec.LookPath(bin); err != nil {
		return ""
	}
	out, _ := exec.Command(bin, args...).CombinedOutput()
	for _, line := range strings.Split(string(out), "\n") {
		if line = strings.TrimSpace(line); line != "" {
			return line
		}
	}
	return "present (version unknown)"
}

// buildRevision says which commit the benchmark (and, built by the same
// make run, bin/glyd and bin/glydfs) came from, from the VCS stamp Go puts
// in binaries built inside a repository, or failing that from git.
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
