// Package delta finds which stored chunk a new chunk resembles and codes the
// new chunk against it.
//
// Resemblance uses super-features (Shilane et al., "WAN Optimized Replication
// of Backup Datasets Using Stream-Informed Delta Compression", FAST 2012): a
// rolling hash is sampled along the chunk, NumFeatures independent linear
// transforms of it keep their maxima (each maximum is a min-hash of the
// chunk's content), and groups of features are hashed into super-features.
// Two chunks that share a super-feature very likely share most of their
// content, wherever in the chunk it moved; the store indexes super-features
// to find candidates with one lookup each.
//
// The delta itself is the v7 codec with the base as LZ history
// (codec.EncodeDelta), so moved, duplicated and edited content all become
// copies from the base.
package delta

import (
	"encoding/binary"
	"math/bits"

	"github.com/glyd/glyd/codec"
)

const (
	// NumSuperFeatures is how many super-features a sketch holds.
	NumSuperFeatures = 3
	featuresPerSF    = 4
	numFeatures      = NumSuperFeatures * featuresPerSF
	// sampleMask picks one rolling-hash position in 8 (by its low bits):
	// enough samples for the maxima to be stable, an eighth of the work.
	sampleMask = 7
)

// Sketch is a chunk's super-features.
type Sketch [NumSuperFeatures]uint64

// NumFeatures is how many features a chunk has, and how many keys
// FeatureKeys gives it.
const NumFeatures = numFeatures

// Keys are a chunk's features, each hashed with its number into an index
// key. Where a super-feature matches only when four features all do, one
// key matches on its own: a chunk that holds part of a stored chunk (a
// boundary moved, two stored chunks' content met in one new chunk) still
// shares a feature with it in proportion to what it holds, where it
// shares no super-feature. Stores of format 2 index these.
type Keys [NumFeatures]uint64

// FeatureKeys returns data's keys; all zero for a chunk shorter than 64
// bytes, which the store never indexes.
func FeatureKeys(data []byte) Keys {
	var k Keys
	if len(data) < 64 {
		return k
	}
	feat := Features(data)
	var buf [16]byte
	for j, f := range feat {
		binary.LittleEndian.PutUint64(buf[:], f)
		binary.LittleEndian.PutUint64(buf[8:], uint64(j))
		k[j] = mix(buf[:])
	}
	return k
}

// transforms are the fixed (odd multiplier, addend) pairs of the features.
// They are part of every store's sketch index: never change them.
var transforms = func() (t [numFeatures][2]uint64) {
	x := uint64(0x9E3779B97F4A7C15)
	next := func() uint64 { // splitmix64
		x += 0x9E3779B97F4A7C15
		z := x
		z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
		z = (z ^ (z >> 27)) * 0x94D049BB133111EB
		return z ^ (z >> 31)
	}
	for i := range t {
		t[i] = [2]uint64{next() | 1, next()}
	}
	return t
}()

// gear is the rolling hash's byte table (as FastCDC's): a window of the
// last 64 bytes shapes each value.
var gear = func() (g [256]uint64) {
	x := uint64(0x2545F4914F6CDD1D)
	for i := range g {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		g[i] = x
	}
	return g
}()

// Compute returns the sketch of data. Chunks shorter than 64 bytes get an
// all-zero sketch, which the store never indexes.
//
// It runs in two passes over blocks of the chunk: the rolling hash at
// every position, keeping the sampled values without a branch (one
// position in 8 at random is a branch mispredicted at every sample), then
// each feature's maximum over those samples, a transform at a time in two
// independent lanes. The sketch is
// the same, bit for bit, as the plain loop's (computeRef in the tests):
// stores index it.
func Compute(data []byte) Sketch {
	if len(data) < 64 {
		return Sketch{}
	}
	feat := Features(data)
	return superFeatures(&feat)
}

// Features returns data's features: the maxima of the transforms of its
// sampled rolling hashes (all zero when shorter than 64 bytes).
func Features(data []byte) (feat [NumFeatures]uint64) {
	if len(data) < 64 {
		return feat
	}
	var h uint64
	for _, b := range data[:63] {
		h = h<<1 + gear[b]
	}
	var samples [sampleBlock]uint64
	for rest := data[63:]; len(rest) > 0; {
		blk := rest[:min(len(rest), sampleBlock)]
		rest = rest[len(blk):]
		// n < len(blk) <= sampleBlock: the masks only spare bounds checks.
		const m = sampleBlock - 1
		n, i := 0, 0
		for ; i+4 <= len(blk); i += 4 {
			q := blk[i : i+4 : i+4]
			h = h<<1 + gear[q[0]]
			samples[n&m] = h
			n += int((h&sampleMask - 1) >> 63) // 1 when h&sampleMask == 0
			h = h<<1 + gear[q[1]]
			samples[n&m] = h
			n += int((h&sampleMask - 1) >> 63)
			h = h<<1 + gear[q[2]]
			samples[n&m] = h
			n += int((h&sampleMask - 1) >> 63)
			h = h<<1 + gear[q[3]]
			samples[n&m] = h
			n += int((h&sampleMask - 1) >> 63)
		}
		for _, b := range blk[i:] {
			h = h<<1 + gear[b]
			samples[n&m] = h
			n += int((h&sampleMask - 1) >> 63)
		}
		maxFeatures(&feat, samples[:n])
	}
	return feat
}

