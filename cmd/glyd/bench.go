package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/glyd/glyd/internal/bench"
)

// benchCmd measures glyd's tiers against peer codecs: glyd bench [--cli]
// [--markdown FILE] [--time DURATION] [-T N] FILE|DIR...
type benchCmd struct {
	CLI      bool          `name:"cli" help:"Also run the C command-line tools found on PATH (lz4, zstd, xz), pinned to one thread."`
	Markdown string        `name:"markdown" placeholder:"FILE" help:"Also write the report as Markdown to FILE."`
	Time     time.Duration `name:"time" default:"300ms" placeholder:"DURATION" help:"Minimum time of one timing run; the best of --runs runs counts (default ${default})."`
	Runs     int           `name:"runs" default:"3" placeholder:"N" help:"Timing runs to take the best of (default ${default})."`
	Threads  int           `short:"T" name:"threads" default:"0" placeholder:"N" help:"Threads for the all-threads columns and the multi-core row; 0 means runtime.NumCPU()."`
	Quiet    bool          `short:"q" help:"No progress on stderr."`

	Paths []string `arg:"" name:"path" placeholder:"FILE|DIR" help:"Files, or directories walked recursively (regular, non-empty files; rows are grouped by top-level folder)."`
}

func (c *benchCmd) Run() error {
	if c.Threads < 0 {
		return fmt.Errorf("-T %d: thread count must be 0 (one per core) or more", c.Threads)
	}
	if c.Time <= 0 || c.Runs <= 0 {
		return fmt.Errorf("--time and --runs must be positive")
	}
	threads := c.Threads
	if threads == 0 {
		threads = runtime.NumCPU()
	}
	inputs, err := bench.Collect(c.Paths)
	if err != nil {
		return err
	}
	cfg := bench.Config{MinTime: c.Time, Runs: c.Runs, Threads: threads, CLI: c.CLI, Log: os.Stderr}
	if c.Quiet {
		cfg.Log = nil
	}
	if c.CLI {
		// glyd's own decompress path, for the process-timing column.
		if exe, err := os.Executable(); err == nil {
			cfg.GlydProc = []string{exe, "compress", "-d", "-c", "-q", "-T", "1"}
		}
	}
	rep, err := bench.Run(cfg, inputs)
	if err != nil {
		return err
	}
	rep.Paths = c.Paths
	if err := rep.WriteText(os.Stdout); err != nil {
		return err
	}
	if c.Markdown == "" {
		return nil
	}
	if dir := filepath.Dir(c.Markdown); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	f, err := os.Create(c.Markdown)
	if err != nil {
		return err
	}
	if err := rep.WriteMarkdown(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
