# glyd — see README.md. `make run` and `make test` are the two set-up commands.
GO        ?= go
BIN       := bin
CORPUS    ?= ../shared/corpus
FUZZTIME  ?= 20s
PKGS      := ./...

.PHONY: all build run test test-unit test-race test-noasm lint fuzz clean tools

all: build

build:
	$(GO) build -o $(BIN)/glyd ./cmd/glyd

# Until the filesystem lands, `make run` demonstrates the CLI on a sample:
# compress a tarball of this source tree in every tier, show info, verify
# and decompress it, and compare with the original.
run: build
	@mkdir -p $(BIN)/demo
	@tar cf $(BIN)/demo/source.tar --exclude=./bin --exclude=./.git .
	@for t in "" --max --cold; do \
		./$(BIN)/glyd $$t -k -f -v $(BIN)/demo/source.tar $(BIN)/demo/source$$t.tar.glyd 2>&1 || exit 1; \
	done
	./$(BIN)/glyd info $(BIN)/demo/source--max.tar.glyd
	./$(BIN)/glyd test $(BIN)/demo/source.tar.glyd $(BIN)/demo/source--max.tar.glyd $(BIN)/demo/source--cold.tar.glyd
	./$(BIN)/glyd -d -f -c $(BIN)/demo/source--cold.tar.glyd | cmp - $(BIN)/demo/source.tar && echo "round trip: identical"
	./$(BIN)/glyd bench --time 200ms $(BIN)/demo/source.tar

# The test command CI runs: formatting and vet, the unit and end-to-end
# tests, a -race lane and a pure-Go (noasm) lane.
test: lint test-unit test-race test-noasm

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

FUZZ_TARGETS := codec:FuzzDecode codec:FuzzDecodeChunk codec/lz:FuzzDecodeBlock codec/lz:FuzzRoundTrip \
	delta:FuzzDecode chunkstore:FuzzDecodeManifest chunkstore:FuzzDecodeChunkRecord chunkstore/cdc:FuzzSplit

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
