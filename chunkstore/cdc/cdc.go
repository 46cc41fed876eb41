// Package cdc splits byte streams into content-defined chunks for the chunk
// store.
//
// Fixed-size blocks deduplicate little across versions of a file: one
// inserted byte shifts every later block. Content-defined chunking places
// boundaries where the content itself says so — where a rolling hash of the
// last few dozen bytes matches a pattern — so an edit moves only the
// boundaries near it and every chunk after it is found again, byte for byte,
// in the old version.
//
// The algorithm is FastCDC (Xia et al., "FastCDC: a Fast and Efficient
// Content-Defined Chunking Approach for Data Deduplication", USENIX ATC 2016):
//
//   - a gear rolling hash, fp = fp<<1 + gear[b]: one shift, one add and one
//     table load per byte, and no sliding window to maintain, because the
//     shift ages every byte out of the 64-bit state after 64 steps;
//   - the judgement tests the TOP bits of fp (fp < 1<<(64-bits)). Bit k of a
//     gear hash depends only on the last k+1 bytes, so the low bits that the
//     naive "fp & mask" tests let a dozen bytes decide a cut, and short
//     patterns repeated in the data cut (or fail to) everywhere they occur;
//     the top bits see the full 64-byte window. This
//     plays the role of the paper's zero-padded masks, and one compare
//     replaces the AND and the test;
//   - cut-point skipping: no hashing at all in the first Min bytes of a
//     chunk, which both enforces the minimum and skips that share of the work;
//   - normalized chunking (level 2): between Min and Avg the judgement needs
//     log2(Avg)+2 zero bits (a cut is 4x rarer than nominal), after Avg it
//     needs log2(Avg)-2 (4x likelier). Chunk sizes bunch around Avg instead
//     of following a wide exponential distribution, which removes most of the
//     tiny chunks (metadata cost) and most of the forced cuts at Max (which
//     are not content-defined and so do not resynchronise after an edit);
//   - a hard maximum: a chunk that finds no boundary is cut at Max.
//
// Split cuts a byte slice; a Chunker cuts a stream through a buffer of 2*Max
// bytes. Both yield the same chunks for the same bytes.
//
// The gear table, the judgement and the parameters decide where chunks end,
// and chunk boundaries decide which chunks a store already holds: they are
// part of the on-disk format. cdc_test.go pins the table and the boundaries
// of a fixed input; changing either means a new chunker version, not an edit.
package cdc

import (
	"errors"
	"fmt"
	"math/bits"
)

// Limits on Params. The minimum is not a hashing constraint: a chunk much
// smaller than the per-chunk metadata (~100 bytes in the store) is pure
// overhead. The maximum bounds the memory of a Chunker (2*Max).
const (
	MinSizeLimit = 64
	MaxSizeLimit = 64 << 20
)

// normLevel is the normalization level: the strict judgement uses
// log2(Avg)+normLevel bits, the loose one log2(Avg)-normLevel. Level 2 is the
// middle of the levels the paper evaluates (1 to 3): the mean chunk lands at
// 1.1-1.25 x Avg and few chunks reach Min or Max, while higher levels tie
// cuts more to their distance from the last cut than to content, which
// costs deduplication.
const normLevel = 2

// Params are the chunk size bounds, in bytes. Every chunk but the last of a
// stream is at least Min and at most Max bytes long; sizes cluster around
// Avg. Avg is rounded to the nearest power of two (ties go down), since the
// judgement counts bits of the hash; Min and Max are used exactly.
type Params struct {
	Min, Avg, Max int
}

// DefaultParams returns 64 KiB average chunks, 16 KiB minimum, 256 KiB
// maximum, the chunk store's default (chunkstore.DefaultChunking). Chosen by
// measurement on consecutive releases of a source tree (docs/chunking.md):
// smaller chunks find more identical chunks, but larger ones code better on
// their own, cost less per-chunk metadata and index work, and the store
// delta-codes the near-identical chunks that small chunks would have matched
// exactly. Counting identical chunks only, 64 KiB stores within 7% of 4 KiB;
// through the store, with deltas, it stores less than 16 or 32 KiB.
func DefaultParams() Params {
	return Params{Min: 16 << 10, Avg: 64 << 10, Max: 256 << 10}
}

// roundPow2 rounds n > 0 to the nearest power of two, ties toward the
// smaller.
func roundPow2(n int) int {
	lo := 1 << (bits.Len(uint(n)) - 1)
	if lo == n {
		return n
	}
	if n-lo <= 2*lo-n {
		return lo
	}
	return 2 * lo
}

