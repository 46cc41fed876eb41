package cuda

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
)

// Emulate runs the decode kernel's algorithm on the CPU, block by block and
// thread by thread, over the buffers the GPU would get: packed (the packed
// bytes plus PackedPad bytes of any value), p.Meta, and out (p.OutLen
// bytes). It
// reads span descriptors and tables from p.Meta's bytes, not from p.Spans,
// and mirrors kernels/decode.cu statement for statement (its aligned
// 16-byte loads and stores included), so that the layout handed to the GPU is tested against
// the original bytes on machines without one. It returns the status array
// and the summary words the kernel leaves.
func Emulate(p *Plan, packed, out []byte) (status []uint32, failed, first uint32, err error) {
	if int64(len(packed)) < p.PackedLen+PackedPad || int64(len(out)) < p.OutLen {
		return nil, 0, 0, fmt.Errorf("cuda: Emulate: buffers too small")
	}
	meta := append([]byte(nil), p.Meta...) // the kernel writes the summary
	sb := make([]byte, 4*p.Groups)
	emulateBlocks(p, packed, meta, out, sb, 0, p.Blocks)
	status = make([]uint32, p.Groups)
	for i := range status {
		status[i] = binary.LittleEndian.Uint32(sb[4*i:])
	}
	return status, binary.LittleEndian.Uint32(meta[p.SummaryOff:]), binary.LittleEndian.Uint32(meta[p.SummaryOff+4:]), nil
}

// emulateBlocks runs blocks [b0, b1) of the kernel, as one launch with
// blockBase b0 does: meta is the device's copy of p.Meta (its summary
// words updated), status the device's status words.
func emulateBlocks(p *Plan, packed, meta, out, status []byte, b0, b1 int) {
	k := &emuKernel{packed: packed, meta: meta, out: out, status: status,
		spans: meta[p.DescOff:], blocks: meta[p.BlockOff:], tables: meta[p.TableOff:], summary: meta[p.SummaryOff:]}
	for b := b0; b < b1; b++ {
		k.block(uint32(b))
	}
}

type emuKernel struct {
	packed, meta, out              []byte
	spans, blocks, tables, summary []byte
	status                         []byte // u32 words
	// a block's shared memory
	lut                         [1 << 12]uint32
	crct                        [4][256]uint32
	count, firstCode, firstIndx [tableCounts]uint32
}

type spanDesc struct {
	ends, crcs, raw, streams, out, values                 uint64
	streamLen, groups, groupLog2, kind, table, tb, sb, ns uint32
}

func (k *emuKernel) desc(i uint32) spanDesc {
	b := k.spans[spanDescSize*int(i):]
	u64 := func(o int) uint64 { return binary.LittleEndian.Uint64(b[o:]) }
	u32 := func(o int) uint32 { return binary.LittleEndian.Uint32(b[o:]) }
	return spanDesc{u64(0), u64(8), u64(16), u64(24), u64(32), u64(40),
		u32(48), u32(52), u32(56), u32(60), u32(64), u32(68), u32(72), u32(76)}
}

// load32u: the kernel's unaligned load through two aligned ones.
func (k *emuKernel) load32u(off uint64) uint32 {
	a := off &^ 3
	two := uint64(binary.LittleEndian.Uint32(k.packed[a:])) | uint64(binary.LittleEndian.Uint32(k.packed[a+4:]))<<32
	return uint32(two >> ((off & 3) * 8))
}

// emuBits is the kernel's Bits: words popped from 16-byte loads (Words)
// made one step ahead (nx); v is a byte offset of the packed buffer
// (16-aligned).
type emuBits struct {
	packed []byte
	v      uint64
	nx     [16]byte
	lo, hi uint64
	qn     uint32
	buf    uint64
	have   uint32
}

func (r *emuBits) load() {
	copy(r.nx[:], r.packed[r.v:r.v+16])
	r.v += 16
}

