// Package chunkstore is glyd's content-addressed store: byte streams go in,
// are cut into content-defined chunks, deduplicated by BLAKE3 id, coded as
// deltas against similar stored chunks where that pays, and kept as v7 chunk
// frames; any object, or any range of one, comes back exactly.
//
// docs/store.md specifies the on-disk layout and the order of writes that
// keeps a store consistent through a crash at any instant.
package chunkstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	badger "github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"

	"github.com/glyd/glyd/chunkstore/cdc"
	"github.com/glyd/glyd/codec"
)

// FormatVersion is the store layout this package writes; it reads every
// version up to it. Format 2 indexes each feature of a chunk on its own and
// may hold deltas against two bases (docs/store.md); a format-1 store stays
// format 1, written as before, so the glyd that made it still reads it.
const FormatVersion = 2

// MaxDepth bounds delta chains: reading a chunk costs at most MaxDepth+1
// decodes (itself and its bases).
const MaxDepth = 4

// Options configure a store when it is created; an existing store keeps
// what it was created with.
type Options struct {
	Tier     codec.Tier
	Chunking cdc.Params
	Threads  int   // put pipeline workers; 0 means one per CPU
	Cache    int64 // bytes of decoded chunks kept for reads; 0 means 64 MiB
	// WarmCache faults the chunk cache's memory in at open, in the
	// background, for a long-lived reader (glydfs): its first reads then
	// fill buffers already in memory (chunkCache.warm).
	WarmCache bool
	// ReadsCachedAbove says the reader keeps what it reads itself (glydfs:
	// the kernel's page cache holds the files' bytes), so the chunk cache
	// should keep what no cache above it can: delta bases. Bases then go
	// in at the front, and a chunk a read has copied to its end goes to
	// the back (docs/store.md, "The chunk cache").
	ReadsCachedAbove bool
	ReadOnly         bool
}

// config is what the store records about itself (key "meta/config").
type config struct {
	Format   int        `json:"format"`
	Tier     string     `json:"tier"`
	Chunking cdc.Params `json:"chunking"`
}

// Store is an open store. Many goroutines may read while one puts.
type Store struct {
	dir   string
	db    *badger.DB
	blobs Blobs
	cfg   config
	tier  codec.Tier
	opts  Options

	writer sync.Mutex // one put, delete or gc at a time
	cache  *chunkCache
	// Read-ahead: chunks for the prefetch workers, started on first use;
	// closing stops them (Close).
	prefetch     chan ID
	prefetchOnce sync.Once
	closing      chan struct{}
	closeOnce    sync.Once
	recs         recordCache
	flightMu     sync.Mutex
	flight       map[ID]*flight // chunks being decoded
}

var keyConfig = []byte("meta/config")

// ErrNotStore is returned when a directory does not hold a store.
var ErrNotStore = errors.New("not a glyd store")

// ErrInUse is returned when another process has the store open.
var ErrInUse = errors.New("the store is in use by another process (glydfs or glyd)")

// Init creates a store in dir, which must not exist or be empty.
func Init(dir string, opts Options) (*Store, error) {
	return initFormat(dir, opts, FormatVersion)
}

// DefaultChunking is the chunking a new store of the tier gets when Init
// is given none (docs/chunking.md has the measurements). The default tier
// cuts 64 KiB chunks on average (cdc.DefaultParams): with deltas, larger
// chunks store a little less (5% on the release series at 256 KiB) and
// every random read decodes more. The max and cold tiers, whose entropy
// stage gains more from the context a larger chunk gives, cut 256 KiB
// chunks (64 KiB to 1 MiB): on the release series 8% (max) and 10% (cold)
// fewer bytes than at 64 KiB; at 512 KiB the deltas grow again.
func DefaultChunking(tier codec.Tier) cdc.Params {
	if tier == codec.Max || tier == codec.Cold {
		return cdc.Params{Min: 64 << 10, Avg: 256 << 10, Max: 1 << 20}
	}
	return cdc.DefaultParams()
}