// Validate reports whether p can be used, after rounding Avg to a power of
// two: MinSizeLimit <= Min < Avg < Max <= MaxSizeLimit.
func (p Params) Validate() error {
	_, err := p.compile()
	return err
}

// ErrParams is wrapped by every error from Validate and New.
var ErrParams = errors.New("cdc: invalid params")

// config is a validated Params in the form the cut loop wants.
type config struct {
	min, normal, max int
	strict, loose    uint64 // a cut is allowed where fp < threshold
}

func (p Params) compile() (config, error) {
	if p.Min < MinSizeLimit || p.Max > MaxSizeLimit {
		return config{}, fmt.Errorf("%w: need %d <= Min and Max <= %d, have Min=%d Max=%d",
			ErrParams, MinSizeLimit, MaxSizeLimit, p.Min, p.Max)
	}
	if p.Avg <= 0 || p.Avg > MaxSizeLimit {
		return config{}, fmt.Errorf("%w: need 0 < Avg <= %d, have Avg=%d", ErrParams, MaxSizeLimit, p.Avg)
	}
	avg := roundPow2(p.Avg)
	if !(p.Min < avg && avg < p.Max) {
		if avg != p.Avg {
			return config{}, fmt.Errorf("%w: need Min < Avg < Max, have Min=%d Avg=%d (rounded to %d) Max=%d",
				ErrParams, p.Min, p.Avg, avg, p.Max)
		}
		return config{}, fmt.Errorf("%w: need Min < Avg < Max, have Min=%d Avg=%d Max=%d",
			ErrParams, p.Min, p.Avg, p.Max)
	}
	b := bits.Len(uint(avg)) - 1 // log2(avg); 7 <= b <= 25 given the limits
	return config{
		min:    p.Min,
		normal: avg,
		max:    p.Max,
		// fp < 1<<(64-k) iff the top k bits of fp are zero: probability 2^-k.
		strict: 1 << (64 - (b + normLevel)),
		loose:  1 << (64 - (b - normLevel)),
	}, nil
}

// Split returns the cut offsets of data: the end offset of each chunk, in
// order, the last one len(data). Empty data has no chunks (nil). The result
// depends only on data and p, and equals what a Chunker yields for the same
// bytes. Split panics if p is invalid (see Params.Validate): parameters are
// configuration, checked once where they are chosen.
func Split(data []byte, p Params) []int {
	c, err := p.compile()
	if err != nil {
		panic(err)
	}
	var cuts []int
	if len(data) > 0 {
		cuts = make([]int, 0, len(data)/c.normal+2)
	}
	for off := 0; off < len(data); {
		off += c.cut(data[off:])
		cuts = append(cuts, off)
	}
	return cuts
}

// cut returns the length of the chunk at the start of data. data must hold
// at least c.max bytes, or everything up to the end of the stream: the
// boundary never depends on bytes past c.max, which is what lets the Chunker
// decide with a bounded buffer and agree with Split.
func (c *config) cut(data []byte) int {
	n := len(data)
	if n <= c.min {
		return n
	}
	if n > c.max {
		n = c.max
	}
	normal := min(c.normal, n)
	// The hash restarts at zero at Min: bytes before it cannot hold a cut,
	// and after 64 bytes the state no longer remembers where it started.
	var fp uint64
	if i, ok := scan(data[c.min:normal], &fp, c.strict); ok {
		return c.min + i
	}
	if i, ok := scan(data[normal:n], &fp, c.loose); ok {
		return normal + i
	}
	return n
}

// scan rolls the hash over w and returns the length of the prefix of w that
// ends at the first position where fp < threshold, or ok == false.
//
// Two bytes per step: fp<<2 + (gear[b0]<<1 + gear[b1]) is the hash after
// both bytes, and only the shift and the final add depend on the previous
// state, which halves the loop-carried latency of one shift-add per byte.
// The intermediate hash is computed off that chain and tested too, so the
// result is exactly the byte-at-a-time one. The loop has no bounds checks:
// i < len(w)-1 proves both loads in range, and a byte indexes a [256] array.
func scan(w []byte, fpp *uint64, threshold uint64) (int, bool) {
	fp := *fpp
	for i := 0; i < len(w)-1; i += 2 {
		g0, g1 := gear[w[i]], gear[w[i+1]]
		mid := fp<<1 + g0
		fp = fp<<2 + (g0<<1 + g1)
		if mid < threshold {
			return i + 1, true
		}
		if fp < threshold {
			return i + 2, true
		}
	}
	if len(w)&1 == 1 { // one byte left over
		fp = fp<<1 + gear[w[len(w)-1]]
		if fp < threshold {
			return len(w), true
		}
	}
	*fpp = fp
	return 0, false
}
