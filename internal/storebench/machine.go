package storebench

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
	Kernel    string
	Go        string // the Go release the benchmark was built with
	OS        string
	LoadStart string // /proc/loadavg's 1, 5 and 15 minute averages at the start
	LoadEnd   string // and at the end
}

func machineInfo() Machine {
	return Machine{
		CPU:       machine.CPU(),
		Cores:     runtime.NumCPU(),
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
