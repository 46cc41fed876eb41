package lz

import (
	"math"
	"math/bits"
)

// The archive tier's parser: price-driven ("optimal") parsing. Every
// position of the block gets its candidate matches from binary-tree match
// finders (each longer than the one before, the nearest of its length), then a
// shortest-path pass over the block's positions picks the sequences that
// cost the fewest bits under a model of what each byte, token and offset
// byte costs after the Huffman stage. The model comes from the block
// itself: the first pass prices symbols from the block's bytes and flat
// guesses, each further pass from the streams the pass before chose (as
// zstd's btultra does). Lazy parsing decides match by match with a fixed
// rule of thumb; this parse trades a literal for a cheaper token, a near
// offset for a longer far one, a repeat offset for a longer new one, by
// their price in this block's statistics.

// Price units: 1/16 bit.
const priceScale = 16

// optNice is the match length at which a parse stops searching inside the
// match: positions a long match covers are neither searched nor inserted
// (the matches they would find are the same one, shifted; the content they
// hold is in the trees at its earlier copy), which keeps the parse linear
// on highly repetitive data. Measured on text, records, a binary and a
// source tarball of the corpus: 64 left the output 0.6% larger, 1024 made
// it 0.1% smaller and the parse 10% slower.
const optNice = 256

// optDepth is how many tree nodes a position's search visits: on the same
// files 16 gave 0.5% more bytes, 64 0.05% fewer at the same speed (the
// price pass, not the search, sets the pace). A hash chain needed 128
// positions for less (3812 KB against 3783 at 32 tree nodes).
const optDepth = 32

// optMaxCands bounds the candidate matches kept per position.
const optMaxCands = 8

// optPasses is how many times the block is parsed: the first with prices
// from its bytes, each next with prices from the previous parse's streams
// (2 gave 0.4% more bytes, 4 0.2% fewer and a slower parse).
const optPasses = 3

// optLongTry is the length up to which every length of a candidate is
// tried as an edge; a longer candidate is tried whole and at this length.
const optLongTry = 48

// priceModel is what a symbol of each stream costs.
type priceModel struct {
	lit, tok, off0, off1, off2 [256]int32
	ext                        int32 // per byte of an ext varint
}

// pricesFrom sets each stream's prices from symbol counts: log2(total /
// count), a symbol never seen priced as rarer than any seen one.
func pricesFrom(dst *[256]int32, counts *[256]int32) {
	total := int32(0)
	for _, c := range counts {
		total += c
	}
	if total == 0 {
		for i := range dst {
			dst[i] = 8 * priceScale
		}
		return
	}
	lt := math.Log2(float64(total) + 1)
	for i, c := range counts {
		if c == 0 {
			// Unseen: dearer than the rarest seen symbol (a Huffman
			// table would give it a code only if it appeared).
			dst[i] = int32((lt + 2) * priceScale)
			continue
		}
		p := lt - math.Log2(float64(c))
		dst[i] = int32(max(p, 0.05) * priceScale)
	}
}

// optState is the parse's scratch, kept across blocks.
type optState struct {
	candStart []int32 // per position: first candidate in cands
	cands     []match
	cost      []int32
	from      []int32
	mlen      []int32
	moff      []int32
	lit       []int32
	rep       []int32
	steps     []int32
	scratch   seqWriter
	pm        priceModel
}

// gatherMatches fills o.candStart/o.cands for positions [start, limit) of
// src from the binary trees, inserting the positions it searches.
func (e *Encoder) gatherMatches(o *optState, src []byte, start, end, limit int) {
	n := end - start
	o.candStart = grow32(o.candStart, n+1)
	o.cands = o.cands[:0]
	skipTo := start
	for p := start; p < end; p++ {
		o.candStart[p-start] = int32(len(o.cands))
		if p >= limit || p < skipTo {
			continue
		}
		k := len(o.cands)
		o.cands = e.btFind(src, p, end, o.cands, true)
		if len(o.cands) > k {
			if best := o.cands[len(o.cands)-1].len; best >= optNice {
				skipTo = p + best
			}
		}
	}
	o.candStart[n] = int32(len(o.cands))
}

