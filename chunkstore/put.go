package chunkstore

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/zeebo/blake3"

	"github.com/glyd/glyd/chunkstore/cdc"
	"github.com/glyd/glyd/codec"
	"github.com/glyd/glyd/delta"
)

// PutStats says what a put stored.
type PutStats struct {
	Size      int64 // bytes of the object
	Chunks    int   // chunks it was cut into
	New       int   // chunks not stored before
	Deltas    int   // of the new chunks, how many are deltas
	Stored    int64 // bytes of new chunk frames written
	Duplicate int64 // bytes found already stored
}

// pendingChunk moves through the put pipeline: the chunker creates it, a
// worker codes it, the committer writes it in stream order.
type pendingChunk struct {
	data  []byte
	id    ID
	dup   bool // already stored, or first seen earlier in this put
	frame []byte
	rec   chunkRecord
	sk    delta.Sketch
	err   error
	done  chan struct{}
}

// Put stores everything r yields as the object name, replacing an object
// of that name. Chunking, hashing, similarity search and coding run as a
// pipeline across Threads workers. When Put returns nil the object is
// durable: its chunks are synced before the manifest that names them, and
// the manifest before Put returns (docs/store.md).
func (s *Store) Put(name string, r io.Reader) (PutStats, error) {
	if err := validName(name); err != nil {
		return PutStats{}, err
	}
	b, err := s.NewBuilder()
	if err != nil {
		return PutStats{}, err
	}
	if err := b.Write(r); err != nil {
		b.Abort()
		return b.st, err
	}
	return b.Commit(name, true, nil)
}

// write cuts r into chunks, codes the new ones across the workers and
// stores them in stream order, appending their refs to b's manifest.
func (b *Builder) write(r io.Reader) error {
	s := b.s
	ch, err := cdc.New(r, s.cfg.Chunking)
	if err != nil {
		return err
	}
	// The queue is deep so that one slow chunk (a delta tried against two
	// bases) holds up only the committer, not the workers: they go on with
	// the chunks behind it. 64 chunks of up to 256 KiB bound the memory.
	queue := make(chan *pendingChunk, 64)
	sem := make(chan struct{}, s.opts.Threads)
	stop := make(chan struct{})
	var readErr error
	go func() {
		defer close(queue)
		for {
			data, err := ch.Next()
			if err == io.EOF {
				return
			}
			if err != nil {
				readErr = err
				return
			}
			buf := s.cache.alloc(len(data)) // recycled by the committer below
			copy(buf, data)
			p := &pendingChunk{data: buf, done: make(chan struct{})}
			select {
			case sem <- struct{}{}:
			case <-stop:
				return
			}
			go func() {
				defer func() { <-sem; close(p.done) }()
				p.err = s.codeChunk(p, &b.claimed)
			}()
			select {
			case queue <- p:
			case <-stop:
				return
			}
		}
	}()

	fail := func(err error) error {
		close(stop)
		for p := range queue {
			<-p.done
			s.cache.free(p.data)
		}
		return err
	}
	// The reading goroutine has finished with the chunker once the queue
	// is closed: every return below comes after the queue is drained.
	defer ch.Close()
	for p := range queue {
		<-p.done
		if p.err != nil {
			return fail(p.err)
		}
		if !p.dup {
			if err := b.w.add(p); err != nil {
				s.cache.free(p.data)
				return fail(err)
			}
			b.st.New++
			b.st.Stored += int64(len(p.frame))
			if p.rec.kind == kindDelta {
				b.st.Deltas++
			}
		} else {
			b.st.Duplicate += int64(len(p.data))
		}
		b.m.chunks = append(b.m.chunks, chunkRef{p.id, len(p.data)})
		b.m.size += int64(len(p.data))
		b.st.Chunks++
		s.cache.free(p.data) // the frame stays with the transaction until it commits
		p.data, p.frame = nil, nil
	}
	if readErr != nil {
		return fmt.Errorf("reading input: %w", readErr)
	}
	return nil
}

// codeChunk hashes a chunk and, when it is new, codes it alone and against
// the most similar stored chunk, keeping the smaller where the delta pays.
func (s *Store) codeChunk(p *pendingChunk, claimed *sync.Map) error {
	p.id = blake3.Sum256(p.data)
	if _, seen := claimed.LoadOrStore(p.id, true); seen {
		p.dup = true
		return nil
	}
	if _, err := s.record(p.id); err == nil {
		p.dup = true
		return nil
	} else if !errors.Is(err, ErrNotFound) {
		return err
	}
	p.sk = delta.Compute(p.data)
	cands := s.candidates(p.sk)
	// against codes the chunk against candidate c's chunk: nil when that
	// cannot be read (a damaged base is no base; verify reports it) or the
	// two are too large to code together.
	against := func(c candidate) []byte {
		bc, err := s.chunkData(c.id)
		if err != nil {
			return nil
		}
		fr, ok := delta.EncodeTo(s.cache.alloc(len(p.data) + frameSlack)[:0], bc.data, p.data, s.tier)
		s.cache.release(bc)
		if !ok {
			s.cache.free(fr)
			return nil
		}
		return fr
	}
	// The best candidate first: a delta under a tenth of what the chunk
	// would take alone is kept, and no other candidate is tried, so when
	// the delta is that small against the base's own ratio, coding the
	// chunk alone would change nothing but the statistics. In a release
	// series most new chunks are such deltas, and coding them alone too
	// took a tenth of the put's CPU. Their aloneLen is then the base's
	// ratio applied to this chunk (docs/store.md).
	var first []byte
	if len(cands) > 0 {
		c := cands[0]
		first = against(c)
		if est := c.aloneLen * len(p.data) / max(1, c.rawLen); first != nil && len(first)*10 <= est {
			p.frame = first
			p.rec = chunkRecord{kind: kindDelta, depth: c.depth + 1, base: c.id, rawLen: len(p.data), storedLen: len(first), aloneLen: est}
			return nil
		}
	}
	alone := codec.EncodeChunk(s.cache.alloc(len(p.data) + frameSlack)[:0], p.data, s.tier)
	p.frame = alone
	p.rec = chunkRecord{kind: kindFull, rawLen: len(p.data), storedLen: len(alone), aloneLen: len(alone)}
	for i, c := range cands {
		fr := first
		if i > 0 {
			fr = against(c)
		}
		if fr == nil {
			continue
		}
		if len(fr) < len(p.frame) && delta.Keep(fr, p.data, len(alone), s.tier) {
			s.cache.free(p.frame) // the alone frame, or a worse delta
			p.frame = fr
			p.rec = chunkRecord{kind: kindDelta, depth: c.depth + 1, base: c.id, rawLen: len(p.data), storedLen: len(fr), aloneLen: len(alone)}
		} else {
			s.cache.free(fr)
		}
		if len(p.frame)*10 <= len(alone) {
			break // good enough: a second candidate would cost a whole encode
		}
	}
	return nil
}

