package fsbench

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	badger "github.com/dgraph-io/badger/v4"

	"github.com/glyd/glyd/chunkstore"
	"github.com/glyd/glyd/internal/benchfmt"
)

// Targets of the read tests.
const (
	tgtLocal  = "local disk"
	tgtGlydfs = "glydfs"
	tgtGlydD  = "glyd -d"
	tgtSquash = "squashfuse"
	tgtStore  = "chunk store, no FUSE"
)

// ReadRun is the test file read whole from one target, Runs times.
type ReadRun struct {
	Target string
	Cold   bool
	Size   int64
	Runs   []time.Duration
	Err    string
}

// Median is the median run.
func (r *ReadRun) Median() time.Duration { return benchfmt.Median(r.Runs) }

// MBs is the median throughput.
func (r *ReadRun) MBs() float64 {
	if r.Err != "" || len(r.Runs) == 0 {
		return 0
	}
	return benchfmt.MBs(r.Size, r.Median())
}

// readFile reads path whole in 1 MiB reads (plain read(2) calls, as dd
// bs=1M makes: readAll) and returns the time it took; it fails unless it
// read size bytes.
func readFile(path string, size int64) (time.Duration, error) {
	buf := make([]byte, 1<<20)
	t0 := time.Now()
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	n, err := readAll(f, buf)
	d := time.Since(t0)
	f.Close()
	if err == nil && n != size {
		err = fmt.Errorf("%s: read %d bytes, want %d", path, n, size)
	}
	return d, err
}

// readSteps are the steps of one way of reading: cold runs do prep
// (untimed: drop the page cache, start the server afresh), then the timed
// read, then after (untimed: stop the server). Warm runs do start once
// (mount, check the bytes, fill the page cache), the timed reads, then
// stop. Without start the reader is not measured warm.
type readSteps struct {
	prep  func() error
	after func() error
	start func() error
	stop  func() error
	read  func() (time.Duration, error)
}

// runSlot is where one reader's cold or warm runs and first error go.
type runSlot struct {
	runs *[]time.Duration
	err  *string
}

func (s runSlot) fail(err error) {
	if *s.err == "" {
		*s.err = err.Error()
	}
}

// robin is one reader of a round-robin: its steps, where its runs go, and
// whether an error is glydfs misbehaving (a problem for the report).
type robin struct {
	*readSteps
	target     string
	cold, warm runSlot
	problem    bool
}

// roundRobin runs cfg.Runs cold rounds over the readers, then starts each
// once and runs cfg.Runs warm rounds, then stops them: round-robin, so that
// a burst of load on the machine hits them alike. A reader that fails is
// left out from then on; what errors say problems are reported as "what
// (target, cold|warm): error".
func (b *bench) roundRobin(what string, rs []robin) {
	fail := func(r robin, cold bool, err error) {
		slot := r.warm
		if cold {
			slot = r.cold
		}
		slot.fail(err)
		if r.problem {
			b.problem("%s (%s, %s): %v", what, r.target, cacheName(cold), err)
		}
	}
	b.logf("%s, cold: %d rounds over %d readers", what, b.cfg.Runs, len(rs))
	for i := range b.cfg.Runs {
		for _, r := range rs {
			if *r.cold.err != "" {
				continue
			}
			if err := r.prep(); err != nil {
				fail(r, true, err)
				continue
			}
			d, err := r.read()
			if aerr := r.after(); err == nil {
				err = aerr
			}
			if err != nil {
				fail(r, true, fmt.Errorf("run %d: %w", i+1, err))
				continue
			}
			*r.cold.runs = append(*r.cold.runs, d)
		}
	}
	b.logf("%s, warm", what)
	for _, r := range rs {
		switch {
		case *r.warm.err != "":
		case r.start == nil:
			*r.warm.err = "not measured warm"
		default:
			if err := r.start(); err != nil {
				fail(r, false, err)
			}
		}
	}
	for range b.cfg.Runs {
		for _, r := range rs {
			if *r.warm.err != "" {
				continue
			}
			d, err := r.read()
			if err != nil {
				fail(r, false, err)
				continue
			}
			*r.warm.runs = append(*r.warm.runs, d)
		}
	}
	for _, r := range rs {
		if r.stop != nil {
			if err := r.stop(); err != nil {
				fail(r, false, err)
			}
			r.stop = nil
		}
	}
}

// reader is one way of reading the test file whole.
type reader struct {
	readSteps
	cold, warm ReadRun
}

