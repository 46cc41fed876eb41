package fs

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/glyd/glyd/chunkstore"
	"github.com/glyd/glyd/internal/mountinfo"
)

// testMount is one real FUSE mount of a fresh (or given) store.
type testMount struct {
	t     *testing.T
	store string
	dir   string
	fsys  *FS
	srv   *fuse.Server
	st    *chunkstore.Store
}

// fuseAvailable skips the test where FUSE cannot mount (no /dev/fuse).
func fuseAvailable(t testing.TB) {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("no /dev/fuse: FUSE mounts cannot run here")
	}
}

// mountStore mounts the store in dir (creating it when new) at a fresh
// mount point; the mount goes away when the test ends, failed or not.
func mountStore(t *testing.T, storeDir string, opts Options) *testMount {
	t.Helper()
	fuseAvailable(t)
	var st *chunkstore.Store
	var err error
	if _, statErr := os.Stat(filepath.Join(storeDir, "MANIFEST")); statErr == nil {
		st, err = chunkstore.Open(storeDir, chunkstore.Options{ReadOnly: opts.ReadOnly})
	} else {
		st, err = chunkstore.Init(storeDir, chunkstore.Options{})
	}
	if err != nil {
		t.Fatal(err)
	}
	f, err := New(st, opts)
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	mnt := t.TempDir()
	srv, err := Mount(mnt, f, MountOptions{Debug: os.Getenv("GLYDFS_DEBUG") != ""})
	if err != nil {
		st.Close()
		t.Fatal(err)
	}
	m := &testMount{t: t, store: storeDir, dir: mnt, fsys: f, srv: srv, st: st}
	t.Cleanup(m.unmount)
	return m
}

func newMount(t *testing.T) *testMount {
	return mountStore(t, filepath.Join(t.TempDir(), "store"), DefaultOptions())
}

// unmount unmounts (lazily if busy), commits and closes the store.
func (m *testMount) unmount() {
	if m.srv == nil {
		return
	}
	if err := m.srv.Unmount(); err != nil {
		exec.Command("fusermount3", "-u", "-z", m.dir).Run()
		exec.Command("umount", "-l", m.dir).Run()
	}
	m.srv.Wait()
	m.srv = nil
	if err := m.fsys.SyncAll(); err != nil {
		m.t.Errorf("sync at unmount: %v", err)
	}
	m.st.Close()
	if mounted(m.dir) {
		m.t.Errorf("%s is still mounted", m.dir)
	}
}

// remount unmounts and mounts the same store again.
func (m *testMount) remount() *testMount {
	m.unmount()
	return mountStore(m.t, m.store, DefaultOptions())
}

func (m *testMount) path(p string) string { return filepath.Join(m.dir, p) }

// mounted reports whether dir is a mount point.
func mounted(dir string) bool { return mountinfo.Mounted(dir) }
