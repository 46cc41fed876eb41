package chunkstore

import (
	"errors"

	badger "github.com/dgraph-io/badger/v4"
)

// ErrNotFound is returned for a missing blob, chunk or object.
var ErrNotFound = errors.New("not found")

// Blobs keeps chunk frames: immutable, content-addressed blobs. It is all
// the store asks of where chunk bytes live, so that a store that outgrows
// one machine can put them on S3-compatible object storage (one object per
// blob, or packs of blobs) while the metadata stays in a database.
// Implementations must make Put durable by the time Sync returns.
type Blobs interface {
	Put(id ID, frame []byte) error
	// View calls fn with a blob's bytes where the implementation keeps
	// them, valid only during the call and never to be written (the
	// store's reads decode a frame without copying it first);
	// ErrNotFound when missing, else fn's error.
	View(id ID, fn func(frame []byte) error) error
	Delete(id ID) error // no error when missing
	Sync() error
}

// badgerBlobs keeps blobs in the store's badger database under "b/"+id.
// With a low value threshold the frames live in badger's value log, so the
// LSM tree holds only keys and pointers.
type badgerBlobs struct{ db *badger.DB }

func blobKey(id ID) []byte { return append([]byte("b/"), id[:]...) }

func (b badgerBlobs) Put(id ID, frame []byte) error {
	return b.db.Update(func(txn *badger.Txn) error { return txn.Set(blobKey(id), frame) })
}

func (b badgerBlobs) View(id ID, fn func(frame []byte) error) error {
	var found bool
	err := b.db.View(func(txn *badger.Txn) error {
		it, err := txn.Get(blobKey(id))
		if err != nil {
			return err
		}
		found = true
		return it.Value(fn) // the value log's mmap, no copy
	})
	if !found && errors.Is(err, badger.ErrKeyNotFound) {
		return ErrNotFound
	}
	return err
}

func (b badgerBlobs) Delete(id ID) error {
	return b.db.Update(func(txn *badger.Txn) error { return txn.Delete(blobKey(id)) })
}

func (b badgerBlobs) Sync() error { return b.db.Sync() }