func (r *emuBits) pop() uint32 {
	if r.qn == 0 {
		r.lo = binary.LittleEndian.Uint64(r.nx[:])
		r.hi = binary.LittleEndian.Uint64(r.nx[8:])
		r.qn = 4
		r.load()
	}
	w := uint32(r.lo)
	r.lo = r.lo>>32 | r.hi<<32
	r.hi >>= 32
	r.qn--
	return w
}

func (r *emuBits) init(packed []byte, off uint64) {
	r.packed = packed
	r.v = off &^ 15
	r.load()
	r.qn = 0
	for i := uint32(off&15) >> 2; i != 0; i-- {
		r.pop()
	}
	sh := uint32(off&3) * 8
	r.buf = uint64(r.pop()) >> sh
	r.have = 32 - sh
}

func (r *emuBits) refill() {
	if r.have < 32 {
		r.buf |= uint64(r.pop()) << r.have
		r.have += 32
	}
}

func (r *emuBits) skip(n uint32) {
	r.buf >>= n
	r.have -= n
}

// emuOut is the kernel's Out: p is a byte offset in the output buffer
// (16-aligned).
type emuOut struct {
	out         []byte
	p           uint64
	acc         uint64
	k           uint32
	head, whead uint32
	v0, v1      uint64
	vn          uint32
}

func (o *emuOut) init(out []byte, p uint64) {
	o.out, o.p, o.acc, o.k = out, p, 0, 0
	o.head = uint32(4-(p&3)) & 3
	o.whead = (uint32(16-((p+uint64(o.head))&15)) & 15) >> 2
	o.v0, o.v1, o.vn = 0, 0, 0
}

func (o *emuOut) word(w uint32) {
	if o.p&3 != 0 {
		panic("cuda: emulated kernel: misaligned 4-byte store")
	}
	if o.whead != 0 {
		binary.LittleEndian.PutUint32(o.out[o.p:o.p+4], w)
		o.p += 4
		o.whead--
		return
	}
	if o.vn < 2 {
		o.v0 |= uint64(w) << (32 * o.vn)
	} else {
		o.v1 |= uint64(w) << (32 * (o.vn - 2))
	}
	o.vn++
	if o.vn == 4 {
		if o.p&15 != 0 {
			panic("cuda: emulated kernel: misaligned 16-byte store")
		}
		binary.LittleEndian.PutUint64(o.out[o.p:o.p+8], o.v0)
		binary.LittleEndian.PutUint64(o.out[o.p+8:o.p+16], o.v1)
		o.p += 16
		o.v0, o.v1, o.vn = 0, 0, 0
	}
}

func (o *emuOut) put(v, nb uint32) {
	o.acc |= uint64(v) << (8 * o.k)
	o.k += nb
	for o.head != 0 && o.k != 0 {
		o.out[o.p] = byte(o.acc)
		o.p++
		o.acc >>= 8
		o.k--
		o.head--
	}
	if o.k >= 4 {
		o.word(uint32(o.acc))
		o.acc >>= 32
		o.k -= 4
	}
}

func (o *emuOut) flush() {
	for i := uint32(0); i < o.vn; i++ {
		v := o.v0
		if i >= 2 {
			v = o.v1
		}
		binary.LittleEndian.PutUint32(o.out[o.p:o.p+4], uint32(v>>(32*(i&1))))
		o.p += 4
	}
	o.vn = 0
	for o.k != 0 {
		o.out[o.p] = byte(o.acc)
		o.p++
		o.acc >>= 8
		o.k--
	}
}

const crc32cPoly = 0x82F63B78

func (k *emuKernel) crcWord(crc, w uint32) uint32 {
	t := &k.crct
	crc ^= w
	return t[3][crc&0xff] ^ t[2][(crc>>8)&0xff] ^ t[1][(crc>>16)&0xff] ^ t[0][crc>>24]
}

