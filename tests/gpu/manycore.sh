#!/usr/bin/env bash
# Many-core decode check for the GPU machine's CPUs (16 cores there; the
# development machine has 2). Run from the repository root:
#
#   tests/gpu/manycore.sh [GLYD] [INPUT]
#
# GLYD defaults to bin/gpu/glyd (tests/gpu/prep.sh) or bin/glyd. INPUT
# defaults to a tar of the machine's own /usr/lib and /usr/share (real
# binaries, libraries and text; nothing can be carried there beyond the
# 64 MiB working tree), cut to GLYD_MANYCORE_MB (default 512) MiB. It
# compresses INPUT with the default tier and with --max, then times
# `glyd -d -c -T N` for N = 1, 2, 4, ... all cores (best of 3, output to
# /dev/null, input in the page cache) and, where installed, C lz4 -d and
# zstd -d of the same bytes. Prints a Markdown report on stdout.
set -uo pipefail
cd "$(dirname "$0")/../.."
GLYD=${1:-}
if [ -z "$GLYD" ]; then
	for g in bin/gpu/glyd bin/glyd; do [ -x "$g" ] && GLYD=$g && break; done
fi
[ -x "${GLYD:-}" ] || { echo "manycore.sh: no glyd binary" >&2; exit 1; }
MB=${GLYD_MANYCORE_MB:-512}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/glyd-manycore.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
IN=$WORK/in
if [ $# -ge 2 ]; then
	head -c $((MB << 20)) "$2" >"$IN"
else
	tar cf - /usr/lib /usr/share 2>/dev/null | head -c $((MB << 20)) >"$IN"
fi
SIZE=$(stat -c %s "$IN")
SRCDESC="a tar of this machine's /usr/lib and /usr/share"
[ $# -ge 2 ] && SRCDESC=$2
CPUS=$(nproc)

best() { # best wall seconds of 3 runs of "$@"
	local b= t0 t1 d
	for _ in 1 2 3; do
		t0=$(date +%s.%N)
		"$@" >/dev/null 2>&1 || { echo fail; return; }
		t1=$(date +%s.%N)
		d=$(awk "BEGIN{print $t1 - $t0}")
		if [ -z "$b" ] || [ "$(awk "BEGIN{print ($d < $b)}")" = 1 ]; then b=$d; fi
	done
	echo "$b"
}
mbs() { [ "$1" = fail ] && echo failed || awk "BEGIN{printf \"%d\", $SIZE / $1 / 1e6}"; }
div() { awk "BEGIN{printf \"%.${3:-3}f\", $1 / $2}"; }

echo "# Many-core decode on the GPU machine"
echo
echo "Written by \`tests/gpu/manycore.sh\` on $(date -u +%Y-%m-%dT%H:%MZ): $CPUS cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')). Input: $SIZE bytes, $SRCDESC. Wall time of the whole process, best of 3, input in the page cache, output to /dev/null; MB/s of decoded bytes."
echo
echo "| decoder | threads | compressed | ratio | MB/s | vs 1 thread |"
echo "|---|---:|---:|---:|---:|---:|"
for tier in default max; do
	flag=
	[ $tier = max ] && flag=--max
	"$GLYD" compress $flag -k -f -q -c "$IN" >"$WORK/in.$tier.glyd" 2>"$WORK/err" ||
		"$GLYD" compress $flag -k -f -c "$IN" >"$WORK/in.$tier.glyd" 2>"$WORK/err" ||
		{ echo "| glyd $tier | compress failed: $(tail -1 "$WORK/err") |"; continue; }
	csize=$(stat -c %s "$WORK/in.$tier.glyd")
	ratio=$(div "$SIZE" "$csize")
	one=
	t=1
	while [ $t -le "$CPUS" ]; do
		s=$(best "$GLYD" compress -d -c -T $t "$WORK/in.$tier.glyd")
		r=$(mbs "$s")
		[ -z "$one" ] && one=$r
		x=$( [ "$r" = failed ] || [ "$one" = failed ] && echo - || div "$r" "$one" 2)
		echo "| glyd -d ($tier) | $t | $csize | $ratio | $r | ${x}× |"
		if [ $t -lt "$CPUS" ] && [ $((t * 2)) -gt "$CPUS" ]; then t=$CPUS; else t=$((t * 2)); fi
	done
done
if command -v lz4 >/dev/null; then
	lz4 -1 -q -f "$IN" "$WORK/in.lz4"
	csize=$(stat -c %s "$WORK/in.lz4")
	echo "| C lz4 -d (of lz4 -1) | 1 | $csize | $(div "$SIZE" "$csize") | $(mbs "$(best lz4 -d -c "$WORK/in.lz4")") | |"
fi
if command -v zstd >/dev/null; then
	zstd -3 -q -f -T0 "$IN" -o "$WORK/in.zst"
	csize=$(stat -c %s "$WORK/in.zst")
	echo "| C zstd -d (of zstd -3) | 1 | $csize | $(div "$SIZE" "$csize") | $(mbs "$(best zstd -d -c "$WORK/in.zst")") | |"
fi
echo