// The match finder: per hash bucket, a binary search tree of the positions
// with that hash, ordered by the bytes from each position on, newest at the
// root (the scheme of zstd's and LZMA's bt match finders). Inserting a
// position walks from the root the way a search would, splitting the tree
// into the positions before and after it in that order and hanging the two
// halves under it; the positions passed on the way are the candidates, and
// the common prefix each side is known to share with the new position
// spares comparing it again. A walk of optDepth nodes sees far more useful
// candidates than a hash chain of optDepth positions (a chain visits them
// by age only).
//
// e.bt holds two children per position (2p: the earlier side, 2p+1 the
// later side), as position+1, 0 for none.

// btFind inserts position p into its tree and, with search set, appends
// the matches found (lengths increasing, at least MinMatch) to cands.
func (e *Encoder) btFind(src []byte, p, end int, cands []match, search bool) []match {
	h := hash4(load32(src, p), e.ulog)
	c := int(e.head[h]) - 1
	e.head[h] = int32(p + 1)
	bt := e.bt
	smaller, larger := 2*p, 2*p+1 // where the next node of each side hangs
	lenS, lenL := 0, 0            // prefix each side shares with p
	best := MinMatch - 1
	first := len(cands)
	lo := p - e.window
	// Comparisons stop at optNice bytes: past that the parse skips ahead
	// anyway, and comparing whole long repeats at every node visited was
	// most of the time on repetitive text. The match that reaches it is
	// measured whole, once, and ends the walk.
	cmpEnd := min(end, p+optNice)
	for d := optDepth; c >= 0 && c >= lo && d > 0; d-- {
		l := min(lenS, lenL)
		l += matchLen(src, p+l, c+l, cmpEnd)
		if p+l >= cmpEnd && cmpEnd < end {
			l += matchLen(src, p+l, c+l, end)
		}
		if search && l > best {
			best = l
			if len(cands)-first == optMaxCands {
				cands[len(cands)-1] = match{l, p - c}
			} else {
				cands = append(cands, match{l, p - c})
			}
		}
		if p+l >= cmpEnd {
			// No order shows within the bytes compared: cut the tree
			// here (a little history lost, the tree stays consistent).
			break
		}
		if src[c+l] < src[p+l] {
			bt[smaller] = int32(c + 1)
			lenS = l
			smaller = 2*c + 1
			c = int(bt[2*c+1]) - 1
		} else {
			bt[larger] = int32(c + 1)
			lenL = l
			larger = 2 * c
			c = int(bt[2*c]) - 1
		}
	}
	bt[smaller], bt[larger] = 0, 0
	return cands
}

func grow32(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n)
	}
	return s[:n]
}

// uvarintLen is the bytes binary.AppendUvarint writes for v.
func uvarintLen(v int) int32 { return int32(bits.Len(uint(v))+6) / 7 }

