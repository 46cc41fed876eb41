package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"sort"
	"sync"

	"github.com/glyd/glyd/internal/workers"
)

// File gives random access to a glyd stream through its seek index: ReadAt
// decodes only the units that cover the requested range. It is safe for
// concurrent use.
type File struct {
	ra      io.ReaderAt
	mem     []byte // the whole stream when opened from memory
	hdr     header
	units   []UnitInfo
	size    int64
	threads int

	mu    sync.Mutex
	cache []cachedUnit // most recently used first

	base *baseFile // for streams coded against a base file
}

type cachedUnit struct {
	unit int
	data []byte
}

// unitCache is how many decoded units a File keeps: enough for sequential
// reads that straddle a unit boundary and for a few interleaved readers.
const unitCache = 4

// OpenBytes opens a stream held in memory.
func OpenBytes(b []byte, threads int) (*File, error) {
	f, err := Open(bytes.NewReader(b), int64(len(b)), threads)
	if f != nil {
		f.mem = b
	}
	return f, err
}

// Open reads the header, trailer and seek index of a stream of the given
// compressed size. threads bounds how many units one ReadAt decodes at once.
func Open(ra io.ReaderAt, size int64, threads int) (*File, error) {
	var hb [headerSize]byte
	if _, err := ra.ReadAt(hb[:], 0); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, formatErr(-1, -1, 0, "input too short for a glyd header (%d bytes)", size)
		}
		return nil, err
	}
	h, err := parseHeader(hb[:])
	if err != nil {
		return nil, err
	}
	if size < headerSize+indexHeadSize+4+trailerSize {
		return nil, formatErr(-1, -1, size, "stream truncated: no room for the seek index")
	}
	var tb [trailerSize]byte
	if _, err := ra.ReadAt(tb[:], size-trailerSize); err != nil {
		return nil, err
	}
	if [4]byte(tb[8:12]) != trailerMagic {
		return nil, formatErr(-1, -1, size-trailerSize, "stream truncated or damaged: no trailer at the end")
	}
	if Checksum(tb[:12]) != binary.LittleEndian.Uint32(tb[12:]) {
		return nil, formatErr(-1, -1, size-trailerSize, "trailer checksum mismatch")
	}
	idxOff := int64(binary.LittleEndian.Uint64(tb[:]))
	idxLen := size - trailerSize - idxOff
	if idxOff < headerSize || idxLen < indexHeadSize+4 || idxLen > 1<<31 {
		return nil, formatErr(-1, -1, size-trailerSize, "trailer points to a seek index at %d, outside the stream", idxOff)
	}
	// Check the count before reading the whole index so a damaged trailer
	// cannot ask for a huge read.
	var ih [indexHeadSize]byte
	if _, err := ra.ReadAt(ih[:], idxOff); err != nil {
		return nil, err
	}
	if n := int64(binary.LittleEndian.Uint32(ih[4:])); ih[0] != frameIndex || indexHeadSize+n*indexEntrySize+4 != idxLen {
		return nil, formatErr(-1, -1, idxOff, "seek index header does not match its size")
	}
	ib := make([]byte, idxLen)
	if _, err := ra.ReadAt(ib, idxOff); err != nil {
		return nil, err
	}
	units, total, err := parseIndex(ib, idxOff)
	if err != nil {
		return nil, err
	}
	return &File{ra: ra, hdr: h, units: units, size: total, threads: threadsOr(threads)}, nil
}

// Size is the decoded size.
func (f *File) Size() int64 { return f.size }

// Units lists the units as the seek index has them.
func (f *File) Units() []UnitInfo { return f.units }

// Tier is the tier the stream was written with.
func (f *File) Tier() Tier { return f.hdr.tier }

// UnitSize is the nominal unit size the stream was written with.
func (f *File) UnitSize() int { return 1 << f.hdr.unitLog2 }

// CompressedSize is the size of the whole stream.
func (f *File) CompressedSize() int64 {
	if len(f.units) == 0 {
		return headerSize + indexHeadSize + 4 + trailerSize
	}
	last := f.units[len(f.units)-1]
	return last.CompOffset + int64(last.CompLen) + indexHeadSize + int64(len(f.units))*indexEntrySize + 4 + trailerSize
}

// frame returns the unit's frame bytes, header included.
func (f *File) frame(i int) ([]byte, error) {
	u := f.units[i]
	if f.mem != nil {
		return f.mem[u.CompOffset : u.CompOffset+int64(u.CompLen)], nil
	}
	b := make([]byte, u.CompLen)
	if _, err := f.ra.ReadAt(b, u.CompOffset); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, formatErr(i, -1, u.CompOffset, "stream truncated inside the unit")
		}
		return nil, err
	}
	return b, nil
}

