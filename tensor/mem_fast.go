//go:build amd64 || arm64 || ppc64le || 386 || loong64

package tensor

import "unsafe"

// Unaligned little-endian loads and stores for the decoder's inner loops,
// on architectures where plain unaligned accesses are little-endian and
// cheap. The caller guarantees the bytes are in bounds.

func load64(p unsafe.Pointer, off int) uint64 { return *(*uint64)(unsafe.Add(p, off)) }

func load32(p unsafe.Pointer, off int) uint32 { return *(*uint32)(unsafe.Add(p, off)) }

func store64(p unsafe.Pointer, off int, v uint64) { *(*uint64)(unsafe.Add(p, off)) = v }

func store32(p unsafe.Pointer, off int, v uint32) { *(*uint32)(unsafe.Add(p, off)) = v }
