package fsbench

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/glyd/glyd/internal/benchfmt"
	"github.com/glyd/glyd/packed"
)

// Targets of the model-file reads.
const (
	tgtModelGlydfs = "glydfs (decoded)"
	tgtModelPacked = "glydfs `.glyd/packed/` (packed form)"
	tgtModelLocal  = "local disk (the corpus files)"
	tgtModelSquash = "squashfuse"
)

// Models is the corpus's model weights (safetensors files) copied into a
// fresh glydfs store, which stores them packed, against zstd and squashfs,
// and read back whole four ways.
type Models struct {
	Dir   string // the corpus's weights folder
	DirFS string // the file system holding it (the local-disk row reads it there)
	Files []File // every regular file under it (all copied in)
	Raw   int64  // their bytes
	ST    int    // the .safetensors files among them, which the reads read
	STRaw int64  // their bytes

	Copy        time.Duration // copying every file in (open, 1 MiB writes, close: the commit)
	Stats       ModelStats    // user.glyd.stats after the copy
	Disk        DiskUsage     // the store directory after unmounting
	Packed      int           // .safetensors files with a packed form under .glyd/packed/
	PackedBytes int64         // their packed forms' bytes
	PackedOrig  int64         // the same files' original bytes

	Zstd   ModelPeer // zstd -19 of each file, sizes added up
	Squash ModelPeer // a zstd squashfs image of the folder

	Reads []ModelRead
}

// ModelStats is user.glyd.stats with the bytes packing saved.
type ModelStats struct {
	Stats
	PackSaved int64 `json:"packing_saved"` // original bytes of packed files less their packed objects
}

// ModelPeer is another way of storing the weights: its bytes and the time
// it took to make them.
type ModelPeer struct {
	How   string
	Bytes int64
	Time  time.Duration
	Err   string
}

// ModelRead is every .safetensors file read whole from one target, Runs
// times: Orig is the original bytes that stands for, Bytes what was read
// (they differ only for the packed form).
type ModelRead struct {
	Target string
	Cold   bool
	Files  int
	Orig   int64
	Bytes  int64
	Runs   []time.Duration
	Err    string
}

// Median is the median run.
func (r *ModelRead) Median() time.Duration { return benchfmt.Median(r.Runs) }

// MBs is the median throughput in original bytes delivered.
func (r *ModelRead) MBs() float64 {
	if r == nil || r.Err != "" || len(r.Runs) == 0 {
		return 0
	}
	return benchfmt.MBs(r.Orig, r.Median())
}

// ReadMBs is the median throughput in bytes read.
func (r *ModelRead) ReadMBs() float64 {
	if r == nil || r.Err != "" || len(r.Runs) == 0 {
		return 0
	}
	return benchfmt.MBs(r.Bytes, r.Median())
}

// Read returns the run of target, or nil.
func (m *Models) Read(target string, cold bool) *ModelRead {
	for i := range m.Reads {
		if r := &m.Reads[i]; r.Target == target && r.Cold == cold {
			return r
		}
	}
	return nil
}

