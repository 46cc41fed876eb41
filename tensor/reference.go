package tensor

import "encoding/binary"

// DecodeReference decodes a span payload the plainest way, following
// docs/tensors.md step by step: per group, read the stream bit by bit,
// match canonical codes length by length, put the value together from its
// symbol and raw bits, and check the group's CRC. It is the model a GPU
// kernel follows (one thread per group) and the check for the fast
// decoder; it shares nothing with the fast decoder but the parsed table.
func DecodeReference(c *Code, values, groupLog2 int, payload []byte) ([]byte, error) {
	if groupLog2 < MinGroupLog2 || groupLog2 > MaxGroupLog2 || values <= 0 {
		return nil, corruptf("bad span geometry")
	}
	G := 1 << groupLog2
	ng := (values + G - 1) / G
	rs := c.Kind.RawSize()
	ws := c.Kind.WordSize()
	rawOff := 8*ng - 4
	head := rawOff + values*rs
	if head > len(payload) {
		return nil, corruptf("payload too short")
	}
	streams := payload[head:]

	// Canonical decoding tables: for each length, the first code, how many
	// codes, and where its symbols start in the list of symbols sorted by
	// (length, symbol).
	var count, firstCode, firstIndex [MaxCodeLen + 1]int
	var sorted []int
	sole := -1
	for s, l := range c.Lens {
		if l == soleLen {
			sole = s
		} else if l != 0 {
			count[l]++
		}
	}
	code, idx := 0, 0
	for l := 1; l <= MaxCodeLen; l++ {
		code = (code + count[l-1]) << 1
		firstCode[l], firstIndex[l] = code, idx
		idx += count[l]
	}
	sorted = make([]int, idx)
	fill := firstIndex
	for s, l := range c.Lens {
		if l != 0 && l != soleLen {
			sorted[fill[l]] = s
			fill[l]++
		}
	}

	out := make([]byte, values*ws)
	start := 0
	for g := range ng {
		end := len(streams)
		if g < ng-1 {
			end = int(binary.LittleEndian.Uint32(payload[4*g:]))
		}
		if end < start || end > len(streams) {
			return nil, corruptf("group %d: bad stream end", g)
		}
		stream := streams[start:end]
		bit := 0 // bits read from stream
		readBit := func() (int, bool) {
			if bit >= 8*len(stream) {
				return 0, false
			}
			b := int(stream[bit/8]>>(bit%8)) & 1
			bit++
			return b, true
		}
		first := g * G
		last := min(values, first+G)
		for i := first; i < last; i++ {
			sym := sole
			if sym < 0 {
				code := 0
				for l := 1; ; l++ {
					if l > MaxCodeLen {
						return nil, corruptf("group %d: no code matches", g)
					}
					b, ok := readBit()
					if !ok {
						return nil, corruptf("group %d: stream ends inside value %d", g, i-first)
					}
					code = code<<1 | b
					if code-firstCode[l] < count[l] {
						sym = sorted[firstIndex[l]+code-firstCode[l]]
						break
					}
				}
			}
			switch c.Kind {
			case BF16:
				r := uint16(payload[rawOff+i])
				w := (r>>7)<<15 | uint16(sym)<<7 | r&0x7f
				binary.LittleEndian.PutUint16(out[2*i:], w)
			case F16:
				binary.LittleEndian.PutUint16(out[2*i:], uint16(sym)<<8|uint16(payload[rawOff+i]))
			case F32:
				o := rawOff + 3*i
				r := uint32(payload[o]) | uint32(payload[o+1])<<8 | uint32(payload[o+2])<<16
				w := (r>>23)<<31 | uint32(sym)<<23 | r&0x7fffff
				binary.LittleEndian.PutUint32(out[4*i:], w)
			case V16:
				binary.LittleEndian.PutUint16(out[2*i:], c.Dict[sym])
			case B8:
				out[i] = byte(sym)
			}
		}
		if (bit+7)/8 != len(stream) {
			return nil, corruptf("group %d: %d bytes of stream left over", g, len(stream)-(bit+7)/8)
		}
		crc := binary.LittleEndian.Uint32(payload[4*(ng-1)+4*g:])
		if checksum(out[first*ws:last*ws]) != crc {
			return nil, corruptf("group %d: CRC mismatch", g)
		}
		start = end
	}
	return out, nil
}
