package fs

import (
	"context"
	"errors"
	"io"
	"strings"
	"syscall"
	"time"

	badger "github.com/dgraph-io/badger/v4"
	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// node is a file, directory or symlink of the live tree or of a snapshot
// (v says which; a snapshot's nodes are read-only).
type node struct {
	gofs.Inode
	fsys *FS
	v    view
	ino  uint64
}

// dirNode is the root: a node that also shows .glyd and .snapshots.
type dirNode = node

// handle is an open regular file. The bytes live with the inode, so every
// handle of a file sees every write at once.
type handle struct {
	writable bool
}

func (n *node) readOnly() bool { return n.v.snap != 0 || n.fsys.opts.ReadOnly }

// fuseIno is the inode number the kernel sees: a snapshot's inodes sit
// above the live ones.
func (v view) fuseIno(ino uint64) uint64 { return v.snap<<inoBits | ino }

// attrOf returns the current attributes of n (size including staged
// writes).
func (n *node) attrOf() (attr, *inode, error) {
	if n.v.snap != 0 {
		a, err := n.fsys.loadAttr(n.v, n.ino)
		return a, nil, err
	}
	in, err := n.fsys.getInode(n.ino)
	if err != nil {
		return attr{}, nil, err
	}
	in.mu.Lock()
	a := in.attr
	if in.c != nil {
		a.Size = in.c.size
		a.Alloc = min(in.c.size, a.Alloc+int64(len(in.c.pages))*pageSize)
	}
	in.mu.Unlock()
	return a, in, nil
}

func (n *node) fill(a *attr, out *fuse.Attr) {
	out.Ino = n.v.fuseIno(n.ino)
	out.Mode = a.Mode
	out.Size = uint64(a.Size)
	if isReg(a.Mode) {
		out.Blocks = uint64(a.Alloc+511) / 512
	} else if isDir(a.Mode) {
		out.Blocks = 8
	}
	out.Nlink = a.Nlink
	out.Uid, out.Gid, out.Rdev = a.Uid, a.Gid, a.Rdev
	out.Atime, out.Atimensec = tsOf(a.Atime)
	out.Mtime, out.Mtimensec = tsOf(a.Mtime)
	out.Ctime, out.Ctimensec = tsOf(a.Ctime)
	// A snapshot shows the modes files had (restores copy them); writes
	// into it fail with EROFS all the same.
	out.Blksize = 128 << 10
}

var (
	_ gofs.NodeLookuper      = (*node)(nil)
	_ gofs.NodeGetattrer     = (*node)(nil)
	_ gofs.NodeSetattrer     = (*node)(nil)
	_ gofs.NodeReaddirer     = (*node)(nil)
	_ gofs.NodeMkdirer       = (*node)(nil)
	_ gofs.NodeMknoder       = (*node)(nil)
	_ gofs.NodeCreater       = (*node)(nil)
	_ gofs.NodeOpener        = (*node)(nil)
	_ gofs.NodeUnlinker      = (*node)(nil)
	_ gofs.NodeRmdirer       = (*node)(nil)
	_ gofs.NodeRenamer       = (*node)(nil)
	_ gofs.NodeLinker        = (*node)(nil)
	_ gofs.NodeSymlinker     = (*node)(nil)
	_ gofs.NodeReadlinker    = (*node)(nil)
	_ gofs.NodeReader        = (*node)(nil)
	_ gofs.NodeWriter        = (*node)(nil)
	_ gofs.NodeFlusher       = (*node)(nil)
	_ gofs.NodeFsyncer       = (*node)(nil)
	_ gofs.NodeReleaser      = (*node)(nil)
	_ gofs.NodeAllocater     = (*node)(nil)
	_ gofs.NodeStatfser      = (*node)(nil)
	_ gofs.NodeGetxattrer    = (*node)(nil)
	_ gofs.NodeSetxattrer    = (*node)(nil)
	_ gofs.NodeListxattrer   = (*node)(nil)
	_ gofs.NodeRemovexattrer = (*node)(nil)
	_ gofs.NodeOnForgetter   = (*node)(nil)
)

func (n *node) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	a, _, err := n.attrOf()
	if err != nil {
		return n.fsys.errno(err, n.what())
	}
	n.fill(&a, &out.Attr)
	return 0
}

func (n *node) what() string {
	if p := n.Path(nil); p != "" {
		return p
	}
	return "/"
}

