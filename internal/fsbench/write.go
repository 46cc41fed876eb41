package fsbench

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/glyd/glyd/chunkstore"
	"github.com/glyd/glyd/codec"
	"github.com/glyd/glyd/internal/benchfmt"
)

// Stats is the JSON glydfs reports in the mount root's user.glyd.stats.
type Stats struct {
	Files      int   `json:"files"`
	Dirs       int   `json:"directories"`
	Logical    int64 `json:"logical"` // bytes of the live files
	History    int64 `json:"history"` // bytes of every kept version and snapshot
	Stored     int64 `json:"stored"`  // bytes of chunk frames all of it takes
	Garbage    int64 `json:"garbage"`
	Snapshots  int   `json:"snapshots"`
	Chunks     int   `json:"chunks"`
	Deltas     int   `json:"delta_chunks"`
	DedupSaved int64 `json:"dedup_saved"`
	DeltaSaved int64 `json:"delta_saved"`
	CompSaved  int64 `json:"compression_saved"`
}

// glydfsStats reads user.glyd.stats from a mount's root into a Stats, or a
// ModelStats for its packing figure too.
func glydfsStats[T Stats | ModelStats](mnt string) (T, error) {
	var s T
	v, err := getxattr(mnt, "user.glyd.stats")
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal(v, &s); err != nil {
		return s, fmt.Errorf("user.glyd.stats: %w (%q)", err, v)
	}
	return s, nil
}

// WriteTiming is one write of the test file: the write calls, the close
// (glydfs commits the file there) and an fsync after it (a reopen and
// fsync: glydfs syncs its store; the local disk writes the dirty pages).
type WriteTiming struct{ Write, Close, Sync time.Duration }

// Closed is the time until close returned.
func (w WriteTiming) Closed() time.Duration { return w.Write + w.Close }

// Total is the time until the file was durable.
func (w WriteTiming) Total() time.Duration { return w.Write + w.Close + w.Sync }

// WriteRun is the test file written into one target, Runs times.
type WriteRun struct {
	Target  string
	Direct  bool // the chunk store's Put, no file system: one durable step
	Size    int64
	Runs    []WriteTiming
	Unmount []time.Duration // glydfs: how long each unmount took (the server's final sync and close)
	Err     string
}

// Median is the run with the median total time.
func (w *WriteRun) Median() WriteTiming {
	if len(w.Runs) == 0 {
		return WriteTiming{}
	}
	s := slices.Clone(w.Runs)
	slices.SortFunc(s, func(a, b WriteTiming) int { return int(a.Total() - b.Total()) })
	return s[(len(s)-1)/2]
}

// writeFile copies src to dst in 1 MiB writes, closes dst, then reopens it
// and fsyncs it.
func writeFile(src, dst string) (WriteTiming, error) {
	var t WriteTiming
	in, err := os.Open(src)
	if err != nil {
		return t, err
	}
	defer in.Close()
	buf := make([]byte, 1<<20)
	t0 := time.Now()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return t, err
	}
	// Plain 1 MiB write calls, as cp and dd bs=1M make: the wrappers keep
	// io.Copy from using copy_file_range or splice.
	_, err = io.CopyBuffer(struct{ io.Writer }{out}, struct{ io.Reader }{in}, buf)
	t1 := time.Now()
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	t2 := time.Now()
	if err != nil {
		return t, err
	}
	f, err := os.Open(dst)
	if err != nil {
		return t, err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	t3 := time.Now()
	t.Write, t.Close, t.Sync = t1.Sub(t0), t2.Sub(t1), t3.Sub(t2)
	return t, err
}

// writes writes the test file Runs times into the local disk and into a
// fresh glydfs store each (interleaved), and returns the last store, which
// holds the file for the read tests.
func (b *bench) writes() (string, error) {
	t := b.rep.Test
	local := &WriteRun{Target: "local disk", Size: t.Size}
	gfs := &WriteRun{Target: "glydfs", Size: t.Size}
	mnt := b.path("mnt")
	var store string
	for i := range b.cfg.Runs {
		b.logf("write %d/%d: local disk", i+1, b.cfg.Runs)
		dst := b.path("local", "copy.bin")
		wt, err := writeFile(t.Path, dst)
		os.Remove(dst)
		if err != nil {
			return "", fmt.Errorf("local write: %w", err)
		}
		local.Runs = append(local.Runs, wt)

		b.logf("write %d/%d: glydfs", i+1, b.cfg.Runs)
		if store != "" {
			os.RemoveAll(store)
		}
		store = b.path(fmt.Sprintf("store-write-%d", i+1))
		m, err := b.mountGlydfs(store, mnt)
		if err != nil {
			return "", err
		}
		wt, err = writeFile(t.Path, filepath.Join(mnt, "big.bin"))
		if err != nil {
			b.problem("writing the %s test file into glydfs (`cp` of it, then fsync): %v", benchfmt.SizeName(t.Size), err)
			gfs.Err = err.Error()
		} else {
			gfs.Runs = append(gfs.Runs, wt)
			if st, err := glydfsStats[Stats](mnt); err != nil {
				b.problem("reading user.glyd.stats: %v", err)
			} else {
				t.GlydfsStats, t.GlydfsStored = st, st.Stored
			}
		}
		u0 := time.Now()
		if err := b.unmount(m); err != nil {
			b.problem("%v", err)
		}
		gfs.Unmount = append(gfs.Unmount, time.Since(u0))
		if gfs.Err != "" {
			break
		}
	}
	if gfs.Err != "" {
		b.rep.Write = []WriteRun{*local, *gfs}
		return "", errors.New("glydfs could not store the test file; see the problems above")
	}
	b.rep.Write = []WriteRun{*local, *gfs, b.storePut()}
	var err error
	if t.GlydfsDisk, err = dirUsage(store); err != nil {
		return "", err
	}
	return store, nil
}