// readFiles reads each of names under root whole in 1 MiB reads (as
// readFile) and returns the total time; sizes says how long each is.
func readFiles(root string, names []string, sizes []int64) (time.Duration, error) {
	var total time.Duration
	for i, n := range names {
		d, err := readFile(filepath.Join(root, filepath.FromSlash(n)), sizes[i])
		total += d
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// models measures the corpus's model weights: copied into a fresh glydfs
// store (which stores safetensors files packed), against zstd -19 of each
// file and a zstd squashfs image; then every .safetensors file read whole
// from the mount (decoded), from .glyd/packed/ (the packed form), from the
// corpus on the local disk and through squashfuse, cold and warm.
func (b *bench) models() (*Models, error) {
	dir := filepath.Join(b.cfg.Corpus, "weights")
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		b.note("The corpus has no `weights/` folder (%s): the model-files section was skipped.", dir)
		return nil, nil
	}
	files, err := listFiles(dir)
	if err != nil {
		return nil, err
	}
	abs, err := filepath.EvalSymlinks(dir)
	if err == nil {
		abs, err = filepath.Abs(abs)
	}
	if err != nil {
		return nil, err
	}
	fsd := fsOf(abs)
	m := &Models{Dir: dir, Files: files, DirFS: fmt.Sprintf("%s on %s", fsd.FSType, fsd.Source)}
	var st []File
	sums := map[string]string{}
	for _, f := range files {
		m.Raw += f.Size
		if strings.HasSuffix(f.Name, ".safetensors") {
			st = append(st, f)
			m.ST++
			m.STRaw += f.Size
		}
		sum, err := sha256File(f.Path) // and into the page cache for the copy
		if err != nil {
			return nil, err
		}
		sums[f.Name] = sum
	}
	if len(st) == 0 {
		b.note("The corpus's `weights/` folder (%s) holds no .safetensors file: the model-files section was skipped.", dir)
		return nil, nil
	}
	names := make([]string, len(st))
	sizes := make([]int64, len(st))
	for i, f := range st {
		names[i], sizes[i] = f.Name, f.Size
	}

	// 1. The copy into a fresh store.
	b.logf("model files: copying %d files (%s bytes) into glydfs", len(files), benchfmt.Commas(m.Raw))
	store := b.path("store-models")
	os.RemoveAll(store)
	defer os.RemoveAll(store)
	mnt := b.path("mnt-models")
	mt, err := b.mountGlydfs(store, mnt)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	for _, f := range files {
		dst := filepath.Join(mnt, filepath.FromSlash(f.Name))
		if err = os.MkdirAll(filepath.Dir(dst), 0o755); err == nil {
			_, err = copyInto(f.Path, dst)
		}
		if err != nil {
			err = fmt.Errorf("copying %s into glydfs: %w", f.Name, err)
			break
		}
	}
	m.Copy = time.Since(t0)
	if err == nil {
		if m.Stats, err = glydfsStats[ModelStats](mnt); err != nil {
			err = fmt.Errorf("reading user.glyd.stats: %w", err)
		}
	}
	if uerr := b.unmount(mt); uerr != nil {
		b.problem("%v", uerr)
	}
	if err != nil {
		b.problem("model files: %v", err)
		return m, nil
	}
	if m.Disk, err = dirUsage(store); err != nil {
		return nil, err
	}

	// 2. The peers' sizes.
	m.Zstd = b.zstdModels(files)
	img := b.path("local", "weights.sqfs")
	defer os.Remove(img)
	m.Squash = b.squashModels(dir, img)

	// 3. Reads.
	var rs []*modelReader
	add := func(target string, r *modelReader, orig, read int64, n int) {
		r.cold = ModelRead{Target: target, Cold: true, Files: n, Orig: orig, Bytes: read}
		r.warm = ModelRead{Target: target, Files: n, Orig: orig, Bytes: read}
		if r.err != nil {
			r.cold.Err, r.warm.Err = r.err.Error(), r.err.Error()
		}
		rs = append(rs, r)
	}
	drop := func() error { b.drop(); return nil }
	noop := func() error { return nil }

	gm := &fuseMount{b: b, up: func() (*mount, error) { return b.mountGlydfs(store, mnt) }}
	defer gm.down()
	add(tgtModelGlydfs, &modelReader{readSteps: readSteps{
		prep: func() error { b.drop(); return gm.restart() }, after: gm.down, stop: gm.down,
		start: func() error {
			if err := gm.ensure(); err != nil {
				return err
			}
			return checkModels(mnt, st, sums) // and now the page cache holds them
		},
		read: func() (time.Duration, error) { return readFiles(mnt, names, sizes) },
	}}, m.STRaw, m.STRaw, len(st))

	// The packed forms: which files have one, how long, and that they
	// decode to the originals (through the mount, once).
	pdir := filepath.Join(mnt, ".glyd", "packed")
	var pnames []string
	var psizes []int64
	perr := gm.ensure()
	if perr == nil {
		for _, f := range st {
			fi, err := os.Stat(filepath.Join(pdir, filepath.FromSlash(f.Name)))
			if err != nil {
				continue
			}
			pnames = append(pnames, f.Name)
			psizes = append(psizes, fi.Size())
			m.Packed++
			m.PackedBytes += fi.Size()
			m.PackedOrig += f.Size
		}
		if m.Packed < len(st) {
			b.note("Of the %d .safetensors files, %d have a packed form under `.glyd/packed/` (the others were stored as bytes, packing them not being smaller); the packed-form row reads only those.", len(st), m.Packed)
		}
		if m.Packed == 0 {
			perr = fmt.Errorf("no file has a packed form under .glyd/packed/")
		} else {
			perr = b.checkPacked(pdir, pnames, psizes, sums)
		}
	}
	if perr != nil {
		b.problem("model files, the packed forms: %v", perr)
	}
	pr := &modelReader{readSteps: readSteps{
		prep: func() error { b.drop(); return gm.restart() }, after: gm.down, stop: gm.down,
		start: func() error {
			if err := gm.ensure(); err != nil {
				return err
			}
			_, err := readFiles(pdir, pnames, psizes)
			return err
		},
		read: func() (time.Duration, error) { return readFiles(pdir, pnames, psizes) },
	}}
	if perr != nil {
		pr = failedModelReader(perr)
	}
	add(tgtModelPacked, pr, m.PackedOrig, m.PackedBytes, len(pnames))
	gm.down()

	readLocal := func() (time.Duration, error) { return readFiles(dir, names, sizes) }
	add(tgtModelLocal, &modelReader{readSteps: readSteps{prep: drop, after: noop, stop: noop, read: readLocal,
		start: func() error { _, err := readLocal(); return err }}}, m.STRaw, m.STRaw, len(st))

	if m.Squash.Err == "" && m.Squash.Bytes > 0 {
		smnt := b.path("mnt-models-squash")
		sm := &fuseMount{b: b, up: func() (*mount, error) { return b.mountSquash(img, smnt) }}
		defer sm.down()
		add(tgtModelSquash, &modelReader{readSteps: readSteps{
			prep: func() error { b.drop(); return sm.restart() }, after: sm.down, stop: sm.down,
			start: func() error {
				if err := sm.ensure(); err != nil {
					return err
				}
				return checkModels(smnt, st, sums)
			},
			read: func() (time.Duration, error) { return readFiles(smnt, names, sizes) },
		}}, m.STRaw, m.STRaw, len(st))
	}
	b.modelReads(rs)
	for _, r := range rs {
		m.Reads = append(m.Reads, r.cold, r.warm)
	}
	return m, nil
}

// modelReader is one way of reading the weights whole, as reader is for
// the test file.
type modelReader struct {
	readSteps
	cold, warm ModelRead
	err        error // set up failed: not read
}

// failedModelReader is a target that could not be set up: it is reported
// with err and not read.
func failedModelReader(err error) *modelReader {
	f := func() error { return err }
	return &modelReader{err: err, readSteps: readSteps{prep: f, after: f, start: f, stop: func() error { return nil }}}
}

// fuseMount is a FUSE server that readers share, started and stopped on
// demand.
type fuseMount struct {
	b  *bench
	up func() (*mount, error)
	m  *mount
}

func (f *fuseMount) down() error {
	if f.m == nil {
		return nil
	}
	err := f.b.unmount(f.m)
	f.m = nil
	return err
}

// restart starts the server afresh.
func (f *fuseMount) restart() error {
	if err := f.down(); err != nil {
		return err
	}
	var err error
	f.m, err = f.up()
	return err
}

// ensure starts the server unless it runs.
func (f *fuseMount) ensure() error {
	if f.m != nil {
		return nil
	}
	return f.restart()
}

// modelReads runs the readers round-robin, as seqReads does.
func (b *bench) modelReads(rs []*modelReader) {
	var robins []robin
	for _, r := range rs {
		robins = append(robins, robin{readSteps: &r.readSteps, target: r.cold.Target,
			cold:    runSlot{&r.cold.Runs, &r.cold.Err},
			warm:    runSlot{&r.warm.Runs, &r.warm.Err},
			problem: r.cold.Target == tgtModelGlydfs || r.cold.Target == tgtModelPacked})
	}
	b.roundRobin("model files: reads", robins)
}

// checkModels compares every .safetensors file under root with the
// original's SHA-256 (reading them whole, which fills the page cache).
func checkModels(root string, files []File, sums map[string]string) error {
	for _, f := range files {
		sum, err := sha256File(filepath.Join(root, filepath.FromSlash(f.Name)))
		if err != nil {
			return err
		}
		if sum != sums[f.Name] {
			return fmt.Errorf("%s: wrong bytes: SHA-256 %s, want %s", f.Name, sum, sums[f.Name])
		}
	}
	return nil
}

// checkPacked reads each packed form whole, checks its length and decodes
// it on the CPU (packed.Decode, untimed): it must give the original file.
func (b *bench) checkPacked(pdir string, names []string, sizes []int64, sums map[string]string) error {
	for i, n := range names {
		p, err := os.ReadFile(filepath.Join(pdir, filepath.FromSlash(n)))
		if err != nil {
			return err
		}
		if int64(len(p)) != sizes[i] {
			return fmt.Errorf("%s: read %d bytes of its packed form, stat says %d", n, len(p), sizes[i])
		}
		if !packed.IsPacked(p) {
			return fmt.Errorf("%s: its packed form does not start with the packed magic", n)
		}
		if packed.NeedsBase(p) {
			continue // coded against a base this check does not have
		}
		orig, err := packed.Decode(p, nil, 0)
		if err != nil {
			return fmt.Errorf("%s: decoding its packed form: %w", n, err)
		}
		if sum := sha256.Sum256(orig); hex.EncodeToString(sum[:]) != sums[n] {
			return fmt.Errorf("%s: its packed form decodes to the wrong bytes (SHA-256 %x, want %s)", n, sum, sums[n])
		}
	}
	return nil
}

// zstdModels compresses each file alone with zstd -19 (one thread) and
// adds the sizes up.
func (b *bench) zstdModels(files []File) ModelPeer {
	z := ModelPeer{How: "`zstd -T1 -19` of each file alone; bytes = sum of the outputs"}
	if !b.cfg.Peers {
		z.Err = "peers turned off"
		return z
	}
	if err := lookTool("zstd"); err != nil {
		z.Err = err.Error()
		return z
	}
	b.logf("model files: zstd -19 of each file")
	t0 := time.Now()
	for _, f := range files {
		n, err := b.runTool(nil, "zstd", "-q", "-c", "-T1", "-19", f.Path)
		if err != nil {
			z.Err = err.Error()
			return z
		}
		z.Bytes += n
	}
	z.Time = time.Since(t0)
	return z
}

// squashModels makes a zstd squashfs image of the weights folder, as
// squashReader does for the test file.
func (b *bench) squashModels(dir, img string) ModelPeer {
	s := ModelPeer{How: "`mksquashfs DIR IMG " + joinArgs(squashOpts) + "`; bytes = the image"}
	if !b.cfg.Peers {
		s.Err = "peers turned off"
		return s
	}
	for _, tool := range []string{"mksquashfs", "squashfuse"} {
		if err := lookTool(tool); err != nil {
			s.Err = err.Error()
			return s
		}
	}
	b.logf("model files: making the squashfs image")
	if err := os.MkdirAll(filepath.Dir(img), 0o755); err != nil {
		s.Err = err.Error()
		return s
	}
	t0 := time.Now()
	if _, err := b.runTool(nil, "mksquashfs", append([]string{dir, img}, squashOpts...)...); err != nil {
		s.Err = err.Error()
		return s
	}
	s.Time = time.Since(t0)
	fi, err := os.Stat(img)
	if err != nil {
		s.Err = err.Error()
		return s
	}
	s.Bytes = fi.Size()
	return s
}
