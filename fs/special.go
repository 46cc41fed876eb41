package fs

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	badger "github.com/dgraph-io/badger/v4"
	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"

	"github.com/glyd/glyd/chunkstore"
	"github.com/glyd/glyd/packed"
)

// The mount's root has two names that readdir does not list (so `cp -a`
// and `tar c` of the mount do not copy history) but lookups find:
//
//	.glyd/versions/<path>/<n>   version n of a file, read-only
//	.glyd/packed/<path>         a safetensors file's packed form, read-only
//	.snapshots/<name>/          a whole-tree snapshot, read-only;
//	                            mkdir creates one, rmdir removes it
const (
	metaDirName = ".glyd"
	snapDirName = ".snapshots"
)

func dirAttr(out *fuse.Attr, mode uint32) {
	out.Mode = syscall.S_IFDIR | mode
	out.Nlink = 2
}

// metaDir is .glyd.
type metaDir struct {
	gofs.Inode
	fsys *FS
}

func (d *metaDir) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	dirAttr(&out.Attr, 0o555)
	return 0
}

func (d *metaDir) Readdir(ctx context.Context) (gofs.DirStream, syscall.Errno) {
	return gofs.NewListDirStream(append(dots(d.EmbeddedInode()),
		fuse.DirEntry{Name: "versions", Mode: syscall.S_IFDIR}, fuse.DirEntry{Name: "packed", Mode: syscall.S_IFDIR})), 0
}

func (d *metaDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	var sub gofs.InodeEmbedder
	switch name {
	case "versions":
		sub = &versionsDir{fsys: d.fsys, dir: rootIno}
	case "packed":
		sub = &packedDir{fsys: d.fsys, dir: rootIno}
	default:
		return nil, syscall.ENOENT
	}
	dirAttr(&out.Attr, 0o555)
	return d.NewInode(ctx, sub, gofs.StableAttr{Mode: syscall.S_IFDIR}), 0
}

// versionsDir mirrors live directory dir: its subdirectories are
// versionsDirs, its regular files versionLists.
type versionsDir struct {
	gofs.Inode
	fsys *FS
	dir  uint64
}

func (d *versionsDir) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	dirAttr(&out.Attr, 0o555)
	return 0
}

func (d *versionsDir) Readdir(ctx context.Context) (gofs.DirStream, syscall.Errno) {
	return mirrorDir(ctx, d.fsys, d.dir, d.EmbeddedInode(), func(e fuse.DirEntry) (uint32, bool) {
		switch {
		case isDir(e.Mode):
			return syscall.S_IFDIR, true
		case isReg(e.Mode):
			return syscall.S_IFDIR, true // a file's versions are a directory
		}
		return 0, false
	})
}

// mirrorDir lists live directory dir for a read-only view of it (in, under
// .glyd): the entries keep says to show, with the mode it gives, no inode
// numbers of the live tree, and "." and "..".
func mirrorDir(ctx context.Context, fsys *FS, dir uint64, in *gofs.Inode, keep func(fuse.DirEntry) (uint32, bool)) (gofs.DirStream, syscall.Errno) {
	dn := &node{fsys: fsys, v: live, ino: dir}
	s, errno := dn.Readdir(ctx)
	if errno != 0 {
		return nil, errno
	}
	out := dots(in)
	for s.HasNext() {
		e, _ := s.Next()
		if e.Name == "." || e.Name == ".." {
			continue
		}
		if mode, ok := keep(e); ok {
			e.Ino, e.Mode = 0, mode
			out = append(out, e)
		}
	}
	return gofs.NewListDirStream(out), 0
}

func (d *versionsDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	dn := &node{fsys: d.fsys, v: live, ino: d.dir}
	ino, mode, err := dn.child(name)
	if err != nil {
		return nil, d.fsys.errno(err, "versions")
	}
	dirAttr(&out.Attr, 0o555)
	switch {
	case isDir(mode):
		return d.NewInode(ctx, &versionsDir{fsys: d.fsys, dir: ino}, gofs.StableAttr{Mode: syscall.S_IFDIR}), 0
	case isReg(mode):
		return d.NewInode(ctx, &versionList{fsys: d.fsys, ino: ino}, gofs.StableAttr{Mode: syscall.S_IFDIR}), 0
	}
	return nil, syscall.ENOENT
}