func (k *emuKernel) crcHalf(crc, h uint32) uint32 {
	t := &k.crct
	crc ^= h
	return (crc >> 16) ^ t[1][crc&0xff] ^ t[0][(crc>>8)&0xff]
}

func (k *emuKernel) nextWord(s *emuBits, mask uint32, used *uint32, nbits uint32, word, st *uint32) bool {
	s.refill()
	e := k.lut[uint32(s.buf)&mask]
	if e&0x80000000 != 0 {
		*st = StatusNoCode
		return false
	}
	l := e >> 16
	*used += l
	if *used > nbits {
		*st = StatusShort
		return false
	}
	s.skip(l)
	*word = e & 0xffff
	return true
}

func assemble16(kind, word, r uint32) uint32 {
	switch kind {
	case 1: // BF16
		return (r&0x80)<<8 | word | r&0x7f
	case 2: // F16
		return word | r
	}
	return word
}

// block runs one block: the shared-memory set-up its threads share, then
// each thread's group.
func (k *emuKernel) block(b uint32) {
	si := binary.LittleEndian.Uint32(k.blocks[8*b:])
	g0 := binary.LittleEndian.Uint32(k.blocks[8*b+4:])
	d := k.desc(si)
	tab := k.tables[d.table:]
	u16 := func(i uint32) uint32 { return uint32(binary.LittleEndian.Uint16(tab[2*i:])) }
	for i := uint32(0); i < 4*256; i++ {
		c := i & 0xff
		steps := 8 * ((i >> 8) + 1)
		for j := uint32(0); j < steps; j++ {
			if c&1 != 0 {
				c = c>>1 ^ crc32cPoly
			} else {
				c >>= 1
			}
		}
		k.crct[i>>8][i&0xff] = c
	}
	for t := uint32(0); t < tableCounts; t++ {
		k.count[t] = u16(t)
	}
	code, idx := uint32(0), uint32(0)
	k.firstCode[0], k.firstIndx[0] = 0, 0
	for l := uint32(1); l < tableCounts; l++ {
		code = (code + k.count[l-1]) << 1
		k.firstCode[l] = code
		k.firstIndx[l] = idx
		idx += k.count[l]
	}
	tb := d.tb
	for x := uint32(0); x < 1<<tb; x++ {
		e := uint32(0x80000000)
		if tb == 0 {
			e = u16(tableCounts)
		} else {
			v := bits.Reverse32(x) >> (32 - tb)
			for l := uint32(1); l <= tb; l++ {
				c := v >> (tb - l)
				if c-k.firstCode[l] < k.count[l] {
					e = u16(tableCounts+k.firstIndx[l]+c-k.firstCode[l]) | l<<16
					break
				}
			}
		}
		k.lut[x] = e
	}
	for t := uint32(0); t < BlockThreads; t++ {
		if g := g0 + t; g < d.groups {
			k.thread(&d, g, tb)
		}
	}
}

