// Package fsbench measures the glydfs mount against its peers in one run:
// sequential reads of a large compressible file (against the local disk,
// `glyd -d` of the same bytes and squashfuse on a zstd squashfs image),
// 4 KiB random reads with fio, unpacking a release tarball and writing the
// large file into the mount (against the local disk), and what a series of
// releases costs in the mount (against zstd per file and as a patch
// chain), and the corpus's model weights stored packed and read back
// (against zstd -19, squashfs and the local disk). `make bench-fs` runs it (cmd/glyd-fsbench) and writes
// docs/benchmarks/fs.md.
//
// The FUSE servers run as child processes (bin/glydfs -f, squashfuse -f)
// on mount points inside the scratch directory; every one is unmounted
// before Run returns, on errors, panics and interrupts too.
package fsbench

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/glyd/glyd/internal/machine"
)

// Config says what to measure.
type Config struct {
	Corpus     string        // corpus root: releases/x-tools/, text/, records/
	Bin        string        // directory holding glyd and glydfs
	WorkParent string        // the scratch directory is made in here; "" means /var/tmp
	Keep       bool          // keep the scratch directory
	Size       int64         // size of the test file; 0 means 1 GiB
	Runs       int           // timed runs per measurement (the median counts); 0 means 3
	FioIOs     int           // 4 KiB reads of an uncached fio run; 0 means 1000
	FioTime    time.Duration // length of a cached fio run; 0 means 5 s
	Peers      bool          // run squashfuse, glyd -d and zstd
	DropCaches bool          // drop the page cache before cold measurements (needs root)
	Seed       uint64        // for the test file
	CmdLine    string        // how the benchmark was started, for the report
	Log        io.Writer     // progress lines; nil means none

	work string // the scratch directory, made by Run
}