// decodeUnitInto decodes unit i into dst (len == the unit's RawLen).
func (f *File) decodeUnitInto(dst []byte, i int) error {
	fr, err := f.frame(i)
	if err != nil {
		return err
	}
	u := f.units[i]
	if fr[0] != frameUnit {
		return formatErr(i, -1, u.CompOffset, "expected a unit frame, found kind %#x", fr[0])
	}
	uh, err := parseUnitHeader(fr, i, u.CompOffset)
	if err != nil {
		return err
	}
	if uh.rawLen != u.RawLen || uh.compLen != u.CompLen-unitHeaderSize {
		return formatErr(i, -1, u.CompOffset, "unit header disagrees with the seek index")
	}
	return decodeFrame(dst, fr, uh, i, u.CompOffset, f.base)
}

// NeedsBase reports whether the stream was coded against a base file
// (glyd --base), which SetBase must supply before reading.
func (f *File) NeedsBase() bool { return f.hdr.needsBase }

// SetBase supplies the base file. It is checked against the CRC-32C the
// stream recorded, so a wrong base is refused rather than decoded.
func (f *File) SetBase(base io.ReaderAt, size int64) error {
	b := &baseFile{ra: base, size: size}
	if err := b.check(f.hdr); err != nil {
		return err
	}
	f.base = b
	return nil
}

// unit returns unit i decoded, from the cache when it is there.
func (f *File) unit(i int) ([]byte, error) {
	f.mu.Lock()
	for k, c := range f.cache {
		if c.unit == i {
			copy(f.cache[1:k+1], f.cache[:k])
			f.cache[0] = c
			f.mu.Unlock()
			return c.data, nil
		}
	}
	f.mu.Unlock()
	data := make([]byte, f.units[i].RawLen)
	if err := f.decodeUnitInto(data, i); err != nil {
		return nil, err
	}
	f.mu.Lock()
	if len(f.cache) < unitCache {
		f.cache = append(f.cache, cachedUnit{})
	}
	copy(f.cache[1:], f.cache[:len(f.cache)-1])
	f.cache[0] = cachedUnit{i, data}
	f.mu.Unlock()
	return data, nil
}

// findUnit returns the unit holding decoded offset off.
func (f *File) findUnit(off int64) int {
	return sort.Search(len(f.units), func(i int) bool {
		u := f.units[i]
		return u.RawOffset+int64(u.RawLen) > off
	})
}

// ReadAt reads decoded bytes at off. Units wholly covered by p decode
// straight into p, several at once; partly covered ones go through the cache.
func (f *File) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("glyd: negative offset")
	}
	if off >= f.size {
		if len(p) == 0 {
			return 0, nil
		}
		return 0, io.EOF
	}
	n := len(p)
	if int64(n) > f.size-off {
		n = int(f.size - off)
	}
	end := off + int64(n)
	first := f.findUnit(off)
	last := first
	for last < len(f.units) && f.units[last].RawOffset < end {
		last++
	}
	err := workers.Run(last-first, f.threads, func(k int) error {
		i := first + k
		u := f.units[i]
		lo, hi := max(off, u.RawOffset), min(end, u.RawOffset+int64(u.RawLen))
		dst := p[lo-off : hi-off]
		if lo == u.RawOffset && hi == u.RawOffset+int64(u.RawLen) {
			return f.decodeUnitInto(dst, i)
		}
		data, err := f.unit(i)
		if err == nil {
			copy(dst, data[lo-u.RawOffset:])
		}
		return err
	})
	if err != nil {
		return 0, err
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// Verify decodes every unit and checks every checksum without keeping the
// data.
func (f *File) Verify() error {
	return workers.Run(len(f.units), f.threads, func(i int) error {
		return f.decodeUnitInto(make([]byte, f.units[i].RawLen), i)
	})
}

// BlockInfo describes one block, for diagnostics.
type BlockInfo struct {
	Coding  Coding
	RawLen  int
	CompLen int
}

// Blocks lists the blocks of unit i as their headers describe them.
func (f *File) Blocks(i int) ([]BlockInfo, error) {
	fr, err := f.frame(i)
	if err != nil {
		return nil, err
	}
	uh, err := parseUnitHeader(fr, i, f.units[i].CompOffset)
	if err != nil {
		return nil, err
	}
	fr = fr[unitHeaderSize:]
	var out []BlockInfo
	for b := 0; b < uh.blocks; b++ {
		if len(fr) < blockHeaderSize {
			return out, formatErr(i, b, -1, "truncated block header")
		}
		h := parseBlockHeader(fr)
		if h.compLen > len(fr)-blockHeaderSize {
			return out, formatErr(i, b, -1, "block payload runs past the unit")
		}
		out = append(out, BlockInfo{h.coding, h.rawLen, h.compLen})
		fr = fr[blockHeaderSize+h.compLen:]
	}
	return out, nil
}
