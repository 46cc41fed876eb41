package tests

// A random file-operation exerciser: thousands of random operations on a
// few files, run on a glydfs mount and on ext4 side by side, each checked
// against an in-memory model of every file. ext4 checks the model (and
// every errno); the model checks glydfs.

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

type opKind int

const (
	opWrite opKind = iota
	opRead
	opTruncate
	opFallocate
	opMmapRead
	opMmapWrite
	opReopen
	opFsync
	opCopy
	opAppend
	opRead2
	opDirectWrite
	opDirectRead
	opCheck
	opRemount
)

var opNames = [...]string{"pwrite", "pread", "ftruncate", "fallocate", "mmap-read", "mmap-write", "close+reopen",
	"fsync", "copy_file_range", "append", "pread(2nd fd)", "O_DIRECT pwrite", "O_DIRECT pread", "check", "remount"}

// mop is one operation, fully determined (offsets, lengths, data seed), so
// that both filesystems get exactly the same one.
type mop struct {
	kind   opKind
	file   int
	off, n int64
	mode   uint32 // fallocate
	src    int    // copy source: -1 the src file, else a file index
	srcOff int64
	seed   uint64 // data written
}

func fallocName(mode uint32) string {
	var parts []string
	if mode&unix.FALLOC_FL_PUNCH_HOLE != 0 {
		parts = append(parts, "PUNCH_HOLE")
	}
	if mode&unix.FALLOC_FL_ZERO_RANGE != 0 {
		parts = append(parts, "ZERO_RANGE")
	}
	if mode&unix.FALLOC_FL_KEEP_SIZE != 0 {
		parts = append(parts, "KEEP_SIZE")
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, "|")
}

func (o mop) String() string {
	f := fmt.Sprintf("f%d", o.file)
	switch o.kind {
	case opWrite, opMmapWrite, opAppend, opDirectWrite:
		return fmt.Sprintf("%s %s off=%d len=%d data=%s", opNames[o.kind], f, o.off, o.n, dataKind(o.seed))
	case opFsync:
		if o.seed%2 == 0 {
			return "fdatasync " + f
		}
		return "fsync " + f
	case opRead, opMmapRead, opRead2, opDirectRead:
		return fmt.Sprintf("%s %s off=%d len=%d", opNames[o.kind], f, o.off, o.n)
	case opTruncate:
		return fmt.Sprintf("ftruncate %s %d", f, o.n)
	case opFallocate:
		return fmt.Sprintf("fallocate %s mode=%s off=%d len=%d", f, fallocName(o.mode), o.off, o.n)
	case opCopy:
		src := "src"
		if o.src >= 0 {
			src = fmt.Sprintf("f%d", o.src)
		}
		return fmt.Sprintf("copy_file_range %s@%d -> %s@%d len=%d", src, o.srcOff, f, o.off, o.n)
	}
	return opNames[o.kind] + " " + f
}

func dataKind(seed uint64) string {
	return [...]string{"random", "text", "zeros", "byte"}[seed%4]
}

// opData is the data a write writes: random, text, zeros or one byte
// repeated, by seed.
func opData(seed uint64, n int64) []byte {
	b := make([]byte, n)
	switch seed % 4 {
	case 0:
		r := rand.New(rand.NewPCG(seed, 3))
		for i := 0; i+8 <= len(b); i += 8 {
			v := r.Uint64()
			for j := 0; j < 8; j++ {
				b[i+j] = byte(v >> (8 * j))
			}
		}
		for i := len(b) &^ 7; i < len(b); i++ {
			b[i] = byte(r.Uint32())
		}
	case 1:
		phrase := fmt.Sprintf("line %d of the model test: the quick brown fox jumps over the lazy dog\n", seed)
		for i := 0; i < len(b); i += len(phrase) {
			copy(b[i:], phrase)
		}
	case 2:
	case 3:
		for i := range b {
			b[i] = byte(seed>>8) | 1
		}
	}
	return b
}

// mtarget is one filesystem the operations run on.
type mtarget struct {
	name  string
	root  string
	files []*os.File
	src   *os.File
}

func (tg *mtarget) path(i int) string { return filepath.Join(tg.root, fmt.Sprintf("f%d", i)) }

func (tg *mtarget) open() error {
	for i := range tg.files {
		f, err := os.OpenFile(tg.path(i), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return err
		}
		tg.files[i] = f
	}
	f, err := os.Open(filepath.Join(tg.root, "src"))
	tg.src = f
	return err
}

