package tests

// Kill -9 durability: glydfs is killed at random instants while a writer
// creates, overwrites, saves (write, fsync, rename), appends, truncates
// and removes files; the store is mounted again and every file checked.
//
// What each check rests on:
//
//   - A file whose fsync returned is promised by glydfs: fsync commits the
//     file as a new version and syncs the store before it returns, so it
//     survives even a power cut. A process kill, which is all a test can
//     do, is a weaker crash, so this checks the promise only in part.
//   - A file that was closed (or changed by rename, unlink or truncate)
//     without fsync is committed into the store by the close (flush), but
//     not synced: a power cut may lose it. A process kill may not, since
//     what glydfs wrote to its files is in the kernel's page cache, which
//     outlives the process. So these must be intact too, here.
//   - The file being changed when glydfs died may hold any version glydfs
//     committed (its content before or after the change, never a mix), or
//     may be missing if it was being created.

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// crashFile is a file's settled content and the promise it rests on.
type crashFile struct {
	data []byte
	how  string
}

// crashOp is the change under way: the contents its file may hold after
// a crash (nil: missing).
type crashOp struct {
	desc    string
	path    string
	allowed [][]byte
}

type crashWriter struct {
	mnt   string
	round int
	r     *rand.Rand

	mu      sync.Mutex
	files   map[string]crashFile
	ignore  map[string]bool // temporary files: any content, or none
	pending *crashOp
	ops     int
	err     error // the error that stopped it
}

func (w *crashWriter) settle(path string, data []byte, how string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if data == nil {
		delete(w.files, path)
	} else {
		w.files[path] = crashFile{data: data, how: how}
	}
}

func (w *crashWriter) begin(desc, path string, allowed ...[]byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pending = &crashOp{desc: desc, path: path, allowed: allowed}
}

func (w *crashWriter) allow(allowed ...[]byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pending.allowed = allowed
}

func (w *crashWriter) done() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pending = nil
	w.ops++
}

// pick returns a settled file of this round (or any round), if there is
// one.
func (w *crashWriter) pick(thisRound bool) (string, []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var names []string
	prefix := fmt.Sprintf("r%d/", w.round)
	for name := range w.files {
		if !thisRound || strings.HasPrefix(name, prefix) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return "", nil
	}
	sort.Strings(names)
	name := names[w.r.IntN(len(names))]
	return name, w.files[name].data
}

func (w *crashWriter) size() int {
	r := w.r.IntN(100)
	switch {
	case r < 10:
		return 0
	case r < 70:
		return w.r.IntN(64 << 10)
	case r < 95:
		return w.r.IntN(1 << 20)
	default:
		return w.r.IntN(3 << 20)
	}
}