// thread decodes group g, as one kernel thread does.
func (k *emuKernel) thread(d *spanDesc, g, tb uint32) {
	first := uint64(g) << d.groupLog2
	gend := first + 1<<d.groupLog2
	n := uint32(min(gend, d.values) - first)
	start := uint32(0)
	if g != 0 {
		start = k.load32u(d.ends + 4*uint64(g-1))
	}
	end := d.streamLen
	if g+1 < d.groups {
		end = k.load32u(d.ends + 4*uint64(g))
	}
	want := k.load32u(d.crcs + 4*uint64(g))
	st := uint32(StatusOK)
	if start > end || end > d.streamLen {
		st = StatusBounds
	}
	if d.kind < 1 || d.kind > 4 {
		st = StatusKind
	}
	if st == StatusOK {
		nbits := 8 * (end - start)
		mask := uint32(1)<<tb - 1
		var s, r emuBits
		s.init(k.packed, d.streams+uint64(start))
		used := uint32(0)
		crc := uint32(0xffffffff)
		kind := d.kind
		var o emuOut
		if kind == 3 { // F32
			o.init(k.out, d.out+4*first)
			r.init(k.packed, d.raw+3*first)
			for i := uint32(0); i < n; i++ {
				var w uint32
				if !k.nextWord(&s, mask, &used, nbits, &w, &st) {
					break
				}
				r.refill()
				raw := uint32(r.buf) & 0xffffff
				r.skip(24)
				v := (raw>>23)<<31 | w<<16 | raw&0x7fffff
				crc = k.crcWord(crc, v)
				o.put(v, 4)
			}
		} else {
			o.init(k.out, d.out+2*first)
			rawBits := uint32(8)
			if kind == 4 {
				rawBits = 0
			}
			if rawBits != 0 {
				r.init(k.packed, d.raw+first)
			} else {
				r.packed, r.v, r.qn, r.buf, r.have = nil, 0, 0, 0, 32
			}
			i := uint32(0)
			for ; i+2 <= n; i += 2 {
				var w0, w1 uint32
				if !k.nextWord(&s, mask, &used, nbits, &w0, &st) {
					break
				}
				if !k.nextWord(&s, mask, &used, nbits, &w1, &st) {
					break
				}
				r.refill()
				r0 := uint32(r.buf) & 0xff
				r.skip(rawBits)
				r1 := uint32(r.buf) & 0xff
				r.skip(rawBits)
				v := assemble16(kind, w1, r1)<<16 | assemble16(kind, w0, r0)
				crc = k.crcWord(crc, v)
				o.put(v, 4)
			}
			if st == StatusOK && i < n {
				var w0 uint32
				if k.nextWord(&s, mask, &used, nbits, &w0, &st) {
					r.refill()
					v := assemble16(kind, w0, uint32(r.buf)&0xff)
					crc = k.crcHalf(crc, v)
					o.put(v, 2)
				}
			}
		}
		o.flush()
		if st == StatusOK && (used+7)/8 != end-start {
			st = StatusLeftover
		}
		if st == StatusOK && ^crc != want {
			st = StatusCRC
		}
	}
	binary.LittleEndian.PutUint32(k.status[4*(d.sb+g):], st)
	if st != StatusOK {
		binary.LittleEndian.PutUint32(k.summary, binary.LittleEndian.Uint32(k.summary)+1)
		if f := binary.LittleEndian.Uint32(k.summary[4:]); d.sb+g < f {
			binary.LittleEndian.PutUint32(k.summary[4:], d.sb+g)
		}
	}
}

// EmulateFile does on the CPU what a GPU load of one file does, with the
// kernel emulated: the layout's upload range read from the file into a
// padded packed buffer, the plan's kernel run into a data buffer, the CPU's
// bytes put in place. It returns the data buffer as the device would hold
// it.
func EmulateFile(l *Layout) ([]byte, error) {
	f, err := os.Open(l.Path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	up := make([]byte, l.UploadLen+PackedPad)
	copy(up[l.UploadLen:], "garbage, unread") // the device's pad is not cleared
	if _, err := f.ReadAt(up[:l.UploadLen], l.UploadOff); err != nil && !(errors.Is(err, io.EOF) && l.UploadLen == 0) {
		return nil, fmt.Errorf("%s: %w", l.Path, err)
	}
	if !l.Packed {
		return up[:l.UploadLen], nil
	}
	data := make([]byte, l.DataLen)
	if err := l.FillHost(); err != nil {
		return nil, err
	}
	for _, h := range l.Host {
		copy(data[h.Off:], h.Bytes)
	}
	if l.Plan != nil {
		status, failed, first, err := Emulate(l.Plan, up, data)
		if err != nil {
			return nil, err
		}
		if err := l.Plan.Check(status, failed, first); err != nil {
			return nil, fmt.Errorf("%s: %w", l.Path, err)
		}
	}
	return data, nil
}
