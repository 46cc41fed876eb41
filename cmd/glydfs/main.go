// Command glydfs mounts a glyd store as a read-write POSIX filesystem:
// files written into it are chunked, deduplicated, delta-compressed and
// checksummed; every committed version stays readable.
package main

import (
	"bufio"
	"errors"
	"fmt"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/alecthomas/kong"
	"github.com/dustin/go-humanize"

	"github.com/glyd/glyd/chunkstore"
	"github.com/glyd/glyd/codec"
	glydfs "github.com/glyd/glyd/fs"
)

type cli struct {
	Store      string        `arg:"" help:"Store directory (created when it does not exist or is empty)."`
	Mountpoint string        `arg:"" help:"Directory to mount on."`
	Foreground bool          `short:"f" help:"Stay in the foreground (default: detach once the mount is ready)."`
	Options    []string      `short:"o" sep:"," help:"Mount options: ro, allow_other, versions=N, cache=SIZE, staging=SIZE, tier=default|max|cold, nopack (store safetensors files as bytes), packlimit=SIZE (largest safetensors file stored packed, default 8GiB)."`
	Tier       string        `default:"default" enum:"default,max,cold" help:"Tier new chunks are coded with, for a new store (default, max, cold)."`
	Cache      string        `default:"64MiB" help:"Memory for decoded chunks (read cache: delta bases and re-reads; the kernel's page cache holds the files' bytes)."`
	Staging    string        `default:"256MiB" help:"Memory for staged writes before they spill to disk."`
	Versions   int           `default:"32" help:"Committed versions kept per file (0 keeps all)."`
	ReadAhead  string        `default:"8MiB" name:"read-ahead" help:"Bytes decoded ahead of a sequential reader."`
	GCInterval time.Duration `default:"10m" name:"gc-interval" help:"How often to free the space of deleted files, versions and snapshots (0: only 'glyd store gc' when unmounted)."`
	Debug      bool          `help:"Log every FUSE request."`
	CPUProfile string        `name:"cpuprofile" type:"path" help:"Write a Go CPU profile of the whole mount to this file (for diagnosing performance)."`
}

// ready is the environment variable through which a detached glydfs
// reports back to the command that started it.
const readyEnv = "GLYDFS_READY_FD"

func main() {
	var c cli
	kong.Parse(&c,
		kong.Name("glydfs"),
		kong.Description("Mount a glyd store: glydfs STORE MOUNTPOINT. Unmount with 'fusermount3 -u MOUNTPOINT' (or umount, or Ctrl-C in the foreground)."),
		kong.UsageOnError())
	if err := c.run(); err != nil {
		fmt.Fprintf(os.Stderr, "glydfs: %v\n", err)
		os.Exit(1)
	}
}

// mountOptions are the flags and -o options, parsed.
type mountOptions struct {
	ro, allowOther        bool
	tier                  codec.Tier
	cache, staging, ahead int64
	noPack                bool
	packLimit             int64
}

func (c *cli) parseOptions() (m mountOptions, err error) {
	size := func(s string) (int64, error) {
		n, err := humanize.ParseBytes(s)
		if err != nil {
			return 0, fmt.Errorf("bad size %q", s)
		}
		return int64(n), nil
	}
	if m.cache, err = size(c.Cache); err != nil {
		return m, err
	}
	if m.staging, err = size(c.Staging); err != nil {
		return m, err
	}
	if m.ahead, err = size(c.ReadAhead); err != nil {
		return m, err
	}
	tierName := c.Tier
	for _, o := range c.Options {
		k, v, _ := strings.Cut(strings.TrimSpace(o), "=")
		switch k {
		case "":
		case "ro":
			m.ro = true
		case "rw":
			m.ro = false
		case "allow_other":
			m.allowOther = true
		case "versions":
			if c.Versions, err = strconv.Atoi(v); err != nil || c.Versions < 0 {
				return m, fmt.Errorf("bad option versions=%q", v)
			}
		case "cache":
			m.cache, err = size(v)
		case "staging":
			m.staging, err = size(v)
		case "tier":
			tierName = v
		case "nopack":
			m.noPack = true
		case "packlimit":
			m.packLimit, err = size(v)
		default:
			return m, fmt.Errorf("unknown mount option %q", o)
		}
		if err != nil {
			return m, err
		}
	}
	m.tier, err = codec.ParseTier(tierName)
	return m, err
}

// oversubscribe gives the Go scheduler twice as many Ps as the CPUs it
// would use (unless GOMAXPROCS is set) and returns that CPU count, for the
// store's workers. A mount's threads block where the scheduler does not
// hand their P on at once: go-fuse's readers wait in read(2) on /dev/fuse
// (one per P), replies are written with writev(2), and badger's tables and
// value log are read through mmap faults. With one P per CPU, a cold
// sequential read left 20-25% of the CPU time idle while the reader waited
// for glydfs; with two it fell to ~10%, and the read ran 10-14% faster in
// alternating runs (docs/benchmarks/fs.md).
func oversubscribe() int {
	n := runtime.GOMAXPROCS(0)
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(2 * n)
	}
	return n
}

