package chunkstore

import (
	"container/list"
	"sync"
	"unsafe"
)

// chunkCache keeps recently decoded chunks, bounded by bytes, and recycles
// their buffers. A decoded chunk is handed out held (cached.refs); one the
// cache evicts while held goes back to the buffer pool when its last
// holder releases it, so no reader ever sees its bytes change. Recycling
// matters because fresh memory costs a page fault per 4 KiB on first
// touch: on the machines measured (docs/benchmarks/fs.md) filling fresh
// buffers ran at a quarter of the speed of decoding into warm ones, and a
// cold sequential read allocated one buffer per chunk.
type chunkCache struct {
	mu    sync.Mutex
	limit int64
	size  int64
	ll    *list.List // of *cached, most recently used first
	items map[ID]*list.Element

	pool     map[int][][]byte // free pieces of the region by size class
	heapPool map[int][][]byte // free buffers from the heap by size class
	poolSize int64            // bytes in heapPool

	// region is the memory most buffers are carved from, in size-class
	// pieces from the front (bump the next free byte); a piece goes back to
	// the pool when freed and is never given to the garbage collector.
	// One region the size of the cache and its pool, rather than a heap
	// allocation per buffer, so that warm can fault it in ahead of the
	// first reads (see there); only a warmed cache has one.
	region []byte
	bump   int
}

// cached is one decoded chunk.
type cached struct {
	id   ID
	data []byte
	refs int32 // holders (chunkCache.mu)
	in   bool  // in the cache (chunkCache.mu)
}

// poolClass is the granule of buffer sizes: a buffer of class k holds up
// to k·poolClass bytes.
const poolClass = 16 << 10

func newChunkCache(limit int64) *chunkCache {
	return &chunkCache{limit: limit, ll: list.New(), items: map[ID]*list.Element{}, pool: map[int][][]byte{}, heapPool: map[int][][]byte{}}
}

// has reports whether chunk id is cached.
func (c *chunkCache) has(id ID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.items[id] != nil
}

// acquire returns chunk id held, or nil when it is not cached.
func (c *chunkCache) acquire(id ID) *cached {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[id]
	if !ok {
		return nil
	}
	c.ll.MoveToFront(e)
	ch := e.Value.(*cached)
	ch.refs++
	return ch
}

// insert caches data as chunk id and returns it held. When the chunk is
// cached already (decoded by another reader meanwhile) that one is
// returned and data goes back to the pool. A chunk decoded only as the
// base of a delta goes in cold: at the end that is evicted first, so a
// read through delta chains keeps the chunks it returned rather than their
// bases (with the bases at the front, an object whose chunks and bases
// together just overflow the cache missed on every chunk when read again).
// A base that is asked for again moves to the front like any other chunk.
func (c *chunkCache) insert(id ID, data []byte, cold bool) *cached {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[id]; ok {
		ch := e.Value.(*cached)
		ch.refs++
		c.freeLocked(data)
		return ch
	}
	ch := &cached{id: id, data: data, refs: 1}
	if int64(len(data)) > c.limit {
		return ch // held by the caller only, recycled on release
	}
	ch.in = true
	c.size += int64(len(data))
	if cold {
		for c.size > c.limit {
			c.evictLocked(c.ll.Back())
		}
		c.items[id] = c.ll.PushBack(ch)
		return ch
	}
	c.items[id] = c.ll.PushFront(ch)
	for c.size > c.limit {
		c.evictLocked(c.ll.Back())
	}
	return ch
}

// demote moves a cached chunk to the back, first to be evicted (a chunk
// the reader has taken and keeps itself).
func (c *chunkCache) demote(ch *cached) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[ch.id]; ok && ch.in {
		c.ll.MoveToBack(e)
	}
}

// release lets go of a chunk acquire or insert returned.
func (c *chunkCache) release(ch *cached) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch.refs--
	if ch.refs == 0 && !ch.in {
		c.freeLocked(ch.data)
		ch.data = nil
	}
}