// versionList lists the kept versions of one file, by number.
type versionList struct {
	gofs.Inode
	fsys *FS
	ino  uint64
}

// Version describes one kept version of a file.
type Version struct {
	N        uint64
	Size     int64
	Modified int64 // ns
}

// Versions lists the kept versions of live inode ino, oldest first.
func (f *FS) versions(ino uint64) ([]Version, error) {
	var names []string
	err := f.store.View(func(txn *badger.Txn) error {
		names = chunkstore.ObjectNames(txn, contentPrefix(ino))
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out []Version
	for _, name := range names {
		n, _, ok := parseVersion(name[len(contentPrefix(ino)):])
		if !ok {
			continue
		}
		o, err := f.store.OpenObject(name)
		if err != nil {
			continue // pruned since the listing
		}
		out = append(out, Version{N: n, Size: o.Size(), Modified: o.Modified().UnixNano()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].N < out[j].N })
	return out, nil
}

func (d *versionList) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	dirAttr(&out.Attr, 0o555)
	return 0
}

func (d *versionList) Readdir(ctx context.Context) (gofs.DirStream, syscall.Errno) {
	vs, err := d.fsys.versions(d.ino)
	if err != nil {
		return nil, d.fsys.errno(err, "versions")
	}
	out := dots(d.EmbeddedInode())
	for _, v := range vs {
		out = append(out, fuse.DirEntry{Name: strconv.FormatUint(v.N, 10), Mode: syscall.S_IFREG})
	}
	return gofs.NewListDirStream(out), 0
}

func (d *versionList) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	n, err := strconv.ParseUint(name, 10, 64)
	if err != nil || strconv.FormatUint(n, 10) != name {
		return nil, syscall.ENOENT
	}
	o, err := d.fsys.openBody(contentName(d.ino, n))
	if errors.Is(err, chunkstore.ErrNotFound) {
		o, err = d.fsys.openBody(contentName(d.ino, n) + packedSuffix)
	}
	if errors.Is(err, chunkstore.ErrNotFound) {
		return nil, syscall.ENOENT
	}
	if err != nil {
		return nil, d.fsys.errno(err, "versions")
	}
	vf := &versionFile{o: o}
	vf.fill(&out.Attr)
	return d.NewInode(ctx, vf, gofs.StableAttr{Mode: syscall.S_IFREG}), 0
}

// versionFile is one kept version: read-only bytes.
type versionFile struct {
	gofs.Inode
	o body
}

func (v *versionFile) fill(out *fuse.Attr) {
	out.Mode = syscall.S_IFREG | 0o444
	out.Size = uint64(v.o.Size())
	out.Blocks = (out.Size + 511) / 512
	out.Nlink = 1
	out.Mtime, out.Mtimensec = tsOf(stampOf(v.o.Modified()))
	out.Ctime, out.Ctimensec = out.Mtime, out.Mtimensec
	out.Atime, out.Atimensec = out.Mtime, out.Mtimensec
}

func (v *versionFile) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	v.fill(&out.Attr)
	return 0
}

func (v *versionFile) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	if flags&syscall.O_ACCMODE != syscall.O_RDONLY {
		return nil, 0, syscall.EROFS
	}
	return nil, fuse.FOPEN_KEEP_CACHE, 0
}

func (v *versionFile) Read(ctx context.Context, fh gofs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if off >= v.o.Size() {
		return fuse.ReadResultData(nil), 0
	}
	r, err := replyFrom(v.o, len(dest), off, v.o.Size())
	if err != nil {
		return nil, syscall.EIO
	}
	return r, 0
}

// --- snapshots ---

// snapshotsDir is .snapshots: one directory per snapshot.
type snapshotsDir struct {
	gofs.Inode
	fsys *FS
}

func snapKey(name string) []byte { return []byte("fs/s/" + name) }

var keySnapNext = []byte("fs/snapnext")

// Snapshot describes one snapshot.
type Snapshot struct {
	Name    string
	ID      uint64
	Created int64 // ns
}