// initFormat is Init writing an older format: the tests make format-1
// stores with it, as earlier glyds wrote them.
func initFormat(dir string, opts Options, format int) (*Store, error) {
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		if _, err := os.Stat(filepath.Join(dir, "MANIFEST")); err == nil {
			return nil, fmt.Errorf("%s: a store already exists here", dir)
		}
		return nil, fmt.Errorf("%s: directory is not empty", dir)
	}
	if opts.Chunking == (cdc.Params{}) {
		opts.Chunking = DefaultChunking(opts.Tier)
	}
	if err := validChunking(opts.Chunking); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	db, err := openDB(dir, false)
	if err != nil {
		return nil, err
	}
	cfg := config{Format: format, Tier: opts.Tier.String(), Chunking: opts.Chunking}
	b, _ := json.Marshal(cfg)
	if err := db.Update(func(txn *badger.Txn) error { return txn.Set(keyConfig, b) }); err != nil {
		db.Close()
		return nil, err
	}
	if err := db.Sync(); err != nil {
		db.Close()
		return nil, err
	}
	return newStore(dir, db, cfg, opts)
}

// Open opens an existing store.
func Open(dir string, opts Options) (*Store, error) {
	if _, err := os.Stat(filepath.Join(dir, "MANIFEST")); err != nil {
		if _, err2 := os.Stat(dir); err2 != nil {
			return nil, fmt.Errorf("%s: %w (no such directory)", dir, ErrNotStore)
		}
		return nil, fmt.Errorf("%s: %w (no database in it)", dir, ErrNotStore)
	}
	db, err := openDB(dir, opts.ReadOnly)
	if err != nil {
		return nil, err
	}
	var cfg config
	err = db.View(func(txn *badger.Txn) error {
		it, err := txn.Get(keyConfig)
		if err != nil {
			return err
		}
		return it.Value(func(v []byte) error { return json.Unmarshal(v, &cfg) })
	})
	if err != nil {
		db.Close()
		if errors.Is(err, badger.ErrKeyNotFound) {
			return nil, fmt.Errorf("%s: %w (a badger database without a glyd configuration)", dir, ErrNotStore)
		}
		return nil, fmt.Errorf("%s: reading the store configuration: %w", dir, err)
	}
	if cfg.Format > FormatVersion {
		db.Close()
		return nil, fmt.Errorf("%s: store format %d is newer than this glyd reads (%d): upgrade glyd", dir, cfg.Format, FormatVersion)
	}
	if cfg.Format < 1 || validChunking(cfg.Chunking) != nil {
		db.Close()
		return nil, fmt.Errorf("%s: %w (configuration is damaged)", dir, ErrCorrupt)
	}
	return newStore(dir, db, cfg, opts)
}

func newStore(dir string, db *badger.DB, cfg config, opts Options) (*Store, error) {
	tier, err := codec.ParseTier(cfg.Tier)
	if err != nil {
		db.Close()
		return nil, err
	}
	if opts.Cache <= 0 {
		opts.Cache = 64 << 20
	}
	if opts.Threads <= 0 {
		opts.Threads = runtime.GOMAXPROCS(0)
	}
	s := &Store{dir: dir, db: db, blobs: badgerBlobs{db}, cfg: cfg, tier: tier, opts: opts, cache: newChunkCache(opts.Cache),
		prefetch: make(chan ID), closing: make(chan struct{})}
	if opts.WarmCache {
		s.cache.warm()
	}
	return s, nil
}

// validChunking checks chunking parameters for a store: valid for the
// chunker, and no chunk larger than the codec codes as one unit (the
// chunker allows up to 64 MiB; a larger chunk made the put panic).
func validChunking(p cdc.Params) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if p.Max > codec.MaxChunk {
		return fmt.Errorf("%w: the largest chunk (Max=%d) may be at most %d bytes", cdc.ErrParams, p.Max, codec.MaxChunk)
	}
	return nil
}

// openDB opens badger tuned for this job: compressed chunk frames go to the
// value log (ValueThreshold 256 bytes: records and index entries stay in the
// LSM tree, frames do not), badger's own compression is off (frames are
// already compressed), and writes are not synced one by one: the store
// calls Sync at the points docs/store.md names. No block cache: with
// neither compression nor encryption a table's blocks are read in place
// from its mmap, and the cache only added its own bookkeeping to every
// lookup (a cold sequential read through glydfs spent ~8% less CPU
// without it, docs/benchmarks/fs.md).
func openDB(dir string, readOnly bool) (*badger.DB, error) {
	o := badger.DefaultOptions(dir).
		WithValueThreshold(256).
		WithCompression(options.None).
		WithSyncWrites(false).
		WithNumVersionsToKeep(1).
		WithReadOnly(readOnly).
		WithLoggingLevel(badger.WARNING).
		WithLogger(quietLogger{}).
		WithMemTableSize(32 << 20).
		WithBlockCacheSize(0).
		WithIndexCacheSize(16 << 20).
		WithValueLogFileSize(256 << 20)
	db, err := badger.Open(o)
	if err != nil {
		msg := err.Error()
		if strings.Contains(msg, "Cannot acquire directory lock") || strings.Contains(msg, "resource temporarily unavailable") {
			return nil, fmt.Errorf("%s: %w", dir, ErrInUse)
		}
		if strings.Contains(msg, "no space left") {
			return nil, fmt.Errorf("%s: no space left on device", dir)
		}
		return nil, fmt.Errorf("%s: opening the store: %w", dir, err)
	}
	return db, nil
}

