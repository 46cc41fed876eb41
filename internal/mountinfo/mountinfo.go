// Package mountinfo reads /proc/self/mountinfo: which file systems are
// mounted where (glyd finds the glydfs a path lives in; tests and
// benchmarks check that no mount is left behind).
package mountinfo

import (
	"bufio"
	"io"
	"os"
	"strconv"
	"strings"
)

// Entry is one mount.
type Entry struct {
	Point   string // mount point, unescaped
	Options string // per-mount options (field 6)
	FSType  string // e.g. "fuse.glydfs"
	Source  string // unescaped
	Super   string // the file system's own options (after the source)
}

// Read lists the mounts of this process's namespace (none where there is
// no /proc).
func Read() []Entry {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	return Parse(f)
}

// Parse reads the mount point (field 5), its options (field 6), and the
// file system type and source (the two fields after the " - " separator)
// of each line.
func Parse(r io.Reader) []Entry {
	var out []Entry
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 {
			continue
		}
		e := Entry{Point: Unescape(f[4])}
		if len(f) > 5 {
			e.Options = f[5]
		}
		for i := 5; i < len(f); i++ {
			if f[i] == "-" {
				if i+1 < len(f) {
					e.FSType = f[i+1]
				}
				if i+2 < len(f) {
					e.Source = Unescape(f[i+2])
				}
				if i+3 < len(f) {
					e.Super = f[i+3]
				}
				break
			}
		}
		out = append(out, e)
	}
	return out
}

// Unescape undoes the kernel's octal escapes (\040 for a space).
func Unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Mounted says whether something is mounted on dir.
func Mounted(dir string) bool {
	for _, e := range Read() {
		if e.Point == dir {
			return true
		}
	}
	return false
}
