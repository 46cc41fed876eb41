#!/usr/bin/env bash
# Prepares bin/gpu/ for tests/gpu/run.sh on a GPU machine that has no Go
# toolchain: glyd, the synthetic-checkpoint writer and the tensor package's
# test binary, built here for linux/amd64 (stripped), and a copy of the
# corpus weights (run.sh finds them there), as long as the whole folder
# stays under GLYD_GPU_PREP_MB (default 60: a device call carries 64 MiB
# with the working tree). Then, on the device machine: carry bin/gpu and run
# tests/gpu/run.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
PREP=bin/gpu
LIMIT=$(( ${GLYD_GPU_PREP_MB:-60} << 20 ))
rm -rf "$PREP"
mkdir -p "$PREP"
export GOOS=linux GOARCH=amd64 CGO_ENABLED=0
go build -trimpath -ldflags='-s -w' -o "$PREP/glyd" ./cmd/glyd
go build -trimpath -ldflags='-s -w' -o "$PREP/synth" ./tests/gpu/synth
go test -c -trimpath -ldflags='-s -w' -o "$PREP/tensor.test" ./tensor
echo "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo +changes), $(go version | cut -d' ' -f3)" >"$PREP/VERSION"
CORPUS=${1:-}
if [ -z "$CORPUS" ]; then
	for d in ../shared/corpus/weights /work/shared/corpus/weights; do
		if [ -d "$d" ]; then CORPUS=$d; break; fi
	done
fi
if [ -n "$CORPUS" ]; then
	used=$(du -sb "$PREP" | cut -f1)
	# Smallest files first, by dtype folder, while they fit.
	while IFS= read -r f; do
		sz=$(stat -c %s "$f")
		[ $((used + sz)) -le "$LIMIT" ] || continue
		rel=${f#"$CORPUS"/}
		mkdir -p "$PREP/corpus/$(dirname "$rel")"
		cp "$f" "$PREP/corpus/$rel"
		used=$((used + sz))
	done < <(find "$CORPUS" -maxdepth 2 -name '*.safetensors' -printf '%s %p\n' | sort -n | cut -d' ' -f2-)
fi
echo "tests/gpu/prep.sh: $PREP holds $(du -sh "$PREP" | cut -f1): $(ls "$PREP" | tr '\n' ' ')"
[ -d "$PREP/corpus" ] && echo "  corpus: $(find "$PREP/corpus" -name '*.safetensors' | wc -l) of the weights files"
echo "On the GPU machine: carry [\"bin/gpu\"] and run tests/gpu/run.sh"