// child reads the directory entry name of n.
func (n *node) child(name string) (uint64, uint32, error) {
	var ino uint64
	var mode uint32
	err := n.fsys.store.View(func(txn *badger.Txn) error {
		it, err := txn.Get(n.v.dentKey(n.ino, name))
		if err != nil {
			return err
		}
		return it.Value(func(b []byte) (err error) {
			ino, mode, err = decodeDent(b)
			return err
		})
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return 0, 0, syscall.ENOENT
	}
	return ino, mode, err
}

func (n *node) newChild(ctx context.Context, ino uint64, a *attr, out *fuse.EntryOut) *gofs.Inode {
	ch := &node{fsys: n.fsys, v: n.v, ino: ino}
	ch.fill(a, &out.Attr)
	out.Ino = n.v.fuseIno(ino)
	return n.NewInode(ctx, ch, gofs.StableAttr{Mode: a.Mode & syscall.S_IFMT, Ino: n.v.fuseIno(ino)})
}

func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if n.ino == rootIno && n.v.snap == 0 {
		switch name {
		case metaDirName:
			return n.NewInode(ctx, &metaDir{fsys: n.fsys}, gofs.StableAttr{Mode: syscall.S_IFDIR}), 0
		case snapDirName:
			return n.NewInode(ctx, &snapshotsDir{fsys: n.fsys}, gofs.StableAttr{Mode: syscall.S_IFDIR}), 0
		}
	}
	ino, _, err := n.child(name)
	if err != nil {
		return nil, n.fsys.errno(err, n.what())
	}
	ch := &node{fsys: n.fsys, v: n.v, ino: ino}
	a, _, err := ch.attrOf()
	if err != nil {
		return nil, n.fsys.errno(err, n.what()+"/"+name)
	}
	return n.newChild(ctx, ino, &a, out), 0
}

// dots are the "." and ".." entries readdir starts with, as on ext4.
func dots(in *gofs.Inode) []fuse.DirEntry {
	self := in.StableAttr().Ino
	parent := self
	if _, p := in.Parent(); p != nil {
		parent = p.StableAttr().Ino
	}
	return []fuse.DirEntry{{Name: ".", Mode: syscall.S_IFDIR, Ino: self}, {Name: "..", Mode: syscall.S_IFDIR, Ino: parent}}
}

func (n *node) Readdir(ctx context.Context) (gofs.DirStream, syscall.Errno) {
	ents := dots(n.EmbeddedInode())
	err := n.fsys.store.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.DefaultIteratorOptions)
		defer it.Close()
		prefix := n.v.dirPrefix(n.ino)
		for it.Seek(prefix); it.ValidForPrefix(prefix); it.Next() {
			name := string(it.Item().Key()[len(prefix):])
			err := it.Item().Value(func(b []byte) error {
				ino, mode, err := decodeDent(b)
				if err != nil {
					return err
				}
				ents = append(ents, fuse.DirEntry{Name: name, Mode: mode, Ino: n.v.fuseIno(ino)})
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, n.fsys.errno(err, n.what())
	}
	return gofs.NewListDirStream(ents), 0
}

func (n *node) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	a, _, err := n.attrOf()
	if err != nil {
		return nil, n.fsys.errno(err, n.what())
	}
	if a.Mode&syscall.S_IFMT != syscall.S_IFLNK {
		return nil, syscall.EINVAL
	}
	return []byte(a.Target), 0
}

func (n *node) OnForget() {
	if n.v.snap == 0 {
		n.fsys.forget(n.ino)
	}
}

func (n *node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	var st syscall.Statfs_t
	if err := syscall.Statfs(n.fsys.store.Dir(), &st); err != nil {
		return gofs.ToErrno(err)
	}
	out.Blocks, out.Bfree, out.Bavail = st.Blocks, st.Bfree, st.Bavail
	out.Bsize, out.Frsize = uint32(st.Bsize), uint32(st.Frsize)
	n.fsys.mu.Lock()
	used := n.fsys.nextIno
	n.fsys.mu.Unlock()
	out.Files = 1<<inoBits - 1
	out.Ffree = out.Files - used
	out.NameLen = 255
	return 0
}

// --- namespace changes (live tree only; all under fsys.mu) ---

func caller(ctx context.Context) (uint32, uint32) {
	if c, ok := fuse.FromContext(ctx); ok {
		return c.Uid, c.Gid
	}
	return 0, 0
}

// touchDir updates a directory's mtime and ctime (and nlink by d) in txn.
func (f *FS) touchDir(txn *badger.Txn, dir *inode, now stamp, d int) error {
	dir.mu.Lock()
	defer dir.mu.Unlock()
	a := dir.attr
	a.Mtime, a.Ctime = now, now
	a.Nlink = uint32(int(a.Nlink) + d)
	if err := setAttr(txn, dir.ino, &a); err != nil {
		return err
	}
	dir.attr = a
	return nil
}

