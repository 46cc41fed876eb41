//go:build !unix

package cuda

import (
	"io"
	"os"
)

// mapFile reads the whole file where there is no mmap.
func mapFile(f *os.File, size int64) ([]byte, func(), error) {
	b := make([]byte, size)
	if _, err := io.ReadFull(io.NewSectionReader(f, 0, size), b); err != nil {
		return nil, nil, err
	}
	return b, func() {}, nil
}
