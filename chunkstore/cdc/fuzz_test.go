package cdc

import (
	"bytes"
	"io"
	"slices"
	"testing"
)

// fuzzParams maps three fuzzer bytes to parameters small enough that inputs
// of a few kilobytes hold many chunks: Avg near a power of two from 128 to
// 2048 (off by a few bytes, to exercise rounding), Min anywhere in [64, Avg),
// Max anywhere from just above Avg to Avg+4080. minB 255 with maxB 0 gives
// Min == Avg, invalid, to check that Split and New reject alike.
func fuzzParams(minB, avgB, maxB uint8) Params {
	avg := 128 << (avgB % 5)
	p := Params{
		Min: 64 + int(minB)*(avg-64)/256,
		Avg: avg + int(avgB>>5) - 4,
		Max: avg + 1 + int(maxB)*16,
	}
	if minB == 255 && maxB == 0 {
		p.Min = avg
	}
	return p
}

// FuzzSplit checks, for arbitrary data and parameters, that Split yields
// valid chunk sizes, agrees with the byte-at-a-time reference, and that a
// Chunker fed through fragmented reads yields the same boundaries.
func FuzzSplit(f *testing.F) {
	f.Add([]byte("hello, world"), uint8(0), uint8(0), uint8(64), uint8(1))
	f.Add(bytes.Repeat([]byte{0}, 5000), uint8(1), uint8(2), uint8(100), uint8(7))
	f.Add(randBytes(8192, 99), uint8(4), uint8(1), uint8(40), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, minB, avgB, maxB, readSize uint8) {
		p := fuzzParams(minB, avgB, maxB)
		if err := p.Validate(); err != nil {
			if _, err2 := New(bytes.NewReader(data), p); err2 == nil {
				t.Fatalf("%+v: Validate fails (%v) but New accepts", p, err)
			}
			defer func() {
				if recover() == nil {
					t.Fatalf("%+v: Validate fails (%v) but Split accepts", p, err)
				}
			}()
			Split(data, p)
			return
		}
		cuts := Split(data, p)
		checkCuts(t, cuts, len(data), p)
		if ref := refSplit(data, p); !slices.Equal(cuts, ref) {
			t.Fatalf("%+v: Split %v, reference %v", p, cuts, ref)
		}
		var r io.Reader = &fragReader{data: data, size: int(readSize)}
		if got := chunkerCuts(t, r, p); !slices.Equal(got, cuts) {
			t.Fatalf("%+v read %d at a time: Chunker %v, Split %v", p, readSize, got, cuts)
		}
	})
}

// fragReader returns at most size bytes per read, size+1 on every other
// read, and an empty read when size is 0 every third time.
type fragReader struct {
	data []byte
	size int
	n    int
}

func (r *fragReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	r.n++
	size := r.size + r.n%2
	if r.size == 0 && r.n%3 == 0 {
		size = 0
	}
	n := copy(p[:min(len(p), size)], r.data)
	r.data = r.data[n:]
	return n, nil
}
