package fs

import (
	"errors"
	"io"
	"os"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/glyd/glyd/chunkstore"
)

// pageSize is the granule of staged writes: a write dirties the 64 KiB
// pages it touches, and a commit re-chunks only the stored chunks those
// pages overlap.
const pageSize = 64 << 10

// page is one staged page: in memory, spilled to the file's spill file, or
// all zeros (punched).
type page struct {
	data  []byte // pageSize bytes when in memory
	spill int64  // offset in the spill file, or -1
	zero  bool
}

// content is a regular file's bytes while it has staged changes: the
// committed version (base) up to baseValid, staged pages over it, and
// zeros everywhere else up to size.
type content struct {
	fsys      *FS
	base      body  // nil: no committed content
	baseValid int64 // base bytes beyond this were truncated away
	size      int64
	pages     map[int64]*page
	inMem     int64 // bytes of pages held in memory
	spill     *os.File
	spillEnd  int64
	dirty     bool // anything to commit
	wrote     bool // bytes written or zeroed, not only a size change
}

func newContent(fsys *FS, base body, size int64) *content {
	valid := int64(0)
	if base != nil {
		valid = min(base.Size(), size)
	}
	return &content{fsys: fsys, base: base, baseValid: valid, size: size, pages: map[int64]*page{}}
}

// readAt fills p with the file's bytes at off (p must lie within size).
func (c *content) readAt(p []byte, off int64) error {
	for len(p) > 0 {
		idx := off / pageSize
		in := off - idx*pageSize
		n := min(int64(len(p)), pageSize-in)
		q := p[:n]
		if pg := c.pages[idx]; pg != nil {
			switch {
			case pg.zero:
				clear(q)
			case pg.data != nil:
				copy(q, pg.data[in:])
			default:
				if _, err := c.spill.ReadAt(q, pg.spill+in); err != nil {
					return err
				}
			}
		} else if err := c.readBase(q, off); err != nil {
			return err
		}
		p, off = p[n:], off+n
	}
	return nil
}

// readBase reads committed bytes (zeros past baseValid).
func (c *content) readBase(q []byte, off int64) error {
	valid := int64(0)
	if off < c.baseValid {
		valid = min(int64(len(q)), c.baseValid-off)
		if _, err := c.base.ReadAt(q[:valid], off); err != nil && err != io.EOF {
			return err
		}
	}
	clear(q[valid:])
	return nil
}

// pageFor returns page idx in memory, loading its current bytes unless
// the caller overwrites all of it.
func (c *content) pageFor(idx int64, whole bool) (*page, error) {
	pg := c.pages[idx]
	if pg != nil && pg.data != nil {
		return pg, nil
	}
	buf := getPage()
	if !whole {
		switch {
		case pg != nil && pg.zero:
			clear(buf)
		case pg != nil:
			if _, err := c.spill.ReadAt(buf, pg.spill); err != nil {
				putPage(buf)
				return nil, err
			}
		default:
			lo := idx * pageSize
			n := min(pageSize, max(0, c.size-lo))
			if err := c.readBase(buf[:n], lo); err != nil {
				putPage(buf)
				return nil, err
			}
			clear(buf[n:])
		}
	}
	if pg == nil {
		pg = &page{}
		c.pages[idx] = pg
	}
	pg.data, pg.spill, pg.zero = buf, -1, false
	c.addMem(pageSize)
	return pg, nil
}

// pagePool recycles page buffers: a file staged in memory takes at least
// one 64 KiB page, and allocating it fresh for every small file (a tar
// unpacked into the mount) meant clearing it and, where the kernel hands
// out new memory, faulting its 16 pages in: a tenth of the CPU of
// unpacking a source tarball. A recycled page holds old bytes, so
// pageFor clears what it does not fill.
var pagePool = sync.Pool{New: func() any { return new([pageSize]byte) }}

func getPage() []byte { return pagePool.Get().(*[pageSize]byte)[:] }

// putPage recycles a page buffer nothing refers to any more.
func putPage(b []byte) {
	if cap(b) == pageSize {
		pagePool.Put((*[pageSize]byte)(b[:pageSize]))
	}
}

func (c *content) addMem(n int64) {
	c.inMem += n
	atomic.AddInt64(&c.fsys.stagedMem, n)
}

// write stages data at off.
func (c *content) write(data []byte, off int64) error {
	end := off + int64(len(data))
	for len(data) > 0 {
		idx := off / pageSize
		in := off - idx*pageSize
		n := min(int64(len(data)), pageSize-in)
		pg, err := c.pageFor(idx, in == 0 && n == pageSize)
		if err != nil {
			return err
		}
		copy(pg.data[in:], data[:n])
		data, off = data[n:], off+n
	}
	if end > c.size {
		c.size = end
	}
	c.dirty, c.wrote = true, true
	return c.maybeSpill()
}

// maybeSpill moves this file's staged pages to its spill file when the
// pages of all files together pass the memory bound.
func (c *content) maybeSpill() error {
	if atomic.LoadInt64(&c.fsys.stagedMem) <= c.fsys.opts.StagingMemory || c.inMem == 0 {
		return nil
	}
	if c.spill == nil {
		f, err := c.fsys.spillFile()
		if err != nil {
			return err
		}
		c.spill = f
	}
	idxs := make([]int64, 0, len(c.pages))
	for i, pg := range c.pages {
		if pg.data != nil {
			idxs = append(idxs, i)
		}
	}
	sort.Slice(idxs, func(a, b int) bool { return idxs[a] < idxs[b] })
	for _, i := range idxs {
		pg := c.pages[i]
		if _, err := c.spill.WriteAt(pg.data, c.spillEnd); err != nil {
			return err
		}
		putPage(pg.data)
		pg.data, pg.spill = nil, c.spillEnd
		c.spillEnd += pageSize
		c.addMem(-pageSize)
	}
	return nil
}

