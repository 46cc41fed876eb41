package lz

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// testInputs are small but varied: text-like, binary-like, runs, random.
func testInputs(t testing.TB) map[string][]byte {
	r := rand.New(rand.NewPCG(1, 2))
	in := map[string][]byte{"empty": {}, "one": {7}, "short": []byte("abcabcabcabcabc")}
	rnd := make([]byte, 300<<10)
	for i := range rnd {
		rnd[i] = byte(r.Uint32())
	}
	in["random"] = rnd
	zeros := make([]byte, 300<<10)
	in["zeros"] = zeros
	// short periods (offsets 1-7) between literals, for the tiny-offset copy
	var per []byte
	for p := 1; len(per) < 200<<10; p = p%9 + 1 {
		per = append(per, byte(r.Uint32()), byte(r.Uint32()), byte(r.Uint32()))
		pat := make([]byte, p)
		for j := range pat {
			pat[j] = byte(r.Uint32())
		}
		for range 3 + r.IntN(60) {
			per = append(per, pat...)
		}
	}
	in["periodic"] = per
	var words []string
	for range 500 {
		n := 2 + r.IntN(8)
		w := make([]byte, n)
		for j := range w {
			w[j] = 'a' + byte(r.IntN(26))
		}
		words = append(words, string(w))
	}
	var text bytes.Buffer
	for text.Len() < 700<<10 {
		text.WriteString(words[int(r.ExpFloat64()*40)%len(words)])
		if r.IntN(10) == 0 {
			text.WriteByte('\n')
		} else {
			text.WriteByte(' ')
		}
	}
	in["text"] = text.Bytes()
	rec := make([]byte, 0, 500<<10)
	for i := 0; len(rec) < 500<<10; i++ {
		rec = append(rec, byte(i), byte(i>>8), 0, 0, 1, 2, byte(r.IntN(4)), 0xff, 'r', 'e', 'c', byte(i%7))
	}
	in["records"] = rec
	// a real file when present, so the test sees machine code too
	if exe, err := os.Executable(); err == nil {
		if b, err := os.ReadFile(exe); err == nil && len(b) > 1<<20 {
			in["exe"] = b[:1<<20]
		}
	}
	_ = filepath.Join
	return in
}

// roundTrip encodes src as one unit of blocks and decodes it back.
func roundTrip(t testing.TB, e *Encoder, d *Decoder, src []byte) (int, []byte) {
	e.StartUnit(len(src))
	var blocks [][]byte
	for start := 0; start < len(src); start += MaxBlock {
		end := min(start+MaxBlock, len(src))
		b := e.EncodeBlock(nil, src, start, end)
		if e.GaveUp() {
			b = nil // stored raw, as the container does
		}
		blocks = append(blocks, b)
	}
	dst := make([]byte, len(src))
	size := 0
	for i, b := range blocks {
		start := i * MaxBlock
		end := min(start+MaxBlock, len(src))
		if b == nil {
			size += end - start
			copy(dst[start:end], src[start:end])
			continue
		}
		size += len(b)
		if err := d.DecodeBlock(dst, start, end-start, b, e.Layout()); err != nil {
			t.Fatalf("block %d: %v", i, err)
		}
	}
	return size, dst[:len(src)]
}

func TestRoundTrip(t *testing.T) {
	for name, src := range testInputs(t) {
		for _, lv := range []Level{Fast, Lazy, Deep} {
			for _, ent := range []bool{false, true} {
				e, d := NewEncoder(lv, ent), NewDecoder()
				size, got := roundTrip(t, e, d, src)
				if !bytes.Equal(got, src) {
					t.Fatalf("%s level %d entropy %v: round trip differs", name, lv, ent)
				}
				t.Logf("%-8s level %d entropy %-5v %8d -> %8d", name, lv, ent, len(src), size)
			}
		}
	}
}

