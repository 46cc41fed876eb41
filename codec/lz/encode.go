package lz

import (
	"encoding/binary"
	"errors"
	"math/bits"
	"unsafe"

	"github.com/klauspost/compress/huff0"
)

// Level selects the match finder.
type Level int

const (
	// Fast is a greedy single-probe hash parser: the default tier, built to
	// compress at several hundred MB/s on one core.
	Fast Level = iota
	// Lazy is a hash-chain parser with one step of lazy evaluation.
	Lazy
	// Deep walks long chains with two steps of lazy evaluation: the archive tier.
	Deep
)

// Encoder codes blocks of one unit at a time. Blocks of the same unit share
// history: a match may reach back into earlier blocks of the unit, never into
// another unit. An Encoder is not safe for concurrent use; reuse it across
// units to avoid allocations.
type Encoder struct {
	level   Level
	entropy bool
	layout  Layout
	window  int

	head    []int32 // hash -> position+1 (0 = empty)
	chain   []int32 // position -> previous position+1 with the same hash (chain levels)
	bt      []int32 // the Deep level's binary trees: two children per position (optimal.go)
	hlog    uint    // table size for the largest units
	ulog    uint    // table size for the current unit (StartUnit)
	depth   int
	stride  int // SetStrides: primed history indexed every stride bytes
	mstride int // SetStrides: long matches indexed every mstride bytes

	st [numStreams][]byte

	gaveUp bool // the last block looked incompressible: store it raw

	// One Huffman scratch per stream, so a block can reuse the table the
	// same stream carried in an earlier block of the unit.
	huf [numStreams]*huff0.Scratch
	out []byte

	opt *optState // the Deep level's parse scratch
}

// NewEncoder returns an encoder for the given level. With entropy set, each
// stream is Huffman coded where that makes it smaller.
func NewEncoder(level Level, entropy bool) *Encoder {
	e := &Encoder{level: level, entropy: entropy, window: MaxOffset}
	switch level {
	case Fast:
		e.hlog = fastHlog
		e.layout, e.window = Narrow, MaxNarrowOffset
	case Lazy:
		e.hlog, e.depth = 17, 24
	default:
		e.hlog, e.depth = 20, 128
	}
	e.head = make([]int32, 1<<e.hlog)
	for i := range e.huf {
		e.huf[i] = &huff0.Scratch{WantLogLess: 5}
	}
	return e
}

// SetStrides makes a Lazy encoder index its primed history only every
// history bytes, and the inside of a long match only every inMatch bytes
// (1, the default, indexes every position). For deltas against
// near-identical bases, where indexing is most of the coding time: a match
// that starts between indexed positions of the base is found a few bytes
// late and extended backwards, and matches into the target's own long
// matches are rare. On the corpus at the default tier, strides of 2 and 8
// put 13-16% faster for 0.05% more bytes (the release series: 25-40%
// faster, 0.26% more); 4 and 8 gained a few percent more speed for four
// times the bytes (docs/store.md).
func (e *Encoder) SetStrides(history, inMatch int) {
	e.stride, e.mstride = max(1, history), max(1, inMatch)
}

// Layout is the offset layout of the blocks this encoder writes.
func (e *Encoder) Layout() Layout { return e.layout }

// StartUnit forgets all history; the next block starts a new unit.
func (e *Encoder) StartUnit(unitLen int) {
	// A small unit (a chunk, a delta) gets a table sized to it: clearing the
	// whole table per 16 KiB chunk cost more than coding the chunk.
	e.ulog = max(10, min(e.hlog, uint(bits.Len(uint(unitLen)))+1))
	clear(e.head[:1<<e.ulog])
	// The decoder starts every unit with no tables; forget ours.
	for _, h := range e.huf {
		h.Reuse = huff0.ReusePolicyNone
	}
	switch e.level {
	case Lazy:
		if cap(e.chain) < unitLen {
			e.chain = make([]int32, unitLen)
		}
		e.chain = e.chain[:unitLen]
	case Deep:
		if cap(e.bt) < 2*unitLen {
			e.bt = make([]int32, 2*unitLen)
		}
		e.bt = e.bt[:2*unitLen]
	}
}

