//go:build !linux

package fileio

import (
	"io/fs"
	"os"
	"time"
)

func renameNoReplaceAtomic(from, to string) (bool, error) { return false, nil }

// IsTerminal reports whether f is a terminal (here: a character device).
func IsTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&fs.ModeCharDevice != 0
}

func atime(fi fs.FileInfo) time.Time { return fi.ModTime() }
