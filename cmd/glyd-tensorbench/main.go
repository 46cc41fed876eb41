// Command glyd-tensorbench measures packed safetensors on the corpus's
// model weights and writes the report as markdown (make bench-tensors).
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"

	"github.com/glyd/glyd/internal/tensorbench"
)

func main() {
	var cfg tensorbench.Config
	var out string
	flag.StringVar(&cfg.Corpus, "corpus", "../shared/corpus", "corpus directory (with weights/<set>/*.safetensors)")
	flag.StringVar(&out, "out", "docs/benchmarks/tensors.md", "markdown report to write")
	flag.IntVar(&cfg.Reps, "reps", 7, "timed decodes per file (the fastest counts)")
	flag.Uint64Var(&cfg.Seed, "seed", 1, "seed of the synthetic series' nudges")
	flag.IntVar(&cfg.Big, "big", 16<<20, "values of the synthetic large tensor")
	zstd := flag.Bool("zstd", true, "measure zstd -19 (the C binary on PATH)")
	flag.Parse()
	if flag.NArg() > 0 {
		fatalf("unexpected arguments: %v", flag.Args())
	}
	if *zstd {
		p, err := exec.LookPath("zstd")
		if err != nil {
			fatalf("zstd not found on PATH (install it, or run with -zstd=false)")
		}
		cfg.Zstd = p
	}
	cfg.Log = os.Stderr
	rep, err := tensorbench.Run(cfg)
	if err != nil {
		fatalf("%v", err)
	}
	if err := rep.WriteFile(out); err != nil {
		fatalf("%v", err)
	}
	fmt.Printf("wrote %s\n\n", out)
	for _, t := range rep.Targets() {
		st := "not met"
		if t.Met {
			st = "met"
		}
		fmt.Printf("%-8s %s: %s (goal %s)\n", st, t.Name, t.Measured, t.Goal)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "glyd-tensorbench: "+format+"\n", args...)
	os.Exit(1)
}
