//go:build !(amd64 || arm64 || ppc64le || 386 || loong64)

package tensor

import (
	"encoding/binary"
	"unsafe"
)

// Byte-wise little-endian loads and stores, for architectures that are
// big-endian or fault on unaligned accesses. The caller guarantees the
// bytes are in bounds.

func load64(p unsafe.Pointer, off int) uint64 {
	return binary.LittleEndian.Uint64(unsafe.Slice((*byte)(unsafe.Add(p, off)), 8))
}

func load32(p unsafe.Pointer, off int) uint32 {
	return binary.LittleEndian.Uint32(unsafe.Slice((*byte)(unsafe.Add(p, off)), 4))
}

func store64(p unsafe.Pointer, off int, v uint64) {
	binary.LittleEndian.PutUint64(unsafe.Slice((*byte)(unsafe.Add(p, off)), 8), v)
}

func store32(p unsafe.Pointer, off int, v uint32) {
	binary.LittleEndian.PutUint32(unsafe.Slice((*byte)(unsafe.Add(p, off)), 4), v)
}
