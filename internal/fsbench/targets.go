package fsbench

import "github.com/glyd/glyd/internal/benchfmt"

// Target is one goal with what this run measured.
type Target = benchfmt.Target
