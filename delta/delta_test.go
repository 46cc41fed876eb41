package delta

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/glyd/glyd/codec"
)

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func randText(r *rand.Rand, n int) []byte {
	words := []string{"alpha ", "beta ", "gamma ", "delta ", "func ", "return ", "if ", "err ", "nil ", "\n\t"}
	var b []byte
	for len(b) < n {
		b = append(b, words[r.IntN(len(words))]...)
		if r.IntN(7) == 0 {
			b = append(b, byte('a'+r.IntN(26)), byte('0'+r.IntN(10)))
		}
	}
	return b[:n]
}

// Feature keys match on their own: a chunk holding half of a stored chunk
// (its other half new, or from elsewhere) shares keys with it, where it
// seldom shares a whole super-feature; unrelated data shares none.
func TestFeatureKeysFindParts(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	shared := func(a, b Keys) int {
		n := 0
		for i := range a {
			if a[i] != 0 && a[i] == b[i] {
				n++
			}
		}
		return n
	}
	total := 0
	for range 20 {
		base := randText(r, 128<<10)
		part := append(bytes.Clone(base[64<<10:]), randText(r, 64<<10)...)
		n := shared(FeatureKeys(base), FeatureKeys(part))
		total += n
		if n == 0 {
			t.Errorf("a chunk holding half of another shares no feature key with it")
		}
		if other := shared(FeatureKeys(base), FeatureKeys(randText(r, 128<<10))); other != 0 {
			t.Errorf("unrelated data shares %d feature keys", other)
		}
	}
	// Each key matches when the feature's maximum falls in the shared
	// half: a third of the time (the shared half is a third of the two
	// chunks' content), 4 of 12 keys on average.
	if total < 20*2 || total > 20*7 {
		t.Errorf("%d keys shared over 20 half-copies, about 80 expected", total)
	}
	if FeatureKeys(make([]byte, 63)) != (Keys{}) {
		t.Error("a tiny chunk should have no keys")
	}
}

func TestSimilarChunksShareSuperFeatures(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	base := randText(r, 64<<10)
	edited := bytes.Clone(base)
	copy(edited[30000:], "a small edit")
	moved := append(bytes.Clone(base[32<<10:]), base[:32<<10]...)
	other := randText(r, 64<<10)
	sb := Compute(base)
	if Shared(sb, Compute(edited)) < 2 {
		t.Errorf("an edited copy shares %d super-features", Shared(sb, Compute(edited)))
	}
	if Shared(sb, Compute(moved)) < 2 {
		t.Errorf("a rotated copy shares %d super-features", Shared(sb, Compute(moved)))
	}
	if Shared(sb, Compute(other)) != 0 {
		t.Errorf("unrelated data shares %d super-features", Shared(sb, Compute(other)))
	}
	if Compute(base[:10]) != (Sketch{}) {
		t.Error("a tiny chunk should have an empty sketch")
	}
}

func TestEncodeDecide(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	base := randText(r, 64<<10)
	target := bytes.Clone(base)
	copy(target[100:], "changed")
	alone := len(codec.EncodeChunk(nil, target, codec.Default))
	fr, ok := EncodeTo(nil, target, codec.Default, base)
	if !ok || !(&Judge{Target: target, AloneLen: alone, Tier: codec.Default}).Keep(fr) {
		t.Fatal("a near copy should pay as a delta")
	}
	got, err := Decode(fr, base)
	if err != nil || !bytes.Equal(got, target) {
		t.Fatal(err)
	}
	noise := make([]byte, 64<<10)
	for i := range noise {
		noise[i] = byte(r.Uint32())
	}
	if fr, ok := EncodeTo(nil, target, codec.Default, noise); ok && (&Judge{Target: target, AloneLen: alone, Tier: codec.Default}).Keep(fr) {
		t.Fatal("an unrelated base should not pay")
	}
}

func FuzzDecode(f *testing.F) {
	base := []byte("some base text that the delta copies from, some base text")
	f.Add(codec.EncodeDelta(nil, base, []byte("some base text that changed a little, some base text"), codec.Max))
	f.Fuzz(func(t *testing.T, fr []byte) {
		Decode(fr, base)
	})
}

func BenchmarkCompute(b *testing.B) {
	data := randText(rand.New(rand.NewPCG(5, 6)), 64<<10)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		Compute(data)
	}
}

// computeRef is the sketch as first written: one loop, a branch per
// position. Compute must agree with it bit for bit (stores index sketches).
func computeRef(data []byte) Sketch {
	if len(data) < 64 {
		return Sketch{}
	}
	var feat [numFeatures]uint64
	var h uint64
	for i, b := range data {
		h = h<<1 + gear[b]
		if h&sampleMask != 0 || i < 63 {
			continue
		}
		for j := range feat {
			if v := h*transforms[j][0] + transforms[j][1]; v > feat[j] {
				feat[j] = v
			}
		}
	}
	return superFeatures(&feat)
}

func TestComputeMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, n := range []int{0, 1, 63, 64, 65, 100, 1023, 1086, 1087, 1088, 4096, 65536, 300000} {
		for _, data := range [][]byte{randText(r, n), randBytes(r, n), make([]byte, n)} {
			if got, want := Compute(data), computeRef(data); got != want {
				t.Fatalf("%d bytes: sketch %x, the reference %x", len(data), got, want)
			}
		}
	}
}

func FuzzCompute(f *testing.F) {
	f.Add([]byte("a chunk of text long enough to be sketched, a chunk of text long enough"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := Compute(data), computeRef(data); got != want {
			t.Fatalf("sketch %x, the reference %x", got, want)
		}
	})
}