func (c Config) withDefaults() Config {
	if c.Size <= 0 {
		c.Size = 1 << 30
	}
	if c.Runs <= 0 {
		c.Runs = 3
	}
	if c.FioIOs <= 0 {
		c.FioIOs = 1000
	}
	if c.FioTime <= 0 {
		c.FioTime = 5 * time.Second
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Bin == "" {
		c.Bin = "bin"
	}
	if c.WorkParent == "" {
		c.WorkParent = "/var/tmp"
	}
	return c
}

// Report is everything one run measured.
type Report struct {
	Config  Config
	Work    string // the scratch directory
	Machine Machine
	Tools   []Tool
	Started time.Time
	Elapsed time.Duration
	CPU     time.Duration // user + system time of the benchmark and its children
	Build   string        // commit the benchmark was built from
	Dropped bool          // the page cache could be dropped for the cold measurements

	Test     *TestFile
	Seq      []ReadRun
	Fio      []FioRun
	Unpack   []UnpackRun
	Write    []WriteRun
	Series   *Series
	Models   *Models // model weights stored packed (nil: not measured)
	Notes    []string
	Problems []string // glydfs misbehaving: wrong bytes, errors, unclean exits
	Leftover string   // what /proc/self/mountinfo showed under the scratch directory at the end
}

// Tool is a peer's version line ("" when missing).
type Tool struct{ Name, Version string }

// TestFile is the large compressible file of sections 1-3.
type TestFile struct {
	Path    string
	Size    int64
	Round   int64    // bytes of one round of the sources
	Sources []string // corpus files it is made of, relative to the corpus
	Seed    uint64
	SHA256  string

	GlydfsStored int64 // glydfs's chunk frames for it (user.glyd.stats "stored")
	GlydfsStats  Stats
	GlydfsDisk   DiskUsage // the store directory after unmounting
	GlydSize     int64     // `glyd` default tier, one file
	GlydTime     time.Duration
	SquashSize   int64 // the squashfs image
	SquashTime   time.Duration
	SquashHow    string
}

type bench struct {
	cfg    Config
	rep    *Report
	glyd   string // absolute paths of the binaries
	glydfs string
	ctx    context.Context
	cancel context.CancelFunc

	mu     sync.Mutex // mounts, closed, nlog
	mounts []*mount
	closed bool
	nlog   int

	dropWarned bool
	cpu0       time.Duration
}

func (b *bench) logf(format string, args ...any) {
	if b.cfg.Log != nil {
		fmt.Fprintf(b.cfg.Log, "fsbench: "+format+"\n", args...)
	}
}

// problem records glydfs misbehaving; the report lists it.
func (b *bench) problem(format string, args ...any) {
	s := fmt.Sprintf(format, args...)
	if b.ctx.Err() != nil {
		b.logf("after the interrupt: %s", s)
		return
	}
	b.logf("PROBLEM: %s", s)
	b.rep.Problems = append(b.rep.Problems, s)
}

func (b *bench) note(format string, args ...any) {
	b.rep.Notes = append(b.rep.Notes, fmt.Sprintf(format, args...))
}

func (b *bench) path(parts ...string) string {
	return filepath.Join(append([]string{b.cfg.WorkDir()}, parts...)...)
}

// WorkDir is the scratch directory once Run has made it.
func (c Config) WorkDir() string { return c.work }

// Run measures everything Config asks for. Whatever happens, it unmounts
// every filesystem it mounted before returning.
func Run(cfg Config) (rep *Report, err error) {
	cfg = cfg.withDefaults()
	if cfg.Corpus == "" {
		return nil, errors.New("no corpus given")
	}
	if fi, err := os.Stat(filepath.Join(cfg.Corpus, "releases", "x-tools")); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("corpus %s: no releases/x-tools folder", cfg.Corpus)
	}
	b := &bench{cfg: cfg}
	for _, p := range []*string{&b.glyd, &b.glydfs} {
		name := "glyd"
		if p == &b.glydfs {
			name = "glydfs"
		}
		if *p, err = filepath.Abs(filepath.Join(cfg.Bin, name)); err != nil {
			return nil, err
		}
		if fi, err := os.Stat(*p); err != nil || fi.IsDir() {
			return nil, fmt.Errorf("%s: not built (go build -o %s ./cmd/%s)", *p, *p, name)
		}
	}
	if err := lookTool("fusermount3"); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.WorkParent, 0o755); err != nil {
		return nil, err
	}
	work, err := os.MkdirTemp(cfg.WorkParent, "glyd-fsbench-")
	if err != nil {
		return nil, err
	}
	if work, err = filepath.Abs(work); err != nil {
		return nil, err
	}
	b.cfg.work = work
	b.ctx, b.cancel = context.WithCancel(context.Background())
	defer b.cancel()
	rep = &Report{Config: b.cfg, Work: work, Machine: machineInfo(), Started: time.Now(), Build: machine.Revision()}
	b.rep = rep
	b.cpu0 = cpuTime()
	fsw := fsOf(work)
	rep.Machine.WorkFS = fmt.Sprintf("%s on %s (`%s`)", fsw.FSType, fsw.Source, work)
	if fsw.FSType == "tmpfs" || fsw.FSType == "ramfs" {
		b.note("The scratch directory is on %s, which is memory, not a disk: the \"local disk\" rows measure memory. Use -work DIR on a disk.", fsw.FSType)
	}
	rep.Tools = []Tool{
		{"squashfuse", machine.ToolVersion("squashfuse", "--version")},
		{"mksquashfs", machine.ToolVersion("mksquashfs", "-version")},
		{"fio", machine.ToolVersion("fio", "--version")},
		{"zstd", machine.ToolVersion("zstd", "--version")},
		{"tar", machine.ToolVersion("tar", "--version")},
		{"fuse", machine.ToolVersion("fusermount3", "--version")},
	}

	// Ctrl-C, SIGTERM, SIGHUP: stop the tools, detach the mounts, remove
	// the scratch directory and exit.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	stop := make(chan struct{})
	defer func() { signal.Stop(sigs); close(stop) }()
	go func() {
		select {
		case sig := <-sigs:
			b.logf("%v: unmounting everything and stopping", sig)
			b.cancel()
			b.abandon()
			if left := mountsUnder(work); len(left) > 0 {
				fmt.Fprintf(os.Stderr, "fsbench: still mounted, not removing %s: %s\n", work, strings.Join(left, " "))
			} else if !b.cfg.Keep {
				// Twice: the measuring goroutine may create a file or two
				// while it notices the interrupt.
				os.RemoveAll(work)
				time.Sleep(200 * time.Millisecond)
				os.RemoveAll(work)
			}
			os.Exit(130)
		case <-stop:
		}
	}()
	defer func() {
		if e := b.finish(); e != nil {
			err = errors.Join(err, e)
		}
	}()

	if err := b.run(); err != nil {
		return rep, err
	}
	return rep, nil
}

