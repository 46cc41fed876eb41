// Command glyd-storebench measures glyd's chunk store against restic, borg
// and zstd on a corpus and writes the report as markdown (make bench-store).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/dustin/go-humanize"

	"github.com/glyd/glyd/internal/storebench"
)

func main() {
	var (
		cfg  storebench.Config
		out  string
		big  string
		read string
	)
	flag.StringVar(&cfg.Corpus, "corpus", "../shared/corpus", "corpus directory (with releases/x-tools/)")
	flag.StringVar(&out, "out", "docs/benchmarks/store.md", "markdown report to write")
	flag.StringVar(&cfg.Work, "work", "", "scratch directory (default: a new temporary directory)")
	flag.BoolVar(&cfg.Keep, "keep", false, "keep the scratch directory")
	flag.StringVar(&big, "big", "1GiB", "size of the random-read object")
	flag.IntVar(&cfg.Reads, "reads", 300, "random reads")
	flag.StringVar(&read, "read-size", "64KiB", "bytes per random read")
	flag.IntVar(&cfg.Runs, "runs", 5, "timed runs per get measurement (the median counts)")
	flag.BoolVar(&cfg.Peers, "peers", true, "measure restic, borg and zstd too")
	flag.BoolVar(&cfg.DropCaches, "drop-caches", true, "drop the page cache before the random reads (needs root)")
	flag.Uint64Var(&cfg.Seed, "seed", 1, "seed of the large object and the read offsets")
	flag.Parse()
	if flag.NArg() > 0 {
		fatalf("unexpected arguments: %v", flag.Args())
	}
	n, err := humanize.ParseBytes(big)
	if err != nil || n == 0 {
		fatalf("-big %q: not a size", big)
	}
	cfg.BigSize = int64(n)
	rs, err := humanize.ParseBytes(read)
	if err != nil || rs == 0 || rs > 1<<30 {
		fatalf("-read-size %q: not a size", read)
	}
	cfg.ReadSize = int(rs)
	cfg.Log = os.Stderr

	rep, err := storebench.Run(cfg)
	if err != nil {
		fatalf("%v", err)
	}
	if err := rep.WriteFile(out); err != nil {
		fatalf("%v", err)
	}
	fmt.Printf("wrote %s\n\n", out)
	for _, t := range rep.Targets() {
		fmt.Printf("%-10s %s: %s (goal %s)\n", t.Status(), t.Name, t.Measured, t.Goal)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "glyd-storebench: "+format+"\n", args...)
	os.Exit(1)
}