type candidate struct {
	id               ID
	shared           int
	depth            int
	rawLen, aloneLen int // the base's
}

// candidates returns up to two stored chunks that share super-features with
// sk and can still take a delta (depth below MaxDepth): the one sharing most
// with the longest chain (usually the latest version of this content) and
// the one with the shortest chain, since either may give the smaller delta.
func (s *Store) candidates(sk delta.Sketch) []candidate {
	counts := map[ID]int{}
	_ = s.db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.PrefetchValues = false
		it := txn.NewIterator(opts)
		defer it.Close()
		for _, sf := range sk {
			if sf == 0 {
				continue
			}
			prefix := featureKey(sf, ID{})[:10]
			n := 0
			for it.Seek(prefix); it.ValidForPrefix(prefix) && n < 16; it.Next() {
				var id ID
				copy(id[:], it.Item().Key()[10:])
				counts[id]++
				n++
			}
		}
		return nil
	})
	var cs []candidate
	for id, n := range counts {
		r, err := s.record(id)
		if err != nil || r.depth >= MaxDepth {
			continue
		}
		cs = append(cs, candidate{id, n, r.depth, r.rawLen, r.aloneLen})
	}
	if len(cs) == 0 {
		return nil
	}
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].shared != cs[j].shared {
			return cs[i].shared > cs[j].shared
		}
		if cs[i].depth != cs[j].depth {
			return cs[i].depth > cs[j].depth
		}
		return string(cs[i].id[:]) < string(cs[j].id[:])
	})
	out := []candidate{cs[0]}
	best := cs[0].shared
	for _, c := range cs[1:] {
		if c.shared == best && c.depth < out[0].depth && (len(out) == 1 || c.depth < out[1].depth) {
			out = append(out[:1], c)
		}
	}
	return out
}

// frameSlack is what a chunk's frame may take beyond its bytes (headers,
// an incompressible block stored raw): the capacity that spares
// EncodeChunk a reallocation.
const frameSlack = 4 << 10

// chunkWriter stores new chunks, many per badger transaction: one
// transaction per chunk made puts wait on badger's commit latency, not on
// the CPU. A chunk's frame, record and index entries always go into the same
// transaction, so a record never exists without its frame.
type chunkWriter struct {
	db     *badger.DB
	txn    *badger.Txn
	n      int
	cache  *chunkCache
	frames [][]byte // frames the transaction holds, recycled once it is done
}

// txnChunks is how many chunks share a transaction: far below badger's
// limits (frames live in the value log and count as pointers).
const txnChunks = 256

func (w *chunkWriter) add(p *pendingChunk) error {
	if w.txn == nil {
		w.txn = w.db.NewTransaction(true)
	}
	err := setChunk(w.txn, p)
	if errors.Is(err, badger.ErrTxnTooBig) {
		// Commit what the transaction holds (a part of p it took is at
		// worst a frame without a record, which GC removes) and set all
		// of p again in a fresh one.
		if err := w.flush(); err != nil {
			return err
		}
		w.txn = w.db.NewTransaction(true)
		err = setChunk(w.txn, p)
	}
	if err != nil {
		return err
	}
	w.frames = append(w.frames, p.frame)
	if w.n++; w.n >= txnChunks {
		return w.flush()
	}
	return nil
}

func setChunk(txn *badger.Txn, p *pendingChunk) error {
	if err := txn.Set(blobKey(p.id), p.frame); err != nil {
		return err
	}
	if err := txn.Set(chunkKey(p.id), p.rec.encode()); err != nil {
		return err
	}
	for _, sf := range p.sk {
		if sf != 0 {
			if err := txn.Set(featureKey(sf, p.id), nil); err != nil {
				return err
			}
		}
	}
	return nil
}

func (w *chunkWriter) flush() error {
	if w.txn == nil {
		return nil
	}
	err := w.txn.Commit()
	w.txn, w.n = nil, 0
	w.recycle()
	return err
}

// recycle gives the frames of a finished transaction back to the pool:
// badger copied them into its value log when it committed.
func (w *chunkWriter) recycle() {
	if w.cache != nil {
		for _, f := range w.frames {
			w.cache.free(f)
		}
	}
	clear(w.frames)
	w.frames = w.frames[:0]
}

func (w *chunkWriter) discard() {
	if w.txn != nil {
		w.txn.Discard()
		w.txn, w.n = nil, 0
		w.recycle()
	}
}
