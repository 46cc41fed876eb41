package fileio

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

func renameNoReplaceAtomic(from, to string) (bool, error) {
	err := unix.Renameat2(unix.AT_FDCWD, from, unix.AT_FDCWD, to, unix.RENAME_NOREPLACE)
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOTSUP) {
		return false, nil
	}
	if err != nil {
		return true, &fs.PathError{Op: "rename", Path: to, Err: err}
	}
	return true, nil
}

// IsTerminal reports whether f is a terminal.
func IsTerminal(f *os.File) bool {
	// Go through the raw connection: f.Fd would switch the descriptor to
	// blocking mode.
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	var terr error = unix.ENOTTY
	if err := rc.Control(func(fd uintptr) {
		_, terr = unix.IoctlGetTermios(int(fd), unix.TCGETS)
	}); err != nil {
		return false
	}
	return terr == nil
}

func atime(fi fs.FileInfo) time.Time {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return time.Unix(st.Atim.Sec, st.Atim.Nsec)
	}
	return fi.ModTime()
}