func (r *reader) robin() robin {
	return robin{readSteps: &r.readSteps, target: r.cold.Target,
		cold:    runSlot{&r.cold.Runs, &r.cold.Err},
		warm:    runSlot{&r.warm.Runs, &r.warm.Err},
		problem: r.cold.Target == tgtGlydfs || r.cold.Target == tgtStore}
}

// seqReads reads the test file from the local disk, from the glydfs store
// the write test left (through the mount, and directly through the chunk
// store), with `glyd -d` from a .glyd file and from a zstd squashfs image
// through squashfuse: cold (page cache dropped, FUSE servers restarted)
// and warm (read once, then timed). The runs go round-robin over the
// readers, so a burst of load on the machine hits them alike.
func (b *bench) seqReads(store string) error {
	t := b.rep.Test
	var rs []*reader
	add := func(target string, r *reader) {
		r.cold = ReadRun{Target: target, Cold: true, Size: t.Size}
		r.warm = ReadRun{Target: target, Size: t.Size}
		rs = append(rs, r)
	}
	noop := func() error { return nil }
	drop := func() error { b.drop(); return nil }

	add(tgtGlydfs, b.glydfsReader(store))
	add(tgtStore, b.storeReader(store))
	if b.cfg.Peers {
		add(tgtGlydD, b.glydReader())
		add(tgtSquash, b.squashReader())
	}
	readLocal := func() (time.Duration, error) { return readFile(t.Path, t.Size) }
	add(tgtLocal, &reader{readSteps: readSteps{prep: drop, after: noop, stop: noop, read: readLocal,
		start: func() error { _, err := readLocal(); return err }}})
	defer func() {
		for _, r := range rs {
			if r.stop != nil {
				r.stop()
			}
		}
	}()

	var robins []robin
	for _, r := range rs {
		robins = append(robins, r.robin())
	}
	b.roundRobin("sequential reads", robins)
	for _, r := range rs {
		b.rep.Seq = append(b.rep.Seq, r.cold)
		if r.start != nil {
			b.rep.Seq = append(b.rep.Seq, r.warm)
		}
	}
	return nil
}

// checkSum reads path whole and compares it with the test file's SHA-256.
func (b *bench) checkSum(path string) error {
	sum, err := sha256File(path)
	if err != nil {
		return err
	}
	if sum != b.rep.Test.SHA256 {
		return fmt.Errorf("wrong bytes: SHA-256 %s, want %s", sum, b.rep.Test.SHA256)
	}
	return nil
}

// fuseReader reads the test file through a FUSE server that mount starts.
func (b *bench) fuseReader(file string, mountIt func() (*mount, error)) *reader {
	size := b.rep.Test.Size
	var m *mount
	down := func() error {
		if m == nil {
			return nil
		}
		err := b.unmount(m)
		m = nil
		return err
	}
	up := func() error {
		if err := down(); err != nil {
			return err
		}
		var err error
		m, err = mountIt()
		return err
	}
	return &reader{readSteps: readSteps{
		prep:  func() error { b.drop(); return up() },
		after: down,
		start: func() error {
			if err := up(); err != nil {
				return err
			}
			return b.checkSum(file) // and now the page cache holds it
		},
		stop: down,
		read: func() (time.Duration, error) { return readFile(file, size) },
	}}
}

func (b *bench) glydfsReader(store string) *reader {
	mnt := b.path("mnt")
	return b.fuseReader(filepath.Join(mnt, "big.bin"), func() (*mount, error) { return b.mountGlydfs(store, mnt) })
}

// squashOpts are the mksquashfs options: zstd at mksquashfs's default
// level, the default 128 KiB blocks.
var squashOpts = []string{"-comp", "zstd", "-noappend", "-no-progress", "-quiet"}

// squashReader makes a zstd squashfs image holding the test file (kept
// for the fio test) and reads the file through squashfuse.
func (b *bench) squashReader() *reader {
	t := b.rep.Test
	failed := func(err error) *reader {
		f := func() error { return err }
		return &reader{readSteps: readSteps{prep: f, start: f}}
	}
	for _, tool := range []string{"mksquashfs", "squashfuse"} {
		if err := lookTool(tool); err != nil {
			return failed(err)
		}
	}
	b.logf("sequential reads: making the squashfs image")
	img := b.path("local", "big.sqfs")
	t.SquashHow = "mksquashfs DIR IMG " + joinArgs(squashOpts)
	t0 := time.Now()
	if _, err := b.runTool(nil, "mksquashfs", append([]string{filepath.Dir(t.Path), img}, squashOpts...)...); err != nil {
		return failed(err)
	}
	t.SquashTime = time.Since(t0)
	if fi, err := os.Stat(img); err == nil {
		t.SquashSize = fi.Size()
	}
	mnt := b.path("mnt-squash")
	return b.fuseReader(filepath.Join(mnt, filepath.Base(t.Path)), func() (*mount, error) { return b.mountSquash(img, mnt) })
}

