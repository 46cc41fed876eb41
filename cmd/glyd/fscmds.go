package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/dustin/go-humanize"
	"golang.org/x/sys/unix"

	glydfs "github.com/glyd/glyd/fs"
	"github.com/glyd/glyd/internal/mountinfo"
)

// The filesystem commands work through a mounted glydfs (which holds its
// store open): versions and snapshots are directories of the mount
// (.glyd/versions, .snapshots), sizes an extended attribute of its root.

// mountOf returns the glydfs mount point holding path and path relative
// to it.
func mountOf(path string) (mnt, rel string, err error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", "", err
	}
	for _, e := range mountinfo.Read() {
		m := e.Point
		if e.FSType == "fuse.glydfs" && (abs == m || strings.HasPrefix(abs, m+"/") || m == "/") && len(m) > len(mnt) {
			mnt = m
		}
	}
	if mnt == "" {
		return "", "", fmt.Errorf("%s: not inside a mounted glydfs", path)
	}
	rel, _ = filepath.Rel(mnt, abs)
	return mnt, rel, nil
}

type versionsCmd struct {
	JSON bool   `help:"Print JSON."`
	Path string `arg:"" help:"A file in a mounted glydfs."`
}

type versionJSON struct {
	Version  uint64    `json:"version"`
	Size     int64     `json:"size"`
	Modified time.Time `json:"modified"`
	Path     string    `json:"path"`
}

func (c *versionsCmd) Run() error {
	mnt, rel, err := mountOf(c.Path)
	if err != nil {
		return err
	}
	dir := filepath.Join(mnt, ".glyd", "versions", rel)
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s: no such file in %s", c.Path, mnt)
		}
		if errors.Is(err, syscall.ENOTDIR) {
			return fmt.Errorf("%s: not a regular file", c.Path)
		}
		return err
	}
	var vs []versionJSON
	for _, e := range ents {
		n, err := strconv.ParseUint(e.Name(), 10, 64)
		if err != nil {
			return fmt.Errorf("%s: %s is not a regular file", c.Path, rel)
		}
		fi, err := os.Stat(filepath.Join(dir, e.Name()))
		if err != nil {
			continue // pruned meanwhile
		}
		vs = append(vs, versionJSON{Version: n, Size: fi.Size(), Modified: fi.ModTime(), Path: filepath.Join(dir, e.Name())})
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i].Version < vs[j].Version })
	if c.JSON {
		return json.NewEncoder(os.Stdout).Encode(vs)
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "VERSION\tSIZE\tCOMMITTED\t PATH\t")
	for _, v := range vs {
		fmt.Fprintf(tw, "%d\t%s\t%s\t %s\t\n", v.Version, humanize.IBytes(uint64(v.Size)), v.Modified.Format("2006-01-02 15:04:05"), v.Path)
	}
	return tw.Flush()
}

type snapshotCmd struct {
	Create snapCreateCmd `cmd:"" help:"Snapshot the whole tree of a mounted glydfs as NAME (readable at MOUNT/.snapshots/NAME)."`
	Ls     snapLsCmd     `cmd:"" help:"List the snapshots of a mounted glydfs."`
	Rm     snapRmCmd     `cmd:"" help:"Remove snapshots (their space is freed by the next gc unless shared)."`
}

type snapCreateCmd struct {
	Mount string `arg:"" help:"The mount point (or any path in it)."`
	Name  string `arg:"" help:"Snapshot name."`
}

func snapDir(path string) (string, error) {
	mnt, _, err := mountOf(path)
	if err != nil {
		return "", err
	}
	return filepath.Join(mnt, ".snapshots"), nil
}