// finish unmounts whatever is still mounted, checks that nothing is left
// under the scratch directory and removes it (unless Keep).
func (b *bench) finish() error {
	err := b.unmountAll()
	work := b.cfg.work
	left := mountsUnder(work)
	for _, p := range left {
		b.logf("still mounted: %s; unmounting lazily", p)
		execQuiet("fusermount3", "-u", "-z", p)
	}
	if left = mountsUnder(work); len(left) > 0 {
		return errors.Join(err, fmt.Errorf("mounts left behind under %s: %s (not removing it)", work, strings.Join(left, " ")))
	}
	if b.cfg.Keep {
		b.logf("kept %s", work)
	} else if e := os.RemoveAll(work); e != nil {
		err = errors.Join(err, e)
	}
	return err
}

// run is the measurement itself, in an order that keeps the page cache
// honest: writes and unpacks first, then reads of what was written.
func (b *bench) run() error {
	rep := b.rep
	t, err := b.makeTestFile()
	if err != nil {
		return err
	}
	rep.Test = t

	store, err := b.writes()
	if err != nil {
		return err
	}
	if err := b.unpacks(); err != nil {
		return err
	}
	if err := b.seqReads(store); err != nil {
		return err
	}
	if err := b.fios(store); err != nil {
		return err
	}
	if rep.Series, err = b.series(); err != nil {
		return err
	}
	if rep.Models, err = b.models(); err != nil {
		return err
	}

	if err := b.unmountAll(); err != nil {
		b.problem("%v", err)
	}
	if left := mountsUnder(b.cfg.work); len(left) > 0 {
		rep.Leftover = strings.Join(left, " ")
	} else {
		rep.Leftover = "none"
	}
	rep.Elapsed = time.Since(rep.Started)
	rep.CPU = cpuTime() - b.cpu0
	rep.Machine.LoadEnd = machine.LoadAvg()
	return nil
}

// makeTestFile writes the large file on the local disk from the
// compressible corpus folders.
func (b *bench) makeTestFile() (*TestFile, error) {
	var files []File
	for _, dir := range []string{"releases/x-tools", "text", "records"} {
		fs, err := listFiles(filepath.Join(b.cfg.Corpus, dir))
		if err != nil {
			return nil, err
		}
		for _, f := range fs {
			f.Name = dir + "/" + f.Name
			files = append(files, f)
		}
	}
	t := &TestFile{Path: b.path("local", "data", "big.bin"), Size: b.cfg.Size, Seed: b.cfg.Seed}
	var contents [][]byte
	for _, f := range files {
		c, err := os.ReadFile(f.Path)
		if err != nil {
			return nil, err
		}
		contents = append(contents, c)
		t.Sources = append(t.Sources, f.Name)
		t.Round += int64(len(c))
	}
	if err := os.MkdirAll(filepath.Dir(t.Path), 0o755); err != nil {
		return nil, err
	}
	b.logf("test file: %d bytes from %d corpus files", t.Size, len(files))
	sum, err := writeTestFile(t.Path, contents, t.Size, t.Seed)
	if err != nil {
		return nil, err
	}
	t.SHA256 = hex.EncodeToString(sum[:])
	return t, nil
}

// drop drops the page cache; when it cannot, the report says so once.
func (b *bench) drop() {
	if !b.cfg.DropCaches {
		if !b.dropWarned {
			b.dropWarned = true
			b.note("The page cache was not dropped (turned off with -drop-caches=false): \"cold\" rows only remount, the kernel may serve the bytes from memory.")
		}
		return
	}
	if err := dropCaches(); err != nil {
		b.rep.Dropped = false
		if !b.dropWarned {
			b.dropWarned = true
			b.note("The page cache could not be dropped (%v; run as root): \"cold\" rows only remount, the kernel may serve the bytes from memory.", err)
		}
		return
	}
	if !b.dropWarned {
		b.rep.Dropped = true
	}
}

// sha256File hashes a file by reading it whole.
func sha256File(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.CopyBuffer(h, f, make([]byte, 1<<20)); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