// superFeatures hashes each group of features into a super-feature.
func superFeatures(feat *[numFeatures]uint64) Sketch {
	var s Sketch
	var buf [featuresPerSF * 8]byte
	for k := range s {
		for j := range featuresPerSF {
			binary.LittleEndian.PutUint64(buf[j*8:], feat[k*featuresPerSF+j])
		}
		s[k] = mix(buf[:])
	}
	return s
}

// sampleBlock is the positions one pass of Compute hashes before it
// updates the features: the samples fit the first-level cache.
const sampleBlock = 1024

// maxFeatures raises each feature to its transform's maximum over samples,
// a transform a pass, in two independent lanes (max compiles to a
// conditional move, whose latency one lane would wait on).
func maxFeatures(feat *[numFeatures]uint64, samples []uint64) {
	odd := len(samples) & 1
	pairs := samples[odd:]
	for j := range feat {
		m, a := transforms[j][0], transforms[j][1]
		f0, f1 := feat[j], feat[j]
		if odd != 0 {
			f0 = max(f0, samples[0]*m+a)
		}
		for i := 0; i+1 < len(pairs); i += 2 {
			p := pairs[i : i+2 : i+2]
			f0 = max(f0, p[0]*m+a)
			f1 = max(f1, p[1]*m+a)
		}
		feat[j] = max(f0, f1)
	}
}

// mix hashes a super-feature's features to 64 bits.
func mix(b []byte) uint64 {
	h := uint64(0xCBF29CE484222325)
	for i := 0; i < len(b); i += 8 {
		h ^= binary.LittleEndian.Uint64(b[i:])
		hi, lo := bits.Mul64(h, 0x9FB21C651E98DF25)
		h = hi ^ lo
	}
	return h | 1 // 0 means "no feature"
}

// Shared counts the super-features two sketches have in common.
func Shared(a, b Sketch) int {
	n := 0
	for i := range a {
		if a[i] != 0 && a[i] == b[i] {
			n++
		}
	}
	return n
}

// Pays is the rule for keeping a delta: it must be clearly smaller than the
// chunk compressed alone (at most 80% of it), since every delta costs a
// read of its base.
func Pays(deltaLen, aloneLen int) bool { return deltaLen*5 <= aloneLen*4 }

// EncodeTo appends to dst the frame of target coded against bases (one
// or more chunks, as history in that order), whether or not it pays; false
// when they are too large to code together.
func EncodeTo(dst, target []byte, tier codec.Tier, bases ...[]byte) ([]byte, bool) {
	n := len(target)
	for _, b := range bases {
		n += len(b)
	}
	if n > codec.MaxChunk {
		return dst, false
	}
	return codec.EncodeDeltaFrom(dst, bases, target, tier), true
}

// Judge decides whether a delta frame of Target is worth keeping against
// AloneLen, the size of Target coded alone: it must pay, and where the base
// did not clearly do the work (the delta is over 60% of the chunk alone),
// it must also pay against the same (harder-parsing) coder without the
// base, so a delta is kept only for what the base gave. That coder makes a
// chunk ~11% smaller than the default tier does; on the corpus every delta
// this second test turned down was in that band, and coding the chunk a
// third time for the deltas below it took a tenth of a put's CPU. One Judge
// serves all the deltas tried for a target: the target coded without a
// base is coded once, when first needed.
type Judge struct {
	Target   []byte
	AloneLen int
	Tier     codec.Tier
	lazyLen  int // the target coded by the delta coder without a base; 0 until needed
}

// Keep reports whether delta frame fr of the judge's target is kept.
func (j *Judge) Keep(fr []byte) bool {
	if !Pays(len(fr), j.AloneLen) {
		return false
	}
	if len(fr)*10 <= j.AloneLen*6 {
		return true
	}
	if j.lazyLen == 0 {
		j.lazyLen = len(codec.EncodeDelta(nil, nil, j.Target, j.Tier))
	}
	return Pays(len(fr), j.lazyLen)
}

// Decode decodes a delta frame against its bases, given in the order it
// was coded against them.
func Decode(frame []byte, bases ...[]byte) ([]byte, error) {
	info, err := codec.InspectChunk(frame)
	if err != nil {
		return nil, err
	}
	out := make([]byte, info.RawLen)
	return out, codec.DecodeChunkFrom(out, frame, bases)
}