// quietLogger drops badger's informational chatter; warnings and errors
// still reach stderr.
type quietLogger struct{}

func (quietLogger) Errorf(f string, a ...any)   { fmt.Fprintf(os.Stderr, "badger: "+f, a...) }
func (quietLogger) Warningf(f string, a ...any) { fmt.Fprintf(os.Stderr, "badger: "+f, a...) }
func (quietLogger) Infof(string, ...any)        {}
func (quietLogger) Debugf(string, ...any)       {}

// Close flushes and closes the store.
func (s *Store) Close() error {
	s.closeOnce.Do(func() { close(s.closing) })
	return s.db.Close()
}

// Dir is the store's directory.
func (s *Store) Dir() string { return s.dir }

// Tier is the tier chunks are coded with.
func (s *Store) Tier() codec.Tier { return s.tier }

// Chunking is the store's chunking parameters.
func (s *Store) Chunking() cdc.Params { return s.cfg.Chunking }

func chunkKey(id ID) []byte     { return append([]byte("k/"), id[:]...) }
func objectKey(n string) []byte { return append([]byte("o/"), n...) }
func featureKey(sf uint64, id ID) []byte {
	k := make([]byte, 2+8+32)
	copy(k, "f/")
	for i := range 8 {
		k[2+i] = byte(sf >> (56 - 8*i))
	}
	copy(k[10:], id[:])
	return k
}

// record reads a chunk's metadata.
func (s *Store) record(id ID) (chunkRecord, error) {
	var r chunkRecord
	err := s.db.View(func(txn *badger.Txn) error {
		it, err := txn.Get(chunkKey(id))
		if err != nil {
			return err
		}
		return it.Value(func(v []byte) (err error) {
			r, err = decodeChunkRecord(v)
			return err
		})
	})
	if errors.Is(err, badger.ErrKeyNotFound) {
		return r, fmt.Errorf("chunk %s: %w", id.Short(), ErrNotFound)
	}
	return r, err
}

// recordCache keeps the chunk records reads looked up: a record never
// changes while its chunk exists, and a read looks up every chunk's record
// (and its bases') before decoding it. GC clears it after deleting records
// and bumps gen, so that a lookup that raced the deletion does not put a
// dead record back. Put's duplicate check never consults it.
type recordCache struct {
	mu  sync.Mutex
	gen uint64
	m   map[ID]chunkRecord
}

const recordCacheMax = 1 << 17

// readRecord is record for reads, through the record cache.
func (s *Store) readRecord(id ID) (chunkRecord, error) {
	c := &s.recs
	c.mu.Lock()
	r, ok := c.m[id]
	gen := c.gen
	c.mu.Unlock()
	if ok {
		return r, nil
	}
	r, err := s.record(id)
	if err != nil {
		return r, err
	}
	c.mu.Lock()
	if c.gen == gen {
		if c.m == nil || len(c.m) >= recordCacheMax {
			c.m = map[ID]chunkRecord{}
		}
		c.m[id] = r
	}
	c.mu.Unlock()
	return r, nil
}

// forgetRecords empties the record cache (GC deleted records).
func (s *Store) forgetRecords() {
	s.recs.mu.Lock()
	s.recs.gen++
	s.recs.m = nil
	s.recs.mu.Unlock()
}

// validName rejects object names that would not round-trip through the CLI
// and the filesystem.
func validName(name string) error {
	if name == "" || len(name) > 4096 || strings.ContainsRune(name, 0) || strings.HasPrefix(name, InternalPrefix) {
		return fmt.Errorf("invalid object name %q", name)
	}
	return nil
}