// Prime makes src[:end] history without coding it: the blocks that follow
// (EncodeBlock from end on) may copy from it. This is how a chunk is coded
// as a delta against a similar base: src is base followed by the chunk, and
// the decoder is handed the base the same way (DecodeBlock at pos len(base)).
func (e *Encoder) Prime(src []byte, end int) {
	limit := min(end, len(src)-8)
	if e.level == Lazy && e.stride > 1 {
		for p := 0; p < limit; p += e.stride {
			e.insert(src, p)
		}
		return
	}
	for p := 0; p < limit; p++ {
		switch e.level {
		case Fast:
			e.head[hash6(load64(src, p), e.ulog)] = int32(p + 1)
		case Deep:
			e.btFind(src, p, end, nil, false)
		default:
			e.insert(src, p)
		}
	}
}

// EncodeBlock appends the coding of src[start:end] to dst. src[:start] is the
// unit's history (already coded by earlier EncodeBlock calls since StartUnit)
// and end-start must not exceed MaxBlock.
func (e *Encoder) EncodeBlock(dst, src []byte, start, end int) []byte {
	if end-start > MaxBlock {
		panic("lz: block too large")
	}
	// The parsers append to a copy of the stream headers on the stack: the
	// appends then need no write barriers, which showed in profiles.
	w := seqWriter{narrow: e.layout == Narrow}
	for i := range e.st {
		w.st[i] = e.st[i][:0]
	}
	switch e.level {
	case Fast:
		e.gaveUp = !e.parseFast(&w, src, start, end)
	case Deep:
		e.gaveUp = !e.parseOptimal(&w, src, start, end)
	default:
		e.gaveUp = !e.parseLazy(&w, src, start, end)
	}
	e.st = w.st
	if e.gaveUp {
		return dst
	}
	return e.serialize(dst)
}

// GaveUp reports that the last EncodeBlock found the block incompressible
// early and wrote nothing: the caller stores it raw.
func (e *Encoder) GaveUp() bool { return e.gaveUp }

// probeLen is where a parser checks whether a block is worth finishing: if
// by then nearly all of it is literals, the rest is very likely the same
// (weights, compressed or encrypted data), and parsing it would cost the
// time of a whole block to save a few bytes. Without an entropy stage the
// block is then stored raw; with one, the rest of it becomes literals.
const probeLen = 32 << 10

func hopeless(w *seqWriter, start, anchor, s int) bool {
	lits := len(w.st[sLiterals]) + s - anchor
	return lits*32 > (s-start)*31
}

func load32(b []byte, i int) uint32 { return binary.LittleEndian.Uint32(b[i:]) }
func load64(b []byte, i int) uint64 { return binary.LittleEndian.Uint64(b[i:]) }

func hash4(v uint32, hlog uint) uint32 { return (v * 2654435761) >> (32 - hlog) }

// matchLen returns how many bytes a[i:] and a[j:] share, j < i, not reaching
// past end.
func matchLen(a []byte, i, j, end int) int {
	n := 0
	for i+n+8 <= end {
		x := load64(a, i+n) ^ load64(a, j+n)
		if x != 0 {
			return n + bits.TrailingZeros64(x)>>3
		}
		n += 8
	}
	for i+n < end && a[i+n] == a[j+n] {
		n++
	}
	return n
}

// seqWriter collects one block's streams as the parser emits sequences.
type seqWriter struct {
	st     [numStreams][]byte
	rep    int
	narrow bool
}

// emit records one sequence: the literals, then a match of ml bytes at distance off.
func (w *seqWriter) emit(lits []byte, ml, off int) {
	ll := len(lits)
	m := ml - MinMatch
	w.st[sTokens] = append(w.st[sTokens], byte(min(ll, 15))<<4|byte(min(m, 15)))
	if ll >= 15 {
		w.st[sExt] = binary.AppendUvarint(w.st[sExt], uint64(ll-15))
	}
	if m >= 15 {
		w.st[sExt] = binary.AppendUvarint(w.st[sExt], uint64(m-15))
	}
	w.st[sLiterals] = append(w.st[sLiterals], lits...)
	code := off
	if off == w.rep {
		code = 0
	} else {
		w.rep = off
	}
	w.st[sOff0] = append(w.st[sOff0], byte(code))
	switch {
	case w.narrow:
		w.st[sOff1] = append(w.st[sOff1], byte(code>>8))
	case code >= 1<<15:
		w.st[sOff1] = append(w.st[sOff1], byte(code>>8)&0x7f|0x80)
		w.st[sOff2] = append(w.st[sOff2], byte(code>>15))
	default:
		w.st[sOff1] = append(w.st[sOff1], byte(code>>8))
	}
}

