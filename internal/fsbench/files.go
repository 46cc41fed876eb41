package fsbench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// File is one input file.
type File struct {
	Path string // as opened
	Name string // relative to the folder listed, with forward slashes
	Size int64
}

// listFiles returns every regular file under root, sorted by relative path.
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

// DiskUsage is what a directory takes: the files' lengths added up (`du
// -sb`) and the blocks allocated to them (`du -s`, in bytes).
type DiskUsage struct{ Apparent, Allocated int64 }

func dirUsage(dir string) (DiskUsage, error) {
	var u DiskUsage
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			u.Apparent += info.Size()
		}
		if st, ok := info.Sys().(*syscall.Stat_t); ok {
			u.Allocated += st.Blocks * 512
		}
		return nil
	})
	return u, err
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

// countWriter counts what is written to it.
type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}

var errNoTool = errors.New("not installed")

func lookTool(bin string) error {
	if _, err := exec.LookPath(bin); err != nil {
		return fmt.Errorf("%s: %w", bin, errNoTool)
	}
	return nil
}

// command is a tool run under the benchmark's context, so an interrupt
// stops it.
func (b *bench) command(bin string, args ...string) *exec.Cmd {
	return exec.CommandContext(b.ctx, bin, args...)
}

// runTool runs a command, sending standard output to stdout (nil: counted
// and dropped) and returns how many bytes it wrote there when counted. A
// failure carries the tail of standard error.
func (b *bench) runTool(stdout io.Writer, bin string, args ...string) (int64, error) {
	cmd := b.command(bin, args...)
	var cw countWriter
	if stdout == nil {
		stdout = &cw
	}
	var errBuf tailBuffer
	cmd.Stdout, cmd.Stderr = stdout, &errBuf
	if err := cmd.Run(); err != nil {
		if msg := strings.TrimSpace(errBuf.String()); msg != "" {
			err = fmt.Errorf("%w: %s", err, msg)
		}
		return cw.n, fmt.Errorf("%s %s: %w", bin, strings.Join(args, " "), err)
	}
	return cw.n, nil
}

// execQuiet runs a command and ignores what it says.
func execQuiet(bin string, args ...string) error {
	return exec.CommandContext(context.Background(), bin, args...).Run()
}

// sameFile compares two files byte by byte; the error names the first
// difference.
func sameFile(got, want string) error {
	g, err := os.Open(got)
	if err != nil {
		return err
	}
	defer g.Close()
	w, err := os.Open(want)
	if err != nil {
		return err
	}
	defer w.Close()
	gb, wb := make([]byte, 1<<20), make([]byte, 1<<20)
	var off int64
	for {
		gn, gerr := io.ReadFull(g, gb)
		wn, werr := io.ReadFull(w, wb)
		if gerr != nil && gerr != io.EOF && gerr != io.ErrUnexpectedEOF {
			return fmt.Errorf("reading %s at %d: %w", got, off, gerr)
		}
		if werr != nil && werr != io.EOF && werr != io.ErrUnexpectedEOF {
			return werr
		}
		if !bytes.Equal(gb[:gn], wb[:wn]) {
			n := min(gn, wn)
			for i := 0; i < n; i++ {
				if gb[i] != wb[i] {
					return fmt.Errorf("%s differs from %s at byte %d", got, want, off+int64(i))
				}
			}
			return fmt.Errorf("%s is %d bytes long, %s %d or more: they differ from byte %d", got, off+int64(gn), want, off+int64(wn), off+int64(n))
		}
		if gn < len(gb) {
			return nil
		}
		off += int64(gn)
	}
}

// sameTree compares the tree at got with the one at want: the same names,
// types, permission bits, sizes, bytes and link targets.
func sameTree(got, want string) error {
	var n int
	err := filepath.WalkDir(want, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(want, path)
		gp := filepath.Join(got, rel)
		wi, err := os.Lstat(path)
		if err != nil {
			return err
		}
		gi, err := os.Lstat(gp)
		if err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		if gi.Mode() != wi.Mode() {
			return fmt.Errorf("%s: mode %v, want %v", rel, gi.Mode(), wi.Mode())
		}
		switch {
		case wi.Mode().IsRegular():
			if gi.Size() != wi.Size() {
				return fmt.Errorf("%s: %d bytes, want %d", rel, gi.Size(), wi.Size())
			}
			if err := sameFile(gp, path); err != nil {
				return err
			}
		case wi.Mode()&fs.ModeSymlink != 0:
			gt, err := os.Readlink(gp)
			if err != nil {
				return err
			}
			wt, _ := os.Readlink(path)
			if gt != wt {
				return fmt.Errorf("%s: link to %q, want %q", rel, gt, wt)
			}
		}
		n++
		return nil
	})
	if err != nil {
		return err
	}
	// Nothing extra on the other side.
	var m int
	err = filepath.WalkDir(got, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		m++
		return nil
	})
	if err == nil && m != n {
		err = fmt.Errorf("%s holds %d entries, %s %d", got, m, want, n)
	}
	return err
}

// countTree counts a tree's entries below its root, its regular files and
// their bytes.
func countTree(dir string) (entries, files int, size int64, err error) {
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if path == dir {
			return nil
		}
		entries++
		if d.Type().IsRegular() {
			files++
			info, err := d.Info()
			if err != nil {
				return err
			}
			size += info.Size()
		}
		return nil
	})
	return
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
