package tensor

import (
	"encoding/binary"
	"unsafe"
)

// The fast decoder. A table lookup on the next 12 bits of a group's stream
// yields up to five symbols (split kinds: the symbol bytes; V16: up to
// three output words), stored at once with a single 8-byte store (the
// spare lanes are overwritten by the next store). A lookup's latency
// (mask, load, shift) is the loop's critical path, so independent streams
// decode interleaved: four groups, of any spans, in the amd64 lanes
// (fast_amd64.s), two groups of a span in the Go loops here. A second
// pass puts values together from symbol bytes and raw bytes. Loads
// and stores go through unsafe pointers; every index is bounded by the
// loop conditions (a group's symbols) or by the payload length (stream
// reads), checked before the loop.

// Loop bounds: one iteration does four lookups of up to five symbols and
// stores 8 bytes past the last.
const (
	loopMargin8  = 32 // byte lanes: 4×5 values + 8-byte store, rounded up
	loopMargin16 = 16 // word lanes: 4×3 values + 4-word store, rounded up
)

// pairLoop8 decodes the symbol bytes of two groups interleaved, a from bit
// bpa and b from bit bpb of the payload, into op and op+gs, until either
// is within loopMargin8 values of n or its next 8-byte load would pass bit
// lim. The table must have 4096 entries.
func pairLoop8(lp, pp unsafe.Pointer, lim uint, op unsafe.Pointer, gs, n int, bpa, bpb uint) (uint, uint, int, int) {
	ia, ib := 0, 0
	n -= loopMargin8
	for ia <= n && ib <= n && bpa <= lim && bpb <= lim {
		bufa := load64(pp, int(bpa>>3)) >> (bpa & 7)
		bufb := load64(pp, int(bpb>>3)) >> (bpb & 7)
		for range 4 {
			ea := *(*uint64)(unsafe.Add(lp, (bufa&4095)*8))
			eb := *(*uint64)(unsafe.Add(lp, (bufb&4095)*8))
			bufa >>= ea & 63
			bufb >>= eb & 63
			bpa += uint(ea & 63)
			bpb += uint(eb & 63)
			store64(op, ia, ea>>entLanes)
			store64(op, gs+ib, eb>>entLanes)
			ia += int(ea>>entCount) & 7
			ib += int(eb>>entCount) & 7
		}
	}
	return bpa, bpb, ia, ib
}

// pairLoop16 is pairLoop8 for word lanes (V16): words at op and op+2*gs.
func pairLoop16(lp, pp unsafe.Pointer, lim uint, op unsafe.Pointer, gs, n int, bpa, bpb uint) (uint, uint, int, int) {
	ia, ib := 0, 0
	n -= loopMargin16
	for ia <= n && ib <= n && bpa <= lim && bpb <= lim {
		bufa := load64(pp, int(bpa>>3)) >> (bpa & 7)
		bufb := load64(pp, int(bpb>>3)) >> (bpb & 7)
		for range 4 {
			ea := *(*uint64)(unsafe.Add(lp, (bufa&4095)*8))
			eb := *(*uint64)(unsafe.Add(lp, (bufb&4095)*8))
			bufa >>= ea & 63
			bufb >>= eb & 63
			bpa += uint(ea & 63)
			bpb += uint(eb & 63)
			store64(op, 2*ia, ea>>entLanes)
			store64(op, 2*(gs+ib), eb>>entLanes)
			ia += int(ea>>entCount) & 7
			ib += int(eb>>entCount) & 7
		}
	}
	return bpa, bpb, ia, ib
}

// oneLoop8 decodes one group's symbol bytes from value i and bit bp,
// four lookups per refill, while i <= n (the group's end less the margin)
// and the next 8-byte load stays within bit lim.
func oneLoop8(lp, pp unsafe.Pointer, lim uint, op unsafe.Pointer, n int, bp uint, i int, mask uint64) (uint, int) {
	for i <= n && bp <= lim {
		buf := load64(pp, int(bp>>3)) >> (bp & 7)
		for range 4 {
			e := *(*uint64)(unsafe.Add(lp, (buf&mask)*8))
			buf >>= e & 63
			bp += uint(e & 63)
			store64(op, i, e>>entLanes)
			i += int(e>>entCount) & 7
		}
	}
	return bp, i
}

// oneLoop16 is oneLoop8 for word lanes (V16).
func oneLoop16(lp, pp unsafe.Pointer, lim uint, op unsafe.Pointer, n int, bp uint, i int, mask uint64) (uint, int) {
	for i <= n && bp <= lim {
		buf := load64(pp, int(bp>>3)) >> (bp & 7)
		for range 4 {
			e := *(*uint64)(unsafe.Add(lp, (buf&mask)*8))
			buf >>= e & 63
			bp += uint(e & 63)
			store64(op, 2*i, e>>entLanes)
			i += int(e>>entCount) & 7
		}
	}
	return bp, i
}

