package fs

import (
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// MountOptions are the kernel-facing choices of a mount.
type MountOptions struct {
	AllowOther bool
	Debug      bool
}

// Mount serves f at dir until the returned server is unmounted.
//
// The kernel checks permissions itself (default_permissions) from the
// modes and owners glydfs reports; entries and attributes are cached for a
// second (every change goes through this mount, which tells the kernel);
// reads and writes go up to 1 MiB per request.
func Mount(dir string, f *FS, mo MountOptions) (*fuse.Server, error) {
	sec := time.Second
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
			DirectMount:  true,
			Debug:        mo.Debug,
			Options:      []string{"default_permissions"},
		},
	}
	if f.opts.ReadOnly {
		opts.MountOptions.Options = append(opts.MountOptions.Options, "ro")
	}
	srv, err := gofs.Mount(dir, f.Root(), opts)
	if err != nil {
		return nil, err
	}
	return srv, nil
}
