package lz

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// FuzzDecodeBlock feeds arbitrary bytes to the block decoder. It must never
// panic, and the dispatching decoder (assembly where built) must agree with
// the pure Go one: the same error or the same bytes.
func FuzzDecodeBlock(f *testing.F) {
	src := []byte("the quick brown fox jumps over the lazy dog; the quick brown fox jumps again and again and again")
	for _, lv := range []Level{Fast, Lazy} {
		for _, ent := range []bool{false, true} {
			e := NewEncoder(lv, ent)
			e.StartUnit(len(src))
			f.Add(uint16(len(src)), lv == Fast, e.EncodeBlock(nil, src, 0, len(src)))
		}
	}
	f.Fuzz(func(t *testing.T, n uint16, narrow bool, blk []byte) {
		size := int(n) % (MaxBlock + 1)
		layout := Wide
		if narrow {
			layout = Narrow
		}
		a := make([]byte, size+40)
		b := make([]byte, size+40)
		d := NewDecoder()
		errA := d.DecodeBlock(a, 0, size, blk, layout)
		errB := decodeGoOnly(b, size, blk, layout)
		if (errA == nil) != (errB == nil) {
			t.Fatalf("decoders disagree: %v vs %v", errA, errB)
		}
		if errA == nil && !bytes.Equal(a[:size], b[:size]) {
			t.Fatal("decoders return different bytes")
		}
	})
}

// decodeGoOnly decodes with the pure Go sequence loop.
func decodeGoOnly(dst []byte, n int, blk []byte, layout Layout) error {
	saved := goOnly
	goOnly = true
	defer func() { goOnly = saved }()
	return NewDecoder().DecodeBlock(dst, 0, n, blk, layout)
}

// FuzzRoundTrip encodes arbitrary data at every level and decodes it back.
func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte("abcabcabcabcabcabcabcabcabcabcabcabcabc"))
	f.Add(bytes.Repeat([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8}, 100))
	f.Fuzz(func(t *testing.T, src []byte) {
		if len(src) > MaxBlock {
			src = src[:MaxBlock]
		}
		for _, lv := range []Level{Fast, Lazy, Deep} {
			for _, ent := range []bool{false, true} {
				e := NewEncoder(lv, ent)
				e.StartUnit(len(src))
				blk := e.EncodeBlock(nil, src, 0, len(src))
				if e.GaveUp() {
					continue // stored raw by the container
				}
				dst := make([]byte, len(src))
				if err := NewDecoder().DecodeBlock(dst, 0, len(src), blk, e.Layout()); err != nil {
					t.Fatalf("level %d entropy %v: %v", lv, ent, err)
				}
				if !bytes.Equal(dst, src) {
					t.Fatalf("level %d entropy %v: round trip differs", lv, ent)
				}
			}
		}
	})
}

func TestFastStateLayoutIsStable(t *testing.T) {
	// decode_amd64.s hard-codes these offsets.
	type layout struct {
		dst, tok, off0, off1, lit, ext, off2  unsafe.Pointer
		ntok, litLimit, outLimit, next, noff2 int
		op, ti, li, ei, o2, rep               int
		a, b, c                               uintptr
	}
	if unsafe.Sizeof(cursor{}) != 6*8 || unsafe.Sizeof(layout{}) != 168 {
		t.Fatal("fastState layout changed: update decode_amd64.s")
	}
}

// TestAsmMatchesGoOnMutations damages valid blocks (the fuzzer rarely builds
// blocks long enough to reach the assembly loop) and checks that both
// decoders agree on every one.
func TestAsmMatchesGoOnMutations(t *testing.T) {
	src := testInputs(t)["text"][:MaxBlock]
	for _, lv := range []Level{Fast, Lazy} {
		e := NewEncoder(lv, false)
		e.StartUnit(len(src))
		blk := e.EncodeBlock(nil, src, 0, len(src))
		r := newRand(uint64(lv))
		for range 3000 {
			bad := bytes.Clone(blk)
			for range 1 + r.IntN(4) {
				bad[r.IntN(len(bad))] ^= byte(1 + r.IntN(255))
			}
			a := make([]byte, len(src)+40)
			b := make([]byte, len(src)+40)
			errA := NewDecoder().DecodeBlock(a, 0, len(src), bad, e.Layout())
			errB := decodeGoOnly(b, len(src), bad, e.Layout())
			if (errA == nil) != (errB == nil) || (errA == nil && !bytes.Equal(a[:len(src)], b[:len(src)])) {
				t.Fatalf("decoders disagree: %v vs %v", errA, errB)
			}
		}
	}
}

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 99)) }

// FuzzDecodeBlockAfter decodes arbitrary blocks against a history held
// outside the buffer, cut in two at a fuzzed place, and against the same
// history in front of the output: the two forms must agree (the same
// error or the same bytes), and neither may panic.
func FuzzDecodeBlockAfter(f *testing.F) {
	hist := bytes.Repeat([]byte("history: the quick brown fox jumps over the lazy dog. "), 40)
	target := append(append([]byte("new: "), hist[100:700]...), hist[1500:1600]...)
	for _, lv := range []Level{Fast, Lazy, Deep} {
		e := NewEncoder(lv, true)
		buf := append(bytes.Clone(hist), target...)
		e.StartUnit(len(buf))
		e.Prime(buf, len(hist))
		f.Add(uint16(len(target)), uint16(len(hist)/2), e.EncodeBlock(nil, buf, len(hist), len(buf)))
	}
	f.Fuzz(func(t *testing.T, n, cut uint16, blk []byte) {
		size := int(n) % (MaxBlock + 1)
		k := int(cut) % (len(hist) + 1)
		whole := make([]byte, len(hist)+size+40)
		copy(whole, hist)
		errIn := NewDecoder().DecodeBlock(whole, len(hist), size, blk, Wide)
		for _, goLoop := range []bool{false, true} {
			out := make([]byte, size+40)
			goOnly = goLoop
			errOut := NewDecoder().DecodeBlockAfter(out, 0, size, blk, Wide, [][]byte{hist[:k], hist[k:]})
			goOnly = false
			if (errIn == nil) != (errOut == nil) {
				t.Fatalf("history inside and outside disagree (go loop %v): %v vs %v", goLoop, errIn, errOut)
			}
			if errIn == nil && !bytes.Equal(out[:size], whole[len(hist):len(hist)+size]) {
				t.Fatalf("history inside and outside decode different bytes (go loop %v)", goLoop)
			}
		}
	})
}