func TestGivesUpOnNoise(t *testing.T) {
	in := testInputs(t)
	for _, lv := range []Level{Fast, Lazy, Deep} {
		for _, ent := range []bool{false, true} {
			e := NewEncoder(lv, ent)
			e.StartUnit(MaxBlock)
			b := e.EncodeBlock(nil, in["random"], 0, MaxBlock)
			switch {
			case !ent && (!e.GaveUp() || len(b) != 0):
				t.Errorf("level %d: random data: gave up %v, %d bytes", lv, e.GaveUp(), len(b))
			case ent && lv != Fast && (e.GaveUp() || len(b) < MaxBlock):
				// the rest of the block became literals for the Huffman
				// stage, which found nothing to save either
				t.Errorf("level %d with entropy: gave up %v, %d bytes", lv, e.GaveUp(), len(b))
			}
			e.StartUnit(MaxBlock)
			if e.EncodeBlock(nil, in["text"], 0, MaxBlock); e.GaveUp() {
				t.Errorf("level %d gave up on text", lv)
			}
		}
	}
}

func TestDecodeGoMatchesDispatch(t *testing.T) {
	src := testInputs(t)["text"]
	e := NewEncoder(Lazy, false)
	e.StartUnit(len(src))
	blk := e.EncodeBlock(nil, src, 0, MaxBlock)
	d := NewDecoder()
	a := make([]byte, MaxBlock)
	if err := d.DecodeBlock(a, 0, MaxBlock, blk, e.Layout()); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a[:MaxBlock], src[:MaxBlock]) {
		t.Fatal("decode differs")
	}
}

func TestReuseWithoutTableFails(t *testing.T) {
	src := testInputs(t)["text"][:MaxBlock]
	e := NewEncoder(Lazy, true)
	e.StartUnit(len(src))
	blk := e.EncodeBlock(nil, src, 0, len(src))
	_, k := binary.Uvarint(blk)
	if blk[k] != ModeHuf4 {
		t.Fatalf("tokens stream mode %d, want huf4", blk[k])
	}
	bad := bytes.Clone(blk)
	bad[k] = ModeHuf4Reuse
	err := NewDecoder().DecodeBlock(make([]byte, len(src)), 0, len(src), bad, e.Layout())
	if err == nil || !strings.Contains(err.Error(), "never had") {
		t.Fatalf("reuse without a table: %v", err)
	}
	// With a table from the unit's first block, a later block may reuse it.
	e.StartUnit(2 * len(src))
	two := append(bytes.Clone(src), src...)
	b0 := e.EncodeBlock(nil, two, 0, MaxBlock)
	b1 := e.EncodeBlock(nil, two, MaxBlock, 2*MaxBlock)
	d := NewDecoder()
	out := make([]byte, len(two))
	if err := d.DecodeBlock(out, 0, MaxBlock, b0, e.Layout()); err != nil {
		t.Fatal(err)
	}
	if err := d.DecodeBlock(out, MaxBlock, MaxBlock, b1, e.Layout()); err != nil || !bytes.Equal(out, two) {
		t.Fatalf("second block: %v", err)
	}
}

func TestPrimeFindsBase(t *testing.T) {
	in := testInputs(t)
	base := in["text"][:100<<10]
	// the target is the base with a few edits: almost all of it should come
	// from the primed history
	target := bytes.Clone(base)
	for i := 1000; i < len(target); i += 9000 {
		target[i] ^= 0x55
	}
	for _, lv := range []Level{Fast, Lazy, Deep} {
		e := NewEncoder(lv, true)
		if lv == Fast {
			e.layout, e.window = Wide, MaxOffset
		}
		buf := append(bytes.Clone(base), target...)
		e.StartUnit(len(buf))
		e.Prime(buf, len(base))
		blk := e.EncodeBlock(nil, buf, len(base), len(buf))
		if len(blk) > len(target)/20 {
			t.Errorf("level %d: delta of %d bytes for a lightly edited copy of %d", lv, len(blk), len(target))
		}
		out := make([]byte, len(buf))
		copy(out, base)
		if err := NewDecoder().DecodeBlock(out, len(base), len(target), blk, e.Layout()); err != nil || !bytes.Equal(out[len(base):], target) {
			t.Fatalf("level %d: %v", lv, err)
		}
	}
}