// writeNew creates path with data in pieces, fsyncing when asked; it
// settles the file as it goes.
func (w *crashWriter) writeNew(path string, data []byte, fsync bool) error {
	f, err := os.OpenFile(filepath.Join(w.mnt, path), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	// Created: the entry is committed, with nothing in it yet.
	w.allow([]byte{}, data)
	for rest := data; len(rest) > 0; {
		n := min(len(rest), 1+w.r.IntN(256<<10))
		if _, err := f.Write(rest[:n]); err != nil {
			return err
		}
		rest = rest[n:]
	}
	if fsync {
		if err := f.Sync(); err != nil {
			return err
		}
		w.settle(path, data, "fsync")
		w.allow(data)
	}
	if err := f.Close(); err != nil {
		return err
	}
	if !fsync {
		w.settle(path, data, "close")
	}
	return nil
}

func (w *crashWriter) step(i int) error {
	k := w.r.IntN(100)
	fsync := w.r.IntN(2) == 0
	switch {
	case k < 40: // a new file
		path := fmt.Sprintf("r%d/n%04d", w.round, i)
		data := opData(w.r.Uint64(), int64(w.size()))
		w.begin("creating "+path, path, nil, []byte{}, data)
		return w.writeNew(path, data, fsync)
	case k < 60: // overwrite part of a file in place
		path, old := w.pick(false)
		if path == "" {
			return nil
		}
		off := w.r.IntN(len(old) + 1)
		patch := opData(w.r.Uint64(), int64(1+w.r.IntN(200<<10)))
		nw := bytes.Clone(old)
		if end := off + len(patch); end > len(nw) {
			nw = append(nw, make([]byte, end-len(nw))...)
		}
		copy(nw[off:], patch)
		w.begin(fmt.Sprintf("overwriting %s at %d", path, off), path, old, nw)
		f, err := os.OpenFile(filepath.Join(w.mnt, path), os.O_RDWR, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		if _, err := f.WriteAt(patch, int64(off)); err != nil {
			return err
		}
		if fsync {
			if err := f.Sync(); err != nil {
				return err
			}
			w.settle(path, nw, "fsync")
			w.allow(nw)
		}
		if err := f.Close(); err != nil {
			return err
		}
		if !fsync {
			w.settle(path, nw, "close")
		}
	case k < 75: // save: write a temporary file, fsync, rename over the target
		target := fmt.Sprintf("save%d", w.r.IntN(3))
		tmp := fmt.Sprintf("r%d/tmp%04d", w.round, i)
		w.mu.Lock()
		old, had := w.files[target]
		w.ignore[tmp] = true
		w.mu.Unlock()
		var oldData []byte
		if had {
			oldData = old.data
		}
		data := opData(w.r.Uint64(), int64(w.size()))
		w.begin("saving "+target, target, oldData, data)
		if err := w.writeNewIgnored(tmp, data); err != nil {
			return err
		}
		if err := os.Rename(filepath.Join(w.mnt, tmp), filepath.Join(w.mnt, target)); err != nil {
			return err
		}
		w.settle(target, data, "fsync+rename")
	case k < 85: // remove a file
		path, old := w.pick(true)
		if path == "" {
			return nil
		}
		w.begin("removing "+path, path, old, nil)
		if err := os.Remove(filepath.Join(w.mnt, path)); err != nil {
			return err
		}
		w.settle(path, nil, "")
	case k < 95: // append a line to a log
		w.mu.Lock()
		old := w.files["log"].data
		w.mu.Unlock()
		line := []byte(fmt.Sprintf("round %d op %d\n", w.round, i))
		nw := append(bytes.Clone(old), line...)
		w.begin("appending to log", "log", old, nw)
		if old == nil {
			w.allow(nil, []byte{}, nw)
		}
		f, err := os.OpenFile(filepath.Join(w.mnt, "log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		if old == nil {
			w.settle("log", []byte{}, "close")
			w.allow([]byte{}, nw)
		}
		if _, err := f.Write(line); err != nil {
			return err
		}
		if fsync {
			if err := f.Sync(); err != nil {
				return err
			}
			w.settle("log", nw, "fsync")
			w.allow(nw)
		}
		if err := f.Close(); err != nil {
			return err
		}
		w.settle("log", nw, "close")
	default: // truncate by path (committed at once: no open file)
		path, old := w.pick(false)
		if path == "" {
			return nil
		}
		size := w.r.IntN(len(old) + 100<<10)
		nw := make([]byte, size)
		copy(nw, old)
		w.begin(fmt.Sprintf("truncating %s to %d", path, size), path, old, nw)
		if err := os.Truncate(filepath.Join(w.mnt, path), int64(size)); err != nil {
			return err
		}
		w.settle(path, nw, "truncate")
	}
	return nil
}

func (w *crashWriter) writeNewIgnored(path string, data []byte) error {
	f, err := os.OpenFile(filepath.Join(w.mnt, path), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	return f.Close()
}

// run changes files until an operation fails (glydfs was killed).
func (w *crashWriter) run() {
	for i := 0; ; i++ {
		if err := w.step(i); err != nil {
			w.mu.Lock()
			w.err = err
			w.mu.Unlock()
			return
		}
		w.done()
	}
}

// checkCrashTree compares the mount with what the writer settled, and
// settles the interrupted change as whatever it left.
func checkCrashTree(t *testing.T, mnt string, w *crashWriter, when string) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	seen := map[string]bool{}
	err := filepath.WalkDir(mnt, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(mnt, p)
		if d.IsDir() {
			return nil
		}
		seen[rel] = true
		return nil
	})
	if err != nil {
		t.Fatalf("%s: walking the mount: %v", when, err)
	}
	if op := w.pending; op != nil {
		got, err := os.ReadFile(filepath.Join(mnt, op.path))
		ok := false
		for _, a := range op.allowed {
			if (a == nil && errnoOf(err) == syscall.ENOENT) || (a != nil && err == nil && bytes.Equal(got, a)) {
				ok = true
			}
		}
		if !ok {
			var sizes []string
			for _, a := range op.allowed {
				if a == nil {
					sizes = append(sizes, "missing")
				} else {
					sizes = append(sizes, fmt.Sprintf("%d bytes", len(a)))
				}
			}
			t.Errorf("%s: %s was under way: %s holds %d bytes (%v), want one of: %s",
				when, op.desc, op.path, len(got), err, strings.Join(sizes, ", "))
		}
		if err == nil {
			w.files[op.path] = crashFile{data: got, how: "what the interrupted change left"}
		} else {
			delete(w.files, op.path)
		}
		w.pending = nil
	}
	var names []string
	for name := range w.files {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		want := w.files[name]
		got, err := os.ReadFile(filepath.Join(mnt, name))
		if err != nil || !bytes.Equal(got, want.data) {
			t.Errorf("%s: %s (settled by %s): %d bytes, want %d: %v; %s", when, name, want.how, len(got), len(want.data), err, firstDiff(got, want.data))
		}
	}
	for name := range seen {
		if _, ok := w.files[name]; !ok && !w.ignore[name] {
			t.Errorf("%s: %s is there but was never settled", when, name)
		}
	}
}

// TestGlydfsKill9: glydfs -f is killed with SIGKILL at random instants of
// a write loop; after each kill the store mounts again and holds every
// settled file exactly (see the top of this file for which promise each
// check rests on). At the end it unmounts cleanly and glyd store verify
// checks every chunk.
func TestGlydfsKill9(t *testing.T) {
	ft := newFuseTest(t)
	seed := modelSeed(t, 9)
	store, mnt := ft.storeDir(), ft.mountDir()
	w := &crashWriter{mnt: mnt, files: map[string]crashFile{}, ignore: map[string]bool{}}
	rounds := short(5, 2)
	kills := rand.New(rand.NewPCG(seed, 1))
	for round := 0; round < rounds; round++ {
		p := ft.startFG(store, mnt)
		checkCrashTree(t, mnt, w, fmt.Sprintf("after kill %d", round))
		if err := os.Mkdir(p.path(fmt.Sprintf("r%d", round)), 0o755); err != nil {
			t.Fatal(err)
		}
		w.round, w.r = round, rand.New(rand.NewPCG(seed, uint64(round)+100))
		done := make(chan struct{})
		go func() {
			defer close(done)
			w.run()
		}()
		delay := time.Duration(50+kills.IntN(short(600, 300))) * time.Millisecond
		select {
		case <-done:
			t.Fatalf("round %d: the writer stopped before the kill: %v", round, w.err)
		case <-time.After(delay):
		}
		p.cmd.Process.Kill()
		if !p.waitExit(10 * time.Second) {
			t.Fatal("glydfs did not die of SIGKILL")
		}
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			forceUnmount(mnt)
			t.Fatalf("round %d: the writer still hangs 30s after glydfs died", round)
		}
		forceUnmount(mnt)
		if mounted(mnt) {
			t.Fatalf("cannot unmount the dead mount on %s", mnt)
		}
		w.mu.Lock()
		pending := "nothing"
		if w.pending != nil {
			pending = w.pending.desc
		}
		t.Logf("round %d: killed after %v, %d ops in all, %d files; under way: %s (%v)", round, delay, w.ops, len(w.files), pending, w.err)
		w.mu.Unlock()
	}
	p := ft.startFG(store, mnt)
	checkCrashTree(t, mnt, w, "after the last kill")
	writeFile(t, p.path("after"), []byte("written after the crashes\n"))
	w.settle("after", []byte("written after the crashes\n"), "close")
	p = p.remount()
	checkCrashTree(t, mnt, w, "after a clean remount")
	wantBytes(t, p.path("after"), []byte("written after the crashes\n"))
	p.unmount()
	ok(t, t.TempDir(), nil, "store", "verify", store)
}
