// Command glyd-fsbench measures the glydfs mount against its peers (the
// local disk, `glyd -d`, squashfuse, fio, tar, zstd) on a corpus and writes
// the report as markdown (make bench-fs). It mounts and unmounts glydfs
// and squashfuse itself, so it needs /dev/fuse and fusermount3, and root
// to drop the page cache for the cold measurements.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/glyd/glyd/internal/fsbench"
)

func main() {
	var (
		cfg  fsbench.Config
		out  string
		size string
	)
	flag.StringVar(&cfg.Corpus, "corpus", "../shared/corpus", "corpus directory (with releases/x-tools/, text/, records/)")
	flag.StringVar(&out, "out", "docs/benchmarks/fs.md", "markdown report to write")
	flag.StringVar(&cfg.Bin, "bin", "bin", "directory holding the glyd and glydfs binaries")
	flag.StringVar(&cfg.WorkParent, "work", "/var/tmp", "make the scratch directory (stores, mount points, the test file) in this directory, on the local disk")
	flag.BoolVar(&cfg.Keep, "keep", false, "keep the scratch directory")
	flag.StringVar(&size, "size", "1GiB", "size of the test file (e.g. 128MiB for a quick run)")
	flag.IntVar(&cfg.Runs, "runs", 3, "timed runs per measurement (the median counts)")
	flag.IntVar(&cfg.FioIOs, "fio-reads", 1000, "4 KiB reads of each uncached fio job")
	flag.DurationVar(&cfg.FioTime, "fio-time", 5*time.Second, "length of each cached fio job")
	flag.BoolVar(&cfg.Peers, "peers", true, "measure glyd -d, squashfuse and zstd too")
	flag.BoolVar(&cfg.DropCaches, "drop-caches", true, "drop the page cache before cold measurements (needs root)")
	flag.Uint64Var(&cfg.Seed, "seed", 1, "seed of the test file and of fio's offsets")
	flag.Parse()
	if flag.NArg() > 0 {
		fatalf("unexpected arguments: %v", flag.Args())
	}
	n, err := humanize.ParseBytes(size)
	if err != nil || n < 1<<20 {
		fatalf("-size %q: not a size of at least 1 MiB", size)
	}
	cfg.Size = int64(n)
	if cfg.Runs < 1 {
		fatalf("-runs %d: need at least one", cfg.Runs)
	}
	cfg.CmdLine = strings.Join(append([]string{"glyd-fsbench"}, os.Args[1:]...), " ")
	cfg.Log = os.Stderr

	rep, err := fsbench.Run(cfg)
	if err != nil {
		if rep != nil {
			for _, p := range rep.Problems {
				fmt.Fprintf(os.Stderr, "glyd-fsbench: glydfs problem: %s\n", p)
			}
		}
		fatalf("%v", err)
	}
	if err := rep.WriteFile(out); err != nil {
		fatalf("%v", err)
	}
	fmt.Printf("wrote %s\n\n", out)
	for _, t := range rep.Targets() {
		fmt.Printf("%-12s %s: %s (goal %s)\n", t.Status(), t.Name, t.Measured, t.Goal)
	}
	for _, p := range rep.Problems {
		fmt.Printf("glydfs problem: %s\n", p)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "glyd-fsbench: "+format+"\n", args...)
	os.Exit(1)
}