// TestDecodeBlockAfter decodes deltas with their history outside the
// buffer, whole and cut into segments at every kind of place (inside a
// match, at its start, one byte in), and checks them against the decode
// with the history in front of the output; then offsets one byte too far
// back fail as they do there.
func TestDecodeBlockAfter(t *testing.T) {
	in := testInputs(t)
	base := bytes.Clone(in["text"][:90<<10])
	// Runs at the base's end make matches that start in the history and run
	// on into the output (an overlapping copy across the boundary).
	base = append(base, bytes.Repeat([]byte("xyz"), 200)...)
	target := append(bytes.Repeat([]byte("xyz"), 400), base[:60<<10]...)
	for i := 3000; i < len(target); i += 7000 {
		target[i] ^= 0x55
	}
	target = append(target, base[20<<10:40<<10]...)
	for _, lv := range []Level{Fast, Lazy, Deep} {
		for _, ent := range []bool{false, true} {
			e := NewEncoder(lv, ent)
			buf := append(bytes.Clone(base), target...)
			e.StartUnit(len(buf))
			e.Prime(buf, len(base))
			blk := e.EncodeBlock(nil, buf, len(base), len(buf))
			want := make([]byte, len(buf))
			copy(want, base)
			if err := NewDecoder().DecodeBlock(want, len(base), len(target), blk, e.Layout()); err != nil || !bytes.Equal(want[len(base):], target) {
				t.Fatalf("level %d: contiguous decode: %v", lv, err)
			}
			for _, cuts := range [][]int{nil, {1}, {len(base) - 1}, {len(base) / 2}, {1000, 1001, 50000}, {len(base) - 300, len(base) - 2}} {
				var segs [][]byte
				prev := 0
				for _, c := range append(cuts, len(base)) {
					segs = append(segs, base[prev:c])
					prev = c
				}
				for _, goLoop := range []bool{false, true} {
					got := make([]byte, len(target))
					goOnly = goLoop
					err := NewDecoder().DecodeBlockAfter(got, 0, len(target), blk, e.Layout(), segs)
					goOnly = false
					if err != nil || !bytes.Equal(got, target) {
						t.Fatalf("level %d entropy %v cuts %v go %v: %v", lv, ent, cuts, goLoop, err)
					}
				}
			}
			// Short of history by one byte: the match that reaches its first
			// byte fails cleanly in both forms (if the delta uses it at all).
			errIn := NewDecoder().DecodeBlock(bytes.Clone(want)[1:], len(base)-1, len(target), blk, e.Layout())
			errOut := NewDecoder().DecodeBlockAfter(make([]byte, len(target)), 0, len(target), blk, e.Layout(), [][]byte{base[1:]})
			if (errIn == nil) != (errOut == nil) {
				t.Fatalf("level %d: history one byte short: %v in the buffer, %v outside", lv, errIn, errOut)
			}
		}
	}
}

// With sparse indexing (SetStrides), deltas still decode to their target
// exactly and stay about as small: matches into the base are found a few
// bytes late and extended backwards.
func TestStridesKeepDeltasSmall(t *testing.T) {
	in := testInputs(t)
	for _, name := range []string{"text", "records", "random", "periodic"} {
		base := in[name][:min(len(in[name]), 100<<10)]
		target := bytes.Clone(base)
		for i := 700; i < len(target); i += 5000 {
			target[i] ^= 0x3c
		}
		target = append(target[:len(target)/2], append(bytes.Repeat([]byte("inserted "), 300), target[len(target)/2:]...)...)
		sizes := map[[2]int]int{}
		for _, st := range [][2]int{{1, 1}, {2, 8}, {4, 8}} {
			e := NewEncoder(Lazy, false)
			e.SetStrides(st[0], st[1])
			buf := append(bytes.Clone(base), target...)
			e.StartUnit(len(buf))
			e.Prime(buf, len(base))
			var blk []byte
			out := make([]byte, len(buf))
			copy(out, base)
			for pos := len(base); pos < len(buf); pos += MaxBlock {
				end := min(len(buf), pos+MaxBlock)
				b := e.EncodeBlock(nil, buf, pos, end)
				if err := NewDecoder().DecodeBlock(out, pos, end-pos, b, e.Layout()); err != nil {
					t.Fatalf("%s strides %v: %v", name, st, err)
				}
				blk = append(blk, b...)
			}
			if !bytes.Equal(out[len(base):], target) {
				t.Fatalf("%s strides %v: wrong bytes", name, st)
			}
			sizes[st] = len(blk)
		}
		if full, sparse := sizes[[2]int{1, 1}], sizes[[2]int{2, 8}]; sparse > full+full/10+64 {
			t.Errorf("%s: delta of %d bytes with strides 2/8, %d indexing every position", name, sparse, full)
		}
	}
}