// truncate sets the size: bytes past it are gone, and reads as zeros if
// the file grows again.
func (c *content) truncate(size int64) error {
	if size < c.size {
		for idx, pg := range c.pages {
			if idx*pageSize >= size {
				if pg.data != nil {
					c.addMem(-pageSize)
					putPage(pg.data)
				}
				delete(c.pages, idx)
			}
		}
		if in := size % pageSize; in != 0 {
			idx := size / pageSize
			if c.pages[idx] != nil || size < c.baseValid {
				pg, err := c.pageFor(idx, false)
				if err != nil {
					return err
				}
				clear(pg.data[in:])
			}
		}
		c.baseValid = min(c.baseValid, size)
	}
	c.size = size
	c.dirty = true
	return nil
}

// zeroRange makes [off, off+n) read as zeros (punch hole, zero range).
func (c *content) zeroRange(off, n int64) error {
	end := min(off+n, c.size)
	for off < end {
		idx := off / pageSize
		in := off - idx*pageSize
		l := min(end-off, pageSize-in)
		if l == pageSize {
			if pg := c.pages[idx]; pg != nil && pg.data != nil {
				c.addMem(-pageSize)
				putPage(pg.data)
			}
			c.pages[idx] = &page{zero: true, spill: -1}
		} else {
			pg, err := c.pageFor(idx, false)
			if err != nil {
				return err
			}
			clear(pg.data[in : in+l])
		}
		off += l
	}
	c.dirty, c.wrote = true, true
	return nil
}

// release frees the staged pages and the spill file.
func (c *content) release() {
	c.addMem(-c.inMem)
	for _, pg := range c.pages {
		if pg.data != nil {
			putPage(pg.data)
			pg.data = nil
		}
	}
	c.pages = map[int64]*page{}
	if c.spill != nil {
		c.spill.Close()
		c.spill, c.spillEnd = nil, 0
	}
}

// span is one piece of the plan for a commit.
type span struct {
	kind     int // spanReuse, spanHole, spanData
	ref      chunkstore.Ref
	off, len int64
}

const (
	spanReuse = iota
	spanHole
	spanData
)

// plan says how to build the new version: committed chunks that no staged
// page touches are reused as they are, holes stay holes, and only the
// stretches around staged pages are cut into chunks again.
func (c *content) plan() []span {
	dirty := make([]int64, 0, len(c.pages))
	for idx := range c.pages {
		dirty = append(dirty, idx)
	}
	sort.Slice(dirty, func(a, b int) bool { return dirty[a] < dirty[b] })
	// touched reports the staged pages that overlap [lo, hi).
	touched := func(lo, hi int64) []int64 {
		i := sort.Search(len(dirty), func(i int) bool { return (dirty[i]+1)*pageSize > lo })
		j := i
		for j < len(dirty) && dirty[j]*pageSize < hi {
			j++
		}
		return dirty[i:j]
	}
	var out []span
	add := func(s span) {
		if s.kind != spanReuse && s.len <= 0 {
			return
		}
		if n := len(out); n > 0 && s.kind != spanReuse && out[n-1].kind == s.kind && out[n-1].off+out[n-1].len == s.off {
			out[n-1].len += s.len
			return
		}
		out = append(out, s)
	}
	// zeroStretch plans [lo, hi) of zeros with staged pages in it: the
	// pages become data (or stay holes when punched), the rest holes.
	zeroStretch := func(lo, hi int64) {
		pos := lo
		for _, idx := range touched(lo, hi) {
			plo, phi := max(lo, idx*pageSize), min(hi, (idx+1)*pageSize)
			add(span{kind: spanHole, off: pos, len: plo - pos})
			if c.pages[idx].zero {
				add(span{kind: spanHole, off: plo, len: phi - plo})
			} else {
				add(span{kind: spanData, off: plo, len: phi - plo})
			}
			pos = phi
		}
		add(span{kind: spanHole, off: pos, len: hi - pos})
	}
	var pos int64
	if c.base != nil && c.base.Refs() == nil {
		// Decoded bytes (a packed file): nothing to reuse.
		add(span{kind: spanData, off: 0, len: c.baseValid})
		pos = c.baseValid
	} else if c.base != nil {
		for _, r := range c.base.Refs() {
			if pos >= c.baseValid {
				break
			}
			end := pos + r.Len
			switch {
			case r.Hole():
				zeroStretch(pos, min(end, c.baseValid))
			case end <= c.baseValid && len(touched(pos, end)) == 0:
				add(span{kind: spanReuse, ref: r, off: pos, len: r.Len})
			default:
				add(span{kind: spanData, off: pos, len: min(end, c.baseValid) - pos})
			}
			pos = min(end, c.baseValid)
		}
	}
	zeroStretch(pos, c.size)
	return out
}

// commitTo writes the plan into b.
func (c *content) commitTo(b *chunkstore.Builder) (alloc int64, err error) {
	for _, s := range c.plan() {
		switch s.kind {
		case spanReuse:
			err = b.Reuse(s.ref)
			alloc += s.len
		case spanHole:
			b.Hole(s.len)
		case spanData:
			err = b.Write(io.NewSectionReader(readerAtFunc(c.readAt), s.off, s.len))
			alloc += s.len
		}
		if err != nil {
			return 0, err
		}
	}
	if b.Size() != c.size {
		return 0, errors.New("glydfs: commit plan does not add up to the file size")
	}
	return alloc, nil
}

type readerAtFunc func(p []byte, off int64) error

func (f readerAtFunc) ReadAt(p []byte, off int64) (int, error) {
	if err := f(p, off); err != nil {
		return 0, err
	}
	return len(p), nil
}
