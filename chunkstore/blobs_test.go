package chunkstore

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"
)

// blobCopy is a copy of a stored blob (for tests that damage frames).
func blobCopy(b Blobs, id ID) ([]byte, error) {
	var out []byte
	err := b.View(id, func(f []byte) error { out = bytes.Clone(f); return nil })
	return out, err
}

// What the store asks of a Blobs, checked on the badger one: View gives
// the bytes Put stored (large frames in the value log, small ones in the
// tree), a missing blob is ErrNotFound, View passes fn's error on, and
// Delete of a missing blob is no error.
func TestBadgerBlobs(t *testing.T) {
	s, err := Init(filepath.Join(t.TempDir(), "store"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b := s.blobs
	small, large := []byte("a small frame"), bytes.Repeat([]byte("large frame "), 10000)
	for i, frame := range [][]byte{small, large} {
		id := ID{byte(i + 1)}
		if err := b.Put(id, frame); err != nil {
			t.Fatal(err)
		}
		if seen, err := blobCopy(b, id); err != nil || !bytes.Equal(seen, frame) {
			t.Fatalf("View %d: %v", i, err)
		}
		boom := errors.New("boom")
		if err := b.View(id, func([]byte) error { return boom }); !errors.Is(err, boom) {
			t.Fatalf("View %d passed on %v, not fn's error", i, err)
		}
	}
	missing := ID{9}
	if err := b.View(missing, func([]byte) error { t.Fatal("fn called for a missing blob"); return nil }); !errors.Is(err, ErrNotFound) {
		t.Fatalf("View of a missing blob: %v", err)
	}
	if err := b.Delete(missing); err != nil {
		t.Fatalf("Delete of a missing blob: %v", err)
	}
	if err := b.Delete(ID{1}); err != nil {
		t.Fatal(err)
	}
	if err := b.View(ID{1}, func([]byte) error { return nil }); !errors.Is(err, ErrNotFound) {
		t.Fatalf("View after Delete: %v", err)
	}
}
