// Package fs is glydfs: a chunk store mounted as a read-write POSIX
// filesystem through go-fuse. Every file's bytes are chunk store objects
// (chunked, deduplicated, delta-coded across all files), every directory
// entry, inode and extended attribute a badger key beside them. Writes are
// staged and committed as a new version of the file on flush, fsync or
// release; every committed version stays readable (up to a retention
// bound) under .glyd/versions, and whole-tree snapshots under .snapshots.
// docs/fs.md describes the layout and the durability rules.
package fs

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"

	badger "github.com/dgraph-io/badger/v4"
	gofs "github.com/hanwen/go-fuse/v2/fs"

	"github.com/glyd/glyd/chunkstore"
)

// Options tune a filesystem.
type Options struct {
	ReadOnly      bool
	Versions      int   // committed versions kept per file (0: all)
	StagingMemory int64 // bytes of staged writes held in memory before spilling
	ReadAhead     int64 // bytes decoded ahead of a sequential reader
	// NoPack stores safetensors files as bytes, not tensor by tensor.
	NoPack bool
	// PackLimit is the largest safetensors file stored packed (packing
	// holds the file and its packed form in memory); 0: DefaultPackLimit.
	PackLimit int64
	Logger    *log.Logger
}

// DefaultOptions are what glydfs mounts with unless told otherwise.
func DefaultOptions() Options {
	return Options{Versions: 32, StagingMemory: 256 << 20, ReadAhead: 8 << 20}
}

// DefaultPackLimit is the largest safetensors file packed by default.
const DefaultPackLimit = 8 << 30

// FS is one mounted store.
type FS struct {
	store *chunkstore.Store
	opts  Options
	log   *log.Logger

	mu      sync.Mutex // namespace changes and the inode table
	inodes  map[uint64]*inode
	nextIno uint64
	maxIno  uint64 // inode numbers below this are reserved in fs/meta

	stagedMem int64 // bytes of staged pages in memory, all files

	packedReads atomic.Int64 // reads served by .glyd/packed files (tests)
	spillDir    string

	snapMu sync.Mutex // snapshot create/remove

	frozenMu sync.Mutex
	frozen   map[string]body // snapshot versions being read

	// dropped counts deletions (files, versions, snapshots) since the
	// last GC: the background collector runs only when there are some.
	dropped atomic.Int64
}

// GC frees the chunks nothing needs any more (after files, versions or
// snapshots were deleted) when something was deleted since the last run.
// Commits wait while it runs.
func (f *FS) GC() (chunkstore.GCStats, error) {
	if f.opts.ReadOnly || f.dropped.Load() == 0 {
		return chunkstore.GCStats{}, nil
	}
	n := f.dropped.Load()
	st, err := f.store.GC()
	if err == nil {
		f.dropped.Add(-n)
	}
	return st, err
}

// inode is the in-memory state of a live file, directory or link.
type inode struct {
	ino   uint64
	mu    sync.Mutex // attr and content
	attr  attr
	opens int
	c     *content // staged changes, nil when none
	obj   body     // the committed version, opened on first read
	next  int64    // where a sequential reader reads next
	ahead int64    // read-ahead issued up to here
	// noXattrs: known to have no extended attributes (made by this mount
	// and given none since), so getxattr answers without a lookup. The
	// kernel asks for security.capability before every write and chown,
	// and a file just created has none.
	noXattrs bool
}