// mknode creates an inode and its entry name in n.
func (n *node) mknode(ctx context.Context, name string, mode, rdev uint32, target string, out *fuse.EntryOut) (*gofs.Inode, *inode, syscall.Errno) {
	if n.readOnly() {
		return nil, nil, syscall.EROFS
	}
	if len(name) > 255 {
		return nil, nil, syscall.ENAMETOOLONG
	}
	if n.ino == rootIno && (name == metaDirName || name == snapDirName) {
		return nil, nil, syscall.EEXIST
	}
	f := n.fsys
	f.mu.Lock()
	defer f.mu.Unlock()
	dir, err := f.getInodeLocked(n.ino)
	if err != nil {
		return nil, nil, f.errno(err, n.what())
	}
	if dir.attr.Nlink == 0 {
		return nil, nil, syscall.ENOENT // a removed directory
	}
	if _, _, err := n.child(name); err == nil {
		return nil, nil, syscall.EEXIST
	}
	uid, gid := caller(ctx)
	dir.mu.Lock()
	if dir.attr.Mode&syscall.S_ISGID != 0 {
		gid = dir.attr.Gid
		if isDir(mode) {
			mode |= syscall.S_ISGID
		}
	}
	dir.mu.Unlock()
	now := nowNs()
	a := attr{Mode: mode, Uid: uid, Gid: gid, Nlink: 1, Rdev: rdev, Atime: now, Mtime: now, Ctime: now, Target: target}
	if isDir(mode) {
		a.Nlink = 2
	}
	if target != "" {
		a.Size = int64(len(target))
	}
	var ino uint64
	err = f.update(func(txn *badger.Txn) error {
		var err error
		if ino, err = f.allocIno(txn); err != nil {
			return err
		}
		if err := setAttr(txn, ino, &a); err != nil {
			return err
		}
		if err := txn.Set(live.dentKey(n.ino, name), encodeDent(ino, mode)); err != nil {
			return err
		}
		d := 0
		if isDir(mode) {
			d = 1
		}
		return f.touchDir(txn, dir, now, d)
	})
	if err != nil {
		return nil, nil, f.errno(err, n.what())
	}
	in := &inode{ino: ino, attr: a, noXattrs: true}
	f.inodes[ino] = in
	return n.newChild(ctx, ino, &a, out), in, 0
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	ch, _, errno := n.mknode(ctx, name, syscall.S_IFDIR|mode&07777, 0, "", out)
	return ch, errno
}

func (n *node) Mknod(ctx context.Context, name string, mode uint32, dev uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	ch, _, errno := n.mknode(ctx, name, mode, dev, "", out)
	return ch, errno
}

func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if target == "" || len(target) > 4095 {
		return nil, syscall.ENAMETOOLONG
	}
	ch, _, errno := n.mknode(ctx, name, syscall.S_IFLNK|0o777, 0, target, out)
	return ch, errno
}

func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	ch, in, errno := n.mknode(ctx, name, syscall.S_IFREG|mode&07777, 0, "", out)
	if errno != 0 {
		return nil, nil, 0, errno
	}
	in.mu.Lock()
	in.opens++
	in.mu.Unlock()
	return ch, &handle{writable: flags&syscall.O_ACCMODE != syscall.O_RDONLY}, fuse.FOPEN_KEEP_CACHE, 0
}

func (n *node) Link(ctx context.Context, target gofs.InodeEmbedder, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if n.readOnly() {
		return nil, syscall.EROFS
	}
	t, ok := target.(*node)
	if !ok || t.v.snap != 0 {
		return nil, syscall.EXDEV
	}
	f := n.fsys
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, _, err := n.child(name); err == nil {
		return nil, syscall.EEXIST
	}
	dir, err := f.getInodeLocked(n.ino)
	if err != nil {
		return nil, f.errno(err, n.what())
	}
	in, err := f.getInodeLocked(t.ino)
	if err != nil {
		return nil, f.errno(err, t.what())
	}
	now := nowNs()
	in.mu.Lock()
	a := in.attr
	in.mu.Unlock()
	if isDir(a.Mode) {
		return nil, syscall.EPERM
	}
	if a.Nlink == 0 {
		return nil, syscall.ENOENT
	}
	a.Nlink++
	a.Ctime = now
	err = f.update(func(txn *badger.Txn) error {
		if err := setAttr(txn, in.ino, &a); err != nil {
			return err
		}
		if err := txn.Set(live.dentKey(n.ino, name), encodeDent(in.ino, a.Mode)); err != nil {
			return err
		}
		return f.touchDir(txn, dir, now, 0)
	})
	if err != nil {
		return nil, f.errno(err, n.what())
	}
	in.mu.Lock()
	in.attr.Nlink, in.attr.Ctime = a.Nlink, a.Ctime
	full := in.attr
	if in.c != nil {
		full.Size = in.c.size
	}
	in.mu.Unlock()
	return n.newChild(ctx, in.ino, &full, out), 0
}

