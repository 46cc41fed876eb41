package chunkstore

import (
	"errors"
	"fmt"
	"io"
	"math/bits"
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
	keys  [delta.NumFeatures]uint64 // index keys (Store.sketch)
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
	if sr, ok := r.(interface{ Size() int64 }); ok && sr.Size() <= inlineMax {
		return b.writeInline(r)
	}
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
		if err := b.take(p); err != nil {
			return fail(err)
		}
	}
	if readErr != nil {
		return fmt.Errorf("reading input: %w", readErr)
	}
	return nil
}

// take appends a coded chunk to the object, storing it when it is new,
// and recycles its buffer.
func (b *Builder) take(p *pendingChunk) error {
	s := b.s
	if p.err != nil {
		s.cache.free(p.data)
		return p.err
	}
	if !p.dup {
		if err := b.w.add(p); err != nil {
			s.cache.free(p.data)
			return err
		}
		b.st.New++
		b.st.Stored += int64(len(p.frame))
		if p.rec.kind != kindFull {
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
	return nil
}

// inlineMax is the largest input write codes on the calling goroutine,
// chunk after chunk, instead of through the pipeline: a file of one or two
// chunks (a source file written into the mount) gains nothing from the
// workers, and handing its chunk from goroutine to goroutine, each hand-off
// waking an idle thread, took longer than coding it (the commit of a small
// file through glydfs: 320 µs to code and store a chunk the pipeline, and
// a test without the mount, did in 140).
const inlineMax = 256 << 10

// writeInline is write for an input of at most inlineMax bytes.
func (b *Builder) writeInline(r io.Reader) error {
	s := b.s
	ch, err := cdc.New(r, s.cfg.Chunking)
	if err != nil {
		return err
	}
	defer ch.Close()
	for {
		data, err := ch.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading input: %w", err)
		}
		buf := s.cache.alloc(len(data))
		copy(buf, data)
		p := &pendingChunk{data: buf}
		p.err = s.codeChunk(p, &b.claimed)
		if err := b.take(p); err != nil {
			return err
		}
	}
}

// codeChunk hashes a chunk and, when it is new, codes it alone and against
// the most similar stored chunks, keeping the smallest where a delta pays.
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
	p.keys = s.sketch(p.data)
	cands := s.candidates(&p.keys)
	// against codes the chunk against the candidates' chunks, as one
	// history in that order: nil when one cannot be read (a damaged base is
	// no base; verify reports it) or they are too large to code together.
	against := func(cs ...candidate) []byte {
		var bases [2][]byte
		for i, c := range cs {
			bc, err := s.chunkData(c.id)
			if err != nil {
				return nil
			}
			defer s.cache.release(bc)
			bases[i] = bc.data
		}
		fr, ok := delta.EncodeTo(s.cache.alloc(len(p.data) + frameSlack)[:0], p.data, s.tier, bases[:len(cs)]...)
		if !ok {
			s.cache.free(fr)
			return nil
		}
		return fr
	}
	record := func(fr []byte, aloneLen int, cs ...candidate) {
		p.frame = fr
		p.rec = chunkRecord{kind: kindDelta, depth: 1 + cs[0].depth, base: cs[0].id, rawLen: len(p.data), storedLen: len(fr), aloneLen: aloneLen}
		if len(cs) == 2 {
			p.rec.kind, p.rec.depth, p.rec.base2 = kindDelta2, 2+cs[0].depth+cs[1].depth, cs[1].id
		}
	}
	// The best candidate first, then the best with a second base that
	// covers what the first lacks: a delta under a tenth of what the chunk
	// would take alone is kept, and nothing else is tried, so when the delta
	// is that small against the base's own ratio, coding the chunk alone
	// would change nothing but the statistics. In a release series most new
	// chunks are such deltas, and coding them alone too took a tenth of the
	// put's CPU. Their aloneLen is then the base's ratio applied to this
	// chunk (docs/store.md).
	choose := func() {
		type try struct {
			fr []byte
			cs []candidate
		}
		var tries []try
		if len(cands) > 0 {
			c := cands[0]
			est := c.aloneLen * len(p.data) / max(1, c.rawLen)
			if fr := against(c); fr != nil {
				if len(fr)*10 <= est {
					record(fr, est, c)
					return
				}
				tries = append(tries, try{fr, []candidate{c}})
			}
			if c2, ok := s.complement(cands); ok {
				if fr := against(c, c2); fr != nil {
					if len(fr)*10 <= est && (len(tries) == 0 || len(fr) < len(tries[0].fr)) {
						for _, t := range tries {
							s.cache.free(t.fr)
						}
						record(fr, est, c, c2)
						return
					}
					tries = append(tries, try{fr, []candidate{c, c2}})
				}
			}
		}
		alone := codec.EncodeChunk(s.cache.alloc(len(p.data) + frameSlack)[:0], p.data, s.tier)
		p.frame = alone
		p.rec = chunkRecord{kind: kindFull, rawLen: len(p.data), storedLen: len(alone), aloneLen: len(alone)}
		judge := delta.Judge{Target: p.data, AloneLen: len(alone), Tier: s.tier}
		consider := func(t try) {
			if len(t.fr) < len(p.frame) && judge.Keep(t.fr) {
				s.cache.free(p.frame) // the alone frame, or a worse delta
				record(t.fr, len(alone), t.cs...)
			} else {
				s.cache.free(t.fr)
			}
		}
		for _, t := range tries {
			consider(t)
		}
		// Where that is still not a tenth of the chunk alone, one more single
		// base: the candidate with the shortest chain among those sharing most,
		// since an older version may give the smaller delta and leaves more of
		// the depth budget to the chunks that will be coded against this one.
		if len(p.frame)*10 > len(alone) {
			if c, ok := shortest(cands); ok {
				if fr := against(c); fr != nil {
					consider(try{fr, []candidate{c}})
				}
			}
		}
	}
	choose()
	// A delta at the depth cap is a dead end: nothing can be coded against
	// it, so the next version of this content must reach back past it, to
	// an older version and a larger delta, and the one after further still.
	// Coding it against a shallow candidate instead, when that costs at
	// most deadEnd times as much, starts a new chain the next versions
	// follow at a version apart (on releases/x-tools: 2.62 MB stored at the
	// max tier instead of 2.77, the last versions' deltas half as large).
	if p.rec.kind != kindFull && p.rec.depth >= MaxDepth {
		if c, ok := shallowest(cands); ok {
			if fr := against(c); fr != nil {
				if len(fr) <= deadEnd*len(p.frame) && delta.Pays(len(fr), p.rec.aloneLen) {
					s.cache.free(p.frame)
					record(fr, p.rec.aloneLen, c)
				} else {
					s.cache.free(fr)
				}
			}
		}
	}
	return nil
}

