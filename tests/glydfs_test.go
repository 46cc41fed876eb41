package tests

// End-to-end tests of the glydfs binary: the mount's life cycle, what
// survives a remount (checked against the same tree on ext4), timestamps,
// large sparse files, versions and snapshots through the mount, dedup
// across files, concurrent use, files unlinked while open, readdir and
// errnos against ext4. The crash tests
// are in glydfs_crash_test.go, the random file-operation exerciser in
// glydfs_model_test.go. Below the tests: the helpers they share (building
// glydfs once, mounting in the foreground or detached, and making sure
// every mount a test made is gone when it ends, failed or not).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/glyd/glyd/internal/mountinfo"
)

// runGlydfs runs glydfs to completion (for runs that must fail before
// mounting); a run that mounts instead is unmounted and fails the test.
func (ft *fuseTest) runGlydfs(args ...string) (string, int) {
	ft.t.Helper()
	cmd := exec.Command(glydfsBin, args...)
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		ft.t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return out.String(), ee.ExitCode()
		}
		if err != nil {
			ft.t.Fatal(err)
		}
		return out.String(), 0
	case <-time.After(20 * time.Second):
		forceUnmount(args[len(args)-1])
		cmd.Process.Kill()
		<-done
		ft.t.Fatalf("glydfs %v still runs after 20s (it should have failed)\n%s", args, out.String())
		return "", 0
	}
}

// TestGlydfsLifecycle: glydfs detaches once the mount is ready, says when
// it made a new store, refuses a store that is in use; in the foreground
// SIGINT, SIGTERM and fusermount3 -u unmount it and it exits 0; -o ro
// refuses every write with EROFS; bad options and mount points fail with
// a message and no mount.
func TestGlydfsLifecycle(t *testing.T) {
	ft := newFuseTest(t)
	store, mnt := ft.storeDir(), ft.mountDir()

	// Detached: the mount exists when the command returns.
	msg, code, logFile := ft.detached(store, mnt)
	if code != 0 {
		t.Fatalf("glydfs %s %s: exit %d: %s (log: %s)", store, mnt, code, msg, readLog(logFile))
	}
	e, ok := mountOf(mnt)
	if !ok {
		t.Fatalf("glydfs returned but nothing is mounted on %s: %s", mnt, msg)
	}
	if e.fstype != "fuse.glydfs" || !strings.Contains(e.source, store) {
		t.Errorf("mount on %s is %q from %q, want fuse.glydfs from %s", mnt, e.fstype, e.source, store)
	}
	if !strings.HasPrefix(msg, "glydfs: ") || !strings.Contains(msg, "created a new store") || !strings.Contains(msg, store) {
		t.Errorf("a new store, but glydfs said %q", msg)
	}
	if pids := daemonPids(mnt); len(pids) != 1 {
		t.Errorf("%d glydfs processes serve %s, want 1", len(pids), mnt)
	}
	writeFile(t, filepath.Join(mnt, "hello"), []byte("hello, glydfs\n"))

	// A second glydfs on the same store is refused, detached or not.
	mnt2 := ft.mountDir()
	msg, code, _ = ft.detached(store, mnt2)
	if code == 0 || mounted(mnt2) {
		t.Fatalf("a second glydfs on a store in use: exit %d, mounted %v: %s", code, mounted(mnt2), msg)
	}
	if !strings.Contains(msg, "already open") || !strings.Contains(msg, store) {
		t.Errorf("a second glydfs on a store in use says %q", msg)
	}
	for _, args := range [][]string{{"-f", store, mnt2}, {"-f", "-o", "ro", store, mnt2}} {
		msg, code = ft.runGlydfs(args...)
		if code == 0 || mounted(mnt2) || !strings.Contains(msg, "already open") {
			t.Errorf("glydfs %s on a store in use: exit %d, mounted %v: %q", strings.Join(args, " "), code, mounted(mnt2), msg)
		}
	}
	if got := readFile(t, filepath.Join(mnt, "hello")); string(got) != "hello, glydfs\n" {
		t.Fatalf("after the refused mounts the file reads %q", got)
	}

	// fusermount3 -u ends the detached glydfs.
	if out, err := exec.Command("fusermount3", "-u", mnt).CombinedOutput(); err != nil {
		t.Fatalf("fusermount3 -u: %v: %s", err, out)
	}
	if !waitDaemonGone(mnt, 20*time.Second) {
		t.Fatalf("the detached glydfs still runs after fusermount3 -u")
	}
	if mounted(mnt) {
		t.Fatalf("still mounted after fusermount3 -u")
	}
	if log := readLog(logFile); strings.Contains(log, "panic") {
		t.Errorf("detached glydfs log:\n%s", log)
	}

	// An existing store: mounted again, and nothing said about creating it.
	msg, code, _ = ft.detached(store, mnt)
	if code != 0 || !mounted(mnt) {
		t.Fatalf("remounting an existing store: exit %d: %s", code, msg)
	}
	if strings.Contains(msg, "created") {
		t.Errorf("remounting an existing store says %q", msg)
	}
	if got := readFile(t, filepath.Join(mnt, "hello")); string(got) != "hello, glydfs\n" {
		t.Fatalf("after a remount the file reads %q", got)
	}
	exec.Command("fusermount3", "-u", mnt).Run()
	if !waitDaemonGone(mnt, 20*time.Second) || mounted(mnt) {
		t.Fatal("the detached glydfs did not stop")
	}

	// Foreground: SIGINT and SIGTERM unmount, and glydfs exits 0.
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		p := ft.startFG(store, mnt)
		if got := readFile(t, p.path("hello")); string(got) != "hello, glydfs\n" {
			t.Fatalf("file reads %q", got)
		}
		writeFile(t, p.path(sig.String()), []byte(sig.String()))
		if err := p.cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		p.checkClean(sig.String())
	}
	// A busy mount: SIGINT says so and glydfs keeps serving; once the
	// file is closed SIGTERM unmounts.
	p := ft.startFG(store, mnt)
	busy, err := os.Open(p.path("hello"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(p.stderr.String(), "cannot unmount") && time.Now().Before(deadline) && !p.exited() {
		time.Sleep(10 * time.Millisecond)
	}
	if p.exited() || !mounted(mnt) {
		busy.Close()
		t.Fatalf("SIGINT with a file open: glydfs exited (%v) or unmounted\n%s", p.err, p.stderr.String())
	}
	if !strings.Contains(p.stderr.String(), "cannot unmount") {
		t.Errorf("SIGINT with a file open: glydfs said %q", p.stderr.String())
	}
	buf := make([]byte, 100)
	if n, err := busy.ReadAt(buf, 0); string(buf[:n]) != "hello, glydfs\n" {
		t.Errorf("after the refused unmount the open file reads %q (%v)", buf[:n], err)
	}
	busy.Close()
	// The release of the file is asynchronous: retry until it unmounts.
	deadline = time.Now().Add(10 * time.Second)
	for !p.exited() && time.Now().Before(deadline) {
		p.cmd.Process.Signal(syscall.SIGTERM)
		p.waitExit(200 * time.Millisecond)
	}
	p.checkClean("SIGTERM after the file was closed")

	// ... and fusermount3 -u unmounts too.
	p = ft.startFG(store, mnt)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		if got := readFile(t, p.path(sig.String())); string(got) != sig.String() {
			t.Errorf("the file written before %v reads %q", sig, got)
		}
	}
	p.unmount()

	// -o ro: reads work, every change is refused with EROFS.
	p = ft.startFG(store, mnt, "-o", "ro")
	if e, _ := mountOf(mnt); !strings.Contains(","+e.opts+",", ",ro,") {
		t.Errorf("-o ro mounted with options %q", e.opts)
	}
	if got := readFile(t, p.path("hello")); string(got) != "hello, glydfs\n" {
		t.Fatalf("read-only: file reads %q", got)
	}
	hello := p.path("hello")
	roOps := []struct {
		name string
		fn   func() error
	}{
		{"open for writing", func() error {
			f, err := os.OpenFile(hello, os.O_WRONLY, 0)
			if err == nil {
				f.Close()
			}
			return err
		}},
		{"create", func() error { return os.WriteFile(p.path("new"), nil, 0o644) }},
		{"mkdir", func() error { return os.Mkdir(p.path("dir"), 0o755) }},
		{"unlink", func() error { return os.Remove(hello) }},
		{"rename", func() error { return os.Rename(hello, p.path("moved")) }},
		{"link", func() error { return os.Link(hello, p.path("link")) }},
		{"symlink", func() error { return os.Symlink("hello", p.path("sym")) }},
		{"chmod", func() error { return os.Chmod(hello, 0o600) }},
		{"chown", func() error { return os.Chown(hello, 1, 1) }},
		{"truncate", func() error { return os.Truncate(hello, 0) }},
		{"utimes", func() error { return os.Chtimes(hello, time.Now(), time.Now()) }},
		{"setxattr", func() error { return unix.Setxattr(hello, "user.x", []byte("1"), 0) }},
		{"snapshot", func() error { return os.Mkdir(p.path(".snapshots/s"), 0o755) }},
	}
	for _, op := range roOps {
		if err := op.fn(); errnoOf(err) != syscall.EROFS {
			t.Errorf("read-only mount: %s: %v, want EROFS", op.name, err)
		}
	}
	if got := readFile(t, hello); string(got) != "hello, glydfs\n" {
		t.Fatalf("read-only: after the refused writes the file reads %q", got)
	}
	p.unmount()

	// Bad options and mount points: an error, a message, no mount.
	missing := filepath.Join(t.TempDir(), "nothing")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-f", "-o", "bogus", store, mnt}, `unknown mount option "bogus"`},
		{[]string{"-o", "ro,frobnicate=1", store, mnt}, "unknown mount option"},
		{[]string{"-f", "-o", "versions=many", store, mnt}, "versions"},
		{[]string{"-f", store, missing}, "not a directory"},
		{[]string{"-f", "-o", "ro", missing, mnt}, "no store"},
	} {
		msg, code := ft.runGlydfs(c.args...)
		if code == 0 || mounted(mnt) || !strings.Contains(msg, c.want) || !strings.HasPrefix(msg, "glydfs: ") {
			t.Errorf("glydfs %s: exit %d, mounted %v, said %q; want an error mentioning %q",
				strings.Join(c.args, " "), code, mounted(mnt), msg, c.want)
		}
	}
	if exists(missing) {
		t.Errorf("a failed read-only mount created %s", missing)
	}
}