// dropLink removes one link of in inside txn: the inode goes when its last
// link does, unless it is open (then at its last release, or at the next
// mount after a crash).
func (f *FS) dropLink(txn *badger.Txn, in *inode, now stamp) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	a := in.attr
	if isDir(a.Mode) {
		a.Nlink = 0
	} else if a.Nlink > 0 {
		a.Nlink--
	}
	a.Ctime = now
	if a.Nlink == 0 {
		if in.opens > 0 {
			if err := setAttr(txn, in.ino, &a); err != nil {
				return err
			}
			if err := txn.Set(orphanKey(in.ino), nil); err != nil {
				return err
			}
		} else if err := deleteInode(txn, in.ino); err != nil {
			return err
		} else {
			f.dropped.Add(1)
		}
	} else if err := setAttr(txn, in.ino, &a); err != nil {
		return err
	}
	in.attr.Nlink, in.attr.Ctime = a.Nlink, a.Ctime
	return nil
}

func (n *node) isEmptyDir(ino uint64) (bool, error) {
	empty := true
	err := n.fsys.store.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.PrefetchValues = false
		it := txn.NewIterator(opts)
		defer it.Close()
		p := live.dirPrefix(ino)
		it.Seek(p)
		empty = !it.ValidForPrefix(p)
		return nil
	})
	return empty, err
}

func (n *node) remove(name string, wantDir bool) syscall.Errno {
	if n.readOnly() {
		return syscall.EROFS
	}
	f := n.fsys
	f.mu.Lock()
	defer f.mu.Unlock()
	ino, mode, err := n.child(name)
	if err != nil {
		return f.errno(err, n.what())
	}
	if wantDir && !isDir(mode) {
		return syscall.ENOTDIR
	}
	if !wantDir && isDir(mode) {
		return syscall.EISDIR
	}
	if wantDir {
		if empty, err := n.isEmptyDir(ino); err != nil {
			return f.errno(err, n.what())
		} else if !empty {
			return syscall.ENOTEMPTY
		}
	}
	dir, err := f.getInodeLocked(n.ino)
	if err != nil {
		return f.errno(err, n.what())
	}
	in, err := f.getInodeLocked(ino)
	if err != nil {
		return f.errno(err, n.what()+"/"+name)
	}
	now := nowNs()
	err = f.update(func(txn *badger.Txn) error {
		if err := txn.Delete(live.dentKey(n.ino, name)); err != nil {
			return err
		}
		if err := f.dropLink(txn, in, now); err != nil {
			return err
		}
		d := 0
		if wantDir {
			d = -1
		}
		return f.touchDir(txn, dir, now, d)
	})
	if err != nil {
		return f.errno(err, n.what())
	}
	return 0
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno { return n.remove(name, false) }
func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno  { return n.remove(name, true) }

const (
	renameNoReplace = 1 // RENAME_NOREPLACE
	renameExchange  = 2 // RENAME_EXCHANGE
)

func (n *node) Rename(ctx context.Context, name string, newParent gofs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	if n.readOnly() {
		return syscall.EROFS
	}
	np, ok := newParent.(*node)
	if !ok || np.v.snap != 0 {
		return syscall.EXDEV
	}
	if flags&^(renameNoReplace|renameExchange) != 0 || flags == renameNoReplace|renameExchange {
		return syscall.EINVAL
	}
	if len(newName) > 255 {
		return syscall.ENAMETOOLONG
	}
	if np.ino == rootIno && (newName == metaDirName || newName == snapDirName) {
		return syscall.EPERM
	}
	f := n.fsys
	f.mu.Lock()
	defer f.mu.Unlock()
	srcIno, srcMode, err := n.child(name)
	if err != nil {
		return f.errno(err, n.what())
	}
	dstIno, dstMode, err := np.child(newName)
	exists := err == nil
	if err != nil && !errors.Is(err, syscall.ENOENT) {
		return f.errno(err, np.what())
	}
	if exists && flags&renameNoReplace != 0 {
		return syscall.EEXIST
	}
	if !exists && flags&renameExchange != 0 {
		return syscall.ENOENT
	}
	if exists && dstIno == srcIno {
		return 0 // two links of one file: nothing to do
	}
	if exists && flags&renameExchange == 0 {
		switch {
		case isDir(srcMode) && !isDir(dstMode):
			return syscall.ENOTDIR
		case !isDir(srcMode) && isDir(dstMode):
			return syscall.EISDIR
		case isDir(dstMode):
			if empty, err := np.isEmptyDir(dstIno); err != nil {
				return f.errno(err, np.what())
			} else if !empty {
				return syscall.ENOTEMPTY
			}
		}
	}
	oldDir, err := f.getInodeLocked(n.ino)
	if err != nil {
		return f.errno(err, n.what())
	}
	newDir, err := f.getInodeLocked(np.ino)
	if err != nil {
		return f.errno(err, np.what())
	}
	src, err := f.getInodeLocked(srcIno)
	if err != nil {
		return f.errno(err, n.what()+"/"+name)
	}
	var dst *inode
	if exists {
		if dst, err = f.getInodeLocked(dstIno); err != nil {
			return f.errno(err, np.what()+"/"+newName)
		}
	}
	now := nowNs()
	err = f.update(func(txn *badger.Txn) error {
		if err := txn.Set(live.dentKey(np.ino, newName), encodeDent(srcIno, srcMode)); err != nil {
			return err
		}
		srcD, dstD := 0, 0 // nlink changes of the old and new parent
		if flags&renameExchange != 0 {
			if err := txn.Set(live.dentKey(n.ino, name), encodeDent(dstIno, dstMode)); err != nil {
				return err
			}
			if isDir(srcMode) && oldDir != newDir {
				srcD, dstD = srcD-1, dstD+1
			}
			if isDir(dstMode) && oldDir != newDir {
				srcD, dstD = srcD+1, dstD-1
			}
			if err := touchCtime(txn, dst, now); err != nil {
				return err
			}
		} else {
			if err := txn.Delete(live.dentKey(n.ino, name)); err != nil {
				return err
			}
			if isDir(srcMode) && oldDir != newDir {
				srcD, dstD = -1, 1
			}
			if exists {
				if err := f.dropLink(txn, dst, now); err != nil {
					return err
				}
				if isDir(dstMode) {
					dstD--
				}
			}
		}
		if err := touchCtime(txn, src, now); err != nil {
			return err
		}
		if oldDir == newDir {
			return f.touchDir(txn, oldDir, now, srcD+dstD)
		}
		if err := f.touchDir(txn, oldDir, now, srcD); err != nil {
			return err
		}
		return f.touchDir(txn, newDir, now, dstD)
	})
	if err != nil {
		return f.errno(err, n.what())
	}
	return 0
}

func touchCtime(txn *badger.Txn, in *inode, now stamp) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	a := in.attr
	a.Ctime = now
	if err := setAttr(txn, in.ino, &a); err != nil {
		return err
	}
	in.attr.Ctime = now
	return nil
}

