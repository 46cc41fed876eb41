//go:build linux

package fsbench

import (
	"os"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// dropCaches writes out dirty pages and drops the page cache, dentries and
// inodes, like `sync; echo 3 > /proc/sys/vm/drop_caches` (root only).
func dropCaches() error {
	unix.Sync()
	return os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0)
}

// getxattr reads an extended attribute whole.
func getxattr(path, name string) ([]byte, error) {
	buf := make([]byte, 4096)
	for {
		n, err := unix.Getxattr(path, name, buf)
		if err == unix.ERANGE {
			buf = make([]byte, 2*len(buf))
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "getxattr " + name, Path: path, Err: err}
		}
		return buf[:n], nil
	}
}

// syncFS is syncfs(2) on the file system holding path.
func syncFS(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Syncfs(int(f.Fd())); err != nil {
		return &os.PathError{Op: "syncfs", Path: path, Err: err}
	}
	return nil
}

// memTotal is the machine's memory in bytes, or 0.
func memTotal() int64 {
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}

// cpuTime is the user plus system time of this process and of its
// children that have been waited for (the FUSE servers and the tools).
func cpuTime() time.Duration {
	var total time.Duration
	for _, who := range []int{unix.RUSAGE_SELF, unix.RUSAGE_CHILDREN} {
		var ru unix.Rusage
		if unix.Getrusage(who, &ru) == nil {
			total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	return total
}

// readAll reads f to its end into buf, over and over, with plain read(2)
// calls that do not go through the Go scheduler's blocking-syscall path,
// and returns the bytes read. Go's os.File.Read hands the goroutine's P
// on around every read that blocks (and, as a read of a FUSE file blocks
// on almost every call, another thread spins up to take it): that cost
// the reading process 0.35 s of CPU per GiB on the benchmark machine
// (0.55 s against dd bs=1M's 0.20 s), CPU a 2-core machine then takes from
// the FUSE server being measured (glydfs read ~25% slower). dd, cat,
// Python and model loaders read the plain way, so the benchmark does too,
// for every reader alike. The P stays with this thread while it waits:
// nothing else of the benchmark runs then, and a read never waits long.
func readAll(f *os.File, buf []byte) (int64, error) {
	fd := int(f.Fd())
	var n int64
	for {
		r, _, e := unix.RawSyscall(unix.SYS_READ, uintptr(fd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
		if e == unix.EINTR {
			continue
		}
		if e != 0 {
			return n, &os.PathError{Op: "read", Path: f.Name(), Err: e}
		}
		if r == 0 {
			return n, nil
		}
		n += int64(r)
	}
}