// finish decodes the rest of a group's symbols (from value i, bit bp) into
// out (symbol bytes, or words for V16), then checks that the symbols used
// exactly the group's stream.
func (d *Decoder) finish(out []byte, g, n int, bp uint, i int) error {
	p := d.payload
	pp := unsafe.Pointer(unsafe.SliceData(p))
	lp := unsafe.Pointer(unsafe.SliceData(d.lut))
	op := unsafe.Pointer(unsafe.SliceData(out))
	mask := uint64(len(d.lut) - 1)
	words := d.kind == V16
	margin := 8
	if words {
		margin = 4
	}
	// Four lookups per refill while far from the end, then one at a time
	// while an 8-byte store stays inside the group and an 8-byte stream
	// load inside the payload.
	if len(p) >= 8 {
		lim := uint(len(p)-8) * 8
		if words {
			bp, i = oneLoop16(lp, pp, lim, op, n-loopMargin16, bp, i, mask)
		} else {
			bp, i = oneLoop8(lp, pp, lim, op, n-loopMargin8, bp, i, mask)
		}
		for i+margin <= n && bp <= lim {
			buf := load64(pp, int(bp>>3)) >> (bp & 7)
			e := *(*uint64)(unsafe.Add(lp, (buf&mask)*8))
			bp += uint(e & 63)
			if words {
				store64(op, 2*i, e>>entLanes)
			} else {
				store64(op, i, e>>entLanes)
			}
			i += int(e>>entCount) & 7
		}
	}
	end := uint(len(p)) * 8
	for i < n {
		// The next bits from bp: zeros past the payload.
		var x uint64
		if at := int(bp >> 3); at+8 <= len(p) {
			x = load64(pp, at) >> (bp & 7)
		} else {
			for k := uint(0); k < 3; k++ {
				if at := int(bp>>3) + int(k); at < len(p) {
					x |= uint64(p[at]) << (8 * k)
				}
			}
			x >>= bp & 7
		}
		e := d.lut[x&mask]
		cnt := int(e>>entCount) & 7
		b := uint(e & 63)
		if i+cnt > n {
			cnt, b = 1, uint(e>>entFirst(d.kind))&15
		}
		if bp+b > end {
			return corruptf("group %d: bit stream runs past the payload", g)
		}
		bp += b
		for k := range cnt {
			if words {
				binary.LittleEndian.PutUint16(out[2*(i+k):], uint16(e>>(entLanes+16*k)))
			} else {
				out[i+k] = byte(e >> (entLanes + 8*k))
			}
		}
		i += cnt
	}
	s0, s1 := d.streamRange(g)
	if used := int(bp) - 8*s0; (used+7)/8 != s1-s0 || used < 0 {
		return corruptf("group %d: symbols take %d bits, the stream holds %d bytes", g, used, s1-s0)
	}
	return nil
}

// symbols decodes count groups from g (1 to 4) into out with the Go loops:
// their symbol bytes (group g+k's from out[k·gs]), or for V16 their words
// (from out[2k·gs]), in pairs and singly.
func (d *Decoder) symbols(out []byte, g, count int) error {
	gs := 1 << d.groupLog2
	ls := 1
	if d.kind == V16 {
		ls = 2
	}
	var bp [4]uint
	var at, n [4]int
	for k := range count {
		s, _ := d.streamRange(g + k)
		bp[k] = uint(s) * 8
		_, n[k] = d.Group(g + k)
	}
	for k := 0; k+1 < count; k += 2 {
		d.pair(out[k*ls*gs:], &bp[k], &bp[k+1], &at[k], &at[k+1], min(n[k], n[k+1]))
	}
	for k := range count {
		if err := d.finish(out[k*ls*gs:k*ls*gs+ls*n[k]], g+k, n[k], bp[k], at[k]); err != nil {
			return err
		}
	}
	return nil
}

// pair runs the two-group loops on the groups whose symbols go to out and
// out[gs] (words for V16: out[2gs]), from bit positions bpa and bpb, up to
// n values.
func (d *Decoder) pair(out []byte, bpa, bpb *uint, ia, ib *int, n int) {
	p := d.payload
	if len(p) < 8 || len(d.lut) != 1<<MaxCodeLen {
		return
	}
	gs := 1 << d.groupLog2
	lp, pp := unsafe.Pointer(unsafe.SliceData(d.lut)), unsafe.Pointer(unsafe.SliceData(p))
	op := unsafe.Pointer(unsafe.SliceData(out))
	lim := uint(len(p)-8) * 8
	switch {
	case d.kind != V16:
		*bpa, *bpb, *ia, *ib = pairLoop8(lp, pp, lim, op, gs, n, *bpa, *bpb)
	default:
		*bpa, *bpb, *ia, *ib = pairLoop16(lp, pp, lim, op, gs, n, *bpa, *bpb)
	}
}

// combine puts values together from symbol bytes and raw bytes.
func combine(out, syms, raw []byte, k Kind) {
	switch k {
	case BF16, F16:
		combine16(out, syms, raw, k)
	case F32:
		for i, s := range syms {
			r := uint32(raw[3*i]) | uint32(raw[3*i+1])<<8 | uint32(raw[3*i+2])<<16
			binary.LittleEndian.PutUint32(out[4*i:], (r>>23)<<31|uint32(s)<<23|r&0x7fffff)
		}
	}
}

