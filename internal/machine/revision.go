package machine

import (
	"os/exec"
	"runtime/debug"
	"strings"
)

// ToolVersion is the first line a tool prints for its version flag, or ""
// when the tool is missing.
func ToolVersion(bin string, args ...string) string {
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

// Revision says which commit the running program (and the binaries the
// same make run built beside it) came from, from the VCS stamp Go puts
// in binaries built inside a repository, or failing that from git.
func Revision() string {
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
