//go:build !linux

package fsbench

import (
	"errors"
	"io"
	"os"
	"time"
)

var errNotLinux = errors.New("only on Linux")

func dropCaches() error                          { return errNotLinux }
func getxattr(path, name string) ([]byte, error) { return nil, errNotLinux }
func syncFS(path string) error                   { return errNotLinux }
func memTotal() int64                            { return 0 }
func cpuTime() time.Duration                     { return 0 }

// readAll reads f to its end through buf.
func readAll(f *os.File, buf []byte) (int64, error) {
	return io.CopyBuffer(io.Discard, struct{ io.Reader }{f}, buf)
}
