//go:build unix

package storebench

import (
	"os"
	"syscall"
	"time"
)

// cpuTime is the user plus system CPU time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// dropCaches writes out dirty pages and drops the page cache, like
// `sync; echo 3 > /proc/sys/vm/drop_caches` (Linux, root only).
func dropCaches() error {
	syscall.Sync()
	return os.WriteFile("/proc/sys/vm/drop_caches", []byte("3\n"), 0)
}
