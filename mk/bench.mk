# Benchmark harness: included by the main Makefile (include mk/bench.mk).
#
#   make bench                      # corpus at ../shared/corpus
#   make bench CORPUS=DIR           # any files or directories
#   make bench BENCH_FLAGS='--time 150ms -T 2'
#
# Builds ./bin/glyd, measures glyd's tiers against the Go peers and the C
# CLIs on PATH (lz4, zstd, xz), prints the tables and writes
# docs/benchmarks/codec.md. Takes a while: ~10-25 minutes on ~165 MB with two cores.

GO          ?= go
CORPUS      ?= ../shared/corpus
BENCH_MD    ?= docs/benchmarks/codec.md
BENCH_FLAGS ?=

.PHONY: bench
bench:
	@test -e "$(CORPUS)" || { echo "bench: corpus $(CORPUS) not found; use make bench CORPUS=DIR" >&2; exit 1; }
	@mkdir -p bin $(dir $(BENCH_MD))
	$(GO) build -o bin/glyd ./cmd/glyd
	./bin/glyd bench --cli --markdown $(BENCH_MD) $(BENCH_FLAGS) $(CORPUS)