// --- attributes ---

func (n *node) Setattr(ctx context.Context, fh gofs.FileHandle, sa *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	if n.readOnly() {
		return syscall.EROFS
	}
	f := n.fsys
	in, err := f.getInode(n.ino)
	if err != nil {
		return f.errno(err, n.what())
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	a := in.attr
	now := nowNs()
	changed := false
	if m, ok := sa.GetMode(); ok {
		a.Mode = a.Mode&syscall.S_IFMT | m&07777
		changed = true
	}
	if uid, ok := sa.GetUID(); ok {
		a.Uid, changed = uid, true
	}
	if gid, ok := sa.GetGID(); ok {
		a.Gid, changed = gid, true
	}
	if t, ok := sa.GetATime(); ok {
		a.Atime, changed = stampOf(t), true
	}
	if t, ok := sa.GetMTime(); ok {
		a.Mtime, changed = stampOf(t), true
	}
	if sz, ok := sa.GetSize(); ok {
		if isDir(a.Mode) {
			return syscall.EISDIR
		}
		if !isReg(a.Mode) {
			return syscall.EINVAL
		}
		if sz > 1<<62 {
			return syscall.EFBIG
		}
		c, err := f.staged(in)
		if err != nil {
			return f.errno(err, n.what())
		}
		if int64(sz) != c.size {
			if err := c.truncate(int64(sz)); err != nil {
				return f.errno(err, n.what())
			}
			if _, ok := sa.GetMTime(); !ok {
				a.Mtime = now
			}
		}
		changed = true
	}
	if changed {
		a.Ctime = now
		// Size and content are the committed ones; staged changes commit
		// on flush, or now when no handle will flush them. Where a commit
		// is due anyway (staged changes, a handle that will flush them),
		// the attributes wait for it: it writes them with the new version,
		// in the same transaction. A tar unpacked into the mount sets
		// owner, mode and times of every file it has just written, and a
		// transaction for each took a third of the time per file. Until
		// then the change is as durable as the file's bytes (fsync writes
		// both).
		if in.c == nil || !in.c.dirty || in.opens == 0 {
			err := f.update(func(txn *badger.Txn) error { return setAttr(txn, in.ino, &a) })
			if err != nil {
				return f.errno(err, n.what())
			}
		}
		in.attr = a
		if in.c != nil && in.opens == 0 {
			if err := f.commit(in, false); err != nil {
				return f.errno(err, n.what())
			}
		}
	}
	a = in.attr
	if in.c != nil {
		a.Size = in.c.size
	}
	n.fill(&a, &out.Attr)
	// The reply holds the attributes as they now are, as a GETATTR's
	// does: cached as long (go-fuse leaves a SETATTR reply uncached, and
	// the kernel then asked for them again at once, a round trip per
	// chmod, chown or utimes).
	out.SetTimeout(cacheTimeout)
	return 0
}

// --- file data ---

func (n *node) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	writable := flags&syscall.O_ACCMODE != syscall.O_RDONLY
	if writable && n.readOnly() {
		return nil, 0, syscall.EROFS
	}
	if n.v.snap != 0 {
		return &handle{}, fuse.FOPEN_KEEP_CACHE, 0
	}
	f := n.fsys
	// The inode is found and locked under fsys.mu, so that the release of
	// the last handle of an unlinked file (which drops it from the table)
	// cannot slip in between: this open would count on a forgotten inode.
	f.mu.Lock()
	in, err := f.getInodeLocked(n.ino)
	if err != nil {
		f.mu.Unlock()
		return nil, 0, f.errno(err, n.what())
	}
	in.mu.Lock()
	f.mu.Unlock()
	defer in.mu.Unlock()
	if writable && flags&syscall.O_TRUNC != 0 {
		c, err := f.staged(in)
		if err != nil {
			return nil, 0, f.errno(err, n.what())
		}
		if c.size != 0 {
			c.truncate(0)
		}
	}
	in.opens++
	// The kernel's page cache stays valid across opens: every change goes
	// through this mount, and the kernel drops what a write or truncate
	// made stale.
	return &handle{writable: writable}, fuse.FOPEN_KEEP_CACHE, 0
}

