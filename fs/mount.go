package fs

import (
	"fmt"
	"os"
	"strconv"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// MountOptions are the kernel-facing choices of a mount.
type MountOptions struct {
	AllowOther bool
	Debug      bool
}

// cacheTimeout is how long the kernel keeps entries and attributes.
const cacheTimeout = time.Second

// Mount serves f at dir until the returned server is unmounted.
//
// The kernel checks permissions itself (default_permissions) from the
// modes and owners glydfs reports; entries and attributes are cached for a
// second (every change goes through this mount, which tells the kernel);
// reads and writes go up to 1 MiB per request.
func Mount(dir string, f *FS, mo MountOptions) (*fuse.Server, error) {
	sec := cacheTimeout
	opts := &gofs.Options{
		EntryTimeout:    &sec,
		AttrTimeout:     &sec,
		NegativeTimeout: &sec,
		NullPermissions: true,
		MountOptions: fuse.MountOptions{
			FsName:       "glydfs:" + f.store.Dir(),
			Name:         "glydfs",
			AllowOther:   mo.AllowOther,
			MaxWrite:     1 << 20,
			MaxReadAhead: 1 << 20,
			// Replies are bytes in memory, not file descriptors: splicing
			// them only adds a pipe round trip, and a 1 MiB reply does not
			// fit a pipe (go-fuse then logs and falls back).
			DisableSplice: true,
			DirectMount:   true,
			Debug:         mo.Debug,
			Options:       []string{"default_permissions"},
		},
	}
	if f.opts.ReadOnly {
		opts.MountOptions.Options = append(opts.MountOptions.Options, "ro")
	}
	srv, err := gofs.Mount(dir, f.Root(), opts)
	if err != nil {
		return nil, err
	}
	setReadAhead(dir, kernelReadAheadKB)
	return srv, nil
}

// kernelReadAheadKB is the kernel's read-ahead for the mount. FUSE mounts
// start at 128 KiB and INIT can only lower it; at 1 MiB a cold sequential
// read keeps more requests in flight and ran 20-40% faster
// (docs/benchmarks/fs.md). Larger windows measured no better.
const kernelReadAheadKB = 1024

// setReadAhead sets the read-ahead of the mount on dir through its backing
// device's /sys/class/bdi entry (root only; elsewhere the kernel's default
// stays).
func setReadAhead(dir string, kb int) {
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return
	}
	dev := uint64(st.Dev)
	major, minor := (dev>>8)&0xfff|(dev>>32)&^0xfff, dev&0xff|(dev>>12)&^0xff
	path := fmt.Sprintf("/sys/class/bdi/%d:%d/read_ahead_kb", major, minor)
	os.WriteFile(path, []byte(strconv.Itoa(kb)), 0)
}
