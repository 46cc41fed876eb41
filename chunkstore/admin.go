package chunkstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"strings"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/zeebo/blake3"
)

// List returns every object, sorted by name.
func (s *Store) List() ([]ObjectInfo, error) {
	var out []ObjectInfo
	err := s.eachManifest(func(name string, m *manifest) error {
		if strings.HasPrefix(name, InternalPrefix) {
			return nil
		}
		out = append(out, ObjectInfo{Name: name, Size: m.size, Chunks: len(m.chunks), Modified: m.modified})
		return nil
	})
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, err
}

// Stat describes an object.
func (s *Store) Stat(name string) (ObjectInfo, error) {
	o, err := s.OpenObject(name)
	if err != nil {
		return ObjectInfo{}, err
	}
	return o.Info(), nil
}

// Delete removes an object. Its chunks are freed by the next GC unless
// another object, or a delta, still needs them.
func (s *Store) Delete(name string) error {
	if s.opts.ReadOnly {
		return errors.New("store is open read-only")
	}
	s.writer.Lock()
	defer s.writer.Unlock()
	if _, err := s.manifest(name); err != nil {
		return err
	}
	if err := s.db.Update(func(txn *badger.Txn) error { return txn.Delete(objectKey(name)) }); err != nil {
		return err
	}
	return s.db.Sync()
}

// GCStats says what a collection freed.
type GCStats struct {
	Live, Freed int   // chunks kept and deleted
	FreedBytes  int64 // stored bytes of the deleted chunks
}

// GC frees every chunk that no object and no live chunk's delta needs
// (mark from the manifests, following delta bases; sweep the rest), then
// lets badger reclaim its value log. It holds the writer lock, so no put
// can dedup against a chunk being swept.
func (s *Store) GC() (GCStats, error) {
	var st GCStats
	if s.opts.ReadOnly {
		return st, errors.New("store is open read-only")
	}
	s.writer.Lock()
	defer s.writer.Unlock()
	live, err := s.mark()
	if err != nil {
		return st, fmt.Errorf("gc: %w (nothing was deleted)", err)
	}
	type dead struct {
		id  ID
		rec chunkRecord
	}
	var gone []dead
	err = s.eachRecord(func(id ID, r chunkRecord, err error) error {
		if !live[id] {
			gone = append(gone, dead{id, r})
		} else {
			st.Live++
		}
		return nil
	})
	if err != nil {
		return st, err
	}
	// Per chunk: index entries and record first, then the frame, each in its
	// own transaction: a crash between them leaves an unindexed frame for the
	// next GC, never a record without its frame.
	defer s.forgetRecords() // after the last deletion, so no lookup puts one back
	keys := make(map[ID][]uint64, len(gone))
	for _, d := range gone {
		keys[d.id] = nil
	}
	indexKeysOf(s, keys)
	for _, d := range gone {
		s.forgetRecords() // before each deletion: lookups racing it are not kept
		err := s.db.Update(func(txn *badger.Txn) error {
			for _, sf := range keys[d.id] {
				if err := txn.Delete(featureKey(sf, d.id)); err != nil {
					return err
				}
			}
			return txn.Delete(chunkKey(d.id))
		})
		if err != nil {
			return st, err
		}
		if err := s.blobs.Delete(d.id); err != nil {
			return st, err
		}
		s.cache.drop(d.id)
		st.Freed++
		st.FreedBytes += int64(d.rec.storedLen)
	}
	if err := s.sweepOrphanFrames(live); err != nil {
		return st, err
	}
	if err := s.db.Sync(); err != nil {
		return st, err
	}
	for s.db.RunValueLogGC(0.5) == nil {
	}
	return st, nil
}

