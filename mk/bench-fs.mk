# Filesystem benchmark: included by the main Makefile (-include mk/*.mk).
#
#   make bench-fs                              # corpus at ../shared/corpus, a 1 GiB test file
#   make bench-fs CORPUS=DIR                   # DIR/releases/x-tools/, DIR/text/, DIR/records/
#   make bench-fs FS_BENCH_FLAGS='-size 128MiB -runs 2'     # a quick run
#
# Mounts glydfs (bin/glydfs) and measures it against the local disk,
# `glyd -d`, squashfuse on a zstd squashfs image, fio and zstd in one run
# and writes docs/benchmarks/fs.md: sequential reads of a large compressible
# file (cold and warm), 4 KiB random reads (fio), unpacking a release
# tarball and writing the large file into the mount, and what a release
# series costs in the mount. Needs /dev/fuse and fusermount3, and root to
# drop the page cache for the cold runs. Installs squashfs-tools, squashfuse
# and fio with apt-get when they are missing (as root, or through sudo -n).
# Takes ~8 minutes with two cores (7.5 for the committed report; ~8 minutes
# of CPU time), longer when other work shares the cores (21 minutes at a
# load average of 9, mksquashfs alone 8.5 of them). -size 128MiB -runs 2
# takes ~4. The scratch directory (under /var/tmp; FS_BENCH_FLAGS='-work
# DIR' to move it) needs ~3 GiB on a disk.

GO             ?= go
CORPUS         ?= ../shared/corpus
FS_BENCH_MD    ?= docs/benchmarks/fs.md
FS_BENCH_FLAGS ?=

.PHONY: bench-fs bench-fs-tools

bench-fs: deps bench-fs-tools
	@test -d "$(CORPUS)/releases/x-tools" || { echo "bench-fs: $(CORPUS)/releases/x-tools not found; use make bench-fs CORPUS=DIR" >&2; exit 1; }
	@mkdir -p bin $(dir $(FS_BENCH_MD))
	$(GO) build -o bin/glyd ./cmd/glyd
	$(GO) build -o bin/glydfs ./cmd/glydfs
	$(GO) build -o bin/glyd-fsbench ./cmd/glyd-fsbench
	@./bin/glyd-fsbench -corpus "$(CORPUS)" -bin bin -out "$(FS_BENCH_MD)" $(FS_BENCH_FLAGS); rc=$$?; \
	left=$$(awk '$$5 ~ /\/glyd-fsbench-/ {print $$5}' /proc/self/mountinfo); \
	if [ -n "$$left" ]; then echo "bench-fs: unmounting what the benchmark left: $$left" >&2; \
		for m in $$left; do fusermount3 -u -z "$$m"; done; rc=1; fi; \
	exit $$rc

# The peers: squashfs-tools (mksquashfs), squashfuse and fio from apt when
# missing; zstd and tar are expected present but are installed the same way
# if they are not.
bench-fs-tools:
	@missing=""; \
	command -v mksquashfs >/dev/null 2>&1 || missing="$$missing squashfs-tools"; \
	command -v squashfuse >/dev/null 2>&1 || missing="$$missing squashfuse"; \
	command -v fio >/dev/null 2>&1 || missing="$$missing fio"; \
	command -v zstd >/dev/null 2>&1 || missing="$$missing zstd"; \
	command -v tar >/dev/null 2>&1 || missing="$$missing tar"; \
	if [ -n "$$missing" ]; then \
		if [ "$$(id -u)" = 0 ]; then sudo=""; \
		elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then sudo="sudo -n"; \
		else echo "bench-fs: missing$$missing; install them as root (apt-get install -y$$missing)" >&2; exit 1; fi; \
		echo "bench-fs: installing$$missing"; \
		$$sudo apt-get update && $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y $$missing || exit 1; \
	fi
