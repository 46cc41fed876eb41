package chunkstore

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"time"
)

// ID names a chunk: the BLAKE3-256 hash of its plain bytes.
type ID [32]byte

func (id ID) String() string { return hex.EncodeToString(id[:]) }

// Short is the first 12 hex digits, for messages.
func (id ID) Short() string { return hex.EncodeToString(id[:6]) }

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is wrapped by errors about damaged stored records or chunks.
var ErrCorrupt = errors.New("chunkstore: damaged")

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// Chunk kinds.
const (
	kindFull   = 1 // coded alone
	kindDelta  = 2 // coded against a base chunk
	kindDelta2 = 3 // coded against two base chunks, one after the other (format 2)
)

// chunkRecord is the metadata of one stored chunk (key "k/"+id).
type chunkRecord struct {
	kind byte
	// depth is how many decodes reading the chunk may need beyond its own:
	// 0 for a full chunk, 1 + its base's for a delta, 2 + both bases' for a
	// delta against two (counted as if the two shared nothing), so it bounds
	// the decodes a read costs, never more than MaxDepth.
	depth     int
	rawLen    int
	storedLen int // bytes of its frame
	aloneLen  int // bytes it would take coded alone (== storedLen when full)
	base      ID  // deltas only
	base2     ID  // kindDelta2 only: the second base, after base in the history
}

// bases lists the chunks a delta was coded against, in history order.
func (r chunkRecord) bases() []ID {
	switch r.kind {
	case kindDelta:
		return []ID{r.base}
	case kindDelta2:
		return []ID{r.base, r.base2}
	}
	return nil
}

func (r chunkRecord) encode() []byte {
	b := []byte{1, r.kind, byte(r.depth)} // version, kind, depth
	b = binary.AppendUvarint(b, uint64(r.rawLen))
	b = binary.AppendUvarint(b, uint64(r.storedLen))
	b = binary.AppendUvarint(b, uint64(r.aloneLen))
	for _, id := range r.bases() {
		b = append(b, id[:]...)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func decodeChunkRecord(b []byte) (chunkRecord, error) {
	var r chunkRecord
	if len(b) < 7 || crc32.Checksum(b[:len(b)-4], castagnoli) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		return r, corrupt("chunk record checksum mismatch")
	}
	b = b[:len(b)-4]
	if b[0] != 1 {
		return r, corrupt("chunk record version %d", b[0])
	}
	r.kind, r.depth = b[1], int(b[2])
	p := b[3:]
	var vals [3]uint64
	for i := range vals {
		v, n := binary.Uvarint(p)
		if n <= 0 || v > 1<<32 {
			return r, corrupt("chunk record field %d", i)
		}
		vals[i], p = v, p[n:]
	}
	r.rawLen, r.storedLen, r.aloneLen = int(vals[0]), int(vals[1]), int(vals[2])
	switch r.kind {
	case kindFull:
		if len(p) != 0 || r.depth != 0 {
			return r, corrupt("full chunk record has extra fields")
		}
	case kindDelta:
		if len(p) != len(r.base) || r.depth < 1 || r.depth > MaxDepth {
			return r, corrupt("delta chunk record malformed")
		}
		copy(r.base[:], p)
	case kindDelta2:
		if len(p) != 2*len(r.base) || r.depth < 2 || r.depth > MaxDepth {
			return r, corrupt("two-base delta chunk record malformed")
		}
		copy(r.base[:], p)
		copy(r.base2[:], p[len(r.base):])
	default:
		return r, corrupt("chunk record kind %d", r.kind)
	}
	return r, nil
}

// chunkRef is one entry of a manifest: which chunk, and how long it is.
type chunkRef struct {
	id     ID
	rawLen int
}

// manifest lists an object's chunks in order (key "o/"+name).
type manifest struct {
	size     int64
	modified time.Time
	chunks   []chunkRef
	offsets  []int64 // derived: start offset of each chunk
}

func (m *manifest) encode() []byte {
	// Version 2 allows holes (zero ids); a manifest without holes stays
	// version 1, readable by every glyd that reads stores.
	version := byte(1)
	for _, c := range m.chunks {
		if c.id == (ID{}) {
			version = 2
			break
		}
	}
	b := []byte{'G', 'O', 'B', version}
	b = binary.AppendUvarint(b, uint64(m.size))
	b = binary.AppendVarint(b, m.modified.UnixNano())
	b = binary.AppendUvarint(b, uint64(len(m.chunks)))
	for _, c := range m.chunks {
		b = append(b, c.id[:]...)
		b = binary.AppendUvarint(b, uint64(c.rawLen))
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// maxChunkLen bounds a chunk length read from a manifest.
const maxChunkLen = 16 << 20

func decodeManifest(b []byte) (*manifest, error) {
	if len(b) < 8 || string(b[:3]) != "GOB" {
		return nil, corrupt("object manifest: bad magic")
	}
	if crc32.Checksum(b[:len(b)-4], castagnoli) != binary.LittleEndian.Uint32(b[len(b)-4:]) {
		return nil, corrupt("object manifest checksum mismatch")
	}
	version := b[3]
	if version != 1 && version != 2 {
		return nil, corrupt("object manifest version %d", b[3])
	}
	p := b[4 : len(b)-4]
	size, n := binary.Uvarint(p)
	if n <= 0 {
		return nil, corrupt("object manifest size")
	}
	p = p[n:]
	mod, n := binary.Varint(p)
	if n <= 0 {
		return nil, corrupt("object manifest time")
	}
	p = p[n:]
	count, n := binary.Uvarint(p)
	if n <= 0 || count > uint64(len(p))/33 {
		return nil, corrupt("object manifest chunk count")
	}
	p = p[n:]
	m := &manifest{size: int64(size), modified: time.Unix(0, mod), chunks: make([]chunkRef, count), offsets: make([]int64, count)}
	var off int64
	for i := range m.chunks {
		if len(p) < 33 {
			return nil, corrupt("object manifest truncated")
		}
		copy(m.chunks[i].id[:], p)
		l, n := binary.Uvarint(p[32:])
		limit := uint64(maxChunkLen)
		if version >= 2 && m.chunks[i].id == (ID{}) {
			limit = MaxHole
		}
		if n <= 0 || l == 0 || l > limit {
			return nil, corrupt("object manifest chunk %d length", i)
		}
		m.chunks[i].rawLen = int(l)
		m.offsets[i] = off
		off += int64(l)
		p = p[32+n:]
	}
	if len(p) != 0 || off != m.size {
		return nil, corrupt("object manifest: chunks add up to %d bytes, object has %d", off, m.size)
	}
	return m, nil
}

func (m *manifest) index() {
	m.offsets = make([]int64, len(m.chunks))
	var off int64
	for i, c := range m.chunks {
		m.offsets[i] = off
		off += int64(c.rawLen)
	}
}