// parseOptimal is the Deep level's parse (see the top of this file).
func (e *Encoder) parseOptimal(w *seqWriter, src []byte, start, end int) bool {
	if e.opt == nil {
		e.opt = &optState{}
	}
	o := e.opt
	limit := end - 8
	n := end - start
	e.gatherMatches(o, src, start, end, limit)
	// The probe of the other parsers: a block whose first probeLen bytes
	// matches hardly cover is literals for the Huffman stage.
	if n > probeLen {
		covered, reach := 0, start
		for p := start; p < start+probeLen; p++ {
			if k := o.candStart[p-start+1] - 1; k >= o.candStart[p-start] {
				reach = max(reach, p+o.cands[k].len)
			}
			if p < reach {
				covered++
			}
		}
		if covered*32 < probeLen {
			if !e.entropy {
				return false
			}
			w.st[sLiterals] = append(w.st[sLiterals], src[start:end]...)
			return true
		}
	}
	o.cost = grow32(o.cost, n+1)
	o.from = grow32(o.from, n+1)
	o.mlen = grow32(o.mlen, n+1)
	o.moff = grow32(o.moff, n+1)
	o.lit = grow32(o.lit, n+1)
	o.rep = grow32(o.rep, n+1)

	pm := &o.pm
	e.initialPrices(pm, src[start:end])
	for pass := 0; pass < optPasses; pass++ {
		e.shortestPath(o, src, start, end, limit, w.rep)
		last := pass == optPasses-1
		if last {
			o.emit(w, src, start, end)
			break
		}
		sw := &o.scratch
		sw.narrow, sw.rep = w.narrow, w.rep
		for i := range sw.st {
			sw.st[i] = sw.st[i][:0]
		}
		o.emit(sw, src, start, end)
		pricesFromStreams(pm, sw)
	}
	return true
}

// initialPrices guesses the first pass's prices: literals by the block's
// byte frequencies, tokens and offset bytes flat (a repeat offset's zero
// bytes cheaper).
func (e *Encoder) initialPrices(pm *priceModel, block []byte) {
	var counts [256]int32
	for _, b := range block {
		counts[b]++
	}
	pricesFrom(&pm.lit, &counts)
	for i := range pm.tok {
		pm.tok[i] = 6 * priceScale
		pm.off0[i] = 8 * priceScale
		pm.off1[i] = 6 * priceScale
		pm.off2[i] = 6 * priceScale
	}
	pm.off0[0], pm.off1[0] = 3*priceScale, 2*priceScale
	pm.ext = 8 * priceScale
}

// pricesFromStreams prices each stream's symbols by their counts in sw.
func pricesFromStreams(pm *priceModel, sw *seqWriter) {
	count := func(dst *[256]int32, s []byte) {
		var c [256]int32
		for _, b := range s {
			c[b]++
		}
		pricesFrom(dst, &c)
	}
	count(&pm.lit, sw.st[sLiterals])
	count(&pm.tok, sw.st[sTokens])
	count(&pm.off0, sw.st[sOff0])
	count(&pm.off1, sw.st[sOff1])
	count(&pm.off2, sw.st[sOff2])
	if ext := sw.st[sExt]; len(ext) > 0 {
		// One price for every ext byte: their mean.
		var p [256]int32
		count(&p, ext)
		sum := int64(0)
		for _, b := range ext {
			sum += int64(p[b])
		}
		pm.ext = int32(sum / int64(len(ext)))
	} else {
		pm.ext = 8 * priceScale
	}
}

// offPrice is what coding offset off costs after a sequence at rep.
func (e *Encoder) offPrice(pm *priceModel, off, rep int) int32 {
	if off == rep {
		return pm.off0[0] + pm.off1[0]
	}
	p := pm.off0[byte(off)]
	switch {
	case e.layout == Narrow:
		p += pm.off1[byte(off>>8)]
	case off >= 1<<15:
		p += pm.off1[byte(off>>8)&0x7f|0x80] + pm.off2[byte(off>>15)]
	default:
		p += pm.off1[byte(off>>8)]
	}
	return p
}

// seqPrice is what a sequence's token and ext bytes cost: ll literals
// before a match of ml bytes.
func seqPrice(pm *priceModel, ll, ml int) int32 {
	m := ml - MinMatch
	p := pm.tok[byte(min(ll, 15))<<4|byte(min(m, 15))]
	if ll >= 15 {
		p += pm.ext * uvarintLen(ll-15)
	}
	if m >= 15 {
		p += pm.ext * uvarintLen(m-15)
	}
	return p
}