func (n *node) Read(ctx context.Context, fh gofs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	f := n.fsys
	if n.v.snap != 0 {
		return n.readSnapshot(dest, off)
	}
	in, err := f.getInode(n.ino)
	if err != nil {
		return nil, f.errno(err, n.what())
	}
	in.mu.Lock()
	if in.c != nil {
		defer in.mu.Unlock()
		if off >= in.c.size {
			return fuse.ReadResultData(nil), 0
		}
		p := dest[:min(int64(len(dest)), in.c.size-off)]
		if err := in.c.readAt(p, off); err != nil {
			return nil, n.ioError(err, off)
		}
		return fuse.ReadResultData(p), 0
	}
	size := in.attr.Size
	o, err := f.object(in)
	ahead := int64(0)
	// A sequential reader: decode the next stretch in the background. The
	// kernel sends its read-ahead requests several at a time and they
	// arrive in any order, so "sequential" is "near where reading got to".
	const near = 4 << 20
	if err == nil && o != nil && f.opts.ReadAhead > 0 && off >= in.next-near && off <= in.next+near {
		from := max(off+int64(len(dest)), in.ahead)
		if to := off + int64(len(dest)) + f.opts.ReadAhead; from < to && from < size {
			ahead = to
			o.Prefetch(from, to-from)
		}
	}
	if end := off + int64(len(dest)); end > in.next || off < in.next-near {
		in.next = end
	}
	if ahead > 0 {
		in.ahead = ahead
	}
	in.mu.Unlock()
	if err != nil {
		return nil, n.ioError(err, off)
	}
	if o == nil || off >= size {
		return fuse.ReadResultData(nil), 0
	}
	return n.readBody(o, len(dest), off, size)
}

// readBody answers a read of body o (size bytes) from the body's own
// buffers, without copying them into go-fuse's (the reply goes out with
// writev of their slices, and they are let go once it is written).
func (n *node) readBody(o body, want int, off, size int64) (fuse.ReadResult, syscall.Errno) {
	r, err := replyFrom(o, want, off, size)
	if err != nil {
		return nil, n.ioError(err, off)
	}
	return r, 0
}

// replyFrom is the reply to a read of want bytes at off of body o (size
// bytes; off below it), written from the body's buffers.
func replyFrom(o body, want int, off, size int64) (fuse.ReadResult, error) {
	vecs, release, err := o.Slices(off, int(min(int64(want), size-off)))
	if err != nil && err != io.EOF {
		return nil, err
	}
	if len(vecs) == 0 {
		release()
		return fuse.ReadResultData(nil), nil
	}
	return &slicesResult{vecs: vecs, release: release}, nil
}

// slicesResult is a read reply written from slices of decoded chunks or
// windows. go-fuse writes a reply that has Slices with writev and calls
// Done after the write, so the slices stay held until then.
type slicesResult struct {
	vecs    [][]byte
	release func()
}

func (r *slicesResult) Slices() ([][]byte, fuse.Status) { return r.vecs, fuse.OK }

func (r *slicesResult) Size() int { return iovLen(r.vecs) }

// Bytes is for a write path that wants one buffer.
func (r *slicesResult) Bytes(buf []byte) ([]byte, fuse.Status) {
	buf = buf[:0]
	for _, v := range r.vecs {
		buf = append(buf, v...)
	}
	return buf, fuse.OK
}

func (r *slicesResult) Done() {
	if r.release != nil {
		r.release()
		r.release = nil
	}
}

// ioError logs a read that failed (a damaged chunk) naming the file and
// offset, and gives the reader EIO: never wrong bytes.
func (n *node) ioError(err error, off int64) syscall.Errno {
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	n.fsys.log.Printf("%s at offset %d: %v", n.what(), off, err)
	return syscall.EIO
}