// mark returns every chunk a manifest names and, transitively, every base
// a marked delta needs.
func (s *Store) mark() (map[ID]bool, error) {
	live := map[ID]bool{}
	var stack []ID
	err := s.eachManifest(func(name string, m *manifest) error {
		for _, c := range m.chunks {
			if c.id != (ID{}) && !live[c.id] {
				live[c.id] = true
				stack = append(stack, c.id)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for len(stack) > 0 {
		id := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		r, err := s.record(id)
		if err != nil {
			continue // verify reports missing chunks; gc only frees
		}
		for _, b := range r.bases() {
			if !live[b] {
				live[b] = true
				stack = append(stack, b)
			}
		}
	}
	return live, nil
}

// indexKeysOf fills in the index entries of the chunks keyed in keys with one scan
// of the index: records do not keep their keys (12 of them in a format-2
// store), and a scan per chunk made a GC after deleting a large object
// quadratic.
func indexKeysOf(s *Store, keys map[ID][]uint64) {
	if len(keys) == 0 {
		return
	}
	_ = s.db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.PrefetchValues = false
		it := txn.NewIterator(opts)
		defer it.Close()
		prefix := []byte("f/")
		for it.Seek(prefix); it.ValidForPrefix(prefix); it.Next() {
			k := it.Item().Key()
			if len(k) != 42 {
				continue
			}
			if ks, ok := keys[ID(k[10:])]; ok {
				keys[ID(k[10:])] = append(ks, binary.BigEndian.Uint64(k[2:10]))
			}
		}
		return nil
	})
}

// sweepOrphanFrames deletes frames without a record (left by a crash
// between a GC's two steps).
func (s *Store) sweepOrphanFrames(live map[ID]bool) error {
	var orphans []ID
	err := s.db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.PrefetchValues = false
		it := txn.NewIterator(opts)
		defer it.Close()
		prefix := []byte("b/")
		for it.Seek(prefix); it.ValidForPrefix(prefix); it.Next() {
			id := ID(it.Item().Key()[2:])
			if !live[id] {
				if _, err := txn.Get(chunkKey(id)); errors.Is(err, badger.ErrKeyNotFound) {
					orphans = append(orphans, id)
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, id := range orphans {
		if err := s.blobs.Delete(id); err != nil {
			return err
		}
	}
	return nil
}

func (s *Store) eachManifest(fn func(name string, m *manifest) error) error {
	return s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.DefaultIteratorOptions)
		defer it.Close()
		prefix := []byte("o/")
		for it.Seek(prefix); it.ValidForPrefix(prefix); it.Next() {
			name := string(it.Item().Key()[2:])
			err := it.Item().Value(func(v []byte) error {
				m, err := decodeManifest(v)
				if err != nil {
					return fmt.Errorf("object %q: %w", name, err)
				}
				return fn(name, m)
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// eachRecord calls fn for every chunk record; a damaged record is passed
// with its error.
func (s *Store) eachRecord(fn func(id ID, r chunkRecord, err error) error) error {
	return s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.DefaultIteratorOptions)
		defer it.Close()
		prefix := []byte("k/")
		for it.Seek(prefix); it.ValidForPrefix(prefix); it.Next() {
			id := ID(it.Item().Key()[2:])
			err := it.Item().Value(func(v []byte) error {
				r, err := decodeChunkRecord(v)
				return fn(id, r, err)
			})
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// Damage names one problem verify found.
type Damage struct {
	Chunk   ID
	Objects []string // objects that can no longer be read whole
	Problem string
}

// VerifyReport is what Verify found.
type VerifyReport struct {
	Objects, Chunks int
	Damaged         []Damage
}

// Verify decodes every chunk (following its delta chain) and checks it
// against its BLAKE3 id, checks every manifest's chunks exist and add up,
// and names the objects that damage reaches.
func (s *Store) Verify() (VerifyReport, error) {
	var rep VerifyReport
	bad := map[ID]string{}
	err := s.eachRecord(func(id ID, r chunkRecord, err error) error {
		rep.Chunks++
		if err != nil {
			bad[id] = err.Error()
			return nil
		}
		s.cache.drop(id)
		c, err := s.decodeChunk(id, r, 0)
		switch {
		case err != nil:
			bad[id] = err.Error()
		case ID(blake3.Sum256(c.data)) != id:
			bad[id] = "content does not match its id"
		}
		if c != nil {
			s.cache.release(c)
		}
		return nil
	})
	if err != nil {
		return rep, err
	}
	users := map[ID][]string{}
	err = s.eachManifest(func(name string, m *manifest) error {
		rep.Objects++
		for _, c := range m.chunks {
			if c.id == (ID{}) {
				continue // a hole
			}
			r, err := s.record(c.id)
			switch {
			case err != nil:
				if _, ok := bad[c.id]; !ok {
					bad[c.id] = "chunk missing"
				}
			case r.rawLen != c.rawLen:
				bad[c.id] = fmt.Sprintf("chunk is %d bytes, object %q expects %d", r.rawLen, name, c.rawLen)
			}
			if _, ok := bad[c.id]; ok {
				users[c.id] = append(users[c.id], name)
			}
		}
		return nil
	})
	if err != nil {
		return rep, err
	}
	for id, problem := range bad {
		rep.Damaged = append(rep.Damaged, Damage{Chunk: id, Objects: dedupe(users[id]), Problem: problem})
	}
	sort.Slice(rep.Damaged, func(i, j int) bool { return rep.Damaged[i].Chunk.String() < rep.Damaged[j].Chunk.String() })
	return rep, nil
}

func dedupe(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// Usage is what a store holds and what it saves. Chunks that no object
// needs any more (after a delete or a replacing put, until the next GC) are
// counted apart, as Garbage, and left out of the rest.
type Usage struct {
	Objects       int
	Logical       int64 // bytes of all objects
	Unique        int64 // bytes of distinct live chunks
	Stored        int64 // bytes of live chunk frames
	Chunks        int
	DeltaChunks   int
	Garbage       int64 // bytes of frames the next GC frees
	DedupSaved    int64 // Logical - Unique
	CompressSaved int64 // Unique - what distinct chunks take coded alone
	DeltaSaved    int64 // what deltas save over coding those chunks alone
}

// Usage adds up the store.
func (s *Store) Usage() (Usage, error) {
	var u Usage
	var alone int64
	live, err := s.mark()
	if err != nil {
		return u, err
	}
	err = s.eachRecord(func(id ID, r chunkRecord, err error) error {
		if err != nil {
			return nil
		}
		if !live[id] {
			u.Garbage += int64(r.storedLen)
			return nil
		}
		u.Chunks++
		u.Unique += int64(r.rawLen)
		u.Stored += int64(r.storedLen)
		alone += int64(r.aloneLen)
		if r.kind != kindFull {
			u.DeltaChunks++
		}
		return nil
	})
	if err != nil {
		return u, err
	}
	err = s.eachManifest(func(name string, m *manifest) error {
		u.Objects++
		u.Logical += m.size
		return nil
	})
	u.DedupSaved = u.Logical - u.Unique
	u.CompressSaved = u.Unique - alone
	u.DeltaSaved = alone - u.Stored
	return u, err
}