// glydReader compresses the test file with glyd's default tier and times
// `glyd -d -c FILE.glyd > /dev/null`.
func (b *bench) glydReader() *reader {
	t := b.rep.Test
	failed := func(err error) *reader {
		f := func() error { return err }
		return &reader{readSteps: readSteps{prep: f, start: f}}
	}
	b.logf("sequential reads: compressing the test file with glyd")
	gz := b.path("local", "big.bin.glyd")
	t0 := time.Now()
	if _, err := b.runTool(nil, b.glyd, "-q", "-k", "-f", t.Path, gz); err != nil {
		return failed(err)
	}
	t.GlydTime = time.Since(t0)
	if fi, err := os.Stat(gz); err == nil {
		t.GlydSize = fi.Size()
	}
	h := sha256.New()
	if _, err := b.runTool(h, b.glyd, "-d", "-c", gz); err != nil {
		return failed(err)
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != t.SHA256 {
		return failed(fmt.Errorf("glyd -d gave the wrong bytes: SHA-256 %s, want %s", sum, t.SHA256))
	}
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return failed(err)
	}
	read := func() (time.Duration, error) {
		t0 := time.Now()
		_, err := b.runTool(null, b.glyd, "-d", "-c", gz)
		return time.Since(t0), err
	}
	return &reader{readSteps: readSteps{
		prep:  func() error { b.drop(); return nil },
		after: func() error { return nil },
		start: func() error { _, err := read(); return err },
		stop: func() error {
			os.Remove(gz)
			return null.Close()
		},
		read: read,
	}}
}

// storeReader reads the glydfs store's object for the test file directly
// through the chunk store (Object.WriteTo, what `glyd store get` does),
// glydfs unmounted: cold only, the page cache dropped and the store opened
// afresh before each run (the open untimed, as glydfs's mount is). It
// tells the store's share of glydfs's read time from the mount's.
func (b *bench) storeReader(store string) *reader {
	t := b.rep.Test
	failed := func(err error) *reader {
		f := func() error { return err }
		return &reader{readSteps: readSteps{prep: f}}
	}
	// The file's content object: the one internal object of its size.
	st, err := chunkstore.Open(store, chunkstore.Options{ReadOnly: true})
	if err != nil {
		return failed(err)
	}
	var names []string
	st.View(func(txn *badger.Txn) error {
		names = chunkstore.ObjectNames(txn, chunkstore.InternalPrefix)
		return nil
	})
	name := ""
	for _, n := range names {
		if o, err := st.OpenObject(n); err == nil && o.Size() == t.Size {
			name = n
			h := sha256.New()
			if _, err = o.WriteTo(h); err == nil && hex.EncodeToString(h.Sum(nil)) != t.SHA256 {
				err = fmt.Errorf("the store's object for the test file holds the wrong bytes")
			}
			if err != nil {
				st.Close()
				return failed(err)
			}
			break
		}
	}
	st.Close()
	if name == "" {
		return failed(fmt.Errorf("no object of %d bytes among the store's %d internal objects", t.Size, len(names)))
	}
	st = nil
	return &reader{readSteps: readSteps{
		prep: func() error {
			b.drop()
			var err error
			st, err = chunkstore.Open(store, chunkstore.Options{ReadOnly: true})
			return err
		},
		after: func() error {
			if st == nil {
				return nil
			}
			err := st.Close()
			st = nil
			return err
		},
		read: func() (time.Duration, error) {
			t0 := time.Now()
			o, err := st.OpenObject(name)
			if err != nil {
				return 0, err
			}
			n, err := o.WriteTo(io.Discard)
			d := time.Since(t0)
			if err == nil && n != t.Size {
				err = fmt.Errorf("read %d bytes of %d", n, t.Size)
			}
			return d, err
		},
	}}
}

func joinArgs(a []string) string {
	s := ""
	for i, x := range a {
		if i > 0 {
			s += " "
		}
		s += x
	}
	return s
}