func (f *FS) snapshots() ([]Snapshot, error) {
	var out []Snapshot
	err := f.store.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.DefaultIteratorOptions)
		defer it.Close()
		p := []byte("fs/s/")
		for it.Seek(p); it.ValidForPrefix(p); it.Next() {
			v, err := it.Item().ValueCopy(nil)
			if err != nil {
				return err
			}
			if len(v) != 16 {
				return fmt.Errorf("%w: snapshot record", errDamaged)
			}
			out = append(out, Snapshot{Name: string(it.Item().Key()[len(p):]),
				ID: binary.BigEndian.Uint64(v), Created: int64(binary.BigEndian.Uint64(v[8:]))})
		}
		return nil
	})
	return out, err
}

func (f *FS) snapshot(name string) (Snapshot, error) {
	ss, err := f.snapshots()
	if err != nil {
		return Snapshot{}, err
	}
	for _, s := range ss {
		if s.Name == name {
			return s, nil
		}
	}
	return Snapshot{}, syscall.ENOENT
}

func snapView(id uint64) view { return view{prefix: fmt.Sprintf("fs/S/%04x/", id), snap: id} }

func (d *snapshotsDir) Getattr(ctx context.Context, fh gofs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	dirAttr(&out.Attr, 0o755)
	return 0
}

func (d *snapshotsDir) Readdir(ctx context.Context) (gofs.DirStream, syscall.Errno) {
	ss, err := d.fsys.snapshots()
	if err != nil {
		return nil, d.fsys.errno(err, snapDirName)
	}
	out := dots(d.EmbeddedInode())
	for _, s := range ss {
		out = append(out, fuse.DirEntry{Name: s.Name, Mode: syscall.S_IFDIR, Ino: s.ID<<inoBits | rootIno})
	}
	return gofs.NewListDirStream(out), 0
}

func (d *snapshotsDir) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	s, err := d.fsys.snapshot(name)
	if err != nil {
		return nil, d.fsys.errno(err, snapDirName)
	}
	root := &node{fsys: d.fsys, v: snapView(s.ID), ino: rootIno}
	a, _, err := root.attrOf()
	if err != nil {
		return nil, d.fsys.errno(err, snapDirName+"/"+name)
	}
	root.fill(&a, &out.Attr)
	return d.NewInode(ctx, root, gofs.StableAttr{Mode: syscall.S_IFDIR, Ino: root.v.fuseIno(rootIno)}), 0
}

// Mkdir takes a snapshot named name (as ZFS's .zfs/snapshot).
func (d *snapshotsDir) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*gofs.Inode, syscall.Errno) {
	if err := d.fsys.CreateSnapshot(name); err != nil {
		return nil, d.fsys.errno(err, snapDirName+"/"+name)
	}
	return d.Lookup(ctx, name, out)
}

// Rmdir removes a snapshot (its chunks go at the next GC unless shared).
func (d *snapshotsDir) Rmdir(ctx context.Context, name string) syscall.Errno {
	return d.fsys.errno(d.fsys.RemoveSnapshot(name), snapDirName+"/"+name)
}

// copyBatch is how many keys one snapshot transaction copies.
const copyBatch = 1000