func readLog(path string) string {
	b, _ := os.ReadFile(path)
	return string(b)
}

// fileInfo is what the tests compare of one entry of a tree.
type fileInfo struct {
	Mode, Uid, Gid, Nlink uint32
	Rdev                  uint64
	Size, Blocks          int64
	Ino                   uint64
	Atime, Mtime, Ctime   int64 // ns
	Target                string
	Data                  []byte
	Xattrs                map[string]string
}

func tsNs(ts syscall.Timespec) int64 { return ts.Sec*1e9 + ts.Nsec }

// scanTree describes every entry under root (its stat before its bytes are
// read, so reading cannot change what is compared).
func scanTree(t *testing.T, root string) map[string]fileInfo {
	t.Helper()
	out := map[string]fileInfo{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		var st syscall.Stat_t
		if err := syscall.Lstat(p, &st); err != nil {
			return err
		}
		fi := fileInfo{Mode: st.Mode, Uid: st.Uid, Gid: st.Gid, Nlink: uint32(st.Nlink), Rdev: st.Rdev,
			Size: st.Size, Blocks: st.Blocks, Ino: st.Ino,
			Atime: tsNs(st.Atim), Mtime: tsNs(st.Mtim), Ctime: tsNs(st.Ctim), Xattrs: map[string]string{}}
		if st.Mode&syscall.S_IFMT == syscall.S_IFLNK {
			if fi.Target, err = os.Readlink(p); err != nil {
				return err
			}
		}
		buf := make([]byte, 64<<10)
		n, err := unix.Llistxattr(p, buf)
		if err != nil {
			return fmt.Errorf("listxattr %s: %w", p, err)
		}
		for _, name := range strings.Split(string(buf[:n]), "\x00") {
			if name == "" || strings.HasPrefix(name, "security.") {
				continue
			}
			v := make([]byte, 64<<10)
			m, err := unix.Lgetxattr(p, name, v)
			if err != nil {
				return fmt.Errorf("getxattr %s %s: %w", p, name, err)
			}
			fi.Xattrs[name] = string(v[:m])
		}
		out[rel] = fi
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The bytes after every stat: a read may change the atime of a file
	// (ext4's relatime) that another link names.
	for rel, fi := range out {
		if fi.Mode&syscall.S_IFMT == syscall.S_IFREG {
			if fi.Data, err = os.ReadFile(filepath.Join(root, rel)); err != nil {
				t.Fatal(err)
			}
			out[rel] = fi
		}
	}
	return out
}

// buildTree makes the same tree of files, directories, links, modes,
// owners, times and attributes under root (a glydfs mount or ext4).
func buildTree(t *testing.T, root string, big []byte) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	p := func(rel string) string { return filepath.Join(root, rel) }
	file := func(rel string, data []byte, mode os.FileMode) {
		t.Helper()
		must(os.WriteFile(p(rel), data, mode))
		must(os.Chmod(p(rel), mode)) // not masked by the umask
	}
	must(os.MkdirAll(p("d1/d2/d3/d4"), 0o755))
	for _, d := range []string{"emptydir", "many", "sticky", "sgid", "xdir"} {
		must(os.Mkdir(p(d), 0o755))
	}
	file("empty", nil, 0o600)
	file("small", []byte("hello\n"), 0o644)
	file("page", sample(64<<10, 11), 0o644)
	file("page+1", sample(64<<10+1, 12), 0o644)
	file("odd", sample(1_000_003, 13), 0o644)
	file("big", big, 0o644)
	file("d1/d2/d3/d4/deep", []byte("deep down\n"), 0o640)
	file("zeros", make([]byte, 300<<10), 0o644) // written zeros, not holes
	// A sparse file: 100 bytes 20 MiB in.
	f, err := os.OpenFile(p("sparse"), os.O_CREATE|os.O_WRONLY, 0o644)
	must(err)
	_, err = f.WriteAt([]byte(strings.Repeat("s", 100)), 20<<20)
	must(err)
	must(f.Close())
	for i := 0; i < short(150, 30); i++ {
		file(fmt.Sprintf("many/f%03d", i), []byte(strings.Repeat(strconv.Itoa(i), i)), 0o644)
	}
	// Hard links: three names of one file, across directories.
	file("hl-a", []byte("one inode, three names\n"), 0o644)
	must(os.Link(p("hl-a"), p("d1/hl-b")))
	must(os.Link(p("hl-a"), p("d1/d2/hl-c")))
	// Symbolic links.
	must(os.Symlink("small", p("sl-rel")))
	must(os.Symlink("/etc/hostname", p("sl-abs")))
	must(os.Symlink("nowhere/at/all", p("sl-dangling")))
	must(os.Symlink(strings.Repeat("a/", 1000)+"z", p("sl-long")))
	must(os.Symlink("../small", p("d1/sl-up")))
	// Special files.
	must(unix.Mkfifo(p("fifo"), 0o640))
	must(unix.Mknod(p("null"), syscall.S_IFCHR|0o666, int(unix.Mkdev(1, 3))))
	// Owners, then modes (chown clears set-id bits).
	file("owned", []byte("someone else's\n"), 0o640)
	must(os.Chown(p("owned"), 1234, 5678))
	must(os.Lchown(p("sl-rel"), 111, 222))
	must(os.Chown(p("d1/d2"), 42, 43))
	file("setuid", []byte("#!/bin/sh\n"), 0o755)
	must(os.Chown(p("setuid"), 7, 8))
	must(os.Chmod(p("setuid"), 0o4755))
	file("mode000", []byte("nobody may\n"), 0)
	file("exec", []byte("#!/bin/true\n"), 0o751)
	must(os.Chmod(p("emptydir"), 0o700))
	must(os.Chmod(p("sticky"), 0o1777))
	must(os.Chown(p("sgid"), 0, 4321))
	must(os.Chmod(p("sgid"), 0o2775))
	file("sgid/inherits", []byte("group from the directory\n"), 0o644)
	must(os.Mkdir(p("sgid/subdir"), 0o755))
	// Directories moved, replaced and exchanged: link counts follow.
	for _, d := range []string{"x1/sub/inner", "x2", "m1/d", "m2", "o1/a", "o2/b"} {
		must(os.MkdirAll(p(d), 0o755))
	}
	file("x2/f", []byte("exchanged with a directory\n"), 0o644)
	must(unix.Renameat2(unix.AT_FDCWD, p("x1/sub"), unix.AT_FDCWD, p("x2/f"), unix.RENAME_EXCHANGE))
	must(os.Rename(p("m1/d"), p("m2/d")))
	must(syscall.Rename(p("o1/a"), p("o2/b"))) // over an empty directory (os.Rename refuses)
	file("m2/over", []byte("old"), 0o644)
	file("m2/new", []byte("replaces it\n"), 0o644)
	must(os.Rename(p("m2/new"), p("m2/over")))
	// Extended attributes.
	bin := make([]byte, 256)
	for i := range bin {
		bin[i] = byte(i)
	}
	must(unix.Setxattr(p("small"), "user.a", []byte("1"), 0))
	must(unix.Setxattr(p("small"), "user.bin", bin, 0))
	must(unix.Setxattr(p("small"), "user.empty", nil, 0))
	must(unix.Setxattr(p("big"), "user.long", []byte(strings.Repeat("x", 3000)), 0))
	must(unix.Setxattr(p("xdir"), "user.dir", []byte("on a directory"), 0))
	must(unix.Setxattr(p("hl-a"), "user.shared", []byte("by every link"), 0))
	must(unix.Setxattr(p("small"), "trusted.root", []byte("only root sees it"), 0))
	must(unix.Setxattr(p("small"), "user.gone", []byte("removed"), 0))
	must(unix.Removexattr(p("small"), "user.gone"))
	// Times last, children before their directories, with nanoseconds.
	var all []string
	filepath.WalkDir(root, func(q string, d os.DirEntry, err error) error {
		all = append(all, q)
		return nil
	})
	for i := len(all) - 1; i >= 0; i-- {
		ts := []unix.Timespec{
			{Sec: 946684800 + int64(i), Nsec: 123456789 + int64(i)},     // atime: 2000
			{Sec: 1234567890 + int64(i)*60, Nsec: 987654321 - int64(i)}, // mtime: 2009
		}
		must(unix.UtimesNanoAt(unix.AT_FDCWD, all[i], ts, unix.AT_SYMLINK_NOFOLLOW))
	}
}