func (c *cli) run() error {
	m, err := c.parseOptions()
	if err != nil {
		return err
	}
	if fi, err := os.Stat(c.Mountpoint); err != nil || !fi.IsDir() {
		return fmt.Errorf("%s: not a directory", c.Mountpoint)
	}
	if !c.Foreground && os.Getenv(readyEnv) == "" {
		return c.detach()
	}
	report := func(err error) error {
		if fd := os.Getenv(readyEnv); fd != "" {
			if n, e := strconv.Atoi(fd); e == nil {
				w := os.NewFile(uintptr(n), "ready")
				if err != nil {
					fmt.Fprintf(w, "error: %v\n", err)
				} else {
					fmt.Fprintln(w, "ok")
				}
				w.Close()
			}
		}
		return err
	}

	ro := m.ro
	threads := oversubscribe()
	opts := chunkstore.Options{Tier: m.tier, Cache: m.cache, ReadOnly: ro, WarmCache: true, ReadsCachedAbove: true, Threads: threads}
	var st *chunkstore.Store
	if _, err := os.Stat(filepath.Join(c.Store, "MANIFEST")); err == nil {
		st, err = chunkstore.Open(c.Store, opts)
		if errors.Is(err, chunkstore.ErrInUse) {
			return report(fmt.Errorf("%s: the store is already open (mounted by another glydfs, or used by glyd)", c.Store))
		}
		if err != nil {
			return report(err)
		}
	} else {
		if ro {
			return report(fmt.Errorf("%s: no store here to mount read-only", c.Store))
		}
		st, err = chunkstore.Init(c.Store, opts)
		if err != nil {
			return report(err)
		}
		fmt.Fprintf(os.Stderr, "glydfs: created a new store in %s (tier %s)\n", c.Store, m.tier)
	}
	fopts := glydfs.DefaultOptions()
	fopts.ReadOnly, fopts.Versions, fopts.StagingMemory, fopts.ReadAhead = ro, c.Versions, m.staging, m.ahead
	fopts.NoPack, fopts.PackLimit = m.noPack, m.packLimit
	fopts.Logger = log.New(os.Stderr, "glydfs: ", log.LstdFlags)
	f, err := glydfs.New(st, fopts)
	if err != nil {
		st.Close()
		return report(err)
	}
	// Signals are caught from before the mount exists, so that one arriving
	// as it appears unmounts it instead of killing glydfs under it.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	srv, err := glydfs.Mount(c.Mountpoint, f, glydfs.MountOptions{AllowOther: m.allowOther, Debug: c.Debug})
	if err != nil {
		st.Close()
		return report(fmt.Errorf("mounting on %s: %w", c.Mountpoint, err))
	}
	go func() {
		for sig := range sigs {
			if err := srv.Unmount(); err != nil {
				fmt.Fprintf(os.Stderr, "glydfs: %v: cannot unmount %s: %v (close the files open in it, or 'umount -l')\n", sig, c.Mountpoint, err)
			}
		}
	}()
	if c.GCInterval > 0 && !ro {
		go func() {
			for range time.Tick(c.GCInterval) {
				if st, err := f.GC(); err != nil {
					fopts.Logger.Printf("gc: %v", err)
				} else if st.Freed > 0 {
					fopts.Logger.Printf("gc: freed %d chunks (%s)", st.Freed, humanize.IBytes(uint64(st.FreedBytes)))
				}
			}
		}()
	}
	if c.CPUProfile != "" {
		pf, err := os.Create(c.CPUProfile)
		if err == nil {
			err = pprof.StartCPUProfile(pf)
		}
		if err != nil {
			fopts.Logger.Printf("cpu profile: %v", err)
		} else {
			defer func() { pprof.StopCPUProfile(); pf.Close() }()
		}
	}
	if c.Foreground {
		fmt.Fprintf(os.Stderr, "glydfs: %s mounted on %s; unmount with Ctrl-C or 'fusermount3 -u %s'\n", c.Store, c.Mountpoint, c.Mountpoint)
	}
	report(nil)
	srv.Wait()
	err = f.SyncAll()
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("closing %s: %w", c.Store, err)
	}
	if c.Foreground {
		fmt.Fprintf(os.Stderr, "glydfs: unmounted %s\n", c.Mountpoint)
	}
	return nil
}

// detach starts glydfs again in the background and waits until its mount
// is ready (or has failed), so that the mount exists when this returns.
func (c *cli) detach() error {
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	_, statErr := os.Stat(filepath.Join(c.Store, "MANIFEST"))
	isNew := statErr != nil
	cmd := exec.Command(exe, os.Args[1:]...)
	cmd.Env = append(os.Environ(), readyEnv+"=3")
	cmd.ExtraFiles = []*os.File{w}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	logf, err := os.OpenFile(filepath.Join(os.TempDir(), "glydfs.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err == nil {
		cmd.Stdout, cmd.Stderr = logf, logf
		defer logf.Close()
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	w.Close()
	done := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(r).ReadString('\n')
		done <- strings.TrimSpace(line)
	}()
	select {
	case line := <-done:
		if line == "ok" {
			if isNew {
				fmt.Fprintf(os.Stderr, "glydfs: created a new store in %s\n", c.Store)
			}
			return nil
		}
		if msg, ok := strings.CutPrefix(line, "error: "); ok {
			return errors.New(msg)
		}
		return fmt.Errorf("glydfs stopped before mounting (see %s)", filepath.Join(os.TempDir(), "glydfs.log"))
	case <-time.After(5 * time.Minute):
		return errors.New("timed out waiting for the mount")
	}
}
