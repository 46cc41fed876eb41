package cuda

import (
	"os"
	"path/filepath"
)

// MountPacked returns the packed form a glydfs mount keeps of path
// (MOUNT/.glyd/packed/<path within the mount>, docs/fs.md), or "" when path
// is not on a glydfs mount or is not stored packed there: a load of a
// checkpoint on the mount then uploads the packed bytes, not the file.
// The mount is found by walking up from path, within its filesystem, to
// the directory that has .glyd/packed.
func MountPacked(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return ""
	}
	dev, ok := deviceOf(abs)
	if !ok {
		return ""
	}
	for dir := filepath.Dir(abs); ; dir = filepath.Dir(dir) {
		if d, ok := deviceOf(dir); !ok || d != dev {
			return "" // left the filesystem path is on
		}
		root := filepath.Join(dir, ".glyd", "packed")
		if d, ok := deviceOf(root); ok && d == dev {
			rel, err := filepath.Rel(dir, abs)
			if err != nil {
				return ""
			}
			twin := filepath.Join(root, rel)
			if fi, err := os.Stat(twin); err == nil && fi.Mode().IsRegular() {
				return twin
			}
			return ""
		}
		if parent := filepath.Dir(dir); parent == dir {
			return ""
		}
	}
}
