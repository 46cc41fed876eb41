package delta

import (
	"errors"
	"io"

	"github.com/zeebo/blake3"

	"github.com/glyd/glyd/chunkstore/cdc"
	"github.com/glyd/glyd/codec"
)

// FileOptions configure EncodeFile.
type FileOptions struct {
	Tier    codec.Tier
	Threads int
}

// baseWindow is how much of the base around the matched chunk a piece may
// copy from: content often moved only a little, across a chunk boundary.
const baseWindow = 512 << 10

// EncodeFile writes newR coded against old (glyd --base OLD NEW): the new
// data is cut into content-defined chunks, and each is coded against the
// region of old around the chunk most like it, found by identical content
// or shared super-features wherever it moved in old. The result is a v7
// stream that needs old to decode (codec.File.SetBase, codec.NewReaderBase).
func EncodeFile(w io.Writer, old []byte, newR io.Reader, opts FileOptions) error {
	p := cdc.DefaultParams()
	cuts := cdc.Split(old, p)
	type span struct{ off, len int }
	spans := make([]span, len(cuts))
	byID := map[[32]byte]int{}
	bySF := map[uint64]int{}
	prev := 0
	for i, c := range cuts {
		spans[i] = span{prev, c - prev}
		piece := old[prev:c]
		byID[blake3.Sum256(piece)] = i
		for _, sf := range Compute(piece) {
			if sf != 0 {
				bySF[sf] = i // later chunks win: fine, any holder of the feature is similar
			}
		}
		prev = c
	}
	bw, err := codec.NewBaseWriter(w, old, codec.Options{Tier: opts.Tier, Threads: opts.Threads})
	if err != nil {
		return err
	}
	ch, err := cdc.New(newR, p)
	if err != nil {
		return err
	}
	// next is where in old the content after the last matched piece would
	// continue: a piece nothing matches (its chunk straddles old's chunk
	// boundaries, so no super-feature agrees) is coded against old there.
	// WritePiece keeps the plain coding when that guess does not pay.
	next := 0
	for {
		data, err := ch.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		piece := append([]byte(nil), data...)
		match := -1
		if i, ok := byID[blake3.Sum256(piece)]; ok {
			match = i
		} else {
			votes := map[int]int{}
			for _, sf := range Compute(piece) {
				if i, ok := bySF[sf]; ok && sf != 0 {
					votes[i]++
				}
			}
			best := 0
			for i, v := range votes {
				if v > best || v == best && i < match {
					match, best = i, v
				}
			}
		}
		center := next
		if match >= 0 {
			center = spans[match].off
			next = spans[match].off + spans[match].len
		} else {
			next += len(piece)
		}
		// the region around the match (or the guess), as much as fits
		var off, n int64
		if len(old) > 0 {
			room := min(baseWindow, codec.MaxChunk-len(piece))
			lo := max(0, center-(room-len(piece))/2)
			hi := min(len(old), lo+room)
			lo = max(0, hi-room)
			off, n = int64(lo), int64(hi-lo)
		}
		if err := bw.WritePiece(piece, off, n); err != nil {
			return err
		}
	}
	return bw.Close()
}
