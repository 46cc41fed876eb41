//go:build unix

package cuda

import (
	"os"
	"syscall"
)

// mapFile maps a file read-only: a packed file's directory and meta section
// are read through the mapping, touching only their pages; the payload is
// uploaded from the file by the loader's readers.
func mapFile(f *os.File, size int64) ([]byte, func(), error) {
	if size == 0 {
		return nil, func() {}, nil
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, &os.PathError{Op: "mmap", Path: f.Name(), Err: err}
	}
	return b, func() { syscall.Munmap(b) }, nil
}