// storePut puts the test file into a fresh chunk store directly (once):
// what the store itself costs for what glydfs does at close and fsync.
func (b *bench) storePut() WriteRun {
	t := b.rep.Test
	w := WriteRun{Target: tgtStore, Direct: true, Size: t.Size}
	b.logf("write: the chunk store without FUSE")
	dir := b.path("store-put")
	defer os.RemoveAll(dir)
	st, err := chunkstore.Init(dir, chunkstore.Options{Tier: codec.Default})
	if err != nil {
		w.Err = err.Error()
		return w
	}
	f, err := os.Open(t.Path)
	if err != nil {
		st.Close()
		w.Err = err.Error()
		return w
	}
	t0 := time.Now()
	_, err = st.Put("big.bin", f)
	d := time.Since(t0)
	f.Close()
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		w.Err = err.Error()
		return w
	}
	w.Runs = []WriteTiming{{Close: d}}
	return w
}

// UnpackTiming is one `tar -xf`: tar itself, then making it durable
// (syncfs of the target, and an fsync of one file, which in glydfs syncs
// the whole store).
type UnpackTiming struct{ Tar, Sync time.Duration }

// UnpackRun is the release tarball unpacked into one target, Runs times.
type UnpackRun struct {
	Target  string
	Tarball string
	Entries int   // files, directories and links tar made
	Files   int   // regular files
	Bytes   int64 // their bytes
	Runs    []UnpackTiming
	Unmount []time.Duration
	Err     string
}

// Median is the run with the median tar time.
func (u *UnpackRun) Median() UnpackTiming {
	if len(u.Runs) == 0 {
		return UnpackTiming{}
	}
	s := slices.Clone(u.Runs)
	slices.SortFunc(s, func(a, b UnpackTiming) int { return int(a.Tar - b.Tar) })
	return s[(len(s)-1)/2]
}

// tarContents counts a tarball's entries and names its first regular file.
func tarContents(path string) (entries, files int, size int64, first string, err error) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, e := tr.Next()
		if e == io.EOF {
			break
		}
		if e != nil {
			err = e
			return
		}
		switch h.Typeflag {
		case tar.TypeReg, tar.TypeDir, tar.TypeSymlink, tar.TypeLink:
			entries++
		}
		if h.Typeflag == tar.TypeReg {
			files++
			size += h.Size
			if first == "" {
				first = h.Name
			}
		}
	}
	return
}

// unpacks unpacks the first release tarball into a local directory and
// into a fresh glydfs store, Runs times each (interleaved), and checks the
// last glydfs tree against the last local one.
func (b *bench) unpacks() error {
	series, err := b.seriesFiles()
	if err != nil {
		return err
	}
	tb := series[0]
	entries, files, size, first, err := tarContents(tb.Path)
	if err != nil {
		return fmt.Errorf("%s: %w", tb.Path, err)
	}
	if first == "" {
		return fmt.Errorf("%s holds no regular file", tb.Path)
	}
	if _, err := sha256File(tb.Path); err != nil { // into the page cache
		return err
	}
	local := UnpackRun{Target: "local disk", Tarball: tb.Name, Entries: entries, Files: files, Bytes: size}
	gfs := local
	gfs.Target = "glydfs"
	untar := func(dir string) (UnpackTiming, error) {
		var u UnpackTiming
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return u, err
		}
		t0 := time.Now()
		if _, err := b.runTool(nil, "tar", "-xf", tb.Path, "-C", dir); err != nil {
			return u, err
		}
		t1 := time.Now()
		err := syncFS(dir)
		if err == nil {
			var f *os.File
			if f, err = os.Open(filepath.Join(dir, first)); err == nil {
				err = f.Sync()
				f.Close()
			}
		}
		u.Tar, u.Sync = t1.Sub(t0), time.Since(t1)
		return u, err
	}
	mnt := b.path("mnt")
	var last string
	for i := range b.cfg.Runs {
		b.logf("unpack %d/%d: local disk", i+1, b.cfg.Runs)
		if last != "" {
			os.RemoveAll(last)
		}
		last = b.path("local", fmt.Sprintf("unpack-%d", i+1))
		u, err := untar(last)
		if err != nil {
			return fmt.Errorf("local unpack: %w", err)
		}
		local.Runs = append(local.Runs, u)

		b.logf("unpack %d/%d: glydfs", i+1, b.cfg.Runs)
		store := b.path("store-unpack")
		os.RemoveAll(store)
		m, err := b.mountGlydfs(store, mnt)
		if err != nil {
			return err
		}
		u, err = untar(filepath.Join(mnt, "x"))
		if err != nil {
			b.problem("unpacking %s into glydfs: %v", tb.Name, err)
			gfs.Err = err.Error()
		} else {
			gfs.Runs = append(gfs.Runs, u)
			if i == b.cfg.Runs-1 {
				if err := sameTree(filepath.Join(mnt, "x"), last); err != nil {
					b.problem("%s unpacked into glydfs differs from the same tarball unpacked on the local disk: %v", tb.Name, err)
				}
			}
		}
		u0 := time.Now()
		if err := b.unmount(m); err != nil {
			b.problem("%v", err)
		}
		gfs.Unmount = append(gfs.Unmount, time.Since(u0))
		os.RemoveAll(store)
		if gfs.Err != "" {
			break
		}
	}
	// What tar made: the tarball's entries and the directories it implies.
	if n, _, _, err := countTree(last); err == nil {
		local.Entries, gfs.Entries = n, n
	}
	os.RemoveAll(last)
	b.rep.Unpack = []UnpackRun{local, gfs}
	return nil
}
