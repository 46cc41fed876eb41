package tensor

import (
	"encoding/binary"
	"math/bits"
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
// byte 0 the bits the entry's symbols take (0-12; bits 6 and 7 stay zero,
// so the byte is the length as it is), byte 1 how many symbols it holds
// (split kinds: the count alone; V16: the count in bits 8-10 and the first
// symbol's bits in bits 11-14), and from bit 16 the symbols: for the split
// kinds (BF16, F16, F32, B8) up to five symbol bytes and, in bits 56-59,
// the bits of the first symbol alone; for V16 up to three 16-bit output
// words. A byte each for the length and the count lets the assembly loop
// read them without masks.
const (
	entCount = 8
	entLanes = 16
	// entFirst8 and entFirst16: where the first symbol's bits sit.
	entFirst8  = 56
	entFirst16 = 11
)

// entFirst is where the first symbol's bits sit in kind k's entries.
func entFirst(k Kind) uint {
	if k == V16 {
		return entFirst16
	}
	return entFirst8
}

// makeEntry puts an entry together: n bits for cnt symbols, the first of
// them first bits long, the lanes.
func makeEntry(k Kind, n, cnt, first uint, lanes uint64) uint64 {
	return uint64(n) | uint64(cnt)<<entCount | uint64(first)<<entFirst(k) | lanes<<entLanes
}

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
	// A multi-symbol table takes longer to build than a small span takes
	// to decode. The amd64 lanes (split kinds and B8 in groups of 4096)
	// take a table of any width: spans of at
	// least wideMin values get one as wide as the longest code the format
	// allows (more symbols a lookup), spans of at least multiSymbolPer
	// entries' worth of values one as wide as their longest code. The Go
	// pair loops want the full width: spans of at least multiSymbolMin
	// values get a multi-symbol table of it. The rest get one symbol per
	// entry, a table as wide as their longest code (repeated to the full
	// width for the Go pair loops).
	d.tb = uint(max(1, c.MaxLen()))
	d.lutBuf = lutPool.Get().(*[1 << MaxCodeLen]uint64)
	lanes := d.lanesTake()
	switch {
	case lanes && values >= wideMin, !lanes && values >= multiSymbolMin:
		d.lut = d.lutBuf[:]
		buildLUT(d.lut, c, MaxCodeLen)
	case lanes && values >= multiSymbolPer<<d.tb:
		d.lut = d.lutBuf[:1<<d.tb]
		buildLUT(d.lut, c, d.tb)
	case ng > 1 && !lanes:
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

// Table choices, measured on the corpus weights: wideMin is the smallest
// span whose lanes get a full-width multi-symbol table (a wider window
// saves about a twentieth of the lookups of trained exponents, worth
// building 4096 entries instead of 1024 from some 250,000 values on);
// multiSymbolPer the values per table entry that pay for a multi-symbol
// table at all (an entry costs about what decoding eight values one
// symbol a lookup instead of several does); multiSymbolMin the smallest
// span the Go loops give one.
const (
	wideMin        = 1 << 18
	multiSymbolPer = 8
	multiSymbolMin = 1 << 15
)

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
// Entries are made in ascending order, each from one before it: window x
// decodes the symbol s whose code ends x's low bits, then what window
// y = x >> len(s) decodes (y < x, already made) as far as it fits in the
// tb − len(s) bits that are x's: a prefix code decodes the same symbols
// from the same bits, and y's entry carries its symbols' cumulative
// lengths to cut it where x's bits end. One step an entry, no branches.
func buildLUT(lut []uint64, c *Code, tb uint) {
	k := c.Kind
	width, maxSyms := uint(8), uint(5)
	if k == V16 {
		width, maxSyms = 16, 3
	}
	for s, l := range c.Lens {
		if l == soleLen {
			v, _ := c.lane(s)
			var lanes uint64
			for j := range maxSyms {
				lanes |= v << (width * j)
			}
			e := makeEntry(k, 0, maxSyms, 0, lanes)
			for x := range lut {
				lut[x] = e
			}
			return
		}
	}
	ws := lutWork.Get().(*lutScratch)
	defer lutWork.Put(ws)
	size := 1 << tb
	one, cum := ws.one[:size], ws.cum[:size]
	for s, l := range c.Lens {
		if l != 0 {
			v, _ := c.lane(s)
			e := uint32(v)<<8 | uint32(l)
			for x := int(c.codes[s]); x < size; x += 1 << l {
				one[x] = e
			}
		}
	}
	// cum[x]: five 5-bit fields, the bits taken after each of entry x's
	// symbols, 16 past its count (rep5, hi5).
	var fieldMask, reps [6]uint32
	var laneMask [6]uint64
	for j := range 6 {
		fieldMask[j] = 1<<(5*j) - 1
		reps[j] = rep5 & fieldMask[j]
		laneMask[j] = 1<<(width*uint(min(j, 4))) - 1
	}
	// Entry 0: the all-zero code, repeated as often as it fits.
	l0, v0 := uint(one[0]&0xff), uint64(one[0]>>8)
	n0 := min(maxSyms, tb/l0)
	var lanes0 uint64
	var cum0 uint32
	for j := range n0 {
		lanes0 |= v0 << (width * j)
		cum0 |= uint32(l0*(j+1)) << (5 * j)
	}
	lut[0] = makeEntry(k, n0*l0, n0, l0, lanes0)
	cum[0] = cum0 | hi5&^fieldMask[n0]
	if k == V16 {
		for x := 1; x < size; x++ {
			e1 := one[x]
			l, v := uint(e1&0xff), uint64(e1>>8)
			y := x >> l
			cy := cum[y]
			over := bits.OnesCount32((cy + uint32(15-(tb-l))*rep5) & hi5)
			kk := min(5-uint(over), maxSyms-1)
			ly := uint(cy<<5>>(5*kk&31)) & 31
			lanes := v | (lut[y]>>entLanes)&laneMask[kk]<<width
			lut[x] = makeEntry(k, l+ly, kk+1, l, lanes)
			cum[x] = (cy<<5)&fieldMask[kk+1] + uint32(l)*reps[kk+1] | hi5&^fieldMask[kk+1]
		}
	} else {
		buildLUT8(lut[:size:size], one, cum, tb)
	}
	for j := size; j < len(lut); j *= 2 {
		copy(lut[j:], lut[:j])
	}
}

// buildLUT8 is buildLUT's loop for byte lanes (split kinds and B8): the
// lane width and count fixed, and what depends on how many of y's symbols
// an entry keeps read from a table, so the loop is loads, adds and masks.
func buildLUT8(lut []uint64, one, cum []uint32, tb uint) {
	// keep[k]: what an entry that keeps k of y's symbols takes from it.
	type keepT struct {
		lanes uint64 // mask of y's lanes kept
		entry uint64 // the count (k+1), in place
		field uint32 // mask of the cumulative-length fields kept (k+1)
		rep   uint32 // one in each of them
		rest  uint32 // 16 in the fields past them
		shift uint32 // where y's k-th field ends up after a 5-bit shift
	}
	var keep [8]keepT
	for k := range 5 {
		fm := uint32(1)<<(5*(k+1)) - 1
		keep[k] = keepT{lanes: 1<<(8*k) - 1, entry: uint64(k+1) << entCount, field: fm,
			rep: rep5 & fm, rest: hi5 &^ fm, shift: uint32(5 * k)}
	}
	// over[l]: added to y's fields, sets bit 4 of those past tb − l bits.
	var over [16]uint32
	for l := range uint(16) {
		if l <= tb {
			over[l] = uint32(15-(tb-l)) * rep5
		}
	}
	// kept[n]: how many of y's symbols fit, n of its fields being past the
	// bits left (at most four: the entry holds five).
	kept := [8]uint8{4, 4, 3, 2, 1, 0, 0, 0}
	n := len(lut)
	one, cum = one[:n], cum[:n] // (the loop's indexes need no checks)
	for x := 1; x < n; x++ {
		e1 := one[x]
		l := e1 & 15
		y := x >> l
		cy := cum[y]
		t := &keep[kept[bits.OnesCount32((cy+over[l])&hi5)&7]]
		c5 := cy << 5
		ly := c5 >> (t.shift & 31) & 31
		lut[x] = uint64(l+ly) | t.entry | uint64(l)<<entFirst8 | (uint64(e1>>8)|(lut[y]>>entLanes)&t.lanes<<8)<<entLanes
		cum[x] = c5&t.field + l*t.rep | t.rest
	}
}

// The fields of buildLUT's cumulative lengths: five of 5 bits, the bits
// taken after each of an entry's symbols, 16 past its count. A field f is
// within r bits when f + 15 − r does not reach the field's bit 4 (hi5).
const (
	rep5 = 1 | 1<<5 | 1<<10 | 1<<15 | 1<<20
	hi5  = 16 * rep5
)

// lutScratch holds buildLUT's one-symbol table and cumulative lengths.
type lutScratch struct {
	one [1 << MaxCodeLen]uint32 // lane value<<8 | code length
	cum [1 << MaxCodeLen]uint32
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
			e := makeEntry(c.Kind, 0, 1, 0, v)
			for x := range lut {
				lut[x] = e
			}
			return
		case l != 0:
			e := makeEntry(c.Kind, uint(l), 1, uint(l), v)
			for x := int(c.codes[s]); x < size; x += 1 << l {
				lut[x] = e
			}
		}
	}
}

