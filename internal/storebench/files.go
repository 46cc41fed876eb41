package storebench

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// File is one input file.
type File struct {
	Path string // as opened
	Name string // relative to the corpus, with forward slashes
	Size int64
}

// listFiles returns every regular file under root (symlinks and other
// special files are skipped), sorted by relative path.
func listFiles(root string) ([]File, error) {
	var out []File
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		out = append(out, File{Path: path, Name: filepath.ToSlash(rel), Size: info.Size()})
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, err
}

// dirSize is the apparent size of everything under dir: the sum of the
// regular files' lengths, what `du -sb` reports.
func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			n += info.Size()
		}
		return nil
	})
	return n, err
}

// countWriter counts what is written to it.
type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}

// runTool runs a command with extra environment and returns how many bytes
// it wrote to standard output; stdin may be nil. A failure carries the
// tail of standard error.
func runTool(env []string, stdin io.Reader, bin string, args ...string) (int64, error) {
	cmd := execCommand(env, bin, args...)
	cmd.Stdin = stdin
	var out countWriter
	var errBuf tailBuffer
	cmd.Stdout = &out
	cmd.Stderr = &errBuf
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errBuf.String())
		if msg != "" {
			err = fmt.Errorf("%w: %s", err, msg)
		}
		return out.n, fmt.Errorf("%s %s: %w", bin, strings.Join(args, " "), err)
	}
	return out.n, nil
}

// tailBuffer keeps the last 2 KiB written to it.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 2048 {
		t.b = append(t.b[:0], t.b[len(t.b)-2048:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string { return string(t.b) }

// readFiles loads files into memory.
func readFiles(files []File) ([][]byte, error) {
	out := make([][]byte, len(files))
	for i, f := range files {
		b, err := os.ReadFile(f.Path)
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

var errNoTool = errors.New("not installed")

func lookTool(bin string) error {
	if _, err := exec.LookPath(bin); err != nil {
		return fmt.Errorf("%s: %w", bin, errNoTool)
	}
	return nil
}

// execCommand is exec.Command with extra environment.
func execCommand(env []string, bin string, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	return cmd
}
