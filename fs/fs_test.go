package fs

import (
	"bytes"
	"errors"
	"fmt"
	"log"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	badger "github.com/dgraph-io/badger/v4"
	"golang.org/x/sys/unix"

	"github.com/glyd/glyd/chunkstore"
)

// text returns n bytes of compressible, varied pseudo-text.
func text(seed int64, n int) []byte {
	r := rand.New(rand.NewSource(seed))
	words := strings.Fields("the quick brown fox jumps over a lazy dog while glyd stores chunks of data written once and read many times")
	var b bytes.Buffer
	for b.Len() < n {
		fmt.Fprintf(&b, "%s %d ", words[r.Intn(len(words))], r.Intn(1000))
	}
	return b.Bytes()[:n]
}

func mustWrite(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func mustEqual(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: %d bytes differ from the %d expected", path, len(got), len(want))
	}
}

func usage(t *testing.T, m *testMount) chunkstore.Usage {
	t.Helper()
	u, err := m.st.Usage()
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// A 4 KiB write into the middle of a large file stores the one or two
// chunks it touches, not the file again.
func TestSmallWriteRechunksOnlyTouchedChunks(t *testing.T) {
	m := newMount(t)
	data := text(1, 24<<20)
	mustWrite(t, m.path("big"), data)
	before := usage(t, m)
	f, err := os.OpenFile(m.path("big"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	patch := bytes.Repeat([]byte{'X'}, 4096)
	if _, err := f.WriteAt(patch, 12<<20+777); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	copy(data[12<<20+777:], patch)
	mustEqual(t, m.path("big"), data)
	after := usage(t, m)
	if added := after.Chunks + int(after.Garbage/1) - before.Chunks; after.Chunks-before.Chunks > 3 {
		t.Errorf("a 4 KiB write added %d chunks (%d)", after.Chunks-before.Chunks, added)
	}
	m = m.remount()
	mustEqual(t, m.path("big"), data)
}

// Sparse files past 4 GiB: holes take no space and read as zeros.
func TestSparseFileBeyond4GiB(t *testing.T) {
	m := newMount(t)
	f, err := os.Create(m.path("sparse"))
	if err != nil {
		t.Fatal(err)
	}
	const size = 6 << 30
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	blob := text(2, 100000)
	off := int64(5<<30 + 12345)
	if _, err := f.WriteAt(blob, off); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	check := func(m *testMount) {
		f, err := os.Open(m.path("sparse"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		fi, _ := f.Stat()
		if fi.Size() != size {
			t.Fatalf("size %d, want %d", fi.Size(), int64(size))
		}
		if blocks := fi.Sys().(*syscall.Stat_t).Blocks * 512; blocks > 1<<20 {
			t.Errorf("a sparse file reports %d bytes allocated", blocks)
		}
		got := make([]byte, len(blob)+2000)
		if _, err := f.ReadAt(got, off-1000); err != nil {
			t.Fatal(err)
		}
		want := append(append(make([]byte, 1000), blob...), make([]byte, 1000)...)
		if !bytes.Equal(got, want) {
			t.Fatal("data around the written stretch differs")
		}
		zero := make([]byte, 1<<20)
		if _, err := f.ReadAt(zero, 3<<30); err != nil || !bytes.Equal(zero, make([]byte, 1<<20)) {
			t.Fatalf("hole does not read as zeros (%v)", err)
		}
	}
	check(m)
	if u := usage(t, m); u.Stored > 1<<20 {
		t.Errorf("stored %d bytes for 100 kB of data in a hole", u.Stored)
	}
	check(m.remount())
}

// Writes past the staging bound spill to disk and still commit exactly.
func TestStagingSpills(t *testing.T) {
	opts := DefaultOptions()
	opts.StagingMemory = 1 << 20
	m := mountStore(t, filepath.Join(t.TempDir(), "store"), opts)
	data := text(3, 9<<20)
	f, err := os.Create(m.path("f"))
	if err != nil {
		t.Fatal(err)
	}
	for off := 0; off < len(data); off += 300000 {
		if _, err := f.Write(data[off:min(len(data), off+300000)]); err != nil {
			t.Fatal(err)
		}
	}
	// Rewrite a stretch that was spilled.
	if _, err := f.WriteAt(bytes.Repeat([]byte("y"), 5000), 100); err != nil {
		t.Fatal(err)
	}
	copy(data[100:], bytes.Repeat([]byte("y"), 5000))
	got := make([]byte, len(data))
	if _, err := f.ReadAt(got, 0); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("staged read differs (%v)", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	mustEqual(t, m.path("f"), data)
	if n := atomic.LoadInt64(&m.fsys.stagedMem); n != 0 {
		t.Errorf("%d bytes of staged pages left after the commit", n)
	}
}

// Only the last Versions versions stay.
func TestVersionRetention(t *testing.T) {
	opts := DefaultOptions()
	opts.Versions = 3
	m := mountStore(t, filepath.Join(t.TempDir(), "store"), opts)
	for i := 1; i <= 5; i++ {
		mustWrite(t, m.path("f"), []byte(fmt.Sprintf("version %d\n", i)))
	}
	ents, err := os.ReadDir(m.path(".glyd/versions/f"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if strings.Join(names, ",") != "3,4,5" {
		t.Fatalf("versions %v, want 3,4,5", names)
	}
	mustEqual(t, m.path(".glyd/versions/f/4"), []byte("version 4\n"))
	if err := os.WriteFile(m.path(".glyd/versions/f/4"), nil, 0); err == nil {
		t.Error("a version is writable")
	}
}

// A file unlinked while open lives until its last close, and is freed at
// the next mount when glydfs stopped before that.
func TestOpenUnlinked(t *testing.T) {
	m := newMount(t)
	f, err := os.Create(m.path("gone"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(m.path("gone")); err != nil {
		t.Fatal(err)
	}
	data := text(4, 200000)
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(data))
	if _, err := f.ReadAt(got, 0); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("read of an unlinked file: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(m.path("gone")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("stat after unlink: %v", err)
	}
	// An orphan left by a crash (simulated: the key written, the inode
	// kept) is freed by the next New.
	var orphan uint64
	err = m.st.Update(func(txn *badger.Txn) error {
		orphan = 1 << 40
		a := attr{Mode: syscall.S_IFREG | 0o644}
		if err := txn.Set(live.inodeKey(orphan), a.encode()); err != nil {
			return err
		}
		return txn.Set(orphanKey(orphan), nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	m = m.remount()
	if _, err := m.fsys.loadAttr(live, orphan); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("orphan inode still there after remount: %v", err)
	}
}

// damageChunk flips a byte in the stored frame of the middle chunk of
// inode ino's current content, in the (unmounted) store at dir, and returns
// the inode's attributes.
func damageChunk(t *testing.T, dir string, ino uint64) attr {
	t.Helper()
	st, err := chunkstore.Open(dir, chunkstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	f, err := New(st, DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	in, err := f.getInode(ino)
	if err != nil {
		t.Fatal(err)
	}
	o, err := st.OpenObject(contentNameOf(in.ino, &in.attr))
	if err != nil {
		t.Fatal(err)
	}
	refs := o.Refs()
	victim := refs[len(refs)/2].ID
	err = st.Update(func(txn *badger.Txn) error {
		it, err := txn.Get(append([]byte("b/"), victim[:]...))
		if err != nil {
			return err
		}
		frame, _ := it.ValueCopy(nil)
		frame[len(frame)/2] ^= 0x55
		return txn.Set(append([]byte("b/"), victim[:]...), frame)
	})
	if err != nil {
		t.Fatal(err)
	}
	return in.attr
}

// A damaged chunk gives EIO and a log line naming the file, never bytes.
func TestDamagedChunkIsEIO(t *testing.T) {
	m := newMount(t)
	data := text(5, 3<<20)
	mustWrite(t, m.path("victim"), data)
	m.unmount()
	damageChunk(t, m.store, 2)

	var logged bytes.Buffer
	var mu sync.Mutex
	opts := DefaultOptions()
	opts.Logger = log.New(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return logged.Write(p)
	}), "", 0)
	m2 := mountStore(t, m.store, opts)
	_, err := os.ReadFile(m2.path("victim"))
	if !errors.Is(err, syscall.EIO) {
		t.Fatalf("reading a damaged file: %v, want EIO", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(logged.String(), "victim at offset") {
		t.Errorf("log does not name the file and offset: %q", logged.String())
	}
}

type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// rename(2) flags: RENAME_NOREPLACE and RENAME_EXCHANGE.
func TestRenameFlags(t *testing.T) {
	m := newMount(t)
	mustWrite(t, m.path("a"), []byte("A"))
	os.Mkdir(m.path("d"), 0o755)
	mustWrite(t, m.path("d/b"), []byte("B"))
	if err := unix.Renameat2(unix.AT_FDCWD, m.path("a"), unix.AT_FDCWD, m.path("d/b"), unix.RENAME_NOREPLACE); !errors.Is(err, syscall.EEXIST) {
		t.Fatalf("RENAME_NOREPLACE over a file: %v", err)
	}
	if err := unix.Renameat2(unix.AT_FDCWD, m.path("a"), unix.AT_FDCWD, m.path("d/b"), unix.RENAME_EXCHANGE); err != nil {
		t.Fatal(err)
	}
	mustEqual(t, m.path("a"), []byte("B"))
	mustEqual(t, m.path("d/b"), []byte("A"))
	// Exchange a directory with a file across directories: link counts.
	os.Mkdir(m.path("sub"), 0o755)
	if err := unix.Renameat2(unix.AT_FDCWD, m.path("sub"), unix.AT_FDCWD, m.path("d/b"), unix.RENAME_EXCHANGE); err != nil {
		t.Fatal(err)
	}
	var root, d unix.Stat_t
	unix.Stat(m.dir, &root)
	unix.Stat(m.path("d"), &d)
	if root.Nlink != 3 || d.Nlink != 3 {
		t.Errorf("link counts after exchange: root %d (want 3), d %d (want 3)", root.Nlink, d.Nlink)
	}
	m = m.remount()
	mustEqual(t, m.path("sub"), []byte("A"))
	if fi, err := os.Stat(m.path("d/b")); err != nil || !fi.IsDir() {
		t.Fatalf("d/b after exchange: %v", err)
	}
}

// setgid directories pass their group on; modes are the kernel's (its
// umask already applied), not masked again.
func TestCreateModes(t *testing.T) {
	m := newMount(t)
	old := syscall.Umask(0o027)
	defer syscall.Umask(old)
	if err := os.Mkdir(m.path("g"), 0o777); err != nil {
		t.Fatal(err)
	}
	// (os.Chmod takes os.ModeSetgid, not the 0o2000 bit.)
	if err := os.Chmod(m.path("g"), os.ModeSetgid|0o775); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(m.path("g"), 0, 1234); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, m.path("g/f"), nil)
	os.Mkdir(m.path("g/sub"), 0o777)
	var f, sub unix.Stat_t
	unix.Stat(m.path("g/f"), &f)
	unix.Stat(m.path("g/sub"), &sub)
	if f.Gid != 1234 || sub.Gid != 1234 || sub.Mode&syscall.S_ISGID == 0 {
		t.Errorf("setgid dir: file gid %d, subdir gid %d mode %o", f.Gid, sub.Gid, sub.Mode)
	}
	if f.Mode&0o777 != 0o640 {
		t.Errorf("file mode %o, want 640 (0666 under umask 027)", f.Mode&0o777)
	}
}

// statfs reports the disk under the store.
func TestStatfs(t *testing.T) {
	m := newMount(t)
	var st unix.Statfs_t
	if err := unix.Statfs(m.dir, &st); err != nil {
		t.Fatal(err)
	}
	if st.Blocks == 0 || st.Bsize == 0 || st.Namelen != 255 {
		t.Errorf("statfs: %+v", st)
	}
}

// Files written through the mount dedup against each other.
func TestDedupAcrossFiles(t *testing.T) {
	m := newMount(t)
	data := text(6, 8<<20)
	mustWrite(t, m.path("one"), data)
	u1 := usage(t, m)
	mustWrite(t, m.path("two"), data)
	u2 := usage(t, m)
	if grew := u2.Stored - u1.Stored; grew > u1.Stored/20 {
		t.Errorf("a copy of an 8 MiB file stored %d more bytes (first: %d)", grew, u1.Stored)
	}
	v, err := unix.Getxattr(m.path("two"), xattrStored, make([]byte, 64))
	if err != nil || v == 0 {
		t.Errorf("user.glyd.stored: %v", err)
	}
}

// Snapshots freeze the tree; removing one frees its names.
func TestSnapshots(t *testing.T) {
	m := newMount(t)
	os.MkdirAll(m.path("a/b"), 0o755)
	mustWrite(t, m.path("a/b/f"), []byte("before"))
	os.Symlink("b/f", m.path("a/link"))
	if err := os.Mkdir(m.path(".snapshots/s1"), 0o755); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, m.path("a/b/f"), []byte("after"))
	os.Remove(m.path("a/link"))
	mustEqual(t, m.path(".snapshots/s1/a/b/f"), []byte("before"))
	if target, err := os.Readlink(m.path(".snapshots/s1/a/link")); err != nil || target != "b/f" {
		t.Errorf("snapshot symlink: %q %v", target, err)
	}
	if err := os.WriteFile(m.path(".snapshots/s1/a/b/f"), nil, 0); err == nil {
		t.Error("a snapshot file is writable")
	}
	ents, _ := os.ReadDir(m.dir)
	for _, e := range ents {
		if e.Name() == ".snapshots" || e.Name() == ".glyd" {
			t.Errorf("readdir of the root lists %s", e.Name())
		}
	}
	m = m.remount()
	mustEqual(t, m.path(".snapshots/s1/a/b/f"), []byte("before"))
	mustEqual(t, m.path("a/b/f"), []byte("after"))
	hist := usage(t, m).Logical
	if err := os.Remove(m.path(".snapshots/s1")); err != nil {
		t.Fatal(err)
	}
	if usage(t, m).Logical >= hist {
		t.Error("removing the snapshot left its content names")
	}
	if _, err := os.Stat(m.path(".snapshots/s1")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("snapshot still there: %v", err)
	}
	if _, err := m.st.GC(); err != nil {
		t.Fatal(err)
	}
	mustEqual(t, m.path("a/b/f"), []byte("after"))
}

// Attributes set on a file while its writes are staged (what tar does to
// every file it unpacks: write, then chown, chmod and utimes before
// close) wait for the commit that stores the bytes; they survive a
// remount, and so do those set on an open file with nothing staged, which
// go in at once.
func TestAttributesSetWhileStaged(t *testing.T) {
	m := newMount(t)
	mtime := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	f, err := os.OpenFile(m.path("staged"), os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write([]byte("staged bytes\n")); err != nil {
		t.Fatal(err)
	}
	if err := f.Chown(1234, 5678); err != nil {
		t.Fatal(err)
	}
	if err := f.Chmod(0o751); err != nil {
		t.Fatal(err)
	}
	if err := unix.Futimes(int(f.Fd()), []unix.Timeval{unix.NsecToTimeval(mtime.UnixNano()), unix.NsecToTimeval(mtime.UnixNano())}); err != nil {
		t.Fatal(err)
	}
	check := func(name string, mode os.FileMode, uid, gid uint32, size int64) {
		t.Helper()
		fi, err := os.Stat(m.path(name))
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if fi.Mode().Perm() != mode || st.Uid != uid || st.Gid != gid || !fi.ModTime().Equal(mtime) || fi.Size() != size {
			t.Errorf("%s: mode %v uid %d gid %d mtime %v size %d, want %v %d %d %v %d",
				name, fi.Mode().Perm(), st.Uid, st.Gid, fi.ModTime().UTC(), fi.Size(), mode, uid, gid, mtime, size)
		}
	}
	check("staged", 0o751, 1234, 5678, 13) // seen at once, before the commit
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	// An open handle with nothing staged: the change is written at once.
	mustWrite(t, m.path("clean"), []byte("x"))
	g, err := os.OpenFile(m.path("clean"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if err := g.Chmod(0o604); err != nil {
		t.Fatal(err)
	}
	if err := g.Chown(42, 43); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(m.path("clean"), mtime, mtime); err != nil {
		t.Fatal(err)
	}
	// Its close commits nothing (nothing was written), so the changes
	// are in the store only if Setattr wrote them.
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	m = m.remount()
	check("staged", 0o751, 1234, 5678, 13)
	mustEqual(t, m.path("staged"), []byte("staged bytes\n"))
	check("clean", 0o604, 42, 43, 1)
}

// Page buffers are recycled between files: a page that a write fills only
// in part reads as zeros (or as the file's committed bytes) everywhere
// else, whatever its buffer held before.
func TestRecycledPagesReadZeros(t *testing.T) {
	m := newMount(t)
	junk := bytes.Repeat([]byte{0xAA}, 4*pageSize)
	for i := range 4 {
		mustWrite(t, m.path(fmt.Sprintf("junk%d", i)), junk)
	}
	// Sparse writes into a new file: the pages they land in are partly new.
	f, err := os.Create(m.path("sparse"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := make([]byte, 3*pageSize+404)
	for _, off := range []int{100, pageSize + 7, 3*pageSize + 400} {
		if _, err := f.WriteAt([]byte("data"), int64(off)); err != nil {
			t.Fatal(err)
		}
		copy(want[off:], "data")
	}
	got := make([]byte, len(want))
	if _, err := f.ReadAt(got, 0); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("staged sparse file differs from the model (%v)", err)
	}
	f.Close()
	mustEqual(t, m.path("sparse"), want)
	// A punched page written in part, and a committed file grown by a
	// partial write past its end.
	mustWrite(t, m.path("junk0"), junk) // recycles pages again
	p, err := os.OpenFile(m.path("junk1"), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := unix.Fallocate(int(p.Fd()), unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, pageSize, pageSize); err != nil {
		t.Fatal(err)
	}
	if _, err := p.WriteAt([]byte("x"), pageSize+10); err != nil {
		t.Fatal(err)
	}
	if _, err := p.WriteAt([]byte("end"), int64(len(junk))+5); err != nil {
		t.Fatal(err)
	}
	p.Close()
	wantP := append(bytes.Clone(junk), make([]byte, 8)...)
	clear(wantP[pageSize : 2*pageSize])
	wantP[pageSize+10] = 'x'
	copy(wantP[len(junk)+5:], "end")
	mustEqual(t, m.path("junk1"), wantP)
	m = m.remount()
	mustEqual(t, m.path("junk1"), wantP)
	mustEqual(t, m.path("sparse"), want)
}

// A file made by this mount answers getxattr from memory until it is
// given an attribute; from then on the store answers.
func TestXattrsOfNewFiles(t *testing.T) {
	m := newMount(t)
	mustWrite(t, m.path("f"), []byte("x"))
	buf := make([]byte, 64)
	if _, err := unix.Getxattr(m.path("f"), "user.a", buf); err != unix.ENODATA {
		t.Fatalf("getxattr of a new file: %v, want ENODATA", err)
	}
	if err := unix.Setxattr(m.path("f"), "user.a", []byte("1"), unix.XATTR_REPLACE); err != unix.ENODATA {
		t.Fatalf("replacing a missing attribute: %v, want ENODATA", err)
	}
	if err := unix.Setxattr(m.path("f"), "user.a", []byte("value"), 0); err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		n, err := unix.Getxattr(m.path("f"), "user.a", buf)
		if err != nil || string(buf[:n]) != "value" {
			t.Fatalf("round %d: getxattr %q, %v", round, buf[:n], err)
		}
		m = m.remount()
	}
	if err := os.Mkdir(m.path("d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(m.path("d"), "user.b", []byte("2"), 0); err != nil {
		t.Fatal(err)
	}
	if n, err := unix.Getxattr(m.path("d"), "user.b", buf); err != nil || string(buf[:n]) != "2" {
		t.Fatalf("directory: getxattr %q, %v", buf[:n], err)
	}
}
