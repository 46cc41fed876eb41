# glyd — see README.md. `make run` and `make test` are the two set-up commands.
GO        ?= go
BIN       := bin
CORPUS    ?= ../shared/corpus
FUZZTIME  ?= 20s
PKGS      := ./...

.PHONY: all build deps run demo test test-unit test-race test-noasm lint fuzz clean tools

all: build

build:
	$(GO) build -o $(BIN)/glyd ./cmd/glyd
	$(GO) build -o $(BIN)/glydfs ./cmd/glydfs

# FUSE: the kernel device is there on Linux; fusermount3 comes with fuse3
# (needed to unmount as a user, and by go-fuse when it cannot mount
# directly). Installed from apt when missing.
deps:
	@command -v fusermount3 >/dev/null || { \
		echo "installing fuse3 (apt-get)"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q fuse3 >/dev/null || \
		{ $$SUDO apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q fuse3 >/dev/null; }; }

# The main job: mount a glydfs on an embedded store (./glyd-data, created
# on first use) at ./mnt, in the foreground. Ctrl-C unmounts.
STORE ?= glyd-data
MNT   ?= mnt
run: deps build
	@mkdir -p $(MNT)
	@echo "glydfs: mounting $(STORE) at $(MNT). In another terminal: cp files into $(MNT)/,"
	@echo "  ls $(MNT)/.glyd/versions/FILE/ (every version), mkdir $(MNT)/.snapshots/NAME (a snapshot),"
	@echo "  ./$(BIN)/glyd stats $(MNT) (logical vs stored bytes). Unmount: Ctrl-C here, or fusermount3 -u $(MNT)"
	./$(BIN)/glydfs -f $(STORE) $(MNT)

# A tour of the CLI on a sample: every tier of a tarball of this source.
demo: build
	@mkdir -p $(BIN)/demo
	@tar cf $(BIN)/demo/source.tar --exclude=./bin --exclude=./.git --exclude=./$(STORE) --exclude=./$(MNT) .
	@for t in "" --max --cold; do \
		./$(BIN)/glyd $$t -k -f -v $(BIN)/demo/source.tar $(BIN)/demo/source$$t.tar.glyd 2>&1 || exit 1; \
	done
	./$(BIN)/glyd info $(BIN)/demo/source--max.tar.glyd
	./$(BIN)/glyd test $(BIN)/demo/source.tar.glyd $(BIN)/demo/source--max.tar.glyd $(BIN)/demo/source--cold.tar.glyd
	./$(BIN)/glyd -d -f -c $(BIN)/demo/source--cold.tar.glyd | cmp - $(BIN)/demo/source.tar && echo "round trip: identical"
	./$(BIN)/glyd bench --time 200ms $(BIN)/demo/source.tar

# The test command CI runs: formatting and vet, the unit and end-to-end
# tests, a -race lane and a pure-Go (noasm) lane.
test: deps lint test-unit test-race test-noasm

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
		if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) vet -tags noasm $(PKGS)

test-unit:
	$(GO) test -count=1 -timeout 15m $(PKGS)

test-race:
	$(GO) test -count=1 -race -short -timeout 15m $(PKGS)

test-noasm:
	$(GO) test -count=1 -tags noasm -short -timeout 15m $(PKGS)

FUZZ_TARGETS := codec:FuzzDecode codec:FuzzDecodeChunk codec/lz:FuzzDecodeBlock codec/lz:FuzzDecodeBlockAfter codec/lz:FuzzRoundTrip \
	delta:FuzzDecode delta:FuzzCompute fs:FuzzDecodeAttr chunkstore:FuzzDecodeManifest chunkstore:FuzzDecodeChunkRecord chunkstore/cdc:FuzzSplit \
	tensor:FuzzDecode tensor:FuzzRoundTrip packed:FuzzDecode safetensors:FuzzParse safetensors:FuzzParseIndex

# Each fuzz target for FUZZTIME (go test allows one -fuzz target per run).
fuzz:
	@set -e; for spec in $(FUZZ_TARGETS); do \
		pkg=$${spec%%:*}; fn=$${spec##*:}; \
		echo "fuzz $$pkg $$fn"; \
		$(GO) test -run XXX -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) ./$$pkg; \
	done

clean:
	rm -rf $(BIN)

-include mk/*.mk

# The unit-size trade-off table behind the defaults in docs/format.md.
bench-unitsize:
	GLYD_CORPUS=$(abspath $(CORPUS)) GLYD_UNITSIZE_OUT=$(abspath docs/benchmarks/unit-size.md) \
		$(GO) test -count=1 -run TestMeasureUnitSizes -timeout 60m -v ./codec
