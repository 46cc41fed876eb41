#!/usr/bin/env bash
# Prepares bin/gpu/ for tests/gpu/run.sh on a GPU machine that has no Go
# toolchain: glyd, glydfs, the synthetic-checkpoint writer and the tensor
# package's test binary, built here for linux/amd64 (stripped; all but glyd
# compressed with glyd --max, run.sh decompresses them), and the corpus
# weights packed with glyd pack, with the SHA-256 of the originals (run.sh
# unpacks them and checks every byte), as long as the whole folder stays
# under GLYD_GPU_PREP_MB (default 58: a device call carries 64 MiB with the
# working tree). Then, on the device machine: carry bin/gpu and run
# tests/gpu/run.sh.
set -euo pipefail
cd "$(dirname "$0")/../.."
PREP=bin/gpu
LIMIT=$(( ${GLYD_GPU_PREP_MB:-58} << 20 ))
rm -rf "$PREP"
mkdir -p "$PREP"
export GOOS=linux GOARCH=amd64 CGO_ENABLED=0
go build -trimpath -ldflags='-s -w' -o "$PREP/glyd" ./cmd/glyd
TMPB=$(mktemp -d)
trap 'rm -rf "$TMPB"' EXIT
go build -trimpath -ldflags='-s -w' -o "$TMPB/glydfs" ./cmd/glydfs
go build -trimpath -ldflags='-s -w' -o "$TMPB/synth" ./tests/gpu/synth
go test -c -trimpath -ldflags='-s -w' -o "$TMPB/tensor.test" ./tensor
unset GOOS GOARCH
for b in glydfs synth tensor.test; do
	"$PREP/glyd" compress --max -q -c "$TMPB/$b" >"$PREP/$b.glyd"
done
echo "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo +changes), $(go version | cut -d' ' -f3)" >"$PREP/VERSION"
CORPUS=${1:-}
if [ -z "$CORPUS" ]; then
	for d in ../shared/corpus/weights /work/shared/corpus/weights; do
		if [ -d "$d" ]; then CORPUS=$d; break; fi
	done
fi
if [ -n "$CORPUS" ]; then
	used=$(du -sb "$PREP" | cut -f1)
	# Smallest files first, by dtype folder, while they fit: packed
	# (RELPATH.glyt), their originals' SHA-256 in corpus/SHA256SUMS.
	mkdir -p "$PREP/corpus"
	: >"$PREP/corpus/SHA256SUMS"
	while IFS= read -r f; do
		rel=${f#"$CORPUS"/}
		mkdir -p "$PREP/corpus/$(dirname "$rel")"
		"$PREP/glyd" pack "$f" "$PREP/corpus/$rel.glyt" >/dev/null 2>&1 || { echo "glyd pack $f failed" >&2; exit 1; }
		sz=$(stat -c %s "$PREP/corpus/$rel.glyt")
		if [ $((used + sz)) -gt "$LIMIT" ]; then
			rm -f "$PREP/corpus/$rel.glyt"
			continue
		fi
		(cd "$CORPUS" && sha256sum "$rel") >>"$PREP/corpus/SHA256SUMS"
		used=$((used + sz))
	done < <(find "$CORPUS" -maxdepth 2 -name '*.safetensors' -printf '%s %p\n' | sort -n | cut -d' ' -f2-)
fi
echo "tests/gpu/prep.sh: $PREP holds $(du -sh "$PREP" | cut -f1): $(ls "$PREP" | tr '\n' ' ')"
[ -d "$PREP/corpus" ] && echo "  corpus: $(wc -l <"$PREP/corpus/SHA256SUMS") of the weights files, packed"
echo "On the GPU machine: carry [\"bin/gpu\"] and run tests/gpu/run.sh"
