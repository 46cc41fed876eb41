package fs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/glyd/glyd/chunkstore"
)

// The filesystem keeps its metadata in the store's badger database, beside
// the chunk store's own keys (docs/fs.md lists them):
//
//	fs/meta                      next free inode number
//	fs/i/<ino>                   inode record
//	fs/d/<dir ino><name>         directory entry: child ino, file type
//	fs/x/<ino><name>             extended attribute value
//	fs/u/<ino>                   unlinked while open: freed at the next mount
//	fs/s/<name>                  snapshot record
//	fs/S/<snap id>/...           a snapshot's copy of i/, d/ and x/
//
// (Inode record times are varint seconds and uvarint nanoseconds.)
//
// File contents are chunk store objects named "\x01f/<ino>/<version>";
// a snapshot's are "\x01s/<snap id>/<ino>". A name ending in "p" holds a
// safetensors file in glyd's packed form (package packed) rather than its
// bytes; the inode record's flagPacked says the current version is one.

const (
	rootIno = 1
	// inoBits is the live inode space; snapshot views put their id above it.
	inoBits = 48
)

var (
	keyMeta = []byte("fs/meta")
	castag  = crc32.MakeTable(crc32.Castagnoli)
)

func be64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// view is a tree of metadata: the live tree ("fs/") or a snapshot's.
type view struct {
	prefix string // "fs/" or "fs/S/<id>/"
	snap   uint64 // 0 for the live tree
}

func (v view) inodeKey(ino uint64) []byte { return append([]byte(v.prefix+"i/"), be64(ino)...) }
func (v view) dirPrefix(ino uint64) []byte {
	return append([]byte(v.prefix+"d/"), be64(ino)...)
}
func (v view) dentKey(dir uint64, name string) []byte { return append(v.dirPrefix(dir), name...) }
func (v view) xattrPrefix(ino uint64) []byte {
	return append([]byte(v.prefix+"x/"), be64(ino)...)
}
func (v view) xattrKey(ino uint64, name string) []byte { return append(v.xattrPrefix(ino), name...) }

func orphanKey(ino uint64) []byte { return append([]byte("fs/u/"), be64(ino)...) }

// contentName is the object holding version ver of a live file.
func contentName(ino, ver uint64) string {
	return fmt.Sprintf("%sf/%016x/%016x", chunkstore.InternalPrefix, ino, ver)
}

// packedSuffix ends the name of an object that holds a packed safetensors
// file.
const packedSuffix = "p"

// contentNameOf is the object holding the current version of a live file
// whose record is a.
func contentNameOf(ino uint64, a *attr) string {
	return contentName(ino, a.Ver) + a.suffix()
}

// parseVersion reads the version number (and whether it is packed) from
// what follows contentPrefix in an object name.
func parseVersion(s string) (ver uint64, packed bool, ok bool) {
	s, packed = strings.CutSuffix(s, packedSuffix)
	v, err := strconv.ParseUint(s, 16, 64)
	return v, packed, err == nil
}

func contentPrefix(ino uint64) string {
	return fmt.Sprintf("%sf/%016x/", chunkstore.InternalPrefix, ino)
}

// snapContentName is a file's content frozen in snapshot id.
func snapContentName(id, ino uint64) string {
	return fmt.Sprintf("%ss/%04x/%016x", chunkstore.InternalPrefix, id, ino)
}

// attr is an inode record.
type attr struct {
	Mode                uint32
	Uid, Gid            uint32
	Nlink               uint32
	Rdev                uint32
	Size                int64
	Atime, Mtime, Ctime stamp
	Ver                 uint64 // committed content version; 0: none (empty)
	Alloc               int64  // bytes of the committed content that are not holes
	Target              string // symlink target
	Flags               uint64 // flagPacked
}

// Inode record flags.
const (
	flagPacked = 1 << 0 // the current version is stored packed (a safetensors file)
)

func (a *attr) packed() bool { return a.Flags&flagPacked != 0 }

// suffix is what ends the name of the object holding a's content.
func (a *attr) suffix() string {
	if a.packed() {
		return packedSuffix
	}
	return ""
}

