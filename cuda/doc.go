// Package cuda loads packed tensors onto an NVIDIA GPU and decodes them
// there. It needs no CUDA toolkit to build and no cgo: the driver API is
// loaded from libcuda.so.1 at run time (github.com/ebitengine/purego) and
// the decode kernel ships as PTX embedded in the binary, JIT-compiled by
// the driver. Without a GPU every call fails with a clear error; Doctor
// says why.
package cuda