// CreateSnapshot freezes the whole tree as name: every inode, entry and
// attribute is copied under fs/S/<id>/ and every file's content object
// gets a second name (no chunk is copied). Staged writes are committed
// first. The snapshot record is written last, so a crash midway leaves
// no snapshot (and keys the next RemoveSnapshot of that id would free).
func (f *FS) CreateSnapshot(name string) error {
	if f.opts.ReadOnly {
		return syscall.EROFS
	}
	if name == "" || len(name) > 255 || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
		return syscall.EINVAL
	}
	f.snapMu.Lock()
	defer f.snapMu.Unlock()
	if _, err := f.snapshot(name); err == nil {
		return syscall.EEXIST
	}
	if err := f.SyncAll(); err != nil {
		return err
	}
	// Hold the namespace still while copying.
	f.mu.Lock()
	defer f.mu.Unlock()
	var id uint64 = 1
	type kv struct{ k, v []byte }
	var kvs []kv
	var files []uint64
	err := f.store.View(func(txn *badger.Txn) error {
		if it, err := txn.Get(keySnapNext); err == nil {
			v, _ := it.ValueCopy(nil)
			if len(v) == 8 {
				id = binary.BigEndian.Uint64(v)
			}
		}
		it := txn.NewIterator(badger.DefaultIteratorOptions)
		defer it.Close()
		for _, p := range []string{"fs/i/", "fs/d/", "fs/x/"} {
			for it.Seek([]byte(p)); it.ValidForPrefix([]byte(p)); it.Next() {
				v, err := it.Item().ValueCopy(nil)
				if err != nil {
					return err
				}
				k := it.Item().KeyCopy(nil)
				kvs = append(kvs, kv{k, v})
				if p == "fs/i/" {
					a, err := decodeAttr(v)
					if err == nil && isReg(a.Mode) && a.Ver != 0 && a.Nlink > 0 {
						files = append(files, binary.BigEndian.Uint64(k[5:]))
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if id >= packedViewID { // the last id numbers .glyd/packed's inodes
		return syscall.ENOSPC
	}
	sv := snapView(id)
	if err := f.store.Update(func(txn *badger.Txn) error { return txn.Set(keySnapNext, be64(id+1)) }); err != nil {
		return err
	}
	for i := 0; i < len(kvs); i += copyBatch {
		batch := kvs[i:min(len(kvs), i+copyBatch)]
		err := f.store.Update(func(txn *badger.Txn) error {
			for _, e := range batch {
				if err := txn.Set(append([]byte(sv.prefix), e.k[3:]...), e.v); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	// Content: each file's current version, read from the copied record.
	for i := 0; i < len(files); i += copyBatch {
		batch := files[i:min(len(files), i+copyBatch)]
		err := f.store.Update(func(txn *badger.Txn) error {
			for _, ino := range batch {
				it, err := txn.Get(sv.inodeKey(ino))
				if err != nil {
					return err
				}
				v, _ := it.ValueCopy(nil)
				a, err := decodeAttr(v)
				if err != nil {
					return err
				}
				if err := chunkstore.CopyObject(txn, contentNameOf(ino, &a), snapContentName(id, ino)+a.suffix()); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	rec := binary.BigEndian.AppendUint64(be64(id), uint64(time.Now().UnixNano()))
	if err := f.store.Update(func(txn *badger.Txn) error { return txn.Set(snapKey(name), rec) }); err != nil {
		return err
	}
	return f.store.Sync()
}

// RemoveSnapshot deletes snapshot name: its record first (synced), then
// its copied keys and content names.
func (f *FS) RemoveSnapshot(name string) error {
	if f.opts.ReadOnly {
		return syscall.EROFS
	}
	f.snapMu.Lock()
	defer f.snapMu.Unlock()
	s, err := f.snapshot(name)
	if err != nil {
		return err
	}
	if err := f.store.Update(func(txn *badger.Txn) error { return txn.Delete(snapKey(name)) }); err != nil {
		return err
	}
	f.dropped.Add(1)
	if err := f.store.Sync(); err != nil {
		return err
	}
	var keys [][]byte
	var objs []string
	err = f.store.View(func(txn *badger.Txn) error {
		keys = keysWithPrefix(txn, []byte(snapView(s.ID).prefix))
		objs = chunkstore.ObjectNames(txn, fmt.Sprintf("%ss/%04x/", chunkstore.InternalPrefix, s.ID))
		return nil
	})
	if err != nil {
		return err
	}
	for i := 0; i < max(len(keys), len(objs)); i += copyBatch {
		err := f.store.Update(func(txn *badger.Txn) error {
			for _, k := range keys[min(i, len(keys)):min(len(keys), i+copyBatch)] {
				if err := txn.Delete(k); err != nil {
					return err
				}
			}
			for _, o := range objs[min(i, len(objs)):min(len(objs), i+copyBatch)] {
				if err := chunkstore.DeleteObject(txn, o); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// --- sizes ---

// storedBytes is the user.glyd.stored value of a file: the bytes its
// current version's chunks take in the store.
func (n *node) storedBytes() (string, error) {
	a, in, err := n.attrOf()
	if err != nil {
		return "", err
	}
	if !isReg(a.Mode) || a.Ver == 0 {
		return "0", nil
	}
	var o body
	if in != nil {
		in.mu.Lock()
		o, err = n.fsys.object(in)
		in.mu.Unlock()
	} else {
		o, err = n.fsys.openBody(snapContentName(n.v.snap, n.ino) + a.suffix())
	}
	if err != nil || o == nil {
		return "0", err
	}
	s, err := o.Stored()
	return strconv.FormatInt(s, 10), err
}

// Stats is what `glyd stats` and the root's user.glyd.stats report.
type Stats struct {
	Files      int   `json:"files"`       // regular files in the live tree
	Dirs       int   `json:"directories"` // directories in the live tree
	Logical    int64 `json:"logical"`     // bytes of the live files
	History    int64 `json:"history"`     // bytes of every kept version and snapshot
	Stored     int64 `json:"stored"`      // bytes of chunk frames all of it takes
	Garbage    int64 `json:"garbage"`     // bytes the next GC frees
	Snapshots  int   `json:"snapshots"`
	Chunks     int   `json:"chunks"`
	Deltas     int   `json:"delta_chunks"`
	DedupSaved int64 `json:"dedup_saved"`
	DeltaSaved int64 `json:"delta_saved"`
	CompSaved  int64 `json:"compression_saved"`
	PackSaved  int64 `json:"packing_saved"` // safetensors files stored packed: original bytes less packed
}

// StoreStats adds up a store that holds a filesystem.
func StoreStats(s *chunkstore.Store) (Stats, error) {
	var st Stats
	var packedNames []string
	err := s.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.DefaultIteratorOptions)
		defer it.Close()
		p := []byte("fs/i/")
		for it.Seek(p); it.ValidForPrefix(p); it.Next() {
			err := it.Item().Value(func(v []byte) error {
				a, err := decodeAttr(v)
				if err != nil {
					return err
				}
				switch {
				case isReg(a.Mode) && a.Nlink > 0:
					st.Files++
					st.Logical += a.Size
				case isDir(a.Mode):
					st.Dirs++
				}
				return nil
			})
			if err != nil {
				return err
			}
		}
		st.Snapshots = len(keysWithPrefix(txn, []byte("fs/s/")))
		packedNames = packedObjects(txn)
		return nil
	})
	if err != nil {
		return st, err
	}
	// A packed version's object holds fewer bytes than the file: its
	// header says how many the file has.
	for _, name := range packedNames {
		o, err := s.OpenObject(name)
		if err != nil {
			continue // deleted since the listing
		}
		head := make([]byte, packed.HeaderSize)
		if _, err := o.ReadAt(head, 0); err != nil {
			return st, fmt.Errorf("%q: %w", name, err)
		}
		n, err := packed.OriginalSize(head)
		if err != nil {
			return st, fmt.Errorf("%q: %w", name, err)
		}
		st.PackSaved += n - o.Size()
	}
	u, err := s.Usage()
	if err != nil {
		return st, err
	}
	st.History, st.Stored, st.Garbage = u.Logical+st.PackSaved, u.Stored, u.Garbage
	st.Chunks, st.Deltas = u.Chunks, u.DeltaChunks
	st.DedupSaved, st.DeltaSaved, st.CompSaved = u.DedupSaved, u.DeltaSaved, u.CompressSaved
	return st, nil
}

// packedObjects lists the objects that hold packed versions, live and in
// snapshots.
func packedObjects(txn *badger.Txn) []string {
	var out []string
	for _, p := range []string{chunkstore.InternalPrefix + "f/", chunkstore.InternalPrefix + "s/"} {
		for _, name := range chunkstore.ObjectNames(txn, p) {
			if strings.HasSuffix(name, packedSuffix) {
				out = append(out, name)
			}
		}
	}
	return out
}

// StatsJSON is the root's user.glyd.stats value.
func (f *FS) StatsJSON() ([]byte, error) {
	st, err := StoreStats(f.store)
	if err != nil {
		return nil, err
	}
	return json.Marshal(st)
}