// fastMin is the shortest new-offset match the fast parser takes. A
// sequence costs at least three bytes (token and offset) and, more to the
// point of this tier, one trip through the decode loop: short matches buy
// little ratio and cost decode speed, so the fast tier looks for six bytes.
const fastMin = 6

// fastHlog is the fast parser's hash table size (log2 of its entries).
const fastHlog = 16

func hash6(v uint64, hlog uint) uint32 {
	return uint32(((v << 16) * 0xcf1bbcdcb7a56463) >> (64 - hlog))
}

// parseFast is a greedy parser with one hash probe per position and an
// accelerating skip through data that does not match (as LZ4's fast mode).
func (e *Encoder) parseFast(w *seqWriter, src []byte, start, end int) bool {
	hlog := e.ulog
	// The table as an array and the probes through unsafe loads: the
	// bounds checks were a fifth of the loop. A hash has at most fastHlog
	// bits; every load starts below limit (8 bytes before the block's
	// end) or at an earlier position (a candidate).
	head := (*[1 << fastHlog]int32)(e.head)
	sp := unsafe.Pointer(unsafe.SliceData(src))
	s, anchor := start, start
	limit := end - 8 // every probe can load 8 bytes within the block
	// No repeat-offset probe here: in raw streams a repeat costs the same two
	// bytes as any near offset, so it would only slow the parse.
	probe := start + probeLen
	window := e.window
	// Two positions per step, s and s+1, from one load: their table
	// entries are independent loads, so the two probes overlap.
	for s < limit-1 {
		if s >= probe {
			if hopeless(w, start, anchor, s) {
				return false
			}
			probe = end
		}
		cur := *(*uint64)(unsafe.Add(sp, s))
		h0 := hash6(cur, hlog) & (1<<fastHlog - 1)
		h1 := hash6(cur>>8, hlog) & (1<<fastHlog - 1)
		c0, c1 := int(head[h0]), int(head[h1]) // candidate + 1; 0: none
		head[h0], head[h1] = int32(s+1), int32(s+2)
		var cand int
		switch {
		case c0 != 0 && s-c0 < window && (*(*uint64)(unsafe.Add(sp, c0-1))^cur)<<16 == 0:
			cand = c0 - 1
		case c1 != 0 && s+1-c1 < window && (*(*uint64)(unsafe.Add(sp, c1-1))^cur>>8)<<16 == 0:
			s, cand = s+1, c1-1
		default:
			s += 2 + (s-anchor)>>6
			continue
		}
		for s > anchor && cand > 0 && src[s-1] == src[cand-1] {
			s--
			cand--
		}
		ml := MinMatch + matchLen(src, s+MinMatch, cand+MinMatch, end)
		w.emit(src[anchor:s], ml, s-cand)
		s += ml
		anchor = s
		if s < limit {
			head[hash6(load64(src, s-2), hlog)&(1<<fastHlog-1)] = int32(s - 2 + 1)
		}
	}
	w.st[sLiterals] = append(w.st[sLiterals], src[anchor:end]...)
	return true
}

type match struct{ len, off int }

// gain estimates the bits a match saves: 4 per byte covered less the cost of
// its offset, so a slightly longer match far away can lose to a near one.
func gain(m match, rep int) int {
	if m.len == 0 {
		return 0
	}
	if m.off == rep {
		return m.len*4 + 1
	}
	return m.len*4 - bits.Len(uint(m.off))
}

func (e *Encoder) insert(src []byte, p int) {
	h := hash4(load32(src, p), e.ulog)
	e.chain[p] = e.head[h]
	e.head[h] = int32(p + 1)
}

// find returns the best match at p (already inserted positions only).
func (e *Encoder) find(src []byte, p, end, rep int) match {
	best := match{}
	if rep > 0 && p-rep >= 0 && rep <= e.window {
		if l := matchLen(src, p, p-rep, end); l >= MinMatch {
			best = match{l, rep}
		}
	}
	cur := load32(src, p)
	c := int(e.head[hash4(cur, e.ulog)]) - 1
	for d := e.depth; c >= 0 && d > 0; d-- {
		off := p - c
		if off > e.window {
			break
		}
		if load32(src, c) == cur && (best.len == 0 || p+best.len >= end || src[c+best.len] == src[p+best.len]) {
			l := matchLen(src, p, c, end)
			m := match{l, off}
			if l >= MinMatch && gain(m, rep) > gain(best, rep) {
				best = m
				if p+l >= end {
					break
				}
			}
		}
		c = int(e.chain[c]) - 1
	}
	// A short match far away costs more than the literals it replaces.
	if best.len == MinMatch && best.off != rep && best.off > 1<<16 {
		return match{}
	}
	return best
}