// New opens the filesystem held in store, creating its root on first use,
// and frees files that were unlinked while open when it last ran.
func New(store *chunkstore.Store, opts Options) (*FS, error) {
	d := DefaultOptions()
	if opts.StagingMemory <= 0 {
		opts.StagingMemory = d.StagingMemory
	}
	if opts.PackLimit <= 0 {
		opts.PackLimit = DefaultPackLimit
	}
	if opts.ReadAhead < 0 {
		opts.ReadAhead = 0
	}
	if opts.Logger == nil {
		opts.Logger = log.New(os.Stderr, "glydfs: ", 0)
	}
	f := &FS{store: store, opts: opts, log: opts.Logger, inodes: map[uint64]*inode{}, frozen: map[string]body{},
		spillDir: filepath.Join(store.Dir(), "spill")}
	err := store.View(func(txn *badger.Txn) error {
		it, err := txn.Get(keyMeta)
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		return it.Value(func(v []byte) error {
			if len(v) != 8 {
				return fmt.Errorf("%w: fs/meta", errDamaged)
			}
			f.nextIno = binary.BigEndian.Uint64(v)
			f.maxIno = f.nextIno
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	if f.nextIno == 0 {
		if opts.ReadOnly {
			return nil, errors.New("the store holds no filesystem yet and is opened read-only")
		}
		now := nowNs()
		uid, gid := uint32(os.Getuid()), uint32(os.Getgid())
		root := attr{Mode: syscall.S_IFDIR | 0o755, Uid: uid, Gid: gid, Nlink: 2, Atime: now, Mtime: now, Ctime: now}
		f.nextIno, f.maxIno = rootIno+1, rootIno+1
		err := store.Update(func(txn *badger.Txn) error {
			if err := txn.Set(live.inodeKey(rootIno), root.encode()); err != nil {
				return err
			}
			return txn.Set(keyMeta, be64(f.nextIno))
		})
		if err != nil {
			return nil, err
		}
		if err := store.Sync(); err != nil {
			return nil, err
		}
	}
	if !opts.ReadOnly {
		if err := f.freeOrphans(); err != nil {
			return nil, err
		}
		os.RemoveAll(f.spillDir) // spill files of a run that crashed
	}
	return f, nil
}

var live = view{prefix: "fs/"}

// Root is the root directory node, for gofs.Mount.
func (f *FS) Root() gofs.InodeEmbedder { return &dirNode{fsys: f, v: live, ino: rootIno} }

// Store is the chunk store under the filesystem.
func (f *FS) Store() *chunkstore.Store { return f.store }

// cachedInode returns inode ino when it is in the table, nil otherwise.
func (f *FS) cachedInode(ino uint64) *inode {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.inodes[ino]
}

// getInode returns the live inode ino, loading it from the store.
func (f *FS) getInode(ino uint64) (*inode, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.getInodeLocked(ino)
}

func (f *FS) getInodeLocked(ino uint64) (*inode, error) {
	if in := f.inodes[ino]; in != nil {
		return in, nil
	}
	a, err := f.loadAttr(live, ino)
	if err != nil {
		return nil, err
	}
	in := &inode{ino: ino, attr: a}
	f.inodes[ino] = in
	return in, nil
}

func (f *FS) loadAttr(v view, ino uint64) (attr, error) {
	var a attr
	err := f.store.View(func(txn *badger.Txn) error {
		it, err := txn.Get(v.inodeKey(ino))
		if err != nil {
			return err
		}
		return it.Value(func(b []byte) (err error) {
			a, err = decodeAttr(b)
			return err
		})
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return a, syscall.ENOENT
	}
	return a, err
}

// forget drops an inode from the table when nothing holds it.
func (f *FS) forget(ino uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	in := f.inodes[ino]
	if in == nil {
		return
	}
	in.mu.Lock()
	idle := in.opens == 0 && in.c == nil && in.attr.Nlink > 0
	if pb, ok := in.obj.(*packedBody); ok && idle {
		pb.release()
		in.obj = nil
	}
	in.mu.Unlock()
	if idle {
		delete(f.inodes, ino)
	}
}

// allocIno hands out an inode number, reserving them in fs/meta a batch
// at a time (inside txn, so the reservation commits with its first use).
func (f *FS) allocIno(txn *badger.Txn) (uint64, error) {
	ino := f.nextIno
	if ino >= 1<<inoBits {
		return 0, syscall.ENOSPC
	}
	if ino >= f.maxIno {
		f.maxIno = ino + 1024
		if err := txn.Set(keyMeta, be64(f.maxIno)); err != nil {
			return 0, err
		}
	}
	f.nextIno++
	return ino, nil
}

// update runs fn in one metadata transaction.
func (f *FS) update(fn func(txn *badger.Txn) error) error {
	if f.opts.ReadOnly {
		return syscall.EROFS
	}
	return f.store.Update(fn)
}

func setAttr(txn *badger.Txn, ino uint64, a *attr) error {
	return txn.Set(live.inodeKey(ino), a.encode())
}

// spillFile creates an unnamed file for staged pages beside the store.
func (f *FS) spillFile() (*os.File, error) {
	if err := os.MkdirAll(f.spillDir, 0o700); err != nil {
		return nil, err
	}
	file, err := os.CreateTemp(f.spillDir, "staged-*")
	if err != nil {
		return nil, err
	}
	os.Remove(file.Name())
	return file, nil
}

// commit stores in's staged changes as a new version (in.mu held). With
// durable set everything is synced before it returns (fsync).
func (f *FS) commit(in *inode, durable bool) error {
	if in.c == nil || !in.c.dirty {
		if durable {
			return f.store.Sync()
		}
		return nil
	}
	if f.opts.ReadOnly {
		return syscall.EROFS
	}
	c := in.c
	b, err := f.store.NewBuilder()
	if err != nil {
		return err
	}
	a := in.attr
	a.Ver++
	a.Flags &^= flagPacked
	var alloc int64
	p, err := f.pack(c)
	switch {
	case err != nil:
	case p != nil:
		err = b.Write(bytes.NewReader(p))
		alloc = c.size
		a.Flags |= flagPacked
	default:
		alloc, err = c.commitTo(b)
	}
	if err != nil {
		b.Abort()
		return err
	}
	a.Size, a.Alloc = c.size, alloc
	name := contentNameOf(in.ino, &a)
	_, err = b.Commit(name, durable, func(txn *badger.Txn) error {
		if in.attr.Nlink == 0 {
			return nil // unlinked while open: nothing will read it again
		}
		if err := setAttr(txn, in.ino, &a); err != nil {
			return err
		}
		return f.pruneVersions(txn, in.ino, a.Ver)
	})
	if err != nil {
		return err
	}
	in.attr.Ver, in.attr.Alloc, in.attr.Size, in.attr.Flags = a.Ver, a.Alloc, a.Size, a.Flags
	c.release()
	in.c = nil
	in.obj = nil
	return nil
}

// pruneVersions deletes the versions of ino beyond the retention bound.
func (f *FS) pruneVersions(txn *badger.Txn, ino, latest uint64) error {
	if f.opts.Versions <= 0 || latest <= uint64(f.opts.Versions) {
		return nil
	}
	for _, name := range chunkstore.ObjectNames(txn, contentPrefix(ino)) {
		if v, _, ok := parseVersion(name[len(contentPrefix(ino)):]); ok && v+uint64(f.opts.Versions) <= latest {
			if err := chunkstore.DeleteObject(txn, name); err != nil {
				return err
			}
			f.dropped.Add(1)
		}
	}
	return nil
}

// object returns the committed content of in (in.mu held), nil when empty.
func (f *FS) object(in *inode) (body, error) {
	if in.attr.Ver == 0 {
		return nil, nil
	}
	if in.obj == nil {
		o, err := f.openBody(contentNameOf(in.ino, &in.attr))
		if err != nil {
			return nil, err
		}
		in.obj = o
	}
	return in.obj, nil
}

// staged returns in's staged content, starting it (in.mu held).
func (f *FS) staged(in *inode) (*content, error) {
	if in.c != nil {
		return in.c, nil
	}
	o, err := f.object(in)
	if err != nil {
		return nil, err
	}
	in.c = newContent(f, o, in.attr.Size)
	return in.c, nil
}

// deleteInode removes an inode with no links and no opens, its xattrs and
// every version of its content (inside txn).
func deleteInode(txn *badger.Txn, ino uint64) error {
	if err := txn.Delete(live.inodeKey(ino)); err != nil {
		return err
	}
	for _, k := range keysWithPrefix(txn, live.xattrPrefix(ino)) {
		if err := txn.Delete(k); err != nil {
			return err
		}
	}
	for _, name := range chunkstore.ObjectNames(txn, contentPrefix(ino)) {
		if err := chunkstore.DeleteObject(txn, name); err != nil {
			return err
		}
	}
	return txn.Delete(orphanKey(ino))
}

func keysWithPrefix(txn *badger.Txn, prefix []byte) [][]byte {
	opts := badger.DefaultIteratorOptions
	opts.PrefetchValues = false
	it := txn.NewIterator(opts)
	defer it.Close()
	var out [][]byte
	for it.Seek(prefix); it.ValidForPrefix(prefix); it.Next() {
		out = append(out, it.Item().KeyCopy(nil))
	}
	return out
}

// freeOrphans deletes files that were unlinked while open when the last
// glydfs stopped (or crashed).
func (f *FS) freeOrphans() error {
	var inos []uint64
	err := f.store.View(func(txn *badger.Txn) error {
		for _, k := range keysWithPrefix(txn, []byte("fs/u/")) {
			if len(k) == 13 {
				inos = append(inos, binary.BigEndian.Uint64(k[5:]))
			}
		}
		return nil
	})
	if err != nil || len(inos) == 0 {
		return err
	}
	f.dropped.Add(int64(len(inos)))
	return f.store.Update(func(txn *badger.Txn) error {
		for _, ino := range inos {
			if err := deleteInode(txn, ino); err != nil {
				return err
			}
		}
		return nil
	})
}

// SyncAll commits every file's staged changes and syncs the store (on
// unmount, before a snapshot, and for syncfs).
func (f *FS) SyncAll() error {
	f.mu.Lock()
	ins := make([]*inode, 0, len(f.inodes))
	for _, in := range f.inodes {
		ins = append(ins, in)
	}
	f.mu.Unlock()
	var first error
	for _, in := range ins {
		in.mu.Lock()
		err := f.commit(in, false)
		in.mu.Unlock()
		if err != nil && first == nil {
			first = err
		}
	}
	if f.opts.ReadOnly {
		return first
	}
	if err := f.store.Sync(); err != nil && first == nil {
		first = err
	}
	return first
}

// errno maps an error to what the kernel is told, logging the ones that
// are not plain POSIX outcomes.
func (f *FS) errno(err error, what string) syscall.Errno {
	if err == nil {
		return 0
	}
	var e syscall.Errno
	if errors.As(err, &e) {
		return e
	}
	if errors.Is(err, chunkstore.ErrCorrupt) || errors.Is(err, errDamaged) {
		f.log.Printf("%s: %v", what, err)
		return syscall.EIO
	}
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, chunkstore.ErrNotFound) {
		f.log.Printf("%s: %v", what, err)
		return syscall.EIO
	}
	f.log.Printf("%s: %v", what, err)
	return gofs.ToErrno(err)
}

var _ = context.Background
