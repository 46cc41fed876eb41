// Package cuda loads packed tensors onto an NVIDIA GPU and decodes them
// there. It needs no CUDA toolkit to build and no cgo: the driver API is
// loaded from libcuda.so.1 at run time (github.com/ebitengine/purego) and
// the decode kernel ships as PTX embedded in the binary, JIT-compiled by
// the driver. Without a GPU every call fails with a clear error; Doctor
// says why.
//
// A load (Loader.Load) of a packed file (package packed) works out a Layout
// on the CPU from the file's directory alone: the tensors end up in one
// device buffer laid out as the original safetensors data section, so a
// tensor's device pointer is that buffer plus its data_offsets, exactly as
// for a plain load. Files load in batches (up to batchBytes of payload; a
// folder of small shards is one batch): one data buffer, one work buffer
// holding every payload section, one merged Plan. The payloads are read
// into pinned staging buffers by several goroutines and copied to the
// device as they are; as soon as every payload a run of the plan's blocks
// needs is on the device those blocks are launched (kernels/decode.cu,
// glyd_decode), in one of several non-blocking streams, so decoding runs
// beside the copies still going and a large file is decoded a few
// milliseconds after its last byte arrives. The spans the CPU must produce
// (tensors kept in the meta section) are decoded meanwhile, uploaded as
// one blob and put in place by glyd_scatter. A batch whose tensors decode
// to under CPUBelow bytes is decoded on the CPU altogether: one thread of
// the kernel decodes a whole 4096-value group, and a lone thread's latency
// is longer than the CPU's decode of a small model. Verify always uses
// the kernel.
//
// Plan is the launch's description, built in pure Go: per span a
// descriptor (where its group ends, CRCs, raw plane and streams lie in the
// uploaded bytes, where its values go), per block of BlockThreads threads
// its span and first group (a block's groups share one span, whose code
// table the block expands into a lookup table in shared memory), and per
// span its canonical code (counts per length, symbols in canonical order).
// Each thread decodes one group exactly as tensor.DecodeReference does,
// reading and writing through 16-byte accesses (the kernel is bound by
// memory transactions: a warp's 32 threads touch 32 places), and writes a
// status word; the host reads back a two-word summary and, on failure,
// the status words, to name the tensor and group.
//
// Emulate is the kernel transcribed to Go, statement for statement, and
// runs over the very buffers a GPU would get; NewEmulatedLoader runs a
// whole load with it (and GLYD_GPU_EMULATE=1 makes 'glyd gpu' do so), so
// everything but the driver calls is tested on machines without a GPU.
// tests/gpu/run.sh is the check for a machine with one; docs/gpu.md
// describes the loader and its measurements.
package cuda