func (tg *mtarget) close() {
	for _, f := range tg.files {
		f.Close()
	}
	tg.src.Close()
}

type mresult struct {
	n     int64
	errno syscall.Errno
	data  []byte
}

func (r mresult) String() string {
	return fmt.Sprintf("n=%d errno=%v (%d) data=%d bytes", r.n, r.errno, int(r.errno), len(r.data))
}

// apply runs op on tg.
func (tg *mtarget) apply(op mop) mresult {
	f := tg.files[op.file]
	fd := int(f.Fd())
	switch op.kind {
	case opWrite:
		n, err := f.WriteAt(opData(op.seed, op.n), op.off)
		return mresult{n: int64(n), errno: errnoOf(err)}
	case opRead, opRead2:
		if op.kind == opRead2 {
			g, err := os.Open(tg.path(op.file))
			if err != nil {
				return mresult{errno: errnoOf(err)}
			}
			defer g.Close()
			f = g
		}
		buf := make([]byte, op.n)
		n, err := f.ReadAt(buf, op.off)
		if err == io.EOF {
			err = nil
		}
		return mresult{n: int64(n), errno: errnoOf(err), data: buf[:n]}
	case opTruncate:
		return mresult{errno: errnoOf(f.Truncate(op.n))}
	case opFallocate:
		return mresult{errno: errnoOf(unix.Fallocate(fd, op.mode, op.off, op.n))}
	case opMmapRead, opMmapWrite:
		pg := op.off &^ 4095
		prot := unix.PROT_READ
		if op.kind == opMmapWrite {
			prot |= unix.PROT_WRITE
		}
		m, err := unix.Mmap(fd, pg, int(op.off+op.n-pg), prot, unix.MAP_SHARED)
		if err != nil {
			return mresult{errno: errnoOf(err)}
		}
		defer unix.Munmap(m)
		if op.kind == opMmapRead {
			return mresult{n: op.n, data: bytes.Clone(m[op.off-pg:])}
		}
		copy(m[op.off-pg:], opData(op.seed, op.n))
		return mresult{n: op.n, errno: errnoOf(unix.Msync(m, unix.MS_SYNC))}
	case opReopen:
		if err := f.Close(); err != nil {
			return mresult{errno: errnoOf(err)}
		}
		g, err := os.OpenFile(tg.path(op.file), os.O_RDWR, 0)
		if err != nil {
			return mresult{errno: errnoOf(err)}
		}
		tg.files[op.file] = g
		return mresult{}
	case opFsync:
		if op.seed%2 == 0 {
			return mresult{errno: errnoOf(unix.Fdatasync(fd))}
		}
		return mresult{errno: errnoOf(f.Sync())}
	case opDirectWrite, opDirectRead:
		// O_DIRECT through a descriptor of its own, from page-aligned
		// memory, at page-aligned offsets and lengths.
		g, err := os.OpenFile(tg.path(op.file), os.O_RDWR|unix.O_DIRECT, 0)
		if err != nil {
			return mresult{errno: errnoOf(err)}
		}
		defer g.Close()
		buf, err := unix.Mmap(-1, 0, int(op.n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
		if err != nil {
			return mresult{errno: errnoOf(err)}
		}
		defer unix.Munmap(buf)
		if op.kind == opDirectRead {
			n, err := unix.Pread(int(g.Fd()), buf, op.off)
			if n < 0 {
				n = 0
			}
			return mresult{n: int64(n), errno: errnoOf(err), data: bytes.Clone(buf[:n])}
		}
		copy(buf, opData(op.seed, op.n))
		n, err := unix.Pwrite(int(g.Fd()), buf, op.off)
		if err == nil {
			err = g.Close()
		}
		return mresult{n: int64(n), errno: errnoOf(err)}
	case opCopy:
		src := tg.src
		if op.src >= 0 {
			src = tg.files[op.src]
		}
		offIn, offOut, left := op.srcOff, op.off, op.n
		var total int64
		for left > 0 {
			n, err := unix.CopyFileRange(int(src.Fd()), &offIn, fd, &offOut, int(left), 0)
			if err != nil {
				return mresult{n: total, errno: errnoOf(err)}
			}
			if n == 0 {
				break
			}
			total += int64(n)
			left -= int64(n)
		}
		return mresult{n: total}
	case opAppend:
		g, err := os.OpenFile(tg.path(op.file), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return mresult{errno: errnoOf(err)}
		}
		n, err := g.Write(opData(op.seed, op.n))
		if cerr := g.Close(); err == nil {
			err = cerr
		}
		return mresult{n: int64(n), errno: errnoOf(err)}
	}
	return mresult{}
}

// mmodel is the expected content of every file.
type mmodel struct {
	files [][]byte
	src   []byte
}

func (m *mmodel) writeAt(i int, data []byte, off int64) {
	if end := off + int64(len(data)); end > int64(len(m.files[i])) {
		m.resize(i, end)
	}
	copy(m.files[i][off:], data)
}

func (m *mmodel) resize(i int, size int64) {
	f := m.files[i]
	if size <= int64(len(f)) {
		m.files[i] = f[:size]
		return
	}
	if size <= int64(cap(f)) {
		f = f[:size]
		clear(f[len(m.files[i]):])
		m.files[i] = f
		return
	}
	g := make([]byte, size, size+size/4)
	copy(g, f)
	m.files[i] = g
}

func (m *mmodel) zero(i int, off, n int64) {
	f := m.files[i]
	if off < int64(len(f)) {
		clear(f[off:min(off+n, int64(len(f)))])
	}
}

// apply changes the model as a successful op changes a file; it returns
// the result the op should have had.
func (m *mmodel) apply(op mop) mresult {
	f := m.files[op.file]
	size := int64(len(f))
	switch op.kind {
	case opWrite, opMmapWrite, opDirectWrite:
		m.writeAt(op.file, opData(op.seed, op.n), op.off)
		return mresult{n: op.n}
	case opAppend:
		m.writeAt(op.file, opData(op.seed, op.n), size)
		return mresult{n: op.n}
	case opRead, opRead2, opMmapRead, opDirectRead:
		if op.off >= size {
			return mresult{data: []byte{}}
		}
		d := f[op.off:min(size, op.off+op.n)]
		return mresult{n: int64(len(d)), data: bytes.Clone(d)}
	case opTruncate:
		m.resize(op.file, op.n)
	case opFallocate:
		if op.n <= 0 {
			return mresult{errno: syscall.EINVAL}
		}
		end := op.off + op.n
		switch {
		case op.mode&unix.FALLOC_FL_PUNCH_HOLE != 0:
			m.zero(op.file, op.off, op.n)
		case op.mode&unix.FALLOC_FL_ZERO_RANGE != 0:
			m.zero(op.file, op.off, op.n)
			if op.mode&unix.FALLOC_FL_KEEP_SIZE == 0 && end > size {
				m.resize(op.file, end)
			}
		case op.mode&unix.FALLOC_FL_KEEP_SIZE == 0 && end > size:
			m.resize(op.file, end)
		}
	case opCopy:
		src := m.src
		if op.src >= 0 {
			src = m.files[op.src]
		}
		if op.srcOff >= int64(len(src)) {
			return mresult{}
		}
		// The length is cut at the source's end, then overlapping
		// ranges of one file are refused (as the kernel checks).
		n := min(int64(len(src))-op.srcOff, op.n)
		if op.src == op.file && op.off < op.srcOff+n && op.srcOff < op.off+n {
			return mresult{errno: syscall.EINVAL}
		}
		d := bytes.Clone(src[op.srcOff : op.srcOff+n])
		m.writeAt(op.file, d, op.off)
		return mresult{n: int64(len(d))}
	}
	return mresult{}
}

// genOp picks the next operation for the model as it is.
func genOp(r *rand.Rand, m *mmodel, i, ops int) mop {
	op := mop{file: 0, src: -1, seed: r.Uint64()}
	if r.IntN(100) >= 55 {
		op.file = 1 + r.IntN(len(m.files)-1)
	}
	size := int64(len(m.files[op.file]))
	const maxSize = 8 << 20
	offset := func() int64 {
		switch k := r.IntN(100); {
		case k < 45 || size >= maxSize:
			return r.Int64N(size + 1)
		case k < 65: // around a 64 KiB page boundary
			return max(0, int64(r.IntN(int(size/(64<<10))+2))*64<<10+int64(r.IntN(201)-100))
		case k < 80: // near the end
			return max(0, size-int64(r.IntN(4096)))
		default: // far beyond the end: a hole
			return size + 1 + r.Int64N(3<<20)
		}
	}
	length := func() int64 {
		switch k := r.IntN(100); {
		case k < 35:
			return 1 + int64(r.IntN(512))
		case k < 65:
			return 1 + int64(r.IntN(200<<10))
		case k < 85:
			return int64(1+r.IntN(4)) * 64 << 10
		default:
			return 1 + int64(r.IntN(3<<19)) // up to 1.5 MiB: more than one FUSE write
		}
	}
	w := r.IntN(1000)
	switch {
	case w < 300:
		op.kind, op.off, op.n = opWrite, offset(), length()
	case w < 400:
		op.kind, op.off, op.n = opRead, offset(), length()
	case w < 470:
		op.kind = opTruncate
		switch k := r.IntN(10); {
		case k == 0:
			op.n = 0
		case k < 4 || size >= maxSize:
			op.n = r.Int64N(size + 1)
		case k < 6:
			op.n = int64(r.IntN(int(size/(64<<10))+2)) * 64 << 10
		default:
			op.n = size + r.Int64N(1<<20)
		}
	case w < 590:
		op.kind = opFallocate
		op.mode = [...]uint32{0, unix.FALLOC_FL_KEEP_SIZE, unix.FALLOC_FL_PUNCH_HOLE | unix.FALLOC_FL_KEEP_SIZE,
			unix.FALLOC_FL_ZERO_RANGE, unix.FALLOC_FL_ZERO_RANGE | unix.FALLOC_FL_KEEP_SIZE}[r.IntN(5)]
		op.off, op.n = offset(), length()
		if r.IntN(50) == 0 {
			op.n = 0 // EINVAL
		}
	case w < 650 && size > 0:
		op.kind = opMmapRead
		op.off = r.Int64N(size)
		op.n = 1 + r.Int64N(min(size-op.off, 300<<10))
	case w < 710 && size > 0:
		op.kind = opMmapWrite
		op.off = r.Int64N(size)
		op.n = 1 + r.Int64N(min(size-op.off, 300<<10))
	case w < 770:
		op.kind = opReopen
	case w < 810:
		op.kind = opFsync
	case w < 880:
		op.kind = opCopy
		if r.IntN(10) < 3 {
			op.src = r.IntN(len(m.files))
		}
		src := m.src
		if op.src >= 0 {
			src = m.files[op.src]
		}
		op.srcOff = r.Int64N(int64(len(src)) + 100)
		op.off, op.n = offset(), length()
		if op.src == op.file {
			// Within one file, inside it: a copy that grows the file
			// would read back its own new end, in pieces that depend
			// on how the kernel splits the copy.
			op.off = r.Int64N(size + 1)
			op.n = max(1, min(op.n, size-op.off))
		}
	case w < 920:
		op.kind, op.n = opAppend, length()
	case w < 960:
		op.kind, op.off, op.n = opRead2, offset(), length()
	case w < 990:
		op.kind = opDirectWrite
		if r.IntN(2) == 0 {
			op.kind = opDirectRead
		}
		op.off = offset() &^ 4095
		op.n = (length() + 4095) &^ 4095
	case w < 997:
		op.kind = opCheck
	default:
		op.kind = opRemount
	}
	if op.kind == opWrite && size+op.n > maxSize && op.off > size {
		op.off = r.Int64N(size + 1)
	}
	return op
}

func modelSeed(t *testing.T, def uint64) uint64 {
	seed := def
	if s := os.Getenv("GLYDFS_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 0, 64)
		if err != nil {
			t.Fatalf("GLYDFS_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("seed %d (GLYDFS_SEED=%d reruns this sequence)", seed, seed)
	return seed
}

// TestGlydfsFileModel runs a few thousand random operations on three
// files of a mount and of ext4: pwrite anywhere (holes far beyond the
// end, writes across 64 KiB pages and past 1 MiB), pread, ftruncate up and
// down, fallocate (0, KEEP_SIZE, PUNCH_HOLE|KEEP_SIZE, ZERO_RANGE with and
// without KEEP_SIZE), mmap reads and MAP_SHARED writes with msync,
// close+reopen (a new version, whose bytes are checked under
// .glyd/versions), fsync, copy_file_range from another file and within a
// file, O_APPEND writes and reads through a second descriptor. Every
// result and errno must be ext4's; after every op the file's size and the
// bytes around the op must be the model's, the whole file every so often,
// and everything after remounts.
func TestGlydfsFileModel(t *testing.T) {
	ft := newFuseTest(t)
	seed := modelSeed(t, 20261130)
	r := rand.New(rand.NewPCG(seed, 0x676c7964))
	ops := short(2000, 300)
	const nfiles = 3

	m := &mmodel{files: make([][]byte, nfiles), src: opData(seed, 3<<20+777)}
	var opts []string
	if o := os.Getenv("GLYDFS_MODEL_OPTS"); o != "" {
		opts = strings.Fields(o)
	}
	p := ft.startFG(ft.storeDir(), ft.mountDir(), opts...)
	ext := &mtarget{name: "ext4", root: t.TempDir(), files: make([]*os.File, nfiles)}
	fus := &mtarget{name: "glydfs", root: p.dir, files: make([]*os.File, nfiles)}
	for _, tg := range []*mtarget{ext, fus} {
		writeFile(t, filepath.Join(tg.root, "src"), m.src)
		if err := tg.open(); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { ext.close(); fus.close() })

	var history []string
	fail := func(i int, op mop, format string, args ...any) {
		t.Helper()
		from := max(0, len(history)-25)
		t.Fatalf("seed %d, op %d of %d: %v: %s\nthe ops before it:\n  %s", seed, i, ops, op,
			fmt.Sprintf(format, args...), strings.Join(history[from:], "\n  "))
	}
	// readAll reads a whole file through an open descriptor.
	readAll := func(f *os.File) ([]byte, error) {
		fi, err := f.Stat()
		if err != nil {
			return nil, err
		}
		b := make([]byte, fi.Size())
		n, err := f.ReadAt(b, 0)
		if err == io.EOF {
			err = nil
		}
		return b[:n], err
	}
	checkWhole := func(i int, op mop, file int, when string) {
		t.Helper()
		got, err := readAll(fus.files[file])
		if err != nil || !bytes.Equal(got, m.files[file]) {
			fail(i, op, "%s: f%d: %d bytes, model %d: %v; %s", when, file, len(got), len(m.files[file]), err, firstDiff(got, m.files[file]))
		}
	}
	// What is known to be committed: glydfs commits a file at fsync, at a
	// close (flush) after bytes were written (not after a change of size
	// alone, which waits for the release or a later commit: docs/fs.md),
	// at its last release and at unmount.
	versionChecks := 0
	wrote := make([]bool, nfiles) // bytes written since the last known commit
	sized := make([]bool, nfiles) // the size changed since the last known commit
	// checkLatestVersion: the newest version of a file, just committed,
	// holds the model's bytes.
	checkLatestVersion := func(i int, op mop, file int, why string) {
		t.Helper()
		wrote[file], sized[file] = false, false
		dir := p.path(fmt.Sprintf(".glyd/versions/f%d", file))
		names := sortedNumbers(readDirNames(t, dir))
		if len(names) == 0 {
			if len(m.files[file]) != 0 {
				fail(i, op, "after %s f%d has no versions but %d bytes", why, file, len(m.files[file]))
			}
			return
		}
		if len(names) > 32 {
			fail(i, op, "f%d keeps %d versions, more than the default 32", file, len(names))
		}
		latest := filepath.Join(dir, names[len(names)-1])
		var st syscall.Stat_t
		if err := syscall.Stat(latest, &st); err != nil || st.Size != int64(len(m.files[file])) {
			fail(i, op, "after %s the newest version of f%d (%s of %v) has %d bytes, the file %d: %v", why, file,
				names[len(names)-1], names, st.Size, len(m.files[file]), err)
		}
		// The bytes every other time (reading versions is most of the
		// test's time).
		if versionChecks++; versionChecks%2 == 1 {
			return
		}
		got, err := os.ReadFile(latest)
		if err != nil || !bytes.Equal(got, m.files[file]) {
			fail(i, op, "after %s the newest version of f%d (%s of %v) has %d bytes, the file %d: %v; %s", why, file,
				names[len(names)-1], names, len(got), len(m.files[file]), err, firstDiff(got, m.files[file]))
		}
	}
	remount := func(i int, op mop) {
		t.Helper()
		fus.close()
		p = p.remount()
		fus.root = p.dir
		if err := fus.open(); err != nil {
			fail(i, op, "reopening after a remount: %v", err)
		}
		for f := range m.files {
			checkWhole(i, op, f, "after a remount")
			checkLatestVersion(i, op, f, "a remount")
		}
	}

	counts := map[string]int{}
	for i := 0; i < ops; i++ {
		op := genOp(r, m, i, ops)
		history = append(history, fmt.Sprintf("%d: %v", i, op))
		counts[opNames[op.kind]]++
		switch op.kind {
		case opCheck:
			for f := range m.files {
				checkWhole(i, op, f, "check")
			}
			continue
		case opRemount:
			remount(i, op)
			continue
		}
		want := m.apply(op)
		we := ext.apply(op)
		if we.errno != want.errno || we.n != want.n || !bytes.Equal(we.data, want.data) {
			fail(i, op, "the model is wrong: ext4 gives %v, the model %v", we, want)
		}
		ge := fus.apply(op)
		if ge.errno != we.errno || ge.n != we.n {
			fail(i, op, "glydfs gives %v, ext4 %v", ge, we)
		}
		if !bytes.Equal(ge.data, we.data) {
			fail(i, op, "glydfs read %d bytes, ext4 %d: %s", len(ge.data), len(we.data), firstDiff(ge.data, we.data))
		}
		// The size, and the bytes around the op, on both filesystems.
		size := int64(len(m.files[op.file]))
		lo, hi := op.off-100, op.off+op.n+100
		if op.kind == opTruncate || op.kind == opAppend {
			lo, hi = size-op.n-100, size+100
		}
		lo, hi = max(0, lo), min(size, hi)
		for _, tg := range []*mtarget{ext, fus} {
			fi, err := tg.files[op.file].Stat()
			if err != nil {
				fail(i, op, "%s: fstat: %v", tg.name, err)
			}
			if fi.Size() != size {
				fail(i, op, "%s: size %d, model %d", tg.name, fi.Size(), size)
			}
			if lo < hi {
				buf := make([]byte, hi-lo)
				if _, err := tg.files[op.file].ReadAt(buf, lo); err != nil && err != io.EOF {
					fail(i, op, "%s: reading back [%d,%d): %v", tg.name, lo, hi, err)
				}
				if !bytes.Equal(buf, m.files[op.file][lo:hi]) {
					fail(i, op, "%s: bytes [%d,%d) differ from the model: %s", tg.name, lo, hi, firstDiff(buf, m.files[op.file][lo:hi]))
				}
			}
		}
		if ge.errno == 0 {
			switch op.kind {
			case opWrite:
				wrote[op.file] = true
			case opMmapWrite:
				// msync(MS_SYNC) writes the pages back and fsyncs.
				checkLatestVersion(i, op, op.file, "msync")
			case opCopy:
				wrote[op.file] = wrote[op.file] || ge.n > 0
			case opTruncate:
				sized[op.file] = true
			case opFallocate:
				if op.mode&(unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_ZERO_RANGE) != 0 {
					wrote[op.file] = true
				} else {
					sized[op.file] = true
				}
			case opFsync:
				checkLatestVersion(i, op, op.file, "fsync")
			case opAppend, opDirectWrite:
				checkLatestVersion(i, op, op.file, "a close after "+opNames[op.kind])
			case opRead2, opReopen, opDirectRead:
				if wrote[op.file] {
					checkLatestVersion(i, op, op.file, "a close after writes")
				} else if !sized[op.file] {
					checkLatestVersion(i, op, op.file, "a close with nothing changed")
				}
			}
		}
		if i%250 == 249 {
			checkWhole(i, op, op.file, "periodic check")
		}
	}
	var summary []string
	for k, v := range counts {
		summary = append(summary, fmt.Sprintf("%s %d", k, v))
	}
	sort.Strings(summary)
	t.Logf("%d ops: %s; final sizes %d %d %d", ops, strings.Join(summary, ", "), len(m.files[0]), len(m.files[1]), len(m.files[2]))
	end := mop{kind: opCheck}
	for f := range m.files {
		checkWhole(ops, end, f, "at the end")
		if got, err := readAll(ext.files[f]); err != nil || !bytes.Equal(got, m.files[f]) {
			fail(ops, end, "ext4 f%d differs from the model", f)
		}
	}
	remount(ops, mop{kind: opRemount})
	fus.close()
	p.unmount()
}