func (c *snapCreateCmd) Run() error {
	d, err := snapDir(c.Mount)
	if err != nil {
		return err
	}
	if c.Name == "" || strings.ContainsRune(c.Name, '/') || c.Name == "." || c.Name == ".." {
		return fmt.Errorf("invalid snapshot name %q", c.Name)
	}
	if err := os.Mkdir(filepath.Join(d, c.Name), 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("a snapshot named %q exists already", c.Name)
		}
		return err
	}
	fmt.Fprintf(os.Stderr, "snapshot %s: %s\n", c.Name, filepath.Join(d, c.Name))
	return nil
}

type snapLsCmd struct {
	Mount string `arg:"" help:"The mount point (or any path in it)."`
}

func (c *snapLsCmd) Run() error {
	d, err := snapDir(c.Mount)
	if err != nil {
		return err
	}
	ents, err := os.ReadDir(d)
	if err != nil {
		return err
	}
	for _, e := range ents {
		fmt.Println(e.Name())
	}
	return nil
}

type snapRmCmd struct {
	Mount string   `arg:"" help:"The mount point (or any path in it)."`
	Names []string `arg:"" help:"Snapshot names."`
}

func (c *snapRmCmd) Run() error {
	d, err := snapDir(c.Mount)
	if err != nil {
		return err
	}
	for _, n := range c.Names {
		if err := os.Remove(filepath.Join(d, n)); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("no snapshot named %q", n)
			}
			return err
		}
	}
	return nil
}

type restoreCmd struct {
	From string `arg:"" help:"What to bring back: MOUNT/.snapshots/NAME/PATH (a file or a tree) or MOUNT/.glyd/versions/PATH/N (one version of a file)."`
	To   string `arg:"" optional:"" help:"Where to (default: PATH in the live tree)."`
}

// liveTarget maps a snapshot or version path to the live path it came from.
func liveTarget(from string) (string, error) {
	mnt, rel, err := mountOf(from)
	if err != nil {
		return "", err
	}
	parts := strings.Split(rel, string(filepath.Separator))
	switch {
	case len(parts) >= 2 && parts[0] == ".snapshots":
		return filepath.Join(append([]string{mnt}, parts[2:]...)...), nil
	case len(parts) >= 4 && parts[0] == ".glyd" && parts[1] == "versions":
		return filepath.Join(append([]string{mnt}, parts[2:len(parts)-1]...)...), nil
	}
	return "", fmt.Errorf("%s: not in MOUNT/.snapshots/NAME/ or MOUNT/.glyd/versions/", from)
}

func (c *restoreCmd) Run() error {
	to := c.To
	if to == "" {
		t, err := liveTarget(c.From)
		if err != nil {
			return err
		}
		to = t
	}
	fi, err := os.Lstat(c.From)
	if err != nil {
		return err
	}
	var n int
	if fi.IsDir() {
		err = filepath.WalkDir(c.From, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(c.From, p)
			if err := restoreOne(p, filepath.Join(to, rel)); err != nil {
				return err
			}
			n++
			return nil
		})
		if err == nil {
			// Directory times last: restoring their contents changed them.
			err = filepath.WalkDir(c.From, func(p string, d fs.DirEntry, err error) error {
				if err != nil || !d.IsDir() {
					return err
				}
				rel, _ := filepath.Rel(c.From, p)
				return copyTimes(p, filepath.Join(to, rel))
			})
		}
	} else {
		err, n = restoreOne(c.From, to), 1
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "restored %s to %s\n", plural(n, "entry"), to)
	return nil
}

