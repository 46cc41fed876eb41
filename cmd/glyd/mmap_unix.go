//go:build unix

package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapInput maps a regular file into memory read-only (reading it where it
// cannot be mapped); release unmaps it.
func mapInput(name string) ([]byte, func(), error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if fi.IsDir() {
		return nil, nil, &os.PathError{Op: "read", Path: name, Err: unix.EISDIR}
	}
	if !fi.Mode().IsRegular() || fi.Size() == 0 || fi.Size() != int64(int(fi.Size())) {
		b, err := os.ReadFile(name)
		return b, func() {}, err
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		b, err := os.ReadFile(name)
		return b, func() {}, err
	}
	return b, func() { _ = unix.Munmap(b) }, nil
}