type candidate struct {
	id               ID
	shared           int    // index keys in common with the new chunk
	keys             uint32 // which of them (bit i: the new chunk's key i)
	depth            int
	rawLen, aloneLen int // the base's
}

// sketch returns a chunk's index keys: its feature keys in a format-2
// store, its three super-features in a format-1 store (zeros unused).
func (s *Store) sketch(data []byte) [delta.NumFeatures]uint64 {
	if s.cfg.Format >= 2 {
		return delta.FeatureKeys(data)
	}
	var k [delta.NumFeatures]uint64
	sk := delta.Compute(data)
	copy(k[:], sk[:])
	return k
}

// candidates returns the stored chunks that share index keys with a new
// chunk and can still take a delta (depth below MaxDepth), the one sharing
// most first, and among those sharing as much the one with the longest
// chain (usually the latest version of this content) first.
func (s *Store) candidates(keys *[delta.NumFeatures]uint64) []candidate {
	found := map[ID]*candidate{}
	_ = s.db.View(func(txn *badger.Txn) error {
		opts := badger.DefaultIteratorOptions
		opts.PrefetchValues = false
		it := txn.NewIterator(opts)
		defer it.Close()
		for i, key := range keys {
			if key == 0 {
				continue
			}
			prefix := featureKey(key, ID{})[:10]
			n := 0
			for it.Seek(prefix); it.ValidForPrefix(prefix) && n < 16; it.Next() {
				var id ID
				copy(id[:], it.Item().Key()[10:])
				c := found[id]
				if c == nil {
					c = &candidate{id: id}
					found[id] = c
				}
				c.shared++
				c.keys |= 1 << i
				n++
			}
		}
		return nil
	})
	var cs []candidate
	for id, c := range found {
		// Through the record cache: put holds the writer lock, so no GC
		// deletes a record meanwhile, and in a series every version's
		// chunk shares keys with the next, so the same records come up
		// chunk after chunk.
		r, err := s.readRecord(id)
		if err != nil || r.depth >= MaxDepth {
			continue
		}
		c.depth, c.rawLen, c.aloneLen = r.depth, r.rawLen, r.aloneLen
		cs = append(cs, *c)
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
	return cs
}

// complement picks a second base for cs[0]: the candidate sharing most of
// the keys cs[0] lacks (so likely holding the part of the new chunk that
// cs[0] does not), within the depth budget of a two-base delta. Only
// format-2 stores have keys enough for this (a format-1 sketch's three
// super-features seldom tell parts apart), and only they may hold
// two-base deltas.
func (s *Store) complement(cs []candidate) (candidate, bool) {
	if s.cfg.Format < 2 {
		return candidate{}, false
	}
	var best candidate
	most := 0
	for _, c := range cs[1:] {
		n := bits.OnesCount32(c.keys &^ cs[0].keys)
		if n > most && 2+cs[0].depth+c.depth <= MaxDepth && c.rawLen+cs[0].rawLen < codec.MaxChunk {
			best, most = c, n
		}
	}
	return best, most > 0
}

// shortest returns the candidate with the shortest chain among those
// sharing as much as the first, when it is not the first.
func shortest(cs []candidate) (candidate, bool) {
	if len(cs) < 2 {
		return candidate{}, false
	}
	best := cs[0]
	for _, c := range cs[1:] {
		if c.shared == cs[0].shared && c.depth < best.depth {
			best = c
		}
	}
	return best, best.id != cs[0].id
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
	for _, sf := range p.keys {
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

// deadEnd is how much larger than the chosen delta at the depth cap a
// delta against a shallow base may be and still be taken instead: measured
// on the release series, 1.5 to 3 store alike, 8 stores more.
const deadEnd = 2

// shallowest returns the candidate with the shortest chain, among those
// sharing at least half as many keys as the first, whose delta would not
// be at the depth cap itself.
func shallowest(cs []candidate) (candidate, bool) {
	var best candidate
	found := false
	for _, c := range cs {
		if c.shared*2 < cs[0].shared || c.depth+1 >= MaxDepth {
			continue
		}
		if !found || c.depth < best.depth || c.depth == best.depth && c.shared > best.shared {
			best, found = c, true
		}
	}
	return best, found
}