// TestGlydfsRemountPersistence builds a tree of every kind of entry on a
// mount and on ext4: the mount must show what ext4 shows, and show the
// same again (inode numbers and ctimes too) after a remount.
func TestGlydfsRemountPersistence(t *testing.T) {
	ft := newFuseTest(t)
	if os.Geteuid() != 0 {
		t.Skip("the tree has owners, device nodes and trusted xattrs: root only")
	}
	big := realData(short(6<<20, 3<<20)+12345, 0)
	ext4 := t.TempDir()
	buildTree(t, ext4, big)
	want := scanTree(t, ext4)

	p := ft.startFG(ft.storeDir(), ft.mountDir())
	buildTree(t, p.dir, big)
	got := scanTree(t, p.dir)
	compareLikeExt4(t, want, got, true)
	// Hard links are one inode; every other entry its own.
	inos := map[uint64]string{}
	for name, fi := range got {
		if prev, ok := inos[fi.Ino]; ok && !(fi.Nlink > 1 && got[prev].Nlink > 1) {
			t.Errorf("%s and %s have one inode number %d", prev, name, fi.Ino)
		}
		inos[fi.Ino] = name
	}
	if a, b, c := got["hl-a"], got["d1/hl-b"], got["d1/d2/hl-c"]; a.Ino != b.Ino || a.Ino != c.Ino || a.Nlink != 3 {
		t.Errorf("hard links: inodes %d %d %d, nlink %d", a.Ino, b.Ino, c.Ino, a.Nlink)
	}

	p = p.remount()
	again := scanTree(t, p.dir)
	compareExact(t, "after a remount", got, again)
	if sp := again["sparse"]; sp.Blocks*512 >= 1<<20 {
		t.Errorf("the sparse file (size %d) takes %d blocks: its hole is stored", sp.Size, sp.Blocks)
	}
	// Through a second remount, after reading everything, nothing moves.
	p = p.remount()
	compareExact(t, "after a second remount", got, scanTree(t, p.dir))
	p.unmount()
}

// TestGlydfsTimestampsLikeExt4: times set with utimensat read back as ext4
// keeps them: before 1970, past 2038 and 2262, to the nanosecond, with
// UTIME_OMIT leaving one alone; and the same after a remount.
func TestGlydfsTimestampsLikeExt4(t *testing.T) {
	ft := newFuseTest(t)
	p := ft.startFG(ft.storeDir(), ft.mountDir())
	ext4 := t.TempDir()
	times := []struct {
		name string
		ts   unix.Timespec
	}{
		{"epoch", unix.Timespec{Sec: 0, Nsec: 0}},
		{"2001", unix.Timespec{Sec: 981173106, Nsec: 123456789}},
		{"past-2038", unix.Timespec{Sec: 1<<31 + 5, Nsec: 999999999}},
		{"before-1970", unix.Timespec{Sec: -1, Nsec: 500}},
		{"1960", unix.Timespec{Sec: -315532800 + 3600, Nsec: 123456789}},
		{"2300", unix.Timespec{Sec: 10413792000, Nsec: 500000000}},
	}
	set := func(root string) {
		for _, tm := range times {
			path := filepath.Join(root, tm.name)
			writeFile(t, path, []byte(tm.name))
			if err := unix.UtimesNanoAt(unix.AT_FDCWD, path, []unix.Timespec{tm.ts, tm.ts}, 0); err != nil {
				t.Fatalf("%s: %v", tm.name, err)
			}
		}
		// UTIME_OMIT: the mtime changes, the atime stays.
		path := filepath.Join(root, "2001")
		omit := unix.Timespec{Sec: 0, Nsec: unix.UTIME_OMIT}
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, path, []unix.Timespec{omit, {Sec: 1e9, Nsec: 7}}, 0); err != nil {
			t.Fatal(err)
		}
	}
	set(ext4)
	set(p.dir)
	check := func(when string) {
		t.Helper()
		for _, tm := range append(times[:len(times):len(times)], struct {
			name string
			ts   unix.Timespec
		}{"2001", unix.Timespec{}}) {
			var w, g syscall.Stat_t
			if err := syscall.Stat(filepath.Join(ext4, tm.name), &w); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Stat(p.path(tm.name), &g); err != nil {
				t.Fatal(err)
			}
			if g.Atim != w.Atim || g.Mtim != w.Mtim {
				t.Errorf("%s: %s: atime %v mtime %v; ext4 %v %v", when, tm.name,
					time.Unix(g.Atim.Unix()).UTC(), time.Unix(g.Mtim.Unix()).UTC(),
					time.Unix(w.Atim.Unix()).UTC(), time.Unix(w.Mtim.Unix()).UTC())
			}
		}
	}
	check("set")
	p = p.remount()
	check("after a remount")
	p.unmount()
}

