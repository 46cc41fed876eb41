# Store benchmark: included by the main Makefile (-include mk/*.mk).
#
#   make bench-store                          # corpus at ../shared/corpus
#   make bench-store CORPUS=DIR               # DIR/releases/x-tools/ holds the release series
#   make bench-store STORE_BENCH_FLAGS='-big 256MiB -runs 3'
#
# Measures glyd's chunk store against restic, borg and zstd in one run and
# writes docs/benchmarks/store.md: the release series, the whole corpus in
# one store, put/get speeds and random-read latency on a 1 GiB object.
# Installs restic and borgbackup with apt-get when they are missing (as root,
# or through sudo -n). Takes ~10-15 minutes with two cores.

GO                ?= go
CORPUS            ?= ../shared/corpus
STORE_BENCH_MD    ?= docs/benchmarks/store.md
STORE_BENCH_FLAGS ?=

.PHONY: bench-store bench-store-tools

bench-store: bench-store-tools
	@test -d "$(CORPUS)/releases/x-tools" || { echo "bench-store: $(CORPUS)/releases/x-tools not found; use make bench-store CORPUS=DIR" >&2; exit 1; }
	@mkdir -p bin $(dir $(STORE_BENCH_MD))
	$(GO) build -o bin/glyd-storebench ./cmd/glyd-storebench
	./bin/glyd-storebench -corpus "$(CORPUS)" -out "$(STORE_BENCH_MD)" $(STORE_BENCH_FLAGS)

# The peers: restic and borg from apt when missing; zstd is expected present
# but is installed the same way if it is not.
bench-store-tools:
	@missing=""; \
	command -v restic >/dev/null 2>&1 || missing="$$missing restic"; \
	command -v borg >/dev/null 2>&1 || missing="$$missing borgbackup"; \
	command -v zstd >/dev/null 2>&1 || missing="$$missing zstd"; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ]; then sudo=""; \
		elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo -n"; \
		else echo "bench-store: missing$$missing; install them as root (apt-get install -y$$missing)" >&2; exit 1; fi; \
		echo "bench-store: installing$$missing"; \
		$$sudo apt-get update && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y $$missing || exit 1; \
	fi
