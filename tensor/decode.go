package tensor

import (
	"encoding/binary"
	"runtime"
	"sync"

	"github.com/glyd/glyd/internal/workers"
)

// Decoder decodes the groups of one span payload. It is safe for
// concurrent use: groups decode independently.
type Decoder struct {
	code      *Code
	kind      Kind
	values    int
	groupLog2 int
	groups    int
	payload   []byte
	crcOff    int // group CRCs
	rawOff    int // raw plane
	streamOff int // stream area
	streamLen int
	tb        uint     // bits the table was built for
	lut       []uint64 // 2^MaxCodeLen entries, or 2^tb for one-group spans
	lutBuf    *[1 << MaxCodeLen]uint64
}

// Layout of a decoding table entry (CPU only; not part of the format):
// bits 0-5 the bits the entry's symbols take, bits 6-8 how many symbols it
// holds, bits 9-12 the bits of its first symbol alone, and from bit 16 the
// symbols: for the split kinds (BF16, F16, F32) up to five symbol bytes;
// for V16 up to three 16-bit output words.
const (
	entCount = 6
	entFirst = 9
	entLanes = 16
)

// NewDecoder checks a span payload's layout (sizes and group offsets) for
// values coded with c in groups of 2^groupLog2 and prepares to decode it.
// It reads nothing but the group offsets: the streams are checked as
// groups decode, each against its CRC.
func NewDecoder(c *Code, values, groupLog2 int, payload []byte) (*Decoder, error) {
	if groupLog2 < MinGroupLog2 || groupLog2 > MaxGroupLog2 {
		return nil, corruptf("group size 2^%d out of range", groupLog2)
	}
	if values <= 0 {
		return nil, corruptf("span of %d values", values)
	}
	ng := (values-1)>>groupLog2 + 1
	rs := c.Kind.RawSize()
	fixed := 8*int64(ng) - 4 + int64(values)*int64(rs)
	if fixed > int64(len(payload)) {
		return nil, corruptf("payload of %d bytes too short for %d values (%d needed before the streams)", len(payload), values, fixed)
	}
	d := &Decoder{code: c, kind: c.Kind, values: values, groupLog2: groupLog2, groups: ng, payload: payload,
		crcOff: 4 * (ng - 1), rawOff: 8*ng - 4, streamOff: int(fixed), streamLen: len(payload) - int(fixed)}
	prev := uint32(0)
	for g := range ng - 1 {
		e := binary.LittleEndian.Uint32(payload[4*g:])
		if e < prev {
			return nil, corruptf("group %d ends (%d) before group %d (%d)", g, e, g-1, prev)
		}
		prev = e
	}
	if int64(prev) > int64(d.streamLen) {
		return nil, corruptf("group streams end at %d, payload holds %d", prev, d.streamLen)
	}
	// A multi-symbol table takes longer to build than a span of some ten
	// thousand values takes to decode: smaller spans get one symbol per
	// entry, a table as wide as their longest code (repeated to the full
	// width when the span has groups to pair up).
	d.tb = uint(max(1, c.MaxLen()))
	d.lutBuf = lutPool.Get().(*[1 << MaxCodeLen]uint64)
	switch {
	case values >= multiSymbolMin:
		d.lut = d.lutBuf[:]
		buildLUT(d.lut, c, MaxCodeLen)
	case ng > 1:
		d.lut = d.lutBuf[:]
		buildLUT1(d.lut[:1<<d.tb], c, d.tb)
		for k := 1 << d.tb; k < len(d.lut); k *= 2 {
			copy(d.lut[k:], d.lut[:k])
		}
	default:
		d.lut = d.lutBuf[:1<<d.tb]
		buildLUT1(d.lut, c, d.tb)
	}
	return d, nil
}

// multiSymbolMin is the smallest span that gets a multi-symbol table.
const multiSymbolMin = 1 << 15

// lutPool recycles decoding tables: allocating 32 KiB per span costs more
// than decoding a small span.
var lutPool = sync.Pool{New: func() any { return new([1 << MaxCodeLen]uint64) }}

// Release gives the decoder's table back for reuse. The decoder must not be
// used afterwards.
func (d *Decoder) Release() {
	if d.lutBuf != nil {
		lutPool.Put(d.lutBuf)
		d.lutBuf, d.lut = nil, nil
	}
}

// lane is what symbol s puts in a table entry's lane, and the lane width:
// the symbol byte itself for split kinds, the output word for V16.
func (c *Code) lane(s int) (uint64, uint) {
	if c.Kind == V16 {
		return uint64(c.Dict[s]), 16
	}
	return uint64(s), 8
}

