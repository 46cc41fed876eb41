package fsbench

import (
	"bufio"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
)

// FlipBlock and FlipsPerBlock shape the test file: every FlipBlock bytes
// get FlipsPerBlock bytes changed at pseudo-random places.
const (
	FlipBlock     = 64 << 10
	FlipsPerBlock = 8
)

// genReader streams the test file: round after round of the source files,
// concatenated in an order that changes each round (a seeded permutation),
// with FlipsPerBlock bytes XORed with a nonzero value in every
// FlipBlock-byte block, cut at size. The reordering moves file boundaries
// and the flips change most of glydfs's chunks (64 KiB on average), so a
// later round is no whole-chunk duplicate of an earlier one: glydfs has to
// delta-code or store it, and a read has to decode it, while each byte
// stays as compressible as the corpus. squashfs and glyd's single-file
// coder do not deduplicate inside a file, so the flips cost them nothing.
type genReader struct {
	files [][]byte
	size  int64
	seed  uint64

	pos   int64 // bytes produced so far
	round uint64
	order []int
	k     int   // index into order
	in    int64 // offset in files[order[k]]
}

func newGenReader(files [][]byte, size int64, seed uint64) (*genReader, error) {
	var round int64
	for _, f := range files {
		round += int64(len(f))
	}
	if round == 0 && size > 0 {
		return nil, errors.New("the test file needs non-empty source files")
	}
	g := &genReader{files: files, size: size, seed: seed}
	g.order = rand.New(rand.NewPCG(seed, 0)).Perm(len(files))
	return g, nil
}

func (g *genReader) Read(p []byte) (int, error) {
	if g.pos >= g.size {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), g.size-g.pos)]
	n := 0
	for n < len(p) {
		if g.k == len(g.order) {
			g.round++
			g.order = rand.New(rand.NewPCG(g.seed, g.round)).Perm(len(g.files))
			g.k, g.in = 0, 0
		}
		f := g.files[g.order[g.k]]
		c := copy(p[n:], f[g.in:])
		n += c
		g.in += int64(c)
		if g.in == int64(len(f)) {
			g.k, g.in = g.k+1, 0
		}
	}
	flip(p, g.pos, g.seed)
	g.pos += int64(n)
	return n, nil
}

// flip applies the file's byte flips to p, which holds the bytes at off.
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

// writeTestFile writes the generated file to path, synced, and returns
// its SHA-256.
func writeTestFile(path string, files [][]byte, size int64, seed uint64) ([32]byte, error) {
	var sum [32]byte
	g, err := newGenReader(files, size, seed)
	if err != nil {
		return sum, err
	}
	f, err := os.Create(path)
	if err != nil {
		return sum, err
	}
	h := sha256.New()
	w := bufio.NewWriterSize(io.MultiWriter(f, h), 1<<20)
	n, err := io.CopyBuffer(w, g, make([]byte, 1<<20))
	if err == nil {
		err = w.Flush()
	}
	if err == nil && n != size {
		err = fmt.Errorf("wrote %d bytes of %d", n, size)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	copy(sum[:], h.Sum(nil))
	return sum, err
}