// shortestPath finds the cheapest sequences for src[start:end] under the
// prices in o.pm: cost[i] is the cheapest coding of the block's first i
// bytes, reached by a literal (mlen 0) or a match from from[i].
func (e *Encoder) shortestPath(o *optState, src []byte, start, end, limit, rep0 int) {
	n := end - start
	pm := &o.pm
	const inf = math.MaxInt32
	for i := 1; i <= n; i++ {
		o.cost[i] = inf
	}
	o.cost[0], o.lit[0], o.rep[0], o.mlen[0] = 0, 0, int32(rep0), 0
	// The repeat offset's match length at the last position it was
	// measured: inside a long repeat the next position's is one less, so
	// a long repeat is measured once, not at each of its positions (that
	// was quadratic: a delta against a near-identical base took a second
	// per chunk).
	repOff, repAt, repLen := -1, 0, 0
	for i := 0; i < n; i++ {
		ci := o.cost[i]
		if ci == inf {
			continue
		}
		p := start + i
		ll := int(o.lit[i])
		rep := int(o.rep[i])
		// A literal. (Crossing 15 literals costs ext bytes at the next
		// match: approximated by the ext price at the crossing.)
		c := ci + pm.lit[src[p]]
		if ll+1 == 15 {
			c += pm.ext
		}
		if c < o.cost[i+1] {
			o.cost[i+1], o.from[i+1], o.mlen[i+1], o.lit[i+1], o.rep[i+1] = c, int32(i), 0, int32(ll+1), int32(rep)
		}
		if p >= limit {
			continue
		}
		relax := func(l, off int, op int32) {
			j := i + l
			c := ci + op + seqPrice(pm, ll, l)
			if c < o.cost[j] {
				o.cost[j], o.from[j], o.mlen[j], o.moff[j], o.lit[j], o.rep[j] = c, int32(i), int32(l), int32(off), 0, int32(off)
			}
		}
		// The repeat offset, whatever the trees found.
		cs := o.cands[o.candStart[i]:o.candStart[i+1]]
		rl := 0
		if rep > 0 && p-rep >= 0 {
			if rep == repOff && p < repAt+repLen {
				rl = repAt + repLen - p
			} else {
				rl = matchLen(src, p, p-rep, end)
				repOff, repAt, repLen = rep, p, rl
			}
		}
		// Where a match of optNice bytes or more starts, only whole
		// matches are edges: the shorter ends of a long match lead to
		// positions inside it, and trying each was most of the parse of
		// a delta (a long repeat at every position).
		long := rl
		if k := len(cs); k > 0 {
			long = max(long, cs[k-1].len)
		}
		try := optLongTry
		if long >= optNice {
			try = 0
		}
		if rl >= MinMatch {
			op := e.offPrice(pm, rep, rep)
			for k := MinMatch; k <= rl; k++ {
				if k > try && k < rl {
					k = rl
				}
				relax(k, rep, op)
			}
		}
		lo := MinMatch
		for _, m := range cs {
			op := e.offPrice(pm, m.off, rep)
			for k := max(lo, MinMatch); k <= m.len; k++ {
				if k > try && k < m.len {
					k = m.len
				}
				relax(k, m.off, op)
			}
			lo = m.len + 1
		}
	}
}

// emit walks the cheapest path back from the block's end and writes its
// sequences to w in order.
func (o *optState) emit(w *seqWriter, src []byte, start, end int) {
	n := end - start
	o.steps = o.steps[:0]
	for j := n; j > 0; j = int(o.from[j]) {
		if o.mlen[j] > 0 {
			o.steps = append(o.steps, int32(j))
		}
	}
	anchor := start
	for k := len(o.steps) - 1; k >= 0; k-- {
		j := int(o.steps[k])
		l := int(o.mlen[j])
		s := start + j - l
		w.emit(src[anchor:s], l, int(o.moff[j]))
		anchor = s + l
	}
	w.st[sLiterals] = append(w.st[sLiterals], src[anchor:end]...)
}