// buildLUT makes the multi-symbol decoding table: entry x (the next bits of
// the stream, first bit lowest) holds the symbols whose codes lie wholly
// within its low tb bits: up to five symbol bytes, or three V16 words. The
// table has 2^MaxCodeLen entries; for tb below that the first 2^tb are
// repeated (the bits above tb are not looked at).
//
// It is built from the tables of narrower windows: the symbols a k-bit
// window x decodes are the symbol s whose code ends x's low bits, then
// those of the (k − len(s))-bit window above it. Each entry of every width
// is one such step, without branches.
func buildLUT(lut []uint64, c *Code, tb uint) {
	width, maxSyms := uint(8), uint(5)
	if c.Kind == V16 {
		width, maxSyms = 16, 3
	}
	for s, l := range c.Lens {
		if l == soleLen {
			v, _ := c.lane(s)
			var lanes uint64
			for k := range maxSyms {
				lanes |= v << (width * k)
			}
			e := uint64(maxSyms)<<entCount | lanes<<entLanes
			for x := range lut {
				lut[x] = e
			}
			return
		}
	}
	ws := lutWork.Get().(*lutScratch)
	defer lutWork.Put(ws)
	laneMask := uint64(1)<<(width*maxSyms) - 1
	cumMask := uint32(1)<<(4*maxSyms) - 1
	// Window k's table starts at 2^k − 1; window 0 decodes nothing.
	ws.lanes[0], ws.cum[0], ws.cnt[0] = 0, 0, 0
	for k := uint(1); k <= tb; k++ {
		base := 1<<k - 1
		clear(ws.cnt[base : base+1<<k])
		clear(ws.lanes[base : base+1<<k])
		clear(ws.cum[base : base+1<<k])
		for s, l := range c.Lens {
			if l == 0 || uint(l) > k {
				continue
			}
			v, _ := c.lane(s)
			rb := 1<<(k-uint(l)) - 1 // the narrower window's table
			step := 1 << l
			code := int(c.codes[s])
			add := uint32(l) * 0x11111111
			for y := range 1 << (k - uint(l)) {
				x := base + code + y*step
				ws.lanes[x] = (v | ws.lanes[rb+y]<<width) & laneMask
				ws.cum[x] = (uint32(l) | (ws.cum[rb+y]+add)<<4) & cumMask
				ws.cnt[x] = min(uint8(maxSyms), ws.cnt[rb+y]+1)
			}
		}
	}
	base := 1<<tb - 1
	for x := range 1 << tb {
		cnt := uint(ws.cnt[base+x])
		cum := ws.cum[base+x]
		n := uint64(cum>>(4*(cnt-1))) & 15
		lut[x] = n | uint64(cnt)<<entCount | uint64(cum&15)<<entFirst | ws.lanes[base+x]<<entLanes
	}
	for k := 1 << tb; k < len(lut); k *= 2 {
		copy(lut[k:], lut[:k])
	}
}

// lutScratch holds the narrower windows' tables while buildLUT works.
type lutScratch struct {
	lanes [2 << MaxCodeLen]uint64
	cum   [2 << MaxCodeLen]uint32 // code lengths summed after each symbol, 4 bits each
	cnt   [2 << MaxCodeLen]uint8
}

var lutWork = sync.Pool{New: func() any { return new(lutScratch) }}

// buildLUT1 makes a table of 2^tb entries (len(lut)) of one symbol each:
// quick to build. (The code is complete, so every entry is written.)
func buildLUT1(lut []uint64, c *Code, tb uint) {
	size := 1 << tb
	for s, l := range c.Lens {
		v, _ := c.lane(s)
		switch {
		case l == soleLen:
			e := 1<<entCount | v<<entLanes
			for x := range lut {
				lut[x] = e
			}
			return
		case l != 0:
			e := uint64(l) | 1<<entCount | uint64(l)<<entFirst | v<<entLanes
			for x := int(c.codes[s]); x < size; x += 1 << l {
				lut[x] = e
			}
		}
	}
}

// Groups is the number of groups.
func (d *Decoder) Groups() int { return d.groups }

// Values is the number of values in the span.
func (d *Decoder) Values() int { return d.values }

// Group returns the first value of group g and how many it holds.
func (d *Decoder) Group(g int) (first, n int) {
	first = g << d.groupLog2
	return first, min(d.values-first, 1<<d.groupLog2)
}

// streamRange is group g's stream within the payload.
func (d *Decoder) streamRange(g int) (int, int) {
	s := 0
	if g > 0 {
		s = int(binary.LittleEndian.Uint32(d.payload[4*(g-1):]))
	}
	e := d.streamLen
	if g < d.groups-1 {
		e = int(binary.LittleEndian.Uint32(d.payload[4*g:]))
	}
	return d.streamOff + s, d.streamOff + e
}

// StreamBytes is the length of group g's bit stream.
func (d *Decoder) StreamBytes(g int) int {
	s, e := d.streamRange(g)
	return e - s
}

// scratchPool holds the symbol bytes of two groups.
var scratchPool = sync.Pool{New: func() any { b := make([]byte, 2<<MaxGroupLog2); return &b }}

// DecodeGroup decodes group g into dst, which must hold exactly the
// group's bytes (values × word size), and checks its CRC.
func (d *Decoder) DecodeGroup(dst []byte, g int) error {
	if g < 0 || g >= d.groups {
		return corruptf("group %d of %d", g, d.groups)
	}
	return d.decodeGroups(dst, g, false)
}

// DecodePair decodes groups g and g+1 into dst, which must hold exactly
// their bytes, interleaving the two (faster than one at a time), and checks
// their CRCs.
func (d *Decoder) DecodePair(dst []byte, g int) error {
	if g < 0 || g+1 >= d.groups {
		return corruptf("group pair %d of %d groups", g, d.groups)
	}
	return d.decodeGroups(dst, g, true)
}

// Decode decodes every group into dst (values × word size bytes), on up to
// threads goroutines (<= 0: one per CPU).
func (d *Decoder) Decode(dst []byte, threads int) error {
	ws := d.kind.WordSize()
	if len(dst) != d.values*ws {
		panic("tensor: Decode: wrong destination size")
	}
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	// Work in pairs of groups, which decode interleaved.
	gs := 1 << d.groupLog2
	return workers.Run((d.groups+1)/2, threads, func(u int) error {
		g := 2 * u
		pair := g+1 < d.groups
		first := g * gs
		last := min(d.values, first+2*gs)
		if !pair {
			last = min(d.values, first+gs)
		}
		return d.decodeGroups(dst[first*ws:last*ws], g, pair)
	})
}