// restoreOne brings one file, link or directory back to dst, with its
// mode, owner, times and extended attributes. A file is written to a
// temporary name and renamed over dst, so dst is never half-restored.
func restoreOne(src, dst string) error {
	fi, err := os.Lstat(src)
	if err != nil {
		return err
	}
	st := fi.Sys().(*syscall.Stat_t)
	switch {
	case fi.IsDir():
		if err := os.MkdirAll(dst, 0o700); err != nil {
			return err
		}
	case fi.Mode()&fs.ModeSymlink != 0:
		target, err := os.Readlink(src)
		if err != nil {
			return err
		}
		tmp := dst + ".glyd-restore"
		os.Remove(tmp)
		if err := os.Symlink(target, tmp); err != nil {
			return err
		}
		if err := os.Rename(tmp, dst); err != nil {
			return err
		}
		os.Lchown(dst, int(st.Uid), int(st.Gid))
		return nil
	case fi.Mode().IsRegular():
		if err := copyFile(src, dst+".glyd-restore"); err != nil {
			os.Remove(dst + ".glyd-restore")
			return err
		}
		if err := os.Rename(dst+".glyd-restore", dst); err != nil {
			return err
		}
	default:
		return nil // devices, fifos: not restored
	}
	os.Lchown(dst, int(st.Uid), int(st.Gid))
	if err := os.Chmod(dst, fi.Mode().Perm()|fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)); err != nil {
		return err
	}
	copyXattrs(src, dst)
	return copyTimes(src, dst)
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

func copyTimes(src, dst string) error {
	var st unix.Stat_t
	if err := unix.Lstat(src, &st); err != nil {
		return err
	}
	ts := []unix.Timespec{st.Atim, st.Mtim}
	return unix.UtimesNanoAt(unix.AT_FDCWD, dst, ts, unix.AT_SYMLINK_NOFOLLOW)
}

func copyXattrs(src, dst string) {
	buf := make([]byte, 64<<10)
	n, err := unix.Llistxattr(src, buf)
	if err != nil {
		return
	}
	for _, name := range strings.Split(string(buf[:n]), "\x00") {
		if name == "" || strings.HasPrefix(name, "user.glyd.") {
			continue
		}
		val := make([]byte, 64<<10)
		if m, err := unix.Lgetxattr(src, name, val); err == nil {
			unix.Lsetxattr(dst, name, val[:m], 0)
		}
	}
}

type statsCmd struct {
	JSON bool   `help:"Print JSON with exact numbers."`
	Path string `arg:"" help:"A mounted glydfs (any path in it), or an unmounted store directory."`
}

func (c *statsCmd) Run() error {
	var st glydfs.Stats
	if mnt, _, err := mountOf(c.Path); err == nil {
		buf := make([]byte, 4096)
		n, err := unix.Getxattr(mnt, "user.glyd.stats", buf)
		if err != nil {
			return fmt.Errorf("%s: reading its statistics: %w", mnt, err)
		}
		if err := json.Unmarshal(buf[:n], &st); err != nil {
			return fmt.Errorf("%s: statistics: %w", mnt, err)
		}
	} else {
		s, err := openStore(c.Path, 0, true)
		if err != nil {
			return err
		}
		defer s.close()
		if st, err = glydfs.StoreStats(s.Store); err != nil {
			return storeError(c.Path, err)
		}
	}
	if c.JSON {
		return json.NewEncoder(os.Stdout).Encode(st)
	}
	ratio := 0.0
	if st.Stored > 0 {
		ratio = float64(st.History) / float64(st.Stored)
	}
	fmt.Printf("files        %d in %d directories, %d snapshots\n", st.Files, st.Dirs, st.Snapshots)
	fmt.Printf("logical      %s (the live files)\n", humanize.IBytes(uint64(st.Logical)))
	fmt.Printf("with history %s (every kept version and snapshot)\n", humanize.IBytes(uint64(st.History)))
	fmt.Printf("stored       %s (with history ÷ stored = %.2f)\n", humanize.IBytes(uint64(st.Stored)), ratio)
	fmt.Printf("saved        %s by dedup, %s by compression, %s by deltas, %s by packing safetensors\n",
		signed(st.DedupSaved), signed(st.CompSaved), signed(st.DeltaSaved), signed(st.PackSaved))
	fmt.Printf("chunks       %d (%d deltas); %s of garbage for the next gc\n", st.Chunks, st.Deltas, humanize.IBytes(uint64(st.Garbage)))
	return nil
}