// TestGlydfsLargeSparse: a file with bytes at 0, past 4 GiB and at 1 TiB
// is holes in between, reads as ext4 reads it, survives a remount, and
// takes almost no space.
func TestGlydfsLargeSparse(t *testing.T) {
	ft := newFuseTest(t)
	p := ft.startFG(ft.storeDir(), ft.mountDir())
	ext4 := t.TempDir()
	pieces := []struct {
		off  int64
		data []byte
	}{
		{0, []byte("head")},
		{5<<30 + 123, sample(4096, 31)},
		{1<<40 - 7, []byte("at one TiB")},
	}
	build := func(root string) {
		f, err := os.Create(filepath.Join(root, "sparse"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, pc := range pieces {
			if _, err := f.WriteAt(pc.data, pc.off); err != nil {
				t.Fatal(err)
			}
		}
		// Cut it back to just past the 5 GiB piece, then grow it by 1 GiB.
		if err := f.Truncate(5<<30 + 200); err != nil {
			t.Fatal(err)
		}
		if err := f.Truncate(6 << 30); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	build(ext4)
	build(p.dir)
	probes := []struct{ off, n int64 }{{0, 100}, {3 << 30, 4096}, {5<<30 + 100, 4200}, {5<<30 + 190, 20}, {6<<30 - 10, 100}}
	check := func(when string) {
		t.Helper()
		var w, g syscall.Stat_t
		if err := syscall.Stat(filepath.Join(ext4, "sparse"), &w); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Stat(p.path("sparse"), &g); err != nil {
			t.Fatal(err)
		}
		if g.Size != w.Size {
			t.Errorf("%s: size %d, ext4 %d", when, g.Size, w.Size)
		}
		if g.Blocks*512 > 1<<20 {
			t.Errorf("%s: %d blocks for a file of %d bytes with 8 KiB in it", when, g.Blocks, g.Size)
		}
		for _, pr := range probes {
			wb, gb := make([]byte, pr.n), make([]byte, pr.n)
			wf, _ := os.Open(filepath.Join(ext4, "sparse"))
			gf, err := os.Open(p.path("sparse"))
			if err != nil {
				t.Fatal(err)
			}
			wn, _ := wf.ReadAt(wb, pr.off)
			gn, err := gf.ReadAt(gb, pr.off)
			wf.Close()
			gf.Close()
			if gn != wn || !bytes.Equal(gb[:gn], wb[:wn]) {
				t.Errorf("%s: %d bytes at %d: %d read (%v), ext4 %d; %s", when, pr.n, pr.off, gn, err, wn, firstDiff(gb[:gn], wb[:wn]))
			}
		}
	}
	check("written")
	p = p.remount()
	check("after a remount")
	if v := storedXattr(t, p.path("sparse")); v > 64<<10 {
		t.Errorf("user.glyd.stored of the sparse file: %d", v)
	}
	p.unmount()
}

// compareLikeExt4 compares what ext4 and glydfs must agree on: everything
// but inode numbers, ctimes, block counts and directory sizes (and, unless
// times is set, atimes and mtimes).
func compareLikeExt4(t *testing.T, ext4, fs map[string]fileInfo, times bool) {
	t.Helper()
	for name, w := range ext4 {
		g, ok := fs[name]
		if !ok {
			t.Errorf("%s: missing on the mount", name)
			continue
		}
		if name == "." {
			// The mount point's own root: only its type.
			if g.Mode&syscall.S_IFMT != syscall.S_IFDIR {
				t.Errorf("root mode %o", g.Mode)
			}
			continue
		}
		if g.Mode != w.Mode || g.Uid != w.Uid || g.Gid != w.Gid || g.Nlink != w.Nlink || g.Rdev != w.Rdev {
			t.Errorf("%s: mode %o uid %d gid %d nlink %d rdev %#x; ext4: mode %o uid %d gid %d nlink %d rdev %#x",
				name, g.Mode, g.Uid, g.Gid, g.Nlink, g.Rdev, w.Mode, w.Uid, w.Gid, w.Nlink, w.Rdev)
		}
		if times && (g.Atime != w.Atime || g.Mtime != w.Mtime) {
			t.Errorf("%s: atime %d mtime %d; ext4: %d %d", name, g.Atime, g.Mtime, w.Atime, w.Mtime)
		}
		if w.Mode&syscall.S_IFMT != syscall.S_IFDIR && g.Size != w.Size {
			t.Errorf("%s: size %d; ext4: %d", name, g.Size, w.Size)
		}
		if g.Target != w.Target {
			t.Errorf("%s: symlink to %q; ext4: %q", name, g.Target, w.Target)
		}
		if !bytes.Equal(g.Data, w.Data) {
			t.Errorf("%s: %d bytes differ from ext4's %d", name, len(g.Data), len(w.Data))
		}
		if fmt.Sprint(g.Xattrs) != fmt.Sprint(w.Xattrs) {
			t.Errorf("%s: xattrs %q; ext4: %q", name, g.Xattrs, w.Xattrs)
		}
	}
	for name := range fs {
		if _, ok := ext4[name]; !ok {
			t.Errorf("%s: on the mount, not on ext4", name)
		}
	}
}

// compareExact compares two scans of one filesystem field by field.
func compareExact(t *testing.T, when string, before, after map[string]fileInfo) {
	t.Helper()
	for name, b := range before {
		a, ok := after[name]
		if !ok {
			t.Errorf("%s: %s is gone", when, name)
			continue
		}
		if name == "." {
			continue // the root: its times are the mount point's business
		}
		bd, ad := b.Data, a.Data
		b.Data, a.Data = nil, nil
		if !bytes.Equal(bd, ad) {
			t.Errorf("%s: %s: content differs (%d bytes, was %d)", when, name, len(ad), len(bd))
		}
		if fmt.Sprintf("%+v", a) != fmt.Sprintf("%+v", b) {
			t.Errorf("%s: %s:\n  now %+v\n  was %+v", when, name, a, b)
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			t.Errorf("%s: %s appeared", when, name)
		}
	}
}

func readDirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, e := range es {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}

func sortedNumbers(names []string) []string {
	sort.Slice(names, func(i, j int) bool {
		a, _ := strconv.Atoi(names[i])
		b, _ := strconv.Atoi(names[j])
		return a < b
	})
	return names
}

func wantBytes(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("%s: %v", path, err)
		return
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s: %d bytes, want %d (%s)", path, len(got), len(want), firstDiff(got, want))
	}
}

func firstDiff(a, b []byte) string {
	for i := 0; i < min(len(a), len(b)); i++ {
		if a[i] != b[i] {
			return fmt.Sprintf("first difference at byte %d: %#x, want %#x", i, a[i], b[i])
		}
	}
	if len(a) != len(b) {
		return fmt.Sprintf("equal up to byte %d", min(len(a), len(b)))
	}
	return "equal"
}

func wantErrno(t *testing.T, what string, err error, want syscall.Errno) {
	t.Helper()
	if errnoOf(err) != want {
		t.Errorf("%s: %v, want %v", what, err, want)
	}
}

// TestGlydfsVersionsAndSnapshots: every open-write-close of a file is a
// version readable under .glyd/versions/<path>/<n>; mkdir in .snapshots
// freezes the tree (staged writes included), rmdir removes a snapshot,
// and both survive a remount; -o versions=N keeps the last N versions.
func TestGlydfsVersionsAndSnapshots(t *testing.T) {
	ft := newFuseTest(t)
	store, mnt := ft.storeDir(), ft.mountDir()
	p := ft.startFG(store, mnt)

	if err := os.MkdirAll(p.path("sub/dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	vs := [][]byte{[]byte("the first version\n"), realData(300<<10, 5<<20), sample(1<<20+5, 7)}
	doc := p.path("sub/dir/doc")
	for _, v := range vs {
		writeFile(t, doc, v)
	}
	vdir := p.path(".glyd/versions/sub/dir/doc")
	if got := sortedNumbers(readDirNames(t, vdir)); fmt.Sprint(got) != "[1 2 3]" {
		t.Errorf("three writes of a file: versions %v, want [1 2 3]", got)
	}
	for i, v := range vs {
		wantBytes(t, filepath.Join(vdir, strconv.Itoa(i+1)), v)
	}
	if fi, err := os.Stat(filepath.Join(vdir, "2")); err != nil || fi.Size() != int64(len(vs[1])) || fi.Mode() != 0o444 {
		t.Errorf("version 2: %v %v", fi, err)
	}
	if f, err := os.OpenFile(filepath.Join(vdir, "1"), os.O_WRONLY, 0); err == nil {
		f.Close()
		t.Errorf("a version opened for writing")
	}
	wantErrno(t, "a version that does not exist", func() error { _, err := os.Stat(filepath.Join(vdir, "9")); return err }(), syscall.ENOENT)
	if got := readDirNames(t, p.path(".glyd/versions/sub")); fmt.Sprint(got) != "[dir]" {
		t.Errorf(".glyd/versions/sub lists %v", got)
	}
	// .glyd and .snapshots: not listed, but there.
	for _, name := range readDirNames(t, mnt) {
		if name == ".glyd" || name == ".snapshots" {
			t.Errorf("readdir of the root lists %s", name)
		}
	}
	for _, name := range []string{".glyd", ".snapshots", ".glyd/versions"} {
		if fi, err := os.Stat(p.path(name)); err != nil || !fi.IsDir() {
			t.Errorf("%s: %v %v", name, fi, err)
		}
	}
	wantErrno(t, "mkdir .glyd", os.Mkdir(p.path(".glyd"), 0o755), syscall.EEXIST)
	wantErrno(t, "mkdir .snapshots", os.Mkdir(p.path(".snapshots"), 0o755), syscall.EEXIST)

	// A snapshot, then changes to the live tree.
	writeFile(t, p.path("a.txt"), []byte("alpha\n"))
	bData := realData(2<<20, 9<<20)
	writeFile(t, p.path("b.txt"), bData)
	if err := os.Symlink("a.txt", p.path("link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(p.path("b.txt"), p.path("b-link")); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(p.path("a.txt"), "user.tag", []byte("v1"), 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(p.path(".snapshots/s1"), 0o755); err != nil {
		t.Fatalf("taking a snapshot: %v", err)
	}
	writeFile(t, p.path("a.txt"), []byte("alpha, changed\n"))
	if err := unix.Setxattr(p.path("a.txt"), "user.tag", []byte("v2"), 0); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(p.path("b.txt")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, p.path("c.txt"), []byte("new after s1\n"))
	if err := os.Chmod(doc, 0o600); err != nil {
		t.Fatal(err)
	}
	writeFile(t, doc, []byte("the fourth version\n"))
	if err := os.Rename(p.path("sub"), p.path("sub2")); err != nil {
		t.Fatal(err)
	}
	checkS1 := func() {
		t.Helper()
		s1 := p.path(".snapshots/s1")
		wantBytes(t, filepath.Join(s1, "a.txt"), []byte("alpha\n"))
		wantBytes(t, filepath.Join(s1, "b.txt"), bData)
		wantBytes(t, filepath.Join(s1, "sub/dir/doc"), vs[2])
		if _, err := os.Lstat(filepath.Join(s1, "c.txt")); errnoOf(err) != syscall.ENOENT {
			t.Errorf("s1/c.txt, made after the snapshot: %v", err)
		}
		if _, err := os.Lstat(filepath.Join(s1, "sub2")); errnoOf(err) != syscall.ENOENT {
			t.Errorf("s1/sub2, renamed after the snapshot: %v", err)
		}
		if tg, err := os.Readlink(filepath.Join(s1, "link")); err != nil || tg != "a.txt" {
			t.Errorf("s1/link: %q %v", tg, err)
		}
		v := make([]byte, 16)
		if n, err := unix.Getxattr(filepath.Join(s1, "a.txt"), "user.tag", v); err != nil || string(v[:n]) != "v1" {
			t.Errorf("s1/a.txt user.tag: %q %v", v[:max(n, 0)], err)
		}
		// A snapshot shows the modes the files had (so restores keep
		// them); writes into it fail with EROFS (checked below).
		if fi, err := os.Stat(filepath.Join(s1, "sub/dir/doc")); err != nil || fi.Mode().Perm() != 0o644 {
			t.Errorf("s1/sub/dir/doc: mode %v (%v), want 0644 as it was", fi.Mode(), err)
		}
		if got := readDirNames(t, s1); fmt.Sprint(got) != "[a.txt b-link b.txt link sub]" {
			t.Errorf("s1 lists %v", got)
		}
		// Hard links are one inode in a snapshot too, not the live one.
		var b1, b2, live syscall.Stat_t
		syscall.Stat(filepath.Join(s1, "b.txt"), &b1)
		syscall.Stat(filepath.Join(s1, "b-link"), &b2)
		syscall.Stat(p.path("b-link"), &live)
		if b1.Ino != b2.Ino || b1.Nlink != 2 || b1.Ino == live.Ino {
			t.Errorf("s1/b.txt and s1/b-link: inodes %d %d (live %d), nlink %d", b1.Ino, b2.Ino, live.Ino, b1.Nlink)
		}
	}
	checkS1()
	wantBytes(t, p.path("a.txt"), []byte("alpha, changed\n"))
	wantBytes(t, p.path("sub2/dir/doc"), []byte("the fourth version\n"))
	// A snapshot is read-only.
	s1 := p.path(".snapshots/s1")
	wantErrno(t, "creating a file in a snapshot", os.WriteFile(filepath.Join(s1, "new"), nil, 0o644), syscall.EROFS)
	wantErrno(t, "removing a file of a snapshot", os.Remove(filepath.Join(s1, "a.txt")), syscall.EROFS)
	func() {
		f, err := os.OpenFile(filepath.Join(s1, "a.txt"), os.O_WRONLY, 0)
		if err == nil {
			f.Close()
		}
		wantErrno(t, "opening a snapshot's file for writing", err, syscall.EROFS)
	}()
	wantErrno(t, "taking snapshot s1 twice", os.Mkdir(s1, 0o755), syscall.EEXIST)

	// Writes staged in an open file go into a snapshot.
	f, err := os.Create(p.path("open.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("staged, not closed")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(p.path(".snapshots/s2"), 0o755); err != nil {
		t.Fatal(err)
	}
	f.Close()
	checkS2 := func() {
		t.Helper()
		s2 := p.path(".snapshots/s2")
		wantBytes(t, filepath.Join(s2, "open.txt"), []byte("staged, not closed"))
		wantBytes(t, filepath.Join(s2, "a.txt"), []byte("alpha, changed\n"))
		wantBytes(t, filepath.Join(s2, "sub2/dir/doc"), []byte("the fourth version\n"))
		if _, err := os.Lstat(filepath.Join(s2, "b.txt")); errnoOf(err) != syscall.ENOENT {
			t.Errorf("s2/b.txt, removed before the snapshot: %v", err)
		}
	}
	checkS2()
	if got := readDirNames(t, p.path(".snapshots")); fmt.Sprint(got) != "[s1 s2]" {
		t.Errorf(".snapshots lists %v", got)
	}

	// Everything survives a remount; rmdir removes a snapshot.
	p = p.remount()
	checkS1()
	checkS2()
	vdir = p.path(".glyd/versions/sub2/dir/doc")
	if got := sortedNumbers(readDirNames(t, vdir)); fmt.Sprint(got) != "[1 2 3 4]" {
		t.Errorf("after a remount: versions %v, want [1 2 3 4]", got)
	}
	wantBytes(t, filepath.Join(vdir, "1"), vs[0])
	if err := os.Remove(p.path(".snapshots/s1")); err != nil {
		t.Fatalf("rmdir .snapshots/s1: %v", err)
	}
	if _, err := os.Stat(p.path(".snapshots/s1")); errnoOf(err) != syscall.ENOENT {
		t.Errorf("a removed snapshot: %v", err)
	}
	if got := readDirNames(t, p.path(".snapshots")); fmt.Sprint(got) != "[s2]" {
		t.Errorf("after rmdir .snapshots lists %v", got)
	}
	checkS2()
	p = p.remount()
	if _, err := os.Stat(p.path(".snapshots/s1")); errnoOf(err) != syscall.ENOENT {
		t.Errorf("a removed snapshot after a remount: %v", err)
	}
	checkS2()
	// The name can be used again: a snapshot of the tree as it is now.
	if err := os.Mkdir(p.path(".snapshots/s1"), 0o755); err != nil {
		t.Fatal(err)
	}
	wantBytes(t, p.path(".snapshots/s1/a.txt"), []byte("alpha, changed\n"))
	p.unmount()

	// -o versions=2 keeps the last two versions.
	p = ft.startFG(store, mnt, "-o", "versions=2")
	doc = p.path("sub2/dir/doc")
	writeFile(t, doc, []byte("five"))
	writeFile(t, doc, []byte("six"))
	vdir = p.path(".glyd/versions/sub2/dir/doc")
	if got := sortedNumbers(readDirNames(t, vdir)); fmt.Sprint(got) != "[5 6]" {
		t.Errorf("-o versions=2: versions %v, want [5 6]", got)
	}
	wantBytes(t, filepath.Join(vdir, "5"), []byte("five"))
	// The snapshots keep what they froze.
	wantBytes(t, p.path(".snapshots/s2/sub2/dir/doc"), []byte("the fourth version\n"))
	p.unmount()
}

type fsStats struct {
	Files   int   `json:"files"`
	Logical int64 `json:"logical"`
	History int64 `json:"history"`
	Stored  int64 `json:"stored"`
}

// rootStats reads the JSON in the root's user.glyd.stats.
func rootStats(t *testing.T, mnt string) fsStats {
	t.Helper()
	buf := make([]byte, 64<<10)
	n, err := unix.Getxattr(mnt, "user.glyd.stats", buf)
	if err != nil {
		t.Fatalf("user.glyd.stats: %v", err)
	}
	var st fsStats
	if err := json.Unmarshal(buf[:n], &st); err != nil {
		t.Fatalf("user.glyd.stats %q: %v", buf[:n], err)
	}
	return st
}

func storedXattr(t *testing.T, path string) int64 {
	t.Helper()
	buf := make([]byte, 64)
	n, err := unix.Getxattr(path, "user.glyd.stored", buf)
	if err != nil {
		t.Fatalf("user.glyd.stored of %s: %v", path, err)
	}
	v, err := strconv.ParseInt(string(buf[:n]), 10, 64)
	if err != nil {
		t.Fatalf("user.glyd.stored of %s is %q, not a decimal number", path, buf[:n])
	}
	return v
}

// TestGlydfsDedup: the same 8 MiB written as a second file costs almost
// nothing; the root's user.glyd.stats and a file's user.glyd.stored say so.
func TestGlydfsDedup(t *testing.T) {
	ft := newFuseTest(t)
	p := ft.startFG(ft.storeDir(), ft.mountDir())
	data := realData(8<<20, 1<<20)
	s0 := rootStats(t, p.dir)
	writeFile(t, p.path("one"), data)
	s1 := rootStats(t, p.dir)
	if err := os.Mkdir(p.path("copy"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The second copy goes in through a pipe-sized stream, as cp does.
	dst, err := os.Create(p.path("copy/two"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyBuffer(dst, bytes.NewReader(data), make([]byte, 128<<10)); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := rootStats(t, p.dir)
	g1, g2 := s1.Stored-s0.Stored, s2.Stored-s1.Stored
	t.Logf("8 MiB: stored grew %d bytes for the first copy, %d for the second", g1, g2)
	if g1 <= 0 || g1 > int64(len(data)) {
		t.Errorf("the first copy of %d bytes grew stored by %d", len(data), g1)
	}
	if g2*20 > g1 {
		t.Errorf("the second copy grew stored by %d bytes, the first by %d: not deduplicated", g2, g1)
	}
	if s2.Files != 2 || s2.Logical != 2*int64(len(data)) {
		t.Errorf("stats: %d files, %d logical bytes; want 2 and %d", s2.Files, s2.Logical, 2*len(data))
	}
	for _, name := range []string{"one", "copy/two"} {
		if v := storedXattr(t, p.path(name)); v <= 0 || v > int64(len(data)) {
			t.Errorf("user.glyd.stored of %s: %d", name, v)
		}
		wantBytes(t, p.path(name), data)
	}
	if v := storedXattr(t, p.path("copy")); v != 0 {
		t.Errorf("user.glyd.stored of a directory: %d", v)
	}
	writeFile(t, p.path("empty"), nil)
	if v := storedXattr(t, p.path("empty")); v != 0 {
		t.Errorf("user.glyd.stored of an empty file: %d", v)
	}
	// The counts survive a remount.
	p = p.remount()
	if s3 := rootStats(t, p.dir); s3.Stored != s2.Stored || s3.Files != 3 {
		t.Errorf("after a remount stats say %+v, before %+v", s3, s2)
	}
	p.unmount()
}

// TestGlydfsConcurrent: writers of their own files, readers of shared
// ones, a lister and two writers of disjoint halves of one file, all at
// once; then everything is checked, and again after a remount.
func TestGlydfsConcurrent(t *testing.T) {
	ft := newFuseTest(t)
	p := ft.startFG(ft.storeDir(), ft.mountDir())
	want := map[string][]byte{}
	var wantMu sync.Mutex
	pre := short(6, 3)
	for i := 0; i < pre; i++ {
		d := sample(100<<10+i*300<<10, uint64(100+i))
		writeFile(t, p.path(fmt.Sprintf("pre%d", i)), d)
		want[fmt.Sprintf("pre%d", i)] = d
	}
	const half = 2 << 20
	if err := os.WriteFile(p.path("shared"), nil, 0o644); err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	churned := make([]map[string][]byte, 2)
	errs := make(chan error, 100)
	stop := make(chan struct{})
	fail := func(format string, args ...any) {
		select {
		case errs <- fmt.Errorf(format, args...):
		default:
		}
	}
	writers, perWriter := short(4, 2), short(5, 3)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 77))
			dir := p.path(fmt.Sprintf("w%d", w))
			if err := os.Mkdir(dir, 0o755); err != nil {
				fail("%v", err)
				return
			}
			for i := 0; i < perWriter; i++ {
				name := fmt.Sprintf("w%d/f%d", w, i)
				data := sample(r.IntN(2<<20), uint64(w*1000+i))
				f, err := os.Create(p.path(name))
				if err != nil {
					fail("%v", err)
					return
				}
				for rest := data; len(rest) > 0; {
					n := min(len(rest), 1+r.IntN(300<<10))
					if _, err := f.Write(rest[:n]); err != nil {
						fail("%v", err)
						return
					}
					rest = rest[n:]
				}
				if i%2 == 0 {
					if err := f.Sync(); err != nil {
						fail("fsync %s: %v", name, err)
					}
				}
				if err := f.Close(); err != nil {
					fail("close %s: %v", name, err)
				}
				// Overwrite a stretch of an earlier file in place.
				if i > 0 {
					old := fmt.Sprintf("w%d/f%d", w, r.IntN(i))
					wantMu.Lock()
					cur := bytes.Clone(want[old])
					wantMu.Unlock()
					if len(cur) > 0 {
						off := r.IntN(len(cur))
						patch := sample(min(len(cur)-off, 70<<10), uint64(w*1000+i+500))
						f, err := os.OpenFile(p.path(old), os.O_RDWR, 0)
						if err != nil {
							fail("%v", err)
							return
						}
						if _, err := f.WriteAt(patch, int64(off)); err != nil {
							fail("%v", err)
						}
						f.Close()
						copy(cur[off:], patch)
						wantMu.Lock()
						want[old] = cur
						wantMu.Unlock()
					}
				}
				wantMu.Lock()
				want[name] = data
				wantMu.Unlock()
			}
		}(w)
	}
	// Two writers of the halves of one file, in 64 KiB-crossing pieces.
	for h := 0; h < 2; h++ {
		wg.Add(1)
		go func(h int) {
			defer wg.Done()
			f, err := os.OpenFile(p.path("shared"), os.O_RDWR, 0)
			if err != nil {
				fail("%v", err)
				return
			}
			defer f.Close()
			data := sample(half, uint64(900+h))
			r := rand.New(rand.NewPCG(uint64(h), 78))
			for _, i := range r.Perm(32) {
				lo := i * half / 32
				hi := (i + 1) * half / 32
				if _, err := f.WriteAt(data[lo:hi], int64(h*half+lo)); err != nil {
					fail("shared: %v", err)
					return
				}
			}
		}(h)
	}
	// Namespace churn: create, rename (within a directory, into a shared
	// one, over an existing name), hard-link and unlink, each goroutine
	// with its own names.
	if err := os.Mkdir(p.path("moved"), 0o755); err != nil {
		t.Fatal(err)
	}
	for c := 0; c < 2; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(c), 80))
			dir := fmt.Sprintf("churn%d", c)
			if err := os.Mkdir(p.path(dir), 0o755); err != nil {
				fail("%v", err)
				return
			}
			mine := map[string][]byte{}
			group := map[string]int{} // names of one inode share a group
			names := func() []string {
				var out []string
				for n := range mine {
					out = append(out, n)
				}
				sort.Strings(out)
				return out
			}
			for i := 0; i < short(120, 40); i++ {
				ns := names()
				switch k := r.IntN(10); {
				case k < 4 || len(ns) == 0:
					name := fmt.Sprintf("%s/c%d", dir, i)
					d := []byte(strings.Repeat(name+" ", 1+r.IntN(50)))
					if err := os.WriteFile(p.path(name), d, 0o644); err != nil {
						fail("%v", err)
						return
					}
					mine[name], group[name] = d, i
				case k < 6:
					from := ns[r.IntN(len(ns))]
					to := fmt.Sprintf("moved/%d-%d", c, i)
					if r.IntN(2) == 0 {
						to = fmt.Sprintf("%s/r%d", dir, i)
					}
					if r.IntN(3) == 0 { // over an existing name of ours
						to = ns[r.IntN(len(ns))]
					}
					if err := os.Rename(p.path(from), p.path(to)); err != nil {
						fail("rename %s %s: %v", from, to, err)
						return
					}
					if _, ok := mine[to]; ok && group[from] == group[to] && from != to {
						// Two links of one file: rename does nothing.
						continue
					}
					d, g := mine[from], group[from]
					delete(mine, from)
					delete(group, from)
					mine[to], group[to] = d, g
				case k < 7:
					from := ns[r.IntN(len(ns))]
					to := fmt.Sprintf("%s/l%d", dir, i)
					if err := os.Link(p.path(from), p.path(to)); err != nil {
						fail("link: %v", err)
						return
					}
					mine[to], group[to] = mine[from], group[from]
				default:
					name := ns[r.IntN(len(ns))]
					if err := os.Remove(p.path(name)); err != nil {
						fail("unlink: %v", err)
						return
					}
					delete(mine, name)
					delete(group, name)
				}
			}
			wantMu.Lock()
			for n, d := range mine {
				want[n] = d
			}
			churned[c] = mine
			wantMu.Unlock()
		}(c)
	}
	// Readers of the files made before, and a lister, until the writers end.
	var rg sync.WaitGroup
	for rd := 0; rd < short(3, 2); rd++ {
		rg.Add(1)
		go func(rd int) {
			defer rg.Done()
			r := rand.New(rand.NewPCG(uint64(rd), 79))
			for {
				select {
				case <-stop:
					return
				default:
				}
				i := r.IntN(pre)
				wantMu.Lock()
				d := want[fmt.Sprintf("pre%d", i)]
				wantMu.Unlock()
				f, err := os.Open(p.path(fmt.Sprintf("pre%d", i)))
				if err != nil {
					fail("%v", err)
					return
				}
				off := r.IntN(len(d))
				buf := make([]byte, min(len(d)-off, 1+r.IntN(200<<10)))
				if _, err := f.ReadAt(buf, int64(off)); err != nil || !bytes.Equal(buf, d[off:off+len(buf)]) {
					fail("pre%d at %d: %v, %s", i, off, err, firstDiff(buf, d[off:off+len(buf)]))
				}
				f.Close()
			}
		}(rd)
	}
	rg.Add(1)
	go func() {
		defer rg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			for w := 0; w < writers; w++ {
				es, _ := os.ReadDir(p.path(fmt.Sprintf("w%d", w)))
				for _, e := range es {
					os.Stat(p.path(fmt.Sprintf("w%d/%s", w, e.Name())))
				}
			}
			time.Sleep(time.Millisecond)
		}
	}()
	wg.Wait()
	close(stop)
	rg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	want["shared"] = append(sample(half, 900), sample(half, 901)...)
	// Nothing but the churners' files is left in their directories.
	checkOnlyChurned := func(when string) {
		t.Helper()
		got := map[string]bool{}
		for _, d := range []string{"churn0", "churn1", "moved"} {
			for _, n := range readDirNames(t, p.path(d)) {
				got[d+"/"+n] = true
			}
		}
		for c := range churned {
			for n := range churned[c] {
				if !got[n] {
					t.Errorf("%s: %s is missing", when, n)
				}
				delete(got, n)
			}
		}
		for n := range got {
			t.Errorf("%s: %s should not be there", when, n)
		}
	}
	check := func(when string) {
		t.Helper()
		for name, d := range want {
			got, err := os.ReadFile(p.path(name))
			if err != nil || !bytes.Equal(got, d) {
				t.Errorf("%s: %s: %d bytes, want %d: %v %s", when, name, len(got), len(d), err, firstDiff(got, d))
			}
		}
	}
	check("after the concurrent run")
	checkOnlyChurned("after the concurrent run")
	p = p.remount()
	check("after a remount")
	checkOnlyChurned("after a remount")
	p.unmount()
}

// TestGlydfsOpenUnlinked: a file unlinked while open stays readable and
// writable through its descriptor (nlink 0), and its content is freed at
// its last close, or at the next mount when glydfs was killed with it
// open.
func TestGlydfsOpenUnlinked(t *testing.T) {
	ft := newFuseTest(t)
	store, mnt := ft.storeDir(), ft.mountDir()
	p := ft.startFG(store, mnt)
	writeFile(t, p.path("keep"), []byte("kept\n"))
	base := rootStats(t, mnt)
	data := sample(3<<20, 41)
	use := func(name string) *os.File {
		t.Helper()
		f, err := os.OpenFile(p.path(name), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(p.path(name)); err != nil {
			t.Fatal(err)
		}
		if _, err := f.WriteAt([]byte("after unlink"), 100); err != nil {
			t.Fatal(err)
		}
		var st syscall.Stat_t
		if err := syscall.Fstat(int(f.Fd()), &st); err != nil || st.Nlink != 0 || st.Size != int64(len(data)) {
			t.Errorf("fstat of an unlinked open file: nlink %d size %d (%v)", st.Nlink, st.Size, err)
		}
		got := make([]byte, len(data))
		if _, err := f.ReadAt(got, 0); err != nil {
			t.Fatal(err)
		}
		want := bytes.Clone(data)
		copy(want[100:], "after unlink")
		if !bytes.Equal(got, want) {
			t.Errorf("an unlinked open file reads back wrong: %s", firstDiff(got, want))
		}
		if _, err := os.Stat(p.path(name)); errnoOf(err) != syscall.ENOENT {
			t.Errorf("an unlinked file can be found: %v", err)
		}
		return f
	}
	// Freed at the last close.
	f := use("gone")
	if st := rootStats(t, mnt); st.Files != base.Files {
		t.Errorf("stats count %d files with one unlinked, want %d", st.Files, base.Files)
	}
	f.Close()
	waitHistory := func(when string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		var st fsStats
		for {
			st = rootStats(t, mnt)
			if st.History == base.History || time.Now().After(deadline) {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		if st.History != base.History || st.Files != base.Files {
			t.Errorf("%s: stats say %d files, %d bytes of history; before the file: %d, %d", when, st.Files, st.History, base.Files, base.History)
		}
	}
	waitHistory("after the last close of an unlinked file")

	// glydfs killed while it is open: freed at the next mount.
	f = use("orphan")
	p.cmd.Process.Kill()
	p.waitExit(10 * time.Second)
	f.Close()
	forceUnmount(mnt)
	p = ft.startFG(store, mnt)
	waitHistory("after a crash with an unlinked file open")
	wantBytes(t, p.path("keep"), []byte("kept\n"))
	p.unmount()
}

// rawNames lists a directory with getdents64 itself (os.ReadDir and
// syscall.ParseDirent leave "." and ".." out).
func rawNames(t *testing.T, dir string) []string {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	var names []string
	buf := make([]byte, 8192)
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil {
			t.Fatal(err)
		}
		if n <= 0 {
			break
		}
		for b := buf[:n]; len(b) > 0; {
			reclen := int(b[16]) | int(b[17])<<8
			name := b[19:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			names = append(names, string(name))
			b = b[reclen:]
		}
	}
	sort.Strings(names)
	return names
}

// TestGlydfsReaddirDotEntries: readdir returns "." and ".." as ext4 does
// (ls -a shows them; so do tools that read directories themselves).
func TestGlydfsReaddirDotEntries(t *testing.T) {
	ft := newFuseTest(t)
	p := ft.startFG(ft.storeDir(), ft.mountDir())
	ext4 := t.TempDir()
	for _, root := range []string{ext4, p.dir} {
		if err := os.MkdirAll(filepath.Join(root, "d/sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(root, "d/f"), nil)
	}
	for _, dir := range []string{"d", "d/sub"} {
		w, g := rawNames(t, filepath.Join(ext4, dir)), rawNames(t, p.path(dir))
		if fmt.Sprint(w) != fmt.Sprint(g) {
			t.Errorf("getdents of %s: %q; ext4 %q", dir, g, w)
		}
	}
	p.unmount()
}

// TestGlydfsErrnosLikeExt4: operations that fail give the errno ext4 gives.
func TestGlydfsErrnosLikeExt4(t *testing.T) {
	ft := newFuseTest(t)
	p := ft.startFG(ft.storeDir(), ft.mountDir())
	setup := func(root string) {
		for _, d := range []string{"d/sub", "e"} {
			if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		writeFile(t, filepath.Join(root, "f"), []byte("x"))
		writeFile(t, filepath.Join(root, "d/g"), []byte("y"))
		if err := os.Symlink("f", filepath.Join(root, "s")); err != nil {
			t.Fatal(err)
		}
		if err := unix.Setxattr(filepath.Join(root, "f"), "user.have", []byte("12345"), 0); err != nil {
			t.Fatal(err)
		}
	}
	ext4 := t.TempDir()
	setup(ext4)
	setup(p.dir)
	long := strings.Repeat("n", 256)
	ops := []struct {
		name string
		fn   func(root string) error
	}{
		{"unlink a directory", func(r string) error { return syscall.Unlink(filepath.Join(r, "d")) }},
		{"rmdir a file", func(r string) error { return syscall.Rmdir(filepath.Join(r, "f")) }},
		{"rmdir a non-empty directory", func(r string) error { return syscall.Rmdir(filepath.Join(r, "d")) }},
		{"rmdir a missing name", func(r string) error { return syscall.Rmdir(filepath.Join(r, "missing")) }},
		{"mkdir over a file", func(r string) error { return syscall.Mkdir(filepath.Join(r, "f"), 0o755) }},
		{"O_CREAT|O_EXCL of an existing file", func(r string) error {
			fd, err := syscall.Open(filepath.Join(r, "f"), syscall.O_CREAT|syscall.O_EXCL|syscall.O_WRONLY, 0o644)
			if err == nil {
				syscall.Close(fd)
			}
			return err
		}},
		{"open a missing file", func(r string) error { _, err := os.Open(filepath.Join(r, "missing")); return err }},
		{"open below a file", func(r string) error { _, err := os.Open(filepath.Join(r, "f/x")); return err }},
		{"open a directory for writing", func(r string) error {
			_, err := os.OpenFile(filepath.Join(r, "d"), os.O_WRONLY, 0)
			return err
		}},
		{"a name too long", func(r string) error { return os.WriteFile(filepath.Join(r, long), nil, 0o644) }},
		{"mkdir a name too long", func(r string) error { return syscall.Mkdir(filepath.Join(r, long), 0o755) }},
		{"link a directory", func(r string) error { return os.Link(filepath.Join(r, "d"), filepath.Join(r, "d2")) }},
		{"link onto an existing name", func(r string) error { return os.Link(filepath.Join(r, "f"), filepath.Join(r, "d/g")) }},
		{"rename a directory over a file", func(r string) error {
			return syscall.Rename(filepath.Join(r, "e"), filepath.Join(r, "f"))
		}},
		{"rename a file over a directory", func(r string) error {
			return syscall.Rename(filepath.Join(r, "f"), filepath.Join(r, "e"))
		}},
		{"rename a directory into itself", func(r string) error {
			return syscall.Rename(filepath.Join(r, "d"), filepath.Join(r, "d/sub/x"))
		}},
		{"rename over a non-empty directory", func(r string) error {
			return syscall.Rename(filepath.Join(r, "e"), filepath.Join(r, "d"))
		}},
		{"rename a missing name", func(r string) error {
			return syscall.Rename(filepath.Join(r, "missing"), filepath.Join(r, "x"))
		}},
		{"RENAME_NOREPLACE over a name", func(r string) error {
			return unix.Renameat2(unix.AT_FDCWD, filepath.Join(r, "f"), unix.AT_FDCWD, filepath.Join(r, "d/g"), unix.RENAME_NOREPLACE)
		}},
		{"RENAME_EXCHANGE with a missing name", func(r string) error {
			return unix.Renameat2(unix.AT_FDCWD, filepath.Join(r, "f"), unix.AT_FDCWD, filepath.Join(r, "missing"), unix.RENAME_EXCHANGE)
		}},
		{"readlink of a file", func(r string) error { _, err := os.Readlink(filepath.Join(r, "f")); return err }},
		{"truncate a directory", func(r string) error { return syscall.Truncate(filepath.Join(r, "d"), 0) }},
		{"truncate to a negative size", func(r string) error { return syscall.Truncate(filepath.Join(r, "f"), -1) }},
		{"getxattr of a missing name", func(r string) error {
			_, err := unix.Getxattr(filepath.Join(r, "f"), "user.missing", make([]byte, 10))
			return err
		}},
		{"getxattr into a short buffer", func(r string) error {
			_, err := unix.Getxattr(filepath.Join(r, "f"), "user.have", make([]byte, 2))
			return err
		}},
		{"listxattr into a short buffer", func(r string) error {
			_, err := unix.Listxattr(filepath.Join(r, "f"), make([]byte, 2))
			return err
		}},
		{"removexattr of a missing name", func(r string) error { return unix.Removexattr(filepath.Join(r, "f"), "user.missing") }},
		{"XATTR_REPLACE of a missing name", func(r string) error {
			return unix.Setxattr(filepath.Join(r, "f"), "user.missing", []byte("1"), unix.XATTR_REPLACE)
		}},
		{"XATTR_CREATE of an existing name", func(r string) error {
			return unix.Setxattr(filepath.Join(r, "f"), "user.have", []byte("1"), unix.XATTR_CREATE)
		}},
		{"user xattr on a symlink", func(r string) error { return unix.Lsetxattr(filepath.Join(r, "s"), "user.x", []byte("1"), 0) }},
		{"write to a read-only descriptor", func(r string) error {
			f, err := os.Open(filepath.Join(r, "f"))
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = syscall.Write(int(f.Fd()), []byte("x"))
			return err
		}},
		{"ftruncate a read-only descriptor", func(r string) error {
			f, err := os.Open(filepath.Join(r, "f"))
			if err != nil {
				return err
			}
			defer f.Close()
			return syscall.Ftruncate(int(f.Fd()), 0)
		}},
		{"punch a hole without KEEP_SIZE", func(r string) error {
			f, err := os.OpenFile(filepath.Join(r, "f"), os.O_RDWR, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			return unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_PUNCH_HOLE, 0, 1)
		}},
		{"fallocate of length 0", func(r string) error {
			f, err := os.OpenFile(filepath.Join(r, "f"), os.O_RDWR, 0)
			if err != nil {
				return err
			}
			defer f.Close()
			return unix.Fallocate(int(f.Fd()), 0, 0, 0)
		}},
		{"read a directory", func(r string) error {
			f, err := os.Open(filepath.Join(r, "d"))
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = syscall.Read(int(f.Fd()), make([]byte, 10))
			return err
		}},
		{"mknod a fifo over a name", func(r string) error { return unix.Mkfifo(filepath.Join(r, "f"), 0o644) }},
		{"symlink over a name", func(r string) error { return os.Symlink("x", filepath.Join(r, "f")) }},
	}
	for _, op := range ops {
		we, ge := errnoOf(op.fn(ext4)), errnoOf(op.fn(p.dir))
		if we != ge {
			t.Errorf("%s: glydfs %v (%d), ext4 %v (%d)", op.name, ge, ge, we, we)
		}
		if we == 0 {
			t.Errorf("%s: succeeded on ext4; the test wants failures", op.name)
		}
	}
	compareLikeExt4(t, scanTree(t, ext4), scanTree(t, p.dir), false)
	p.unmount()
}

// --- helpers ---

var (
	glydfsOnce sync.Once
	glydfsBin  string
	glydfsErr  error
)

// buildGlydfs builds cmd/glydfs once per test process, beside the glyd
// binary TestMain built (and removes); GLYDFS_BIN names a binary to test
// instead (an instrumented build, say).
func buildGlydfs() (string, error) {
	glydfsOnce.Do(func() {
		if bin := os.Getenv("GLYDFS_BIN"); bin != "" {
			glydfsBin, glydfsErr = filepath.Abs(bin)
			return
		}
		bin := filepath.Join(filepath.Dir(glydBin), "glydfs")
		out, err := exec.Command("go", "build", "-o", bin, "github.com/glyd/glyd/cmd/glydfs").CombinedOutput()
		if err != nil {
			glydfsErr = fmt.Errorf("building glydfs: %v\n%s", err, out)
			return
		}
		glydfsBin = bin
	})
	return glydfsBin, glydfsErr
}

// fuseTest is one test that mounts glydfs: it knows every mount point the
// test used, and checks at the very end that none is still mounted.
type fuseTest struct {
	t    *testing.T
	mu   sync.Mutex
	mnts []string
}

// newFuseTest skips the test where FUSE cannot run (no /dev/fuse, no
// fusermount3), builds glydfs, and arranges the final leftover check.
func newFuseTest(t *testing.T) *fuseTest {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("no /dev/fuse: FUSE mounts cannot run here")
	}
	if _, err := exec.LookPath("fusermount3"); err != nil {
		t.Skip("fusermount3 is not installed")
	}
	noteOnce.Do(func() { noteSources("..") })
	if _, err := buildGlydfs(); err != nil {
		t.Fatal(err)
	}
	ft := &fuseTest{t: t}
	// Registered first, so it runs last: after every unmount cleanup.
	t.Cleanup(func() {
		ft.mu.Lock()
		defer ft.mu.Unlock()
		for _, m := range ft.mnts {
			if mounted(m) {
				t.Errorf("a glydfs mount was left behind on %s", m)
				forceUnmount(m)
			}
		}
	})
	return ft
}

// mountDir is a fresh, empty directory to mount on.
func (ft *fuseTest) mountDir() string {
	d := ft.t.TempDir()
	ft.mu.Lock()
	ft.mnts = append(ft.mnts, d)
	ft.mu.Unlock()
	return d
}

// storeDir is a path for a new store (not created: glydfs creates it).
func (ft *fuseTest) storeDir() string { return filepath.Join(ft.t.TempDir(), "store") }

// mountEntry is one line of /proc/self/mountinfo.
type mountEntry struct{ dir, fstype, source, opts string }

func mountTable() []mountEntry {
	var out []mountEntry
	for _, e := range mountinfo.Read() {
		opts := e.Options
		if e.Super != "" {
			opts += "," + e.Super
		}
		out = append(out, mountEntry{dir: e.Point, fstype: e.FSType, source: e.Source, opts: opts})
	}
	return out
}

// mountOf returns the mount on dir, if any.
func mountOf(dir string) (mountEntry, bool) {
	for _, e := range mountTable() {
		if e.dir == dir {
			return e, true
		}
	}
	return mountEntry{}, false
}

func mounted(dir string) bool { _, ok := mountOf(dir); return ok }

// forceUnmount gets rid of a mount however it can.
func forceUnmount(dir string) {
	for _, args := range [][]string{{"fusermount3", "-u", dir}, {"fusermount3", "-u", "-z", dir}, {"umount", "-l", dir}} {
		if !mounted(dir) {
			return
		}
		exec.Command(args[0], args[1:]...).Run()
	}
}

// syncBuffer collects a process's output while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// fsProc is one glydfs -f process serving a mount.
type fsProc struct {
	ft     *fuseTest
	store  string
	dir    string
	opts   []string
	cmd    *exec.Cmd
	stderr *syncBuffer
	done   chan struct{}
	err    error // from Wait, once done is closed
}

// startFG runs glydfs -f [opts] store mnt and waits until the mount
// answers; the mount goes away when the test ends.
func (ft *fuseTest) startFG(store, mnt string, opts ...string) *fsProc {
	ft.t.Helper()
	p, err := ft.tryStartFG(store, mnt, opts...)
	if err != nil {
		ft.t.Fatal(err)
	}
	return p
}

func (ft *fuseTest) tryStartFG(store, mnt string, opts ...string) (*fsProc, error) {
	args := append(append([]string{"-f"}, opts...), store, mnt)
	p := &fsProc{ft: ft, store: store, dir: mnt, opts: opts, stderr: &syncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(glydfsBin, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.stderr, p.stderr
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	ft.t.Cleanup(p.cleanup)
	deadline := time.Now().Add(30 * time.Second)
	for !mounted(mnt) {
		select {
		case <-p.done:
			return nil, fmt.Errorf("glydfs %s exited before mounting: %v\n%s", strings.Join(args, " "), p.err, p.stderr.String())
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("glydfs %s: no mount after 30s\n%s", strings.Join(args, " "), p.stderr.String())
		}
	}
	// glydfs -f says it is mounted once its signal handlers are in place
	// (a SIGINT before that would kill it and leave a dead mount).
	for wait := time.Now().Add(2 * time.Second); !strings.Contains(p.stderr.String(), "mounted on") && time.Now().Before(wait); {
		time.Sleep(2 * time.Millisecond)
	}
	// statfs waits for the FUSE handshake; the type must be FUSE's.
	var st syscall.Statfs_t
	if err := syscall.Statfs(mnt, &st); err != nil {
		return nil, fmt.Errorf("statfs %s: %v", mnt, err)
	}
	if st.Type != 0x65735546 {
		return nil, fmt.Errorf("%s is mounted with filesystem type %#x, not FUSE", mnt, st.Type)
	}
	return p, nil
}

func (p *fsProc) path(rel string) string { return filepath.Join(p.dir, rel) }

func (p *fsProc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// waitExit waits for the process; false when it still runs after d.
func (p *fsProc) waitExit(d time.Duration) bool {
	select {
	case <-p.done:
		return true
	case <-time.After(d):
		return false
	}
}

func (p *fsProc) exitCode() int {
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		return -1
	}
	return 0
}

// checkClean fails the test unless the process exited 0 without a panic
// and left no mount.
func (p *fsProc) checkClean(how string) {
	t := p.ft.t
	t.Helper()
	if !p.waitExit(30 * time.Second) {
		t.Fatalf("glydfs still runs 30s after %s\n%s", how, p.stderr.String())
	}
	if c := p.exitCode(); c != 0 {
		t.Errorf("glydfs exited with %v after %s\n%s", p.err, how, p.stderr.String())
	}
	if s := p.stderr.String(); strings.Contains(s, "panic:") || strings.Contains(s, "goroutine ") || strings.Contains(s, "DATA RACE") {
		t.Errorf("glydfs output after %s:\n%s", how, s)
	}
	if mounted(p.dir) {
		t.Errorf("%s is still mounted after %s", p.dir, how)
	}
}

// unmount runs fusermount3 -u and expects glydfs to exit 0.
func (p *fsProc) unmount() {
	t := p.ft.t
	t.Helper()
	var out []byte
	var err error
	// A file closed just now may still be released: retry briefly on EBUSY.
	for i := 0; i < 50; i++ {
		out, err = exec.Command("fusermount3", "-u", p.dir).CombinedOutput()
		if err == nil || !bytes.Contains(out, []byte("busy")) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("fusermount3 -u %s: %v: %s", p.dir, err, out)
	}
	p.checkClean("fusermount3 -u")
}

// cleanup unmounts whatever is left (the test may have failed midway) and
// stops the process.
func (p *fsProc) cleanup() {
	if !p.exited() || mounted(p.dir) {
		// Busy (a failed test left files open): detach it lazily, and
		// stop glydfs if it keeps serving the open files.
		if exec.Command("fusermount3", "-u", p.dir).Run() != nil {
			forceUnmount(p.dir)
		}
		if !p.waitExit(5 * time.Second) {
			p.cmd.Process.Kill()
			p.waitExit(10 * time.Second)
		}
		forceUnmount(p.dir)
	}
	if p.ft.t.Failed() {
		p.ft.t.Logf("glydfs %s output:\n%s", p.dir, p.stderr.String())
	}
}

// remount unmounts p and mounts its store again on the same directory
// with the same options.
func (p *fsProc) remount() *fsProc {
	p.ft.t.Helper()
	p.unmount()
	return p.ft.startFG(p.store, p.dir, p.opts...)
}

// detached runs glydfs without -f (it detaches once the mount is ready),
// with its log in a directory of the test's, and returns what it printed
// and its exit status. The daemon is unmounted when the test ends.
func (ft *fuseTest) detached(args ...string) (stderr string, code int, logFile string) {
	ft.t.Helper()
	tmp := ft.t.TempDir()
	cmd := exec.Command(glydfsBin, args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		ft.t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		ft.t.Fatalf("glydfs %v did not return in 60s", args)
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		ft.t.Fatal(err)
	}
	if len(args) > 0 {
		mnt := args[len(args)-1]
		ft.t.Cleanup(func() {
			if mounted(mnt) {
				forceUnmount(mnt)
			}
			waitDaemonGone(mnt, 10*time.Second)
		})
	}
	return out.String(), code, filepath.Join(tmp, "glydfs.log")
}

// daemonPids finds the glydfs processes serving mnt (detached ones are no
// children of the test: they are found by their command line).
func daemonPids(mnt string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cl, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || len(cl) == 0 {
			continue
		}
		args := strings.Split(strings.TrimSuffix(string(cl), "\x00"), "\x00")
		if args[0] != glydfsBin || args[len(args)-1] != mnt {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if i := bytes.LastIndexByte(st, ')'); i > 0 && i+2 < len(st) && st[i+2] == 'Z' {
				continue // exited; nobody reaps it here
			}
		}
		pids = append(pids, pid)
	}
	return pids
}

// waitDaemonGone waits until no glydfs process serves mnt.
func waitDaemonGone(mnt string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for len(daemonPids(mnt)) > 0 {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

// errnoOf is the errno inside err (0 for nil, -1 for an error without one).
func errnoOf(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	return ^syscall.Errno(0)
}

// realData returns n bytes of real text (the project corpus when it is
// there, else generated text and noise), starting at off in the corpus.
func realData(n int, off int64) []byte {
	root := os.Getenv("GLYD_CORPUS")
	if root == "" {
		root = filepath.Join("..", "..", "shared", "corpus")
	}
	if f, err := os.Open(filepath.Join(root, "text", "debian-dep11-Components.yml")); err == nil {
		defer f.Close()
		b := make([]byte, n)
		if m, _ := f.ReadAt(b, off); m == n {
			return b
		}
	}
	return sample(n, uint64(off)+100)
}

// short picks a smaller number under -short.
func short(normal, small int) int {
	if testing.Short() {
		return small
	}
	return normal
}
