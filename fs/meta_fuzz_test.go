package fs

import (
	"bytes"
	"testing"
)

// FuzzDecodeAttr: inode records and directory entries from a damaged store
// give an error, never a panic; a record that decodes encodes back the same.
func FuzzDecodeAttr(f *testing.F) {
	a := attr{Mode: 0o100644, Uid: 1000, Gid: 1000, Nlink: 1, Size: 12345,
		Atime: stamp{-86400, 5}, Mtime: stamp{1 << 40, 999999999}, Ctime: stamp{1, 0}, Ver: 7, Alloc: 4096}
	f.Add(a.encode())
	a.Flags = flagPacked
	f.Add(a.encode())
	l := attr{Mode: 0o120777, Nlink: 1, Target: "../some/where"}
	f.Add(l.encode())
	f.Add(encodeDent(42, 0o40000))
	f.Add([]byte{1, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, err := decodeAttr(b); err == nil {
			if !bytes.Equal(got.encode(), b) {
				t.Fatalf("record does not round-trip")
			}
		}
		decodeDent(b)
	})
}
