#!/usr/bin/env bash
# The GPU loader's check, for a machine with an NVIDIA GPU. Run from the
# repository root:
#
#   tests/gpu/run.sh [WEIGHTS]
#
# WEIGHTS is a safetensors file or a folder of them (default: the corpus,
# ../shared/corpus/weights/*/*.safetensors or /work/shared/...). It builds
# glyd (or takes the prebuilt one from bin/gpu/, made by tests/gpu/prep.sh
# where Go is, for GPU machines without a Go toolchain), packs every weights
# file with `glyd pack`, checks `glyd gpu verify` is bit-exact on each,
# times `glyd gpu load` of each packed file against the plain safetensors
# baseline (read + copy to the device), loads every file as one folder
# (warm, and with the page cache dropped), does the same for a synthetic
# 2 GiB checkpoint (tests/gpu/synth), copies the weights into a glydfs mount
# and loads them from it (cold and warm, verified, read back by SHA-256),
# runs the tensor package's CPU decode benchmarks on 1 and all cores, and
# writes docs/benchmarks/gpu.md (also printed). Meant to finish in under 5
# minutes on one H200 with 16 cores (it took 70 s).
#
# Environment: GLYD_GPU_SYNTH_MB (default 2048; 0 skips the synthetic
# checkpoint), GLYD_GPU_REPEAT (default 5 loads per file, best reported),
# GLYD_GPU_REPORT (default docs/benchmarks/gpu.md), GLYD_GPU_PROFILE=DIR
# (Go CPU profiles of many warm folder and mount loads). GLYD_GPU_EMULATE=1
# tries the script where there is no GPU (the kernel emulated on the CPU;
# the report then goes to /tmp/glyd-gpu-emulated.md and says so).
set -uo pipefail
cd "$(dirname "$0")/../.."
REPORT=${GLYD_GPU_REPORT:-docs/benchmarks/gpu.md}
EMULATED=
if [ "${GLYD_GPU_EMULATE:-}" = 1 ]; then
	REPORT=${GLYD_GPU_REPORT:-/tmp/glyd-gpu-emulated.md}
	EMULATED="**EMULATED: no GPU was used (GLYD_GPU_EMULATE=1); the kernel ran as its CPU emulation, so the times say nothing about a GPU.**"
fi
PREP=bin/gpu
SYNTH_MB=${GLYD_GPU_SYNTH_MB:-2048}
REPEAT=${GLYD_GPU_REPEAT:-5}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/glyd-gpu.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
T0=$(date +%s)
log() { echo "[$(( $(date +%s) - T0 ))s] $*" >&2; }
fail=0

# --- binaries -----------------------------------------------------------
if command -v go >/dev/null 2>&1 && go build -o bin/glyd ./cmd/glyd 2>"$WORK/build.log"; then
	GLYD=bin/glyd
	go build -o "$WORK/synth" ./tests/gpu/synth && SYNTH=$WORK/synth
	go test -c -o "$WORK/tensor.test" ./tensor && TENSORTEST=$WORK/tensor.test
	go build -o "$WORK/glydfs" ./cmd/glydfs && GLYDFS=$WORK/glydfs
	built="built here with $(go version | cut -d' ' -f3)"
elif [ -x "$PREP/glyd" ]; then
	GLYD=$PREP/glyd
	# prep.sh ships the other binaries compressed with glyd.
	for b in synth tensor.test glydfs; do
		if [ -f "$PREP/$b.glyd" ]; then
			"$GLYD" compress -d -q -c "$PREP/$b.glyd" >"$WORK/$b" && chmod +x "$WORK/$b"
		elif [ -x "$PREP/$b" ]; then
			cp "$PREP/$b" "$WORK/$b"
		fi
	done
	SYNTH=$WORK/synth
	TENSORTEST=$WORK/tensor.test
	[ -x "$WORK/glydfs" ] && GLYDFS=$WORK/glydfs
	built="prebuilt by tests/gpu/prep.sh ($(cat "$PREP/VERSION" 2>/dev/null))"
else
	cat "$WORK/build.log" 2>/dev/null >&2
	echo "tests/gpu/run.sh: no Go toolchain here and no prebuilt $PREP/glyd: run tests/gpu/prep.sh where Go is, and bring bin/gpu along" >&2
	exit 1
fi
log "glyd: $built"