// encode writes the record: version 1, or version 2 (version 1 and the
// flags after the target) when there are flags.
func (a *attr) encode() []byte {
	b := []byte{1}
	if a.Flags != 0 {
		b[0] = 2
	}
	for _, v := range []uint64{uint64(a.Mode), uint64(a.Uid), uint64(a.Gid), uint64(a.Nlink), uint64(a.Rdev), uint64(a.Size)} {
		b = binary.AppendUvarint(b, v)
	}
	for _, v := range []stamp{a.Atime, a.Mtime, a.Ctime} {
		b = binary.AppendVarint(b, v.Sec)
		b = binary.AppendUvarint(b, uint64(v.Nsec))
	}
	b = binary.AppendUvarint(b, a.Ver)
	b = binary.AppendUvarint(b, uint64(a.Alloc))
	b = binary.AppendUvarint(b, uint64(len(a.Target)))
	b = append(b, a.Target...)
	if a.Flags != 0 {
		b = binary.AppendUvarint(b, a.Flags)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castag))
}

var errDamaged = errors.New("glydfs: damaged metadata")

func decodeAttr(b []byte) (attr, error) {
	var a attr
	if len(b) < 5 || crc32.Checksum(b[:len(b)-4], castag) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		return a, fmt.Errorf("%w: inode record checksum", errDamaged)
	}
	if b[0] != 1 && b[0] != 2 {
		return a, fmt.Errorf("%w: inode record version %d", errDamaged, b[0])
	}
	p := b[1 : len(b)-4]
	var u [6]uint64
	for i := range u {
		v, n := binary.Uvarint(p)
		if n <= 0 {
			return a, fmt.Errorf("%w: inode record field %d", errDamaged, i)
		}
		u[i], p = v, p[n:]
	}
	var t [3]stamp
	for i := range t {
		v, n := binary.Varint(p)
		if n <= 0 {
			return a, fmt.Errorf("%w: inode record time %d", errDamaged, i)
		}
		ns, m := binary.Uvarint(p[n:])
		if m <= 0 || ns >= 1e9 {
			return a, fmt.Errorf("%w: inode record time %d", errDamaged, i)
		}
		t[i], p = stamp{v, uint32(ns)}, p[n+m:]
	}
	var w [3]uint64
	for i := range w {
		v, n := binary.Uvarint(p)
		if n <= 0 {
			return a, fmt.Errorf("%w: inode record field %d", errDamaged, 6+i)
		}
		w[i], p = v, p[n:]
	}
	if w[2] > uint64(len(p)) || u[5] > 1<<62 || w[1] > 1<<62 {
		return a, fmt.Errorf("%w: inode record length", errDamaged)
	}
	target, p := p[:w[2]], p[w[2]:]
	var flags uint64
	if b[0] == 2 {
		v, n := binary.Uvarint(p)
		if n <= 0 || v == 0 {
			return a, fmt.Errorf("%w: inode record flags", errDamaged)
		}
		flags, p = v, p[n:]
	}
	if len(p) != 0 {
		return a, fmt.Errorf("%w: inode record length", errDamaged)
	}
	a = attr{Mode: uint32(u[0]), Uid: uint32(u[1]), Gid: uint32(u[2]), Nlink: uint32(u[3]), Rdev: uint32(u[4]),
		Size: int64(u[5]), Atime: t[0], Mtime: t[1], Ctime: t[2], Ver: w[0], Alloc: int64(w[1]), Target: string(target), Flags: flags}
	return a, nil
}

// dent is a directory entry's value: the child and its file type.
func encodeDent(ino uint64, mode uint32) []byte {
	return append(be64(ino), byte(mode>>12))
}

func decodeDent(b []byte) (uint64, uint32, error) {
	if len(b) != 9 {
		return 0, 0, fmt.Errorf("%w: directory entry", errDamaged)
	}
	return binary.BigEndian.Uint64(b), uint32(b[8]) << 12, nil
}

func isDir(mode uint32) bool { return mode&syscall.S_IFMT == syscall.S_IFDIR }
func isReg(mode uint32) bool { return mode&syscall.S_IFMT == syscall.S_IFREG }

// stamp is a file time: seconds (signed, so before 1970 too) and
// nanoseconds. (An int64 of nanoseconds would end in 2262; ext4 goes to
// 2446.)
type stamp struct {
	Sec  int64
	Nsec uint32
}

func nowNs() stamp { return stampOf(time.Now()) }

func stampOf(t time.Time) stamp { return stamp{t.Unix(), uint32(t.Nanosecond())} }

// tsOf is a stamp as FUSE carries it: the kernel reads the seconds as
// signed.
func tsOf(s stamp) (uint64, uint32) { return uint64(s.Sec), s.Nsec }