// drop forgets a chunk (after GC deleted it, or to decode it again).
func (c *chunkCache) drop(id ID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[id]; ok {
		c.evictLocked(e)
	}
}

func (c *chunkCache) evictLocked(e *list.Element) {
	ch := e.Value.(*cached)
	c.ll.Remove(e)
	delete(c.items, ch.id)
	c.size -= int64(len(ch.data))
	ch.in = false
	if ch.refs == 0 {
		c.freeLocked(ch.data)
		ch.data = nil
	}
}

// alloc returns a buffer of n bytes: a recycled one of the right size class
// when there is one, else a new piece of the region while it lasts.
func (c *chunkCache) alloc(n int) []byte {
	k := (n + poolClass - 1) / poolClass
	c.mu.Lock()
	if free := c.pool[k]; len(free) > 0 {
		b := free[len(free)-1]
		c.pool[k] = free[:len(free)-1]
		c.mu.Unlock()
		return b[:n]
	}
	if free := c.heapPool[k]; len(free) > 0 {
		b := free[len(free)-1]
		c.heapPool[k] = free[:len(free)-1]
		c.poolSize -= int64(cap(b))
		c.mu.Unlock()
		return b[:n]
	}
	if size := k * poolClass; c.bump+size <= len(c.region) {
		b := c.region[c.bump : c.bump+size : c.bump+size]
		c.bump += size
		c.mu.Unlock()
		return b[:n]
	}
	c.mu.Unlock()
	return make([]byte, n, k*poolClass)
}

// regionLocked allocates the region: the cache's limit plus the pool's.
// Only a cache that is warmed has one: allocating it costs clearing it
// where the heap reuses memory, which took longer than a short-lived
// store's whole read (glyd store get); such stores allocate buffer by
// buffer.
func (c *chunkCache) regionLocked() {
	if c.region == nil {
		n := c.limit + c.limit/4 + 1<<20
		c.region = make([]byte, n-n%poolClass)
	}
}

func (c *chunkCache) inRegion(b []byte) bool {
	if len(c.region) == 0 || cap(b) == 0 {
		return false
	}
	p, r := uintptr(unsafe.Pointer(unsafe.SliceData(b[:1]))), uintptr(unsafe.Pointer(unsafe.SliceData(c.region)))
	return p >= r && p < r+uintptr(len(c.region))
}

// warm faults the region in, in the background, without writing to it
// (prefault, Linux's MADV_POPULATE_WRITE; nothing where the kernel lacks
// it), so the first reads after opening the store do not pay a page fault
// per 4 KiB of every buffer they fill. On the machines measured
// (docs/benchmarks/fs.md) a first touch cost ~13 µs a page, where the
// virtual machine's memory was not backed yet: a fresh glydfs read its
// first 512 MiB at two thirds of the speed of its second pass, and most of
// the difference was filling fresh chunk buffers.
//
// Only the front of the region, where the first buffers come from, up to
// warmMax: a mount with a cache of gigabytes should not take them all from
// the system before it needs them.
func (c *chunkCache) warm() {
	c.mu.Lock()
	c.regionLocked()
	r := c.region[:min(len(c.region), warmMax)]
	c.mu.Unlock()
	go prefault(r)
}

const warmMax = 256 << 20

// free gives back a buffer alloc returned that was never cached.
func (c *chunkCache) free(b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.freeLocked(b)
}

// freeLocked keeps b for reuse: always a piece of the region, and heap
// buffers up to a quarter of the cache's size (plus 1 MiB) (the rest is
// left to the garbage collector).
func (c *chunkCache) freeLocked(b []byte) {
	if cap(b) == 0 || cap(b)%poolClass != 0 {
		return
	}
	k := cap(b) / poolClass
	if c.inRegion(b) {
		c.pool[k] = append(c.pool[k], b[:0])
		return
	}
	if c.poolSize+int64(cap(b)) > c.limit/4+1<<20 {
		return
	}
	c.heapPool[k] = append(c.heapPool[k], b[:0])
	c.poolSize += int64(cap(b))
}