func (n *node) readSnapshot(dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	a, err := n.fsys.loadAttr(n.v, n.ino)
	if err != nil {
		return nil, n.fsys.errno(err, n.what())
	}
	if a.Ver == 0 || off >= a.Size {
		return fuse.ReadResultData(nil), 0
	}
	o, err := n.fsys.frozenBody(snapContentName(n.v.snap, n.ino) + a.suffix())
	if err != nil {
		return nil, n.ioError(err, off)
	}
	return n.readBody(o, len(dest), off, a.Size)
}

func (n *node) Write(ctx context.Context, fh gofs.FileHandle, data []byte, off int64) (uint32, syscall.Errno) {
	if n.readOnly() {
		return 0, syscall.EROFS
	}
	f := n.fsys
	in, err := f.getInode(n.ino)
	if err != nil {
		return 0, f.errno(err, n.what())
	}
	if off+int64(len(data)) > 1<<62 {
		return 0, syscall.EFBIG
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	c, err := f.staged(in)
	if err != nil {
		return 0, f.errno(err, n.what())
	}
	if err := c.write(data, off); err != nil {
		return 0, f.errno(err, n.what())
	}
	now := nowNs()
	in.attr.Mtime, in.attr.Ctime = now, now
	return uint32(len(data)), 0
}

// Flush (every close of a descriptor) commits what was written. A change
// of size alone waits for the release or the next flush: a shell's
// `> file` opens with O_TRUNC and closes a duplicate descriptor before it
// writes, and committing there would keep an empty version of every file
// it rewrites.
func (n *node) Flush(ctx context.Context, fh gofs.FileHandle) syscall.Errno {
	return n.commit(false, true)
}

func (n *node) Fsync(ctx context.Context, fh gofs.FileHandle, flags uint32) syscall.Errno {
	return n.commit(true, false)
}

// commit commits the file's staged changes (durably for fsync); with
// onlyWritten, only when bytes were written, not for a size change alone.
func (n *node) commit(durable, onlyWritten bool) syscall.Errno {
	if n.readOnly() {
		return 0
	}
	f := n.fsys
	in, err := f.getInode(n.ino)
	if err != nil {
		return f.errno(err, n.what())
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if onlyWritten && (in.c == nil || !in.c.wrote) {
		return 0
	}
	return f.errno(f.commit(in, durable), n.what())
}

func (n *node) Release(ctx context.Context, fh gofs.FileHandle) syscall.Errno {
	if n.v.snap != 0 {
		return 0
	}
	f := n.fsys
	f.mu.Lock()
	defer f.mu.Unlock()
	in := f.inodes[n.ino]
	if in == nil {
		return 0
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	in.opens--
	if in.attr.Nlink == 0 && in.opens == 0 {
		// The last handle of an unlinked file: it goes now.
		if in.c != nil {
			in.c.release()
			in.c = nil
		}
		delete(f.inodes, in.ino)
		if !f.opts.ReadOnly {
			f.dropped.Add(1)
			err := f.store.Update(func(txn *badger.Txn) error { return deleteInode(txn, in.ino) })
			return f.errno(err, n.what())
		}
		return 0
	}
	if in.opens > 0 {
		// Other handles are open: their flush or release commits. (The
		// kernel sends releases after close returns, so an older handle's
		// release can arrive after a new open truncated the file.)
		return 0
	}
	if pb, ok := in.obj.(*packedBody); ok {
		// Closed by all: the page cache has what was read, so the decoded
		// windows go to the next file (a new open decodes again).
		pb.release()
	}
	return f.errno(f.commit(in, false), n.what())
}

const (
	fallocKeepSize  = 0x01
	fallocPunchHole = 0x02
	fallocZeroRange = 0x10
)

func (n *node) Allocate(ctx context.Context, fh gofs.FileHandle, off uint64, size uint64, mode uint32) syscall.Errno {
	if n.readOnly() {
		return syscall.EROFS
	}
	if mode&^(fallocKeepSize|fallocPunchHole|fallocZeroRange) != 0 {
		return syscall.EOPNOTSUPP
	}
	if mode&fallocPunchHole != 0 && mode&fallocKeepSize == 0 {
		return syscall.EOPNOTSUPP
	}
	end := int64(off + size)
	if end > 1<<62 || end < 0 {
		return syscall.EFBIG
	}
	f := n.fsys
	in, err := f.getInode(n.ino)
	if err != nil {
		return f.errno(err, n.what())
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	c, err := f.staged(in)
	if err != nil {
		return f.errno(err, n.what())
	}
	if mode&(fallocPunchHole|fallocZeroRange) != 0 {
		if err := c.zeroRange(int64(off), int64(size)); err != nil {
			return f.errno(err, n.what())
		}
	}
	if mode&fallocKeepSize == 0 && end > c.size {
		if err := c.truncate(end); err != nil {
			return f.errno(err, n.what())
		}
	}
	now := nowNs()
	in.attr.Mtime, in.attr.Ctime = now, now
	return 0
}

// --- extended attributes ---

const (
	xattrStored = "user.glyd.stored"
	xattrStats  = "user.glyd.stats"
)

func (n *node) Getxattr(ctx context.Context, name string, dest []byte) (uint32, syscall.Errno) {
	var val []byte
	switch {
	case name == xattrStored:
		s, err := n.storedBytes()
		if err != nil {
			return 0, n.fsys.errno(err, n.what())
		}
		val = []byte(s)
	case name == xattrStats && n.ino == rootIno && n.v.snap == 0:
		s, err := n.fsys.StatsJSON()
		if err != nil {
			return 0, n.fsys.errno(err, n.what())
		}
		val = s
	default:
		if strings.HasPrefix(name, "system.") || n.knownNoXattrs() {
			return 0, syscall.ENODATA
		}
		err := n.fsys.store.View(func(txn *badger.Txn) error {
			it, err := txn.Get(n.v.xattrKey(n.ino, name))
			if err != nil {
				return err
			}
			val, err = it.ValueCopy(nil)
			return err
		})
		if errors.Is(err, badger.ErrKeyNotFound) {
			return 0, syscall.ENODATA
		}
		if err != nil {
			return 0, n.fsys.errno(err, n.what())
		}
	}
	return xattrReply(dest, val)
}

// knownNoXattrs reports whether n is a live inode known to have no
// extended attributes.
func (n *node) knownNoXattrs() bool {
	if n.v.snap != 0 {
		return false
	}
	in := n.fsys.cachedInode(n.ino)
	if in == nil {
		return false
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.noXattrs
}

// xattrReply answers getxattr/listxattr as the syscalls do: the size when
// dest is empty, ERANGE (with the size) when it is too small.
func xattrReply(dest, val []byte) (uint32, syscall.Errno) {
	switch {
	case len(dest) == 0:
		return uint32(len(val)), 0
	case len(dest) < len(val):
		return uint32(len(val)), syscall.ERANGE
	}
	return uint32(copy(dest, val)), 0
}

const (
	xattrCreate  = 1
	xattrReplace = 2
	xattrMaxSize = 64 << 10 // as Linux's XATTR_SIZE_MAX
)

func (n *node) Setxattr(ctx context.Context, name string, data []byte, flags uint32) syscall.Errno {
	if n.readOnly() {
		return syscall.EROFS
	}
	if strings.HasPrefix(name, "user.glyd.") {
		return syscall.EPERM
	}
	if strings.HasPrefix(name, "system.") {
		return syscall.EOPNOTSUPP
	}
	if len(name) > 255 || name == "" {
		return syscall.ERANGE
	}
	if len(data) > xattrMaxSize {
		return syscall.E2BIG
	}
	return n.changeXattr(name, func(txn *badger.Txn, exists bool) error {
		if exists && flags&xattrCreate != 0 {
			return syscall.EEXIST
		}
		if !exists && flags&xattrReplace != 0 {
			return syscall.ENODATA
		}
		return txn.Set(n.v.xattrKey(n.ino, name), append([]byte(nil), data...))
	})
}

func (n *node) Removexattr(ctx context.Context, name string) syscall.Errno {
	if n.readOnly() {
		return syscall.EROFS
	}
	return n.changeXattr(name, func(txn *badger.Txn, exists bool) error {
		if !exists {
			return syscall.ENODATA
		}
		return txn.Delete(n.v.xattrKey(n.ino, name))
	})
}

// changeXattr runs fn on one attribute and updates the inode's ctime, in
// one transaction.
func (n *node) changeXattr(name string, fn func(txn *badger.Txn, exists bool) error) syscall.Errno {
	f := n.fsys
	in, err := f.getInode(n.ino)
	if err != nil {
		return f.errno(err, n.what())
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	in.noXattrs = false // before the change: a failed one may have left it
	a := in.attr
	a.Ctime = nowNs()
	err = f.update(func(txn *badger.Txn) error {
		_, err := txn.Get(n.v.xattrKey(n.ino, name))
		if err != nil && !errors.Is(err, badger.ErrKeyNotFound) {
			return err
		}
		if err := fn(txn, err == nil); err != nil {
			return err
		}
		return setAttr(txn, in.ino, &a)
	})
	if err != nil {
		return f.errno(err, n.what())
	}
	in.attr.Ctime = a.Ctime
	return 0
}

func (n *node) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	var list []byte
	err := n.fsys.store.View(func(txn *badger.Txn) error {
		p := n.v.xattrPrefix(n.ino)
		for _, k := range keysWithPrefix(txn, p) {
			list = append(append(list, k[len(p):]...), 0)
		}
		return nil
	})
	if err != nil {
		return 0, n.fsys.errno(err, n.what())
	}
	return xattrReply(dest, list)
}

var _ = time.Now
