package codec

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
)

// sample builds deterministic, compressible data of n bytes that mixes text,
// records and noise, so every block coding gets exercised.
func sample(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	words := []string{"glyd ", "chunk ", "unit ", "block ", "delta ", "store ", "fuse ", "read ", "write ", "\n"}
	b := make([]byte, 0, n)
	for len(b) < n {
		switch r.IntN(8) {
		case 0:
			for range 64 {
				b = append(b, byte(r.Uint32()))
			}
		case 1:
			b = append(b, bytes.Repeat([]byte{0}, r.IntN(300))...)
		default:
			for range 20 {
				b = append(b, words[r.IntN(len(words))]...)
			}
		}
	}
	return b[:n]
}

var tiers = []Tier{Default, Max, Cold}

func TestEncodeDecode(t *testing.T) {
	sizes := []int{0, 1, 100, BlockSize - 1, BlockSize, BlockSize + 1, 3<<20 + 17}
	if testing.Short() {
		sizes = sizes[:len(sizes)-1]
	}
	for _, n := range sizes {
		src := sample(n, uint64(n))
		for _, tier := range tiers {
			for _, us := range []int{0, MinUnitSize, 1 << 20} {
				enc, err := Encode(src, Options{Tier: tier, UnitSize: us, Threads: 2})
				if err != nil {
					t.Fatal(err)
				}
				got, err := Decode(enc, 2)
				if err != nil {
					t.Fatalf("n=%d tier=%v unit=%d: %v", n, tier, us, err)
				}
				if !bytes.Equal(got, src) {
					t.Fatalf("n=%d tier=%v unit=%d: decoded bytes differ", n, tier, us)
				}
			}
		}
	}
}

func TestStreamMatchesEncode(t *testing.T) {
	n := 5<<20 + 333
	if testing.Short() {
		n = 1<<20 + 333
	}
	src := sample(n, 3)
	for _, tier := range tiers {
		want, _ := Encode(src, Options{Tier: tier})
		var buf bytes.Buffer
		w, err := NewWriter(&buf, Options{Tier: tier, Threads: 3})
		if err != nil {
			t.Fatal(err)
		}
		// odd write sizes cross unit boundaries
		for p := src; len(p) > 0; {
			k := min(len(p), 77777)
			if _, err := w.Write(p[:k]); err != nil {
				t.Fatal(err)
			}
			p = p[k:]
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), want) {
			t.Fatalf("tier %v: Writer output differs from Encode", tier)
		}
		r := NewReader(bytes.NewReader(buf.Bytes()), 3)
		got, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, src) {
			t.Fatalf("tier %v: Reader output differs", tier)
		}
		var out bytes.Buffer
		if _, err := NewReader(bytes.NewReader(buf.Bytes()), 1).WriteTo(&out); err != nil || !bytes.Equal(out.Bytes(), src) {
			t.Fatalf("tier %v: WriteTo: %v", tier, err)
		}
	}
}

func TestReadFrom(t *testing.T) {
	src := sample(2<<20+5, 9)
	var buf bytes.Buffer
	w, _ := NewWriter(&buf, Options{})
	if _, err := w.ReadFrom(bytes.NewReader(src)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want, _ := Encode(src, Options{})
	if !bytes.Equal(buf.Bytes(), want) {
		t.Fatal("ReadFrom output differs from Encode")
	}
}

func TestReadAtRandomRanges(t *testing.T) {
	src := sample(6<<20+99, 5)
	enc, _ := Encode(src, Options{Tier: Max, UnitSize: 1 << 20})
	f, err := Open(bytes.NewReader(enc), int64(len(enc)), 2)
	if err != nil {
		t.Fatal(err)
	}
	if f.Size() != int64(len(src)) || f.CompressedSize() != int64(len(enc)) {
		t.Fatalf("sizes: %d %d", f.Size(), f.CompressedSize())
	}
	r := rand.New(rand.NewPCG(1, 1))
	for range 300 {
		off := r.Int64N(int64(len(src)))
		n := r.IntN(3 << 20)
		p := make([]byte, n)
		k, err := f.ReadAt(p, off)
		want := src[off:min(int64(len(src)), off+int64(n))]
		if k != len(want) || !bytes.Equal(p[:k], want) {
			t.Fatalf("ReadAt(%d, %d): got %d bytes, err %v", n, off, k, err)
		}
		if k < n && err != io.EOF {
			t.Fatalf("short read without EOF: %v", err)
		}
	}
	if _, err := f.ReadAt(make([]byte, 1), int64(len(src))); err != io.EOF {
		t.Fatalf("read at end: %v", err)
	}
}

// TestCorruption flips, truncates and replaces bytes all over a stream: every
// decoder path must fail with a format error, never panic, never return
// wrong bytes.
func TestCorruption(t *testing.T) {
	src := sample(700<<10, 11)
	for _, tier := range tiers {
		enc, _ := Encode(src, Options{Tier: tier, UnitSize: 256 << 10})
		r := rand.New(rand.NewPCG(uint64(tier), 3))
		check := func(name string, bad []byte) {
			t.Helper()
			got, err := Decode(bad, 2)
			if err == nil {
				if !bytes.Equal(got, src) {
					t.Fatalf("%s: wrong bytes returned without error", name)
				}
				return
			}
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("%s: error is not a format error: %v", name, err)
			}
			got, err = io.ReadAll(NewReader(bytes.NewReader(bad), 2))
			if err == nil && !bytes.Equal(got, src) {
				t.Fatalf("%s: stream reader returned wrong bytes", name)
			}
		}
		flips := 400
		if testing.Short() {
			flips = 60
		}
		for range flips {
			bad := bytes.Clone(enc)
			i := r.IntN(len(bad))
			bad[i] ^= byte(1 + r.IntN(255))
			check("flip", bad)
		}
		for _, cut := range []int{0, 1, 15, 16, 17, 40, len(enc) / 2, len(enc) - 17, len(enc) - 1} {
			check("truncate", enc[:cut])
		}
		// Decode may accept a flip that leaves the data intact (e.g. in a
		// reserved byte) but must never return other bytes.
	}
	if _, err := Decode([]byte("PK\x03\x04 this is a zip file, not glyd"), 1); !errors.Is(err, ErrFormat) {
		t.Fatalf("foreign input: %v", err)
	}
}

func TestUnitSizeRounding(t *testing.T) {
	for in, want := range map[int]int{0: 1 << 20, 1: MinUnitSize, 3 << 20: 2 << 20, 1 << 30: MaxUnitSize} {
		if got := (Options{UnitSize: in}).unitSize(); got != want {
			t.Errorf("unit size %d -> %d, want %d", in, got, want)
		}
	}
}

func TestTrailingDataRejected(t *testing.T) {
	enc, _ := Encode(sample(1000, 1), Options{})
	for _, bad := range [][]byte{append(bytes.Clone(enc), enc...), append(bytes.Clone(enc), 'x')} {
		if _, err := io.ReadAll(NewReader(bytes.NewReader(bad), 1)); !errors.Is(err, ErrFormat) {
			t.Fatalf("Reader: %v", err)
		}
		if _, err := Decode(bad, 1); !errors.Is(err, ErrFormat) {
			t.Fatalf("Decode: %v", err)
		}
	}
}
