# Packed safetensors benchmark: included by the main Makefile (-include mk/*.mk).
#
#   make bench-tensors                       # corpus at ../shared/corpus
#   make bench-tensors CORPUS=DIR            # DIR/weights/<set>/*.safetensors
#   make bench-tensors TENSOR_BENCH_FLAGS='-reps 11'
#
# Packs every weights file of the corpus, checks it unpacks byte for byte,
# measures bits per value against 8 + H(exponent), size against the C zstd
# -19, decode speed per core, and a synthetic checkpoint series; writes
# docs/benchmarks/tensors.md. About a minute on two cores (zstd -19 is most
# of it).

GO                 ?= go
CORPUS             ?= ../shared/corpus
TENSOR_BENCH_MD    ?= docs/benchmarks/tensors.md
TENSOR_BENCH_FLAGS ?=

.PHONY: bench-tensors fuzz-tensors

bench-tensors:
	@test -d "$(CORPUS)/weights" || { echo "bench-tensors: $(CORPUS)/weights not found; use make bench-tensors CORPUS=DIR" >&2; exit 1; }
	@command -v zstd >/dev/null 2>&1 || { echo "bench-tensors: zstd not found (apt-get install zstd)" >&2; exit 1; }
	@mkdir -p bin $(dir $(TENSOR_BENCH_MD))
	$(GO) build -o bin/glyd-tensorbench ./cmd/glyd-tensorbench
	./bin/glyd-tensorbench -corpus "$(CORPUS)" -out "$(TENSOR_BENCH_MD)" $(TENSOR_BENCH_FLAGS)

# The tensor packages' fuzz targets join `make fuzz`; `make fuzz-tensors`
# runs only them.
TENSOR_FUZZ_TARGETS := safetensors:FuzzParse safetensors:FuzzParseIndex tensor:FuzzDecode tensor:FuzzRoundTrip packed:FuzzDecode
FUZZ_TARGETS += $(TENSOR_FUZZ_TARGETS)

fuzz-tensors:
	@set -e; for spec in $(TENSOR_FUZZ_TARGETS); do \
		pkg=$${spec%%:*}; fn=$${spec##*:}; \
		echo "fuzz $$pkg $$fn"; \
		$(GO) test -run XXX -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) ./$$pkg; \
	done
