package storebench

import (
	"errors"
	"io"
	"math/rand/v2"
	"sort"
)

// FlipBlock and FlipsPerBlock shape the large object: every FlipBlock bytes
// get FlipsPerBlock bytes changed at pseudo-random places.
const (
	FlipBlock     = 64 << 10
	FlipsPerBlock = 8
)

// bigObject is the large object of the random-read test, addressable at
// any offset: round after round of every corpus file, concatenated in an
// order that changes each round (a seeded permutation), with FlipsPerBlock
// bytes XORed with a nonzero value in every FlipBlock-byte block. The
// reordering moves file boundaries; the flips change most chunks (at the
// store's 16 KiB average chunk, about 2 flips per chunk), so the store has
// to delta-code or store most of the object instead of finding it again
// whole, while each byte stays as compressible as the corpus.
type bigObject struct {
	files [][]byte
	round int64 // bytes in one round (the sum of the files' lengths)
	size  int64
	seed  uint64

	cacheRound int64 // the round whose order and offsets are cached
	order      []int
	starts     []int64 // starts[i]: offset in the round of order[i]
}

func newBigObject(files [][]byte, size int64, seed uint64) (*bigObject, error) {
	b := &bigObject{files: files, size: size, seed: seed, cacheRound: -1}
	for _, f := range files {
		b.round += int64(len(f))
	}
	if b.round == 0 && size > 0 {
		return nil, errors.New("the large object needs non-empty corpus files")
	}
	return b, nil
}

// layout caches the file order of round r and where each file starts.
func (b *bigObject) layout(r int64) {
	if b.cacheRound == r {
		return
	}
	rng := rand.New(rand.NewPCG(b.seed, uint64(r)))
	b.order = rng.Perm(len(b.files))
	b.starts = b.starts[:0]
	var off int64
	for _, i := range b.order {
		b.starts = append(b.starts, off)
		off += int64(len(b.files[i]))
	}
	b.cacheRound = r
}

// ReadAt fills p with the object's bytes at off. Not safe for concurrent
// use (it caches a round's layout).
func (b *bigObject) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	if off >= b.size {
		return 0, io.EOF
	}
	n := len(p)
	if int64(n) > b.size-off {
		n = int(b.size - off)
	}
	for done := 0; done < n; {
		pos := off + int64(done)
		r, in := pos/b.round, pos%b.round
		b.layout(r)
		k := sort.Search(len(b.starts), func(i int) bool { return b.starts[i] > in }) - 1
		for ; k < len(b.order) && done < n; k++ {
			f := b.files[b.order[k]]
			from := in - b.starts[k]
			if from >= int64(len(f)) {
				in = b.starts[k] + int64(len(f))
				continue
			}
			c := copy(p[done:n], f[from:])
			done += c
			in += int64(c)
		}
	}
	flip(p[:n], off, b.seed)
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// flip applies the object's byte flips to p, which holds the bytes at off.
func flip(p []byte, off int64, seed uint64) {
	end := off + int64(len(p))
	for blk := off / FlipBlock; blk*FlipBlock < end; blk++ {
		for k := range uint64(FlipsPerBlock) {
			h := mix(seed ^ mix(uint64(blk)*FlipsPerBlock+k))
			pos := blk*FlipBlock + int64(h%FlipBlock)
			if pos >= off && pos < end {
				p[pos-off] ^= byte(h>>32) | 1
			}
		}
	}
}

// mix is splitmix64's finalizer.
func mix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// Reader streams the whole object.
func (b *bigObject) Reader() io.Reader { return io.NewSectionReader(b, 0, b.size) }