# --- weights ------------------------------------------------------------
if [ $# -ge 1 ]; then
	SRC=$1
else
	SRC=
	for d in ../shared/corpus/weights /work/shared/corpus/weights shared/corpus/weights; do
		if [ -d "$d" ]; then SRC=$d; break; fi
	done
	# prep.sh's copy: packed, with the originals' SHA-256. Unpacked here
	# and checked byte for byte before anything is measured.
	if [ -z "$SRC" ] && [ -f "$PREP/corpus/SHA256SUMS" ]; then
		SRC=$WORK/corpus
		while IFS= read -r p; do
			rel=${p#"$PREP/corpus/"}
			mkdir -p "$SRC/$(dirname "$rel")"
			"$GLYD" unpack "$p" "$SRC/${rel%.glyt}" >/dev/null 2>&1 || { log "glyd unpack $p failed"; fail=1; }
		done < <(find "$PREP/corpus" -name '*.glyt')
		if (cd "$SRC" && sha256sum --quiet -c "$OLDPWD/$PREP/corpus/SHA256SUMS" >&2); then
			log "corpus: unpacked $(wc -l <"$PREP/corpus/SHA256SUMS") files from $PREP/corpus, every SHA-256 matches the original's"
		else
			log "corpus: unpacked files differ from the originals"
			fail=1
		fi
	fi
fi
files=()
if [ -n "$SRC" ] && [ -f "$SRC" ]; then
	files=("$SRC")
elif [ -n "$SRC" ] && [ -d "$SRC" ]; then
	while IFS= read -r f; do files+=("$f"); done < <(find "$SRC" -maxdepth 2 -name '*.safetensors' | sort)
fi
log "weights: ${#files[@]} files from ${SRC:-nowhere}"

DOCTOR=$("$GLYD" doctor 2>&1 | head -1)
log "$DOCTOR"
JSONL=$WORK/loads.jsonl
: >"$JSONL"
VERIFY=$WORK/verify.txt
: >"$VERIFY"

# one NAME FILE: pack, verify, time packed and plain loads; one JSON line.
one() {
	local name=$1 plain=$2 packed=$WORK/packed/$1.glyt
	mkdir -p "$(dirname "$packed")"
	local t0 t1 ok=no
	t0=$(date +%s.%N)
	if ! timeout 120 "$GLYD" pack "$plain" "$packed" >"$WORK/pack.log" 2>&1; then
		log "$name: glyd pack failed: $(tail -1 "$WORK/pack.log")"
		fail=1
		return
	fi
	t1=$(date +%s.%N)
	if timeout 120 "$GLYD" gpu verify "$packed" 2>&1 | grep -v GLYD_GPU_EMULATE >>"$VERIFY"; then
		ok=yes
	else
		fail=1
		log "$name: glyd gpu verify FAILED: $(tail -2 "$VERIFY")"
	fi
	local pj lj
	pj=$(timeout 120 "$GLYD" gpu load --json --repeat "$REPEAT" "$packed" 2>"$WORK/load.log") ||
		{ log "$name: packed load failed: $(tail -1 "$WORK/load.log")"; fail=1; return; }
	lj=$(timeout 120 "$GLYD" gpu load --json --plain --repeat "$REPEAT" "$plain" 2>"$WORK/load.log") ||
		{ log "$name: plain load failed: $(tail -1 "$WORK/load.log")"; fail=1; return; }
	python3 - "$name" "$ok" "$t0" "$t1" "$(stat -c %s "$plain")" "$(stat -c %s "$packed")" "$pj" "$lj" >>"$JSONL" <<'EOF'
import json, sys
name, ok, t0, t1, plain, packed, pj, lj = sys.argv[1:]
print(json.dumps({"name": name, "verify": ok, "pack_s": float(t1) - float(t0), "plain_bytes": int(plain),
                  "packed_bytes": int(packed), "packed": json.loads(pj), "plain": json.loads(lj)}))
EOF
	log "$name: verify $ok"
}

for f in "${files[@]}"; do
	rel=${f#"$SRC"/}
	[ "$rel" = "$f" ] && rel=$(basename "$f")
	one "${rel%.safetensors}" "$f"
done

# Every file as one directory load (what loading a model's folder of
# shards does): warm, best of REPEAT, then with a cold page cache
# (`echo 3 > /proc/sys/vm/drop_caches` before each; root only).
DIRWARM=
COLD=
if [ ${#files[@]} -gt 0 ]; then
	mkdir -p "$WORK/plainall" "$WORK/packedall"
	i=0
	for f in "${files[@]}"; do
		i=$((i + 1))
		ln -sf "$(readlink -f "$f")" "$WORK/plainall/$i.safetensors"
	done
	i=0
	while IFS= read -r p; do
		i=$((i + 1))
		ln -sf "$p" "$WORK/packedall/$i.glyt"
	done < <(find "$WORK/packed" -name '*.glyt' | sort)
	pj=$(timeout 120 "$GLYD" gpu load --json --repeat "$REPEAT" "$WORK/packedall" 2>"$WORK/load.log") &&
		lj=$(timeout 120 "$GLYD" gpu load --json --plain --repeat "$REPEAT" "$WORK/plainall" 2>"$WORK/load.log") &&
		DIRWARM=$(python3 -c 'import json,sys; print(json.dumps({"packed": json.loads(sys.argv[1]), "plain": json.loads(sys.argv[2])}))' "$pj" "$lj")
	[ -n "$DIRWARM" ] || { log "directory load failed: $(tail -1 "$WORK/load.log")"; fail=1; }
	# GLYD_GPU_PROFILE=DIR: Go CPU profiles of many warm directory loads.
	if [ -n "${GLYD_GPU_PROFILE:-}" ]; then
		"$GLYD" gpu load --repeat 200 --cpuprofile "$GLYD_GPU_PROFILE/dir-packed.prof" "$WORK/packedall" >&2
		"$GLYD" gpu load --plain --repeat 200 --cpuprofile "$GLYD_GPU_PROFILE/dir-plain.prof" "$WORK/plainall" >&2
	fi
	if sync && echo 3 >/proc/sys/vm/drop_caches 2>/dev/null; then
		cp=$("$GLYD" gpu load "$WORK/packedall" 2>&1 | grep -v GLYD_GPU_EMULATE)
		echo 3 >/proc/sys/vm/drop_caches
		cl=$("$GLYD" gpu load --plain "$WORK/plainall" 2>&1 | grep -v GLYD_GPU_EMULATE)
		COLD=$(printf 'packed: %s\nplain:  %s\n' "$cp" "$cl")
		log "cold: $COLD"
	fi
fi

# A synthetic checkpoint at LLM scale (the corpus's models are 0.1-7 MB).
if [ "$SYNTH_MB" != 0 ] && [ -x "${SYNTH:-}" ]; then
	log "synthetic checkpoint: ${SYNTH_MB} MiB"
	if timeout 120 "$SYNTH" -o "$WORK/synth.safetensors" -mb "$SYNTH_MB" >&2; then
		one "synthetic-${SYNTH_MB}MiB-bf16" "$WORK/synth.safetensors"
		rm -f "$WORK/synth.safetensors"
	fi
fi

# --- through a glydfs mount ---------------------------------------------
# What an ML engineer does: the weights copied into a glydfs mount (stored
# packed), then loaded from it. `glyd gpu load MOUNT/ckpt` reads the packed
# forms under MOUNT/.glyd/packed and decodes on the GPU; `--plain` reads the
# files' decoded bytes through FUSE. Cold: a fresh mount over the store and
# the page cache dropped before each.
MOUNTREP=
if [ -n "${GLYDFS:-}" ] && [ -e /dev/fuse ] && [ ${#files[@]} -gt 0 ]; then
	ST=$WORK/store
	MNT=$WORK/mnt
	mkdir -p "$MNT"
	mounted() { grep -q " $MNT fuse" /proc/mounts; }
	umnt() {
		umount "$MNT" 2>/dev/null || fusermount3 -u "$MNT" 2>/dev/null || fusermount -u "$MNT" 2>/dev/null
		for _ in $(seq 100); do mounted || return 0; sleep 0.1; done
		return 1
	}
	# After an unmount the old glydfs still closes the store for a moment
	# (and a second glydfs refuses a store in use): retry.
	mnt() {
		for _ in $(seq 100); do
			"$GLYDFS" "$ST" "$MNT" >>"$WORK/glydfs.log" 2>&1 && mounted && return 0
			sleep 0.1
		done
		return 1
	}
	cold() { umnt && mnt && sync && { echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true; }; }
	if mnt; then
		trap 'umnt; rm -rf "$WORK"' EXIT
		mkdir -p "$MNT/ckpt"
		: >"$WORK/mount.sums"
		i=0
		for f in "${files[@]}"; do
			i=$((i + 1))
			cp "$f" "$MNT/ckpt/$i.safetensors"
			echo "$(sha256sum <"$f" | cut -d' ' -f1)  $i.safetensors" >>"$WORK/mount.sums"
		done
		npk=$(ls "$MNT/.glyd/packed/ckpt" 2>/dev/null | wc -l)
		if cold; then
			mp=$("$GLYD" gpu load "$MNT/ckpt" 2>&1 | grep -v GLYD_GPU_EMULATE)
			cold
			ml=$("$GLYD" gpu load --plain "$MNT/ckpt" 2>&1 | grep -v GLYD_GPU_EMULATE)
			wp=$("$GLYD" gpu load --repeat "$REPEAT" "$MNT/ckpt" 2>&1 | grep -v GLYD_GPU_EMULATE | tr "\n" " ")
			wl=$("$GLYD" gpu load --plain --repeat "$REPEAT" "$MNT/ckpt" 2>&1 | grep -v GLYD_GPU_EMULATE | tr "\n" " ")
			if [ -n "${GLYD_GPU_PROFILE:-}" ]; then
				"$GLYD" gpu load --repeat 100 --cpuprofile "$GLYD_GPU_PROFILE/mount-packed.prof" "$MNT/ckpt" >&2
			fi
			mv=$("$GLYD" gpu verify "$MNT/ckpt" 2>&1 | grep -v GLYD_GPU_EMULATE)
			mvrc=$?
			sums=$(cd "$MNT/ckpt" && sha256sum --quiet -c "$WORK/mount.sums" 2>&1 && echo "every file reads back with its original SHA-256")
			[ "$mvrc" = 0 ] && [ -n "$sums" ] || fail=1
			MOUNTREP=$(printf 'files copied in: %d; packed forms under .glyd/packed: %d\ncold, packed (.glyd/packed, decoded on the GPU): %s\ncold, plain (decoded bytes through FUSE):      %s\nwarm, packed: %s\nwarm, plain:  %s\nverify: %s\nread back: %s\n' \
				"$i" "$npk" "$mp" "$ml" "$wp" "$wl" "$mv" "${sums:-SHA-256 MISMATCH}")
			log "mount: $MOUNTREP"
		else
			log "glydfs could not mount again: $(tail -2 "$WORK/glydfs.log")"
			fail=1
		fi
		umnt
	else
		log "glydfs could not mount here: $(tail -2 "$WORK/glydfs.log")"
	fi
fi

# CPU decode on 1 core and on all of them.
CPUS=$(nproc)
CPUBENCH=
if [ -x "${TENSORTEST:-}" ]; then
	log "CPU decode benchmark (-cpu 1,$CPUS)"
	CPUBENCH=$(cd tensor && timeout 150 "$TENSORTEST" -test.run XXX -test.bench 'Decode' -test.benchtime 500ms -test.cpu "1,$CPUS" 2>&1)
fi

# --- report -------------------------------------------------------------
mkdir -p "$(dirname "$REPORT")"
python3 - "$JSONL" "$VERIFY" "$built" "$DOCTOR" "$COLD" "$CPUBENCH" "$(date -u +%Y-%m-%dT%H:%MZ)" "$REPEAT" "$CPUS" "$EMULATED" "$DIRWARM" "$MOUNTREP" >"$REPORT" <<'EOF'
import json, sys
jsonl, verify, built, doctor, cold, cpubench, date, repeat, cpus, emulated, dirwarm, mountrep = sys.argv[1:]
rows = [json.loads(l) for l in open(jsonl) if l.strip()]
def gpuwait(p):
    if p.get("cpu_decoded"):
        return "decoded on the CPU"
    return f"{p['decode_s']*1e3:.3f} ms ({p.get('launches', '?')})"
out = []
w = out.append
w("# GPU loader: packed vs plain safetensors loads\n")
if emulated:
    w(emulated + "\n")
w(f"Written by `tests/gpu/run.sh` on {date}. {doctor.strip()}. glyd {built}; {cpus} CPU cores.\n")
w("Each file is packed with `glyd pack`, checked with `glyd gpu verify` (the device's bytes copied back and "
  "compared bit for bit with the CPU decode), then loaded with `glyd gpu load` (packed: read the payload, copy it "
  "to the device, decode there; plain: read the safetensors data and copy it to the device). Times are the best of "
  f"{repeat} loads with the files in the page cache, from opening the file to the tensors checked on the device; "
  "a CUDA context and the kernel's JIT are set up once per process beforehand and not counted. The kernel's blocks "
  "start as their payload arrives, beside the copies still running; *GPU wait* is the time left waiting for them "
  "after the last copy. A load whose tensors decode to under 1 MiB decodes them on the CPU instead (faster than "
  "the kernel's latency: one thread decodes a 4096-value group); `glyd gpu verify` always uses the kernel.\n")
w("| file | plain bytes | packed bytes | packed/plain | verify | plain load | packed load | of it: GPU wait (launches) | speed-up | packed GB/s (tensors) |")
w("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|")
tot = {"plain": 0, "packed": 0, "tp": 0.0, "tk": 0.0, "ok": 0}
for r in rows:
    p, l = r["packed"], r["plain"]
    tot["plain"] += r["plain_bytes"]; tot["packed"] += r["packed_bytes"]
    tot["tp"] += l["best_s"]; tot["tk"] += p["best_s"]; tot["ok"] += r["verify"] == "yes"
    w(f"| {r['name']} | {r['plain_bytes']:,} | {r['packed_bytes']:,} | {r['packed_bytes']/r['plain_bytes']:.3f} | "
      f"{'bit-exact' if r['verify']=='yes' else '**FAILED**'} | {l['best_s']*1e3:.3f} ms | {p['best_s']*1e3:.3f} ms | "
      f"{gpuwait(p)} | {l['best_s']/p['best_s']:.2f}× | {p['gbps']:.2f} |")
if rows:
    w(f"| **all {len(rows)}** | {tot['plain']:,} | {tot['packed']:,} | {tot['packed']/tot['plain']:.3f} | "
      f"{tot['ok']}/{len(rows)} bit-exact | {tot['tp']*1e3:.1f} ms | {tot['tk']*1e3:.1f} ms | | {tot['tp']/tot['tk']:.2f}× | |")
if dirwarm:
    d = json.loads(dirwarm)
    p, l = d["packed"], d["plain"]
    w(f"| **all {p['files']} corpus files as one directory load** | {l['file_bytes']:,} | {p['file_bytes']:,} | "
      f"{p['file_bytes']/l['file_bytes']:.3f} | | {l['best_s']*1e3:.3f} ms | {p['best_s']*1e3:.3f} ms | "
      f"{gpuwait(p)} | {l['best_s']/p['best_s']:.2f}× | {p['gbps']:.2f} |")
w("")
def parts(j):
    return ", ".join(f"{k[:-2]} {j.get(k, 0)*1e3:.3f} ms" for k in ("best_s", "layout_s", "read_s", "alloc_s", "hostcopy_s", "cpu_s", "decode_s")) + \
        f"; {j.get('launches', 0)} launches, {j.get('cpu_decoded', 0)} files decoded on the CPU"
w("Where the time goes (best run; layout is every file's header and plan, before the reads; read includes alloc and "
  "hostcopy, the kernels run beside it, decode is the wait after it; cpu is layout plus the CPU-made tensors, made beside the reads):\n")
w("```")
if dirwarm:
    w("directory, packed: " + parts(d["packed"]))
    w("directory, plain:  " + parts(d["plain"]))
for r in rows:
    if r["name"].startswith("synthetic") or r["name"].endswith("faceres-deep") or r["name"].endswith("human-age"):
        w(f"{r['name']}, packed: " + parts(r["packed"]))
        w(f"{r['name']}, plain:  " + parts(r["plain"]))
w("```\n")
if rows:
    p = rows[0]["packed"]
    w(f"Staging buffers page-locked: {'yes' if p.get('pinned') else 'no (' + p.get('pin_error', '') + ')'}; "
      f"kernel JIT and pinning once per process: {p['setup_s']*1e3:.1f} ms. The driver's JIT log of the kernel:\n")
    w("```\n" + (p.get("jit_log") or "(none)").strip() + "\n```\n")
if cold:
    w("Cold page cache (`echo 3 > /proc/sys/vm/drop_caches` before each), every file as one directory load:\n")
    w("```\n" + cold.strip() + "\n```\n")
else:
    w("Cold-cache loads: not measured (the page cache could not be dropped here).\n")
if mountrep:
    w("Through a glydfs mount: the files copied into `MOUNT/ckpt/` (glydfs stores them packed), then loaded as one "
      "directory: `glyd gpu load MOUNT/ckpt` reads the packed forms under `MOUNT/.glyd/packed/` and decodes them on "
      "the GPU, `--plain` reads the decoded bytes through FUSE. Cold: a fresh mount and the page cache dropped; warm: "
      f"best of {repeat}.\n")
    w("```\n" + mountrep.strip() + "\n```\n")
else:
    w("Through a glydfs mount: not measured (no glydfs binary or no /dev/fuse here).\n")
w("`glyd gpu verify` output:\n")
w("```\n" + open(verify).read().strip() + "\n```\n")
if cpubench:
    w(f"CPU decode for comparison (`go test -run XXX -bench Decode ./tensor/ -cpu 1,{cpus}`; synthetic gaussian data, "
      "decoded bytes per second):\n")
    w("```\n" + cpubench.strip() + "\n```\n")
print("\n".join(out))
EOF
cat "$REPORT"
log "done: $REPORT"
exit $fail
