package cdc

import (
	"bytes"
	"io"
	"testing"
)

// benchData is 8 MiB of pseudo-random bytes: the worst case for the cut
// loop's branch predictor is irrelevant (cuts are rare), so random data
// measures the per-byte cost of the hash.
func benchData() []byte { return randBytes(8<<20, 42) }

func BenchmarkSplit(b *testing.B) {
	data := benchData()
	for _, p := range []Params{
		{Min: 1 << 10, Avg: 4 << 10, Max: 16 << 10},
		{Min: 4 << 10, Avg: 16 << 10, Max: 64 << 10},
		{Min: 16 << 10, Avg: 64 << 10, Max: 256 << 10},
	} {
		b.Run(sizeName(p.Avg), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				Split(data, p)
			}
		})
	}
}

// BenchmarkCut measures the hash loop alone, without cut-point skipping: a
// single chunk search over Max bytes with no cut allowed until the end.
func BenchmarkCut(b *testing.B) {
	data := benchData()[:1<<20]
	c := config{min: MinSizeLimit, normal: len(data) / 2, max: len(data)} // thresholds 0: never cut
	b.SetBytes(int64(len(data) - c.min))
	for b.Loop() {
		if c.cut(data) != len(data) {
			b.Fatal("unexpected cut")
		}
	}
}

func BenchmarkChunker(b *testing.B) {
	data := benchData()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		k, _ := New(bytes.NewReader(data), DefaultParams())
		for {
			if _, err := k.Next(); err == io.EOF {
				break
			}
		}
	}
}
