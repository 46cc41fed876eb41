// Package storebench measures glyd's chunk store against its peers in one
// run: what a release series costs in the store and in restic, borg and
// zstd (per file, as a patch chain, as one solid stream), what the whole
// corpus costs, and how fast the store puts, gets and reads at random on
// this machine. `make bench-store` runs it (cmd/glyd-storebench) and writes
// docs/benchmarks/store.md.
package storebench

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/glyd/glyd/internal/machine"
)

// Config says what to measure.
type Config struct {
	Corpus     string    // corpus root: releases/x-tools/ and other files
	Work       string    // scratch directory; "" means a new temporary one
	Keep       bool      // keep the scratch directory
	BigSize    int64     // size of the random-read object; 0 means 1 GiB
	Reads      int       // random reads; 0 means 300
	ReadSize   int       // bytes per random read; 0 means 64 KiB
	Runs       int       // timed runs per get measurement (the median counts); 0 means 5
	Peers      bool      // run restic, borg and zstd
	DropCaches bool      // drop the page cache before the random reads
	Seed       uint64    // for the large object and the read offsets
	Log        io.Writer // progress lines; nil means none
}

func (c Config) withDefaults() Config {
	if c.BigSize <= 0 {
		c.BigSize = 1 << 30
	}
	if c.Reads <= 0 {
		c.Reads = 300
	}
	if c.ReadSize <= 0 {
		c.ReadSize = 64 << 10
	}
	if c.Runs <= 0 {
		c.Runs = 5
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	return c
}

// Report is everything one run measured.
type Report struct {
	Config  Config
	Machine Machine
	Tools   []Tool
	Started time.Time
	Elapsed time.Duration
	Threads int    // store put and read workers (GOMAXPROCS)
	Build   string // commit the benchmark was built from

	Series *Series
	Corpus *CorpusRun
	Gets   []GetRun
	Random *RandomRun
	Notes  []string
}

// Tool is a peer's version line ("" when missing).
type Tool struct{ Name, Version string }

type bench struct {
	cfg     Config
	threads int
}

func (b *bench) logf(format string, args ...any) {
	if b.cfg.Log != nil {
		fmt.Fprintf(b.cfg.Log, "storebench: "+format+"\n", args...)
	}
}

// Run measures everything Config asks for.
func Run(cfg Config) (rep *Report, err error) {
	cfg = cfg.withDefaults()
	if cfg.Corpus == "" {
		return nil, errors.New("no corpus given")
	}
	if fi, err := os.Stat(cfg.Corpus); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("corpus %s: not a directory", cfg.Corpus)
	}
	if cfg.Work == "" {
		if cfg.Work, err = os.MkdirTemp("", "glyd-storebench-"); err != nil {
			return nil, err
		}
	} else if err := os.MkdirAll(cfg.Work, 0o755); err != nil {
		return nil, err
	}
	if !cfg.Keep {
		defer os.RemoveAll(cfg.Work)
	}
	b := &bench{cfg: cfg, threads: runtime.GOMAXPROCS(0)}
	rep = &Report{Config: cfg, Machine: machineInfo(), Started: time.Now(), Threads: b.threads, Build: machine.Revision()}
	rep.Tools = []Tool{
		{"restic", machine.ToolVersion("restic", "version")},
		{"borg", machine.ToolVersion("borg", "--version")},
		{"zstd", machine.ToolVersion("zstd", "--version")},
	}

	if rep.Series, err = b.series(); err != nil {
		return nil, err
	}

	files, err := listFiles(cfg.Corpus)
	if err != nil {
		return nil, err
	}
	if rep.Corpus, err = b.corpus(files); err != nil {
		return nil, err
	}

	rep.Gets = b.gets(rep)

	contents, err := readFiles(files)
	if err != nil {
		return nil, err
	}
	rep.Random = b.random(contents)

	rep.Elapsed = time.Since(rep.Started)
	rep.Machine.LoadEnd = machine.LoadAvg()
	return rep, nil
}

// gets times whole-object reads: an object stored without deltas (the
// first release in the default-tier series store, or failing that the
// largest corpus object with neither deltas nor duplicates) and the last
// release, which reads through delta chains, in both series stores.
func (b *bench) gets(rep *Report) []GetRun {
	s := rep.Series
	var out []GetRun
	first, last := s.Files[0], s.Files[len(s.Files)-1]
	read := func(f File) ([]byte, error) { return os.ReadFile(f.Path) }

	// No deltas.
	plain := GetRun{Label: "no deltas", Store: "series, default tier", Object: first.Name, Put: s.Glyd[0].Puts[0]}
	dir := s.Glyd[0].Dir
	src := first
	if plain.Put.Deltas > 0 { // duplicates inside a first put are its own full chunks
		plain = GetRun{Label: "no deltas", Err: "no object stored without deltas"}
		var best int64 = -1
		for i, f := range rep.Corpus.Files {
			p := rep.Corpus.Puts[i]
			if p.Deltas == 0 && p.Duplicate == 0 && p.Size > best {
				best = p.Size
				plain = GetRun{Label: "no deltas", Store: "corpus, default tier", Object: f.Name, Put: p}
				src = f
				dir = rep.Corpus.Dir
			}
		}
	}
	if plain.Err == "" {
		want, err := read(src)
		if err != nil {
			plain.Err = err.Error()
			out = append(out, plain)
		} else {
			for _, cold := range []bool{false, true} {
				g := plain
				g.Cold = cold
				out = append(out, b.get(g, dir, want))
			}
		}
	} else {
		out = append(out, plain)
	}

	// Through delta chains.
	want, err := read(last)
	for i, g := range s.Glyd {
		if err != nil {
			out = append(out, GetRun{Label: "deltas", Store: "series, " + g.Tier + " tier", Object: last.Name, Err: err.Error()})
			continue
		}
		for _, cold := range []bool{false, true} {
			r := GetRun{Label: "deltas", Store: "series, " + g.Tier + " tier", Object: last.Name, Put: s.Glyd[i].Puts[len(s.Files)-1], Cold: cold}
			out = append(out, b.get(r, g.Dir, want))
		}
	}
	return out
}

// WriteFile writes the report as markdown to path, creating its folder.
func (r *Report) WriteFile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := r.WriteMarkdown(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