// combine16Go builds BF16 or F16 words: symbol bytes spread to 16-bit
// lanes and shifted into place, raw bytes spread and placed.
func combine16Go(out, syms, raw []byte, k Kind) {
	n := len(syms)
	op := unsafe.Pointer(unsafe.SliceData(out))
	sp := unsafe.Pointer(unsafe.SliceData(syms))
	rp := unsafe.Pointer(unsafe.SliceData(raw))
	i := 0
	if k == BF16 {
		for ; i+4 <= n; i += 4 {
			s, r := spread4(load32(sp, i)), spread4(load32(rp, i))
			store64(op, 2*i, s<<7|r&0x007f007f007f007f|(r&0x0080008000800080)<<8)
		}
		for ; i < n; i++ {
			r := uint16(raw[i])
			binary.LittleEndian.PutUint16(out[2*i:], uint16(syms[i])<<7|r&0x7f|(r&0x80)<<8)
		}
		return
	}
	for ; i+4 <= n; i += 4 {
		store64(op, 2*i, spread4(load32(sp, i))<<8|spread4(load32(rp, i)))
	}
	for ; i < n; i++ {
		binary.LittleEndian.PutUint16(out[2*i:], uint16(syms[i])<<8|uint16(raw[i]))
	}
}

// spread4 puts four bytes into the low byte of four 16-bit lanes.
func spread4(r uint32) uint64 {
	x := uint64(r)
	x = (x | x<<16) & 0x0000ffff0000ffff
	return (x | x<<8) & 0x00ff00ff00ff00ff
}

// decodeGroups decodes count groups from g (1 to 4) into dst, their
// bytes, and checks their CRCs.
func (d *Decoder) decodeGroups(dst []byte, g, count int) error {
	first, _ := d.Group(g)
	var n [4]int
	total := 0
	for k := range count {
		_, n[k] = d.Group(g + k)
		total += n[k]
	}
	ws := d.kind.WordSize()
	if len(dst) != total*ws {
		panic("tensor: decode: wrong destination size")
	}
	gs := 1 << d.groupLog2
	if d.kind == V16 || d.kind == B8 {
		// Whole values: the symbols are the output (group g+k's at
		// dst[k·gs·ws:], as symbols lays them out: only a span's last
		// group is short).
		if err := d.symbols(dst, g, count); err != nil {
			return err
		}
	} else {
		sp := scratchPool.Get().(*[]byte)
		defer scratchPool.Put(sp)
		syms := (*sp)[:4*gs]
		if err := d.symbols(syms, g, count); err != nil {
			return err
		}
		rs := d.kind.RawSize()
		raw := d.payload[d.rawOff+rs*first : d.rawOff+rs*(first+total)]
		for k := range count {
			at := k * gs // values before group g+k (the earlier ones are full)
			combine(dst[ws*at:ws*(at+n[k])], syms[at:at+n[k]], raw[rs*at:rs*(at+n[k])], d.kind)
		}
	}
	for k := range count {
		at := k * gs * ws
		if err := d.checkCRC(dst[at:at+n[k]*ws], g+k); err != nil {
			return err
		}
	}
	return nil
}

// complete finishes group g, whose symbol bytes the lanes decoded into syms
// up to value i and bit bp: the rest of its symbols, the check of its
// stream, its values put together into dst, its CRC.
func (d *Decoder) complete(dst, syms []byte, g int, bp uint, i int) error {
	if err := d.finish(syms, g, len(syms), bp, i); err != nil {
		return err
	}
	if d.kind == B8 {
		copy(dst, syms)
	} else {
		first, n := d.Group(g)
		rs := d.kind.RawSize()
		combine(dst, syms, d.payload[d.rawOff+rs*first:d.rawOff+rs*(first+n)], d.kind)
	}
	return d.checkCRC(dst, g)
}

// decodeJobsGo decodes jobs with the Go loops, runs of consecutive groups
// of one decoder whose bytes lie back to back together (up to four: they
// go in pairs).
func decodeJobsGo(jobs []GroupJob) (int, error) {
	for i := 0; i < len(jobs); {
		j := jobs[i]
		if j.G < 0 || j.G >= j.D.groups {
			return i, corruptf("group %d of %d", j.G, j.D.groups)
		}
		k, size := 1, len(j.Dst)
		for i+k < len(jobs) && k < 4 {
			n := jobs[i+k]
			if n.D != j.D || n.G != j.G+k || n.G >= j.D.groups ||
				uintptr(unsafe.Pointer(unsafe.SliceData(j.Dst)))+uintptr(size) != uintptr(unsafe.Pointer(unsafe.SliceData(n.Dst))) {
				break
			}
			size += len(n.Dst)
			k++
		}
		if err := j.D.decodeGroups(unsafe.Slice(unsafe.SliceData(j.Dst), size), j.G, k); err != nil {
			return i, err
		}
		i += k
	}
	return -1, nil
}

func (d *Decoder) checkCRC(b []byte, g int) error {
	if want := binary.LittleEndian.Uint32(d.payload[d.crcOff+4*g:]); checksum(b) != want {
		return corruptf("group %d: CRC mismatch", g)
	}
	return nil
}