// parseLazy is a hash-chain parser with lazy evaluation: before taking a
// match it looks one (Lazy) or two (Deep) positions ahead for a better one.
func (e *Encoder) parseLazy(w *seqWriter, src []byte, start, end int) bool {
	lazySteps := 1
	if e.level == Deep {
		lazySteps = 2
	}
	limit := end - 8
	s, anchor := start, start
	next := start // positions below next are in the chains
	ins := func(upto int) {
		for ; next < upto && next < limit; next++ {
			e.insert(src, next)
		}
	}
	probe := start + probeLen
	for s < limit {
		if s >= probe {
			if hopeless(w, start, anchor, s) {
				if !e.entropy {
					return false
				}
				// Matches are not worth the search, but the literals'
				// byte distribution may still be (the exponent bytes of
				// model weights): the rest of the block is literals, for
				// the Huffman stage.
				break
			}
			probe = end
		}
		ins(s)
		m := e.find(src, s, end, w.rep)
		e.insert(src, s)
		next = s + 1
		if m.len < MinMatch {
			s++
			continue
		}
		for step := 0; step < lazySteps && s+1 < limit; step++ {
			ins(s + 1)
			m2 := e.find(src, s+1, end, w.rep)
			e.insert(src, s+1)
			next = s + 2
			if gain(m2, w.rep) > gain(m, w.rep)+4 {
				s++
				m = m2
				continue
			}
			break
		}
		// extend backwards into the pending literals
		for s > anchor && s-m.off > 0 && src[s-1] == src[s-m.off-1] {
			s--
			m.len++
		}
		w.emit(src[anchor:s], m.len, m.off)
		if e.mstride > 1 && m.len > 4*e.mstride {
			// A long match: its positions every stride bytes, then its
			// last ones (where the next match may start from).
			for ; next < s+m.len-e.mstride && next < limit; next += e.mstride {
				e.insert(src, next)
			}
		}
		ins(s + m.len)
		s += m.len
		anchor = s
	}
	w.st[sLiterals] = append(w.st[sLiterals], src[anchor:end]...)
	return true
}

// serialize writes the block header and the streams, Huffman coding each
// stream where the entropy tier is on and it pays.
func (e *Encoder) serialize(dst []byte) []byte {
	nseq := len(e.st[sTokens])
	dst = binary.AppendUvarint(dst, uint64(nseq))
	var modes [numStreams]byte
	var payload [numStreams][]byte
	total := 0
	for i := range e.st {
		total += len(e.st[i])
	}
	// Sized so appends below never reallocate: payload slices point into it.
	if cap(e.out) < total {
		e.out = make([]byte, 0, total)
	}
	e.out = e.out[:0]
	for i := range e.st {
		raw := e.st[i]
		modes[i], payload[i] = ModeRaw, raw
		if !e.entropy || len(raw) < 32 {
			continue
		}
		h := e.huf[i]
		var out []byte
		var reused bool
		var err error
		mode := byte(ModeHuf1)
		if len(raw) >= 4096 {
			mode = ModeHuf4
			out, reused, err = huff0.Compress4X(raw, h)
		} else {
			out, reused, err = huff0.Compress1X(raw, h)
		}
		// huff0 itself refuses output that does not save 1/32
		// (WantLogLess), so a table it keeps is always one the decoder
		// sees: the encoder's and the decoder's previous tables agree.
		switch {
		case errors.Is(err, huff0.ErrUseRLE):
			modes[i], payload[i] = ModeRLE, raw[:1]
		case err == nil:
			if reused {
				mode += ModeHuf1Reuse - ModeHuf1
			}
			// keep a copy: the scratch buffer is reused by the next block
			n := len(e.out)
			e.out = append(e.out, out...)
			modes[i], payload[i] = mode, e.out[n:]
		}
		h.Reuse = huff0.ReusePolicyAllow
	}
	for i := range e.st {
		dst = append(dst, modes[i])
		dst = binary.AppendUvarint(dst, uint64(len(e.st[i])))
		dst = binary.AppendUvarint(dst, uint64(len(payload[i])))
	}
	for i := range payload {
		dst = append(dst, payload[i]...)
	}
	return dst
}
