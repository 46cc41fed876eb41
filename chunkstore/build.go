package chunkstore

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	badger "github.com/dgraph-io/badger/v4"
)

// Ref is one stretch of an object: a stored chunk, or a hole of zeros
// (zero ID) that takes no space.
type Ref struct {
	ID  ID
	Len int64
}

// Hole reports whether r is a run of zeros rather than a chunk.
func (r Ref) Hole() bool { return r.ID == ID{} }

// MaxHole bounds one hole entry of a manifest; longer holes take several.
const MaxHole = 1 << 40

// Builder writes a new object from pieces: chunks of objects already
// stored (Reuse), holes, and new bytes that it cuts into chunks (Write).
// The filesystem uses it to commit a file that changed in a few places
// without re-reading the rest. A Builder holds the store's writer lock
// from NewBuilder to Commit or Abort, so no GC can free a chunk it names.
type Builder struct {
	s       *Store
	m       *manifest
	w       *chunkWriter
	st      PutStats
	claimed sync.Map // ids first seen in this build
	done    bool
}

// NewBuilder starts an object. Call Commit or Abort to release the writer
// lock.
func (s *Store) NewBuilder() (*Builder, error) {
	if s.opts.ReadOnly {
		return nil, errors.New("store is open read-only")
	}
	s.writer.Lock()
	return &Builder{s: s, m: &manifest{}, w: &chunkWriter{db: s.db, cache: s.cache}}, nil
}

// Size is the length of the object so far.
func (b *Builder) Size() int64 { return b.m.size }

// Write cuts r into content-defined chunks and appends them, storing the
// chunks that are new (dedup and deltas as in Put).
func (b *Builder) Write(r io.Reader) error {
	if b.done {
		return errors.New("chunkstore: builder already finished")
	}
	return b.write(r)
}

// Reuse appends stretches of objects already stored. They must come from
// a live object (Object.Refs): the writer lock keeps them alive from then
// on.
func (b *Builder) Reuse(refs ...Ref) error {
	for _, r := range refs {
		if r.Hole() {
			b.Hole(r.Len)
			continue
		}
		if r.Len <= 0 || r.Len > maxChunkLen {
			return fmt.Errorf("chunkstore: reuse of chunk %s with length %d", r.ID.Short(), r.Len)
		}
		b.m.chunks = append(b.m.chunks, chunkRef{r.ID, int(r.Len)})
		b.m.size += r.Len
		b.st.Chunks++
		b.st.Duplicate += r.Len
	}
	return nil
}

// Hole appends n zero bytes that take no space.
func (b *Builder) Hole(n int64) {
	for n > 0 {
		l := min(n, MaxHole)
		if k := len(b.m.chunks); k > 0 && b.m.chunks[k-1].id == (ID{}) && int64(b.m.chunks[k-1].rawLen)+l <= MaxHole {
			b.m.chunks[k-1].rawLen += int(l)
		} else {
			b.m.chunks = append(b.m.chunks, chunkRef{ID{}, int(l)})
		}
		b.m.size += l
		n -= l
	}
}

// Commit stores the object as name, replacing any object of that name, and
// releases the writer lock. extra, when not nil, runs in the same badger
// transaction as the manifest (the filesystem writes its inode there, so
// the two change together). With durable set the chunks are synced before
// the manifest and the manifest before Commit returns; without it both
// are written in order but left to the OS (they survive a process crash,
// not a power loss).
func (b *Builder) Commit(name string, durable bool, extra func(txn *badger.Txn) error) (PutStats, error) {
	if b.done {
		return b.st, errors.New("chunkstore: builder already finished")
	}
	defer b.finish()
	s := b.s
	b.m.modified = time.Now()
	b.st.Size = b.m.size
	setManifest := func(txn *badger.Txn) error {
		if err := txn.Set(objectKey(name), b.m.encode()); err != nil {
			return err
		}
		if extra != nil {
			return extra(txn)
		}
		return nil
	}
	if !durable && b.w.txn != nil {
		// One transaction for the last chunks and the manifest: atomic, so
		// the order inside it does not matter, and one commit instead of
		// two (small files are committed by the thousand).
		err := setManifest(b.w.txn)
		if err == nil {
			return b.st, b.w.flush()
		}
		if !errors.Is(err, badger.ErrTxnTooBig) {
			b.w.discard()
			return b.st, err
		}
		// Too big for one: the chunks (and what fitted) first, then the
		// manifest again in its own transaction.
	}
	if err := b.w.flush(); err != nil {
		return b.st, err
	}
	if durable {
		if err := s.blobs.Sync(); err != nil {
			return b.st, err
		}
	}
	if err := s.db.Update(setManifest); err != nil {
		return b.st, err
	}
	if durable {
		return b.st, s.db.Sync()
	}
	return b.st, nil
}

// Abort drops the object being built (chunks it already stored stay until
// the next GC) and releases the writer lock.
func (b *Builder) Abort() {
	if !b.done {
		b.w.discard()
		b.finish()
	}
}

func (b *Builder) finish() {
	b.done = true
	b.s.writer.Unlock()
}

// Refs returns the object's stretches in order.
func (o *Object) Refs() []Ref {
	out := make([]Ref, len(o.m.chunks))
	for i, c := range o.m.chunks {
		out[i] = Ref{c.id, int64(c.rawLen)}
	}
	return out
}

// Update runs fn in one badger transaction under the writer lock, so a
// change to the filesystem's metadata can delete or copy objects
// atomically with it (DeleteObjects, CopyObject take the transaction).
func (s *Store) Update(fn func(txn *badger.Txn) error) error {
	if s.opts.ReadOnly {
		return errors.New("store is open read-only")
	}
	s.writer.Lock()
	defer s.writer.Unlock()
	return s.db.Update(fn)
}

// View runs fn in a read-only badger transaction.
func (s *Store) View(fn func(txn *badger.Txn) error) error { return s.db.View(fn) }

// Sync makes everything written so far durable.
func (s *Store) Sync() error { return s.db.Sync() }

// DeleteObject removes the manifest of name inside txn (no error when there
// is none). Its chunks are freed by the next GC unless still needed.
func DeleteObject(txn *badger.Txn, name string) error { return txn.Delete(objectKey(name)) }

// CopyObject makes dst name the same chunks as src inside txn: no chunk is
// read or written (snapshots and restores cost one manifest).
func CopyObject(txn *badger.Txn, src, dst string) error {
	it, err := txn.Get(objectKey(src))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return fmt.Errorf("object %q: %w", src, ErrNotFound)
	}
	if err != nil {
		return err
	}
	v, err := it.ValueCopy(nil)
	if err != nil {
		return err
	}
	if _, err := decodeManifest(v); err != nil {
		return fmt.Errorf("object %q: %w", src, err)
	}
	return txn.Set(objectKey(dst), v)
}

// ObjectNames lists the names under prefix (including internal ones).
func ObjectNames(txn *badger.Txn, prefix string) []string {
	opts := badger.DefaultIteratorOptions
	opts.PrefetchValues = false
	it := txn.NewIterator(opts)
	defer it.Close()
	var out []string
	p := objectKey(prefix)
	for it.Seek(p); it.ValidForPrefix(p); it.Next() {
		out = append(out, string(it.Item().Key()[2:]))
	}
	return out
}

// InternalPrefix starts the names of objects that the filesystem keeps
// for itself (file contents, versions, snapshots): List leaves them out,
// GC and Usage count them like any other.
const InternalPrefix = "\x01"
