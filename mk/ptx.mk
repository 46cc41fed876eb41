# The GPU loader's decode kernel: cuda/kernels/decode.cu compiled to PTX
# (cuda/kernels/decode.ptx, committed and embedded in glyd; the NVIDIA
# driver JIT-compiles it). Debian's clang-16 compiles CUDA C++ to PTX
# without the CUDA toolkit; it is installed from apt when missing.
# cuda/ptx_test.go checks the committed PTX against this rule (it reads
# PTX_FLAGS from this file) wherever clang++-16 is present.
CLANGXX   ?= clang++-16
PTX_FLAGS := --cuda-device-only --cuda-gpu-arch=sm_80 -nocudainc -nocudalib -O3 -S -x cuda

.PHONY: ptx
ptx:
	@command -v $(CLANGXX) >/dev/null || { \
		echo "installing clang-16 (apt-get)"; \
		SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q clang-16 >/dev/null || \
		{ $$SUDO apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q clang-16 >/dev/null; }; }
	$(CLANGXX) $(PTX_FLAGS) cuda/kernels/decode.cu -o cuda/kernels/decode.ptx
	@echo "cuda/kernels/decode.ptx: $$(wc -l < cuda/kernels/decode.ptx) lines"

# The GPU loader's check, on a machine with an NVIDIA GPU: packs the corpus
# weights, verifies GPU loads bit for bit and times them against plain
# safetensors loads (docs/benchmarks/gpu.md). gpu-prep builds bin/gpu/ for a
# GPU machine without Go (tests/gpu/prep.sh).
.PHONY: gpu-check gpu-prep
gpu-check:
	tests/gpu/run.sh

gpu-prep:
	tests/gpu/prep.sh
