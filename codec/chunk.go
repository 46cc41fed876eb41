package codec

// Chunks: the chunk store keeps every chunk as one bare v7 unit frame (the
// unit header, its block headers and payloads, each block with its CRC-32C),
// without the stream header, seek index and trailer that a file needs: a
// chunk is found by its id, not by seeking, and those 84 bytes would be a
// real share of a small delta.

// MaxChunk is the largest chunk EncodeChunk takes.
const MaxChunk = MaxUnitSize

// EncodeChunk appends src coded as one unit frame to dst.
func EncodeChunk(dst, src []byte, tier Tier) []byte {
	if len(src) > MaxChunk {
		panic("codec: chunk larger than a unit")
	}
	return encodeUnit(dst, src, tier)
}

// EncodeDelta appends target coded as one unit frame whose blocks copy from
// base (coding 18, delta): DecodeChunk needs the same base to decode it.
// base and target together must fit a unit's reach (MaxChunk).
func EncodeDelta(dst, base, target []byte, tier Tier) []byte {
	if len(base)+len(target) > MaxChunk {
		panic("codec: base and target larger than a unit")
	}
	return encodeDeltaUnit(dst, base, target, tier, baseRef{})
}

// EncodeDeltaFrom is EncodeDelta against the concatenation of bases, in
// order: a chunk whose content is spread over several stored chunks is coded
// against all of them at once. DecodeChunkFrom decodes it with the same
// bases in the same order. The frame is the same as EncodeDelta's against
// the concatenated bytes.
func EncodeDeltaFrom(dst []byte, bases [][]byte, target []byte, tier Tier) []byte {
	if basesLen(bases)+len(target) > MaxChunk {
		panic("codec: bases and target larger than a unit")
	}
	return encodeDeltaUnitFrom(dst, bases, target, tier, baseRef{})
}

func basesLen(bases [][]byte) int {
	n := 0
	for _, b := range bases {
		n += len(b)
	}
	return n
}

// ChunkInfo is what a chunk frame's header says.
type ChunkInfo struct {
	RawLen int
	Delta  bool // some block needs the base it was coded against
}

// InspectChunk checks a chunk frame's headers without decoding it.
func InspectChunk(frame []byte) (ChunkInfo, error) {
	uh, err := chunkHeader(frame)
	if err != nil {
		return ChunkInfo{}, err
	}
	info := ChunkInfo{RawLen: uh.rawLen}
	fr := frame[unitHeaderSize:]
	for b := 0; b < uh.blocks; b++ {
		if len(fr) < blockHeaderSize {
			return info, formatErr(0, b, -1, "truncated block header")
		}
		h := parseBlockHeader(fr)
		if h.compLen > len(fr)-blockHeaderSize {
			return info, formatErr(0, b, -1, "block payload runs past the chunk")
		}
		info.Delta = info.Delta || h.coding == CodingDelta
		fr = fr[blockHeaderSize+h.compLen:]
	}
	return info, nil
}

func chunkHeader(frame []byte) (unitHeader, error) {
	if len(frame) < unitHeaderSize || frame[0] != frameUnit {
		return unitHeader{}, formatErr(0, -1, 0, "not a chunk frame")
	}
	uh, err := parseUnitHeader(frame, 0, 0)
	if err != nil {
		return uh, err
	}
	if uh.compLen != len(frame)-unitHeaderSize {
		return uh, formatErr(0, -1, 0, "chunk frame holds %d bytes, header says %d", len(frame)-unitHeaderSize, uh.compLen)
	}
	return uh, nil
}

// DecodeChunk decodes a chunk frame, checking every block's CRC. base is the
// chunk a delta frame was coded against (nil for a plain chunk).
func DecodeChunk(frame, base []byte) ([]byte, error) {
	uh, err := chunkHeader(frame)
	if err != nil {
		return nil, err
	}
	out := make([]byte, uh.rawLen)
	return out, decodeChunk(out, frame, [][]byte{base}, uh)
}

// DecodeChunkTo decodes a chunk frame into dst, which must hold exactly the
// chunk's length (a caller that recycles its buffers knows it from its own
// records): the decode then touches no fresh memory.
func DecodeChunkTo(dst, frame, base []byte) error {
	return DecodeChunkFrom(dst, frame, [][]byte{base})
}

// DecodeChunkFrom is DecodeChunkTo for a frame coded by EncodeDeltaFrom:
// bases are the same chunks in the same order.
func DecodeChunkFrom(dst, frame []byte, bases [][]byte) error {
	uh, err := chunkHeader(frame)
	if err != nil {
		return err
	}
	if uh.rawLen != len(dst) {
		return formatErr(0, -1, 0, "chunk of %d bytes, %d expected", uh.rawLen, len(dst))
	}
	return decodeChunk(dst, frame, bases, uh)
}

func decodeChunk(out, frame []byte, bases [][]byte, uh unitHeader) error {
	histLen := basesLen(bases)
	if histLen+uh.rawLen > MaxChunk {
		return formatErr(0, -1, 0, "base of %d bytes too large for a chunk of %d", histLen, uh.rawLen)
	}
	if histLen == 0 {
		bases = nil // an empty base is no base: a delta block then fails
	}
	// A delta's bases are its history, read where they lie: the decoder
	// reaches into them (lz.DecodeBlockAfter) rather than having them
	// copied in front of the output.
	return decodeUnitAfter(out, bases, frame[unitHeaderSize:], uh, 0, 0, baseRef{})
}