// lanesTake reports whether this span's groups are of the kind and size
// the amd64 lanes decode (with tables of any width); else the Go loops do.
func (d *Decoder) lanesTake() bool {
	return useAsm && d.groupLog2 == 12 && d.kind != V16
}

// Kind is the kind of the span's values.
func (d *Decoder) Kind() Kind { return d.kind }

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

// laneRegion is the bytes of the symbol scratch each lane of the amd64
// loop writes to; a fifth region takes the writes of lanes that have no
// group of their own.
const laneRegion = 1 << 12

// scratchPool holds the symbol bytes of four groups (or of the lanes).
var scratchPool = sync.Pool{New: func() any { b := make([]byte, max(4<<MaxGroupLog2, 5*laneRegion)); return &b }}

// A GroupJob is one group for DecodeJobs: group G of D's span, decoded
// into Dst (exactly the group's bytes: values × word size).
type GroupJob struct {
	D   *Decoder
	G   int
	Dst []byte
}

// DecodeJobs decodes each job's group into its Dst and checks its CRC.
// Groups decode interleaved, four at a time, whichever spans they belong
// to (faster than one at a time: small spans share the loop). On an error
// it returns the index of the job that failed; else -1.
func DecodeJobs(jobs []GroupJob) (int, error) { return decodeJobs(jobs) }

// DecodeGroup decodes group g into dst, which must hold exactly the
// group's bytes (values × word size), and checks its CRC.
func (d *Decoder) DecodeGroup(dst []byte, g int) error {
	_, err := decodeJobs([]GroupJob{{d, g, dst}})
	return err
}

// groupJobs appends the jobs that decode groups [g, g+count) into dst, which
// holds their bytes back to back.
func (d *Decoder) groupJobs(jobs []GroupJob, dst []byte, g, count int) []GroupJob {
	ws := d.kind.WordSize()
	at := 0
	for k := range count {
		_, n := d.Group(g + k)
		jobs = append(jobs, GroupJob{d, g + k, dst[at : at+n*ws]})
		at += n * ws
	}
	return jobs
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
	// Tasks of 16 groups, which decode four at a time interleaved.
	const per = 16
	gs := 1 << d.groupLog2
	return workers.Run((d.groups+per-1)/per, threads, func(u int) error {
		g := per * u
		count := min(per, d.groups-g)
		first := g * gs
		last := min(d.values, first+count*gs)
		var buf [per]GroupJob
		_, err := decodeJobs(d.groupJobs(buf[:0], dst[first*ws:last*ws], g, count))
		return err
	})
}
