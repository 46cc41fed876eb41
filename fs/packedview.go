package fs

import (
	"context"
	"sync"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/glyd/glyd/chunkstore"
)

// .glyd/packed mirrors the live tree's directories and, of its files, the
// safetensors files stored packed: .glyd/packed/<path> reads as the packed
// form of <path>'s current version (docs/tensors.md specifies the bytes),
// for a GPU loader to upload and decode on the device. It is read-only.

// uncached is the entry and attribute timeout of .glyd/packed names: what
// they show changes with every commit of the file behind them (it becomes
// packed, or stops being, or grows), so the kernel asks each time. (Zero
// would mean "the mount's default" to go-fuse.)
const uncached = time.Nanosecond

// packedViewID is the snapshot id the packed view's inode numbers carry
// above the live inode space (fuseIno): the last one, which snapshots
// never take.
const packedViewID = 1<<(64-inoBits) - 1

func packedViewIno(ino uint64) uint64 { return packedViewID<<inoBits | ino }

// packedDir mirrors live directory dir.
type packedDir struct {
	gofs.Inode
	fsys *FS
	dir  uint64
}

func (d *packedDir) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	dirAttr(&out.Attr, 0o555)
	return 0
}

func (d *packedDir) Readdir(ctx context.Context) (gofs.DirStream, syscall.Errno) {
	return mirrorDir(ctx, d.fsys, d.dir, d.EmbeddedInode(), func(e fuse.DirEntry) (uint32, bool) {
		switch {
		case isDir(e.Mode):
			return syscall.S_IFDIR, true
		case isReg(e.Mode):
			a, err := d.fsys.loadAttr(live, e.Ino)
			return syscall.S_IFREG, err == nil && a.packed()
		}
		return 0, false
	})
}

func (d *packedDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	out.SetEntryTimeout(uncached)
	out.SetAttrTimeout(uncached)
	dn := &node{fsys: d.fsys, v: live, ino: d.dir}
	ino, mode, err := dn.child(name)
	if err != nil {
		return nil, d.fsys.errno(err, "packed")
	}
	switch {
	case isDir(mode):
		dirAttr(&out.Attr, 0o555)
		return d.NewInode(ctx, &packedDir{fsys: d.fsys, dir: ino}, gofs.StableAttr{Mode: syscall.S_IFDIR, Ino: packedViewIno(ino)}), 0
	case isReg(mode):
		pf := &packedFile{fsys: d.fsys, ino: ino}
		var ao fuse.AttrOut
		if errno := pf.Getattr(ctx, nil, &ao); errno != 0 {
			return nil, errno
		}
		out.Attr = ao.Attr
		out.SetAttrTimeout(uncached)
		// Stable inode numbers, directories' too: a lookup after the
		// entry timed out finds the same kernel inode (the kernel keeps a
		// dentry whose lookup returns the node it had), whose page cache
		// an open of an unchanged version keeps.
		return d.NewInode(ctx, pf, gofs.StableAttr{Mode: syscall.S_IFREG, Ino: packedViewIno(ino)}), 0
	}
	return nil, syscall.ENOENT
}

// packedFile is the packed form of live file ino's current version.
type packedFile struct {
	gofs.Inode
	fsys *FS
	ino  uint64

	mu     sync.Mutex
	opened string // the object the last open read
}

// object opens the packed form of the file's current version (ENOENT when
// it is not stored packed), and names the object: every committed version
// has its own.
func (p *packedFile) object() (*chunkstore.Object, attr, string, syscall.Errno) {
	a, err := p.fsys.loadAttr(live, p.ino)
	if err != nil {
		return nil, a, "", p.fsys.errno(err, "packed")
	}
	if !isReg(a.Mode) || !a.packed() {
		return nil, a, "", syscall.ENOENT
	}
	name := contentNameOf(p.ino, &a)
	o, err := p.fsys.store.OpenObject(name)
	if err != nil {
		return nil, a, "", p.fsys.errno(err, "packed")
	}
	return o, a, name, 0
}

func (p *packedFile) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	o, a, _, errno := p.object()
	if errno != 0 {
		return errno
	}
	out.SetTimeout(uncached)
	out.Mode = syscall.S_IFREG | 0o444
	out.Size = uint64(o.Size())
	out.Blocks = (out.Size + 511) / 512
	out.Nlink = 1
	out.Uid, out.Gid = a.Uid, a.Gid
	out.Mtime, out.Mtimensec = tsOf(a.Mtime)
	out.Ctime, out.Ctimensec = tsOf(a.Ctime)
	out.Atime, out.Atimensec = tsOf(a.Atime)
	return 0
}

// packedHandle reads the version that was current when it was opened.
type packedHandle struct{ o *chunkstore.Object }

func (p *packedFile) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	if flags&syscall.O_ACCMODE != syscall.O_RDONLY {
		return nil, 0, syscall.EROFS
	}
	o, _, name, errno := p.object()
	if errno != 0 {
		return nil, 0, errno
	}
	// The bytes behind the name change with every committed version: an
	// open of the version the last open read keeps the kernel's page cache
	// (FOPEN_KEEP_CACHE, as a loader reading a checkpoint again wants);
	// an open of another version starts from a fresh one.
	p.mu.Lock()
	keep := name == p.opened
	p.opened = name
	p.mu.Unlock()
	var fopen uint32
	if keep {
		fopen = fuse.FOPEN_KEEP_CACHE
	}
	return &packedHandle{o: o}, fopen, 0
}

func (p *packedFile) Read(ctx context.Context, fh gofs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	h, ok := fh.(*packedHandle)
	if !ok {
		return nil, syscall.EBADF
	}
	if off >= h.o.Size() {
		return fuse.ReadResultData(nil), 0
	}
	p.fsys.packedReads.Add(1)
	b := dest[:min(int64(len(dest)), h.o.Size()-off)]
	if _, err := h.o.ReadAt(b, off); err != nil {
		p.fsys.log.Printf(".glyd/packed: inode %d at offset %d: %v", p.ino, off, err)
		return nil, syscall.EIO
	}
	if len(b) > 0 && off+int64(len(b)) < h.o.Size() {
		h.o.Prefetch(off+int64(len(b)), p.fsys.opts.ReadAhead)
	}
	return fuse.ReadResultData(b), 0
}
