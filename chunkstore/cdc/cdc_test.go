package cdc

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
)

// testParams cover the defaults, the extremes the limits allow, and Min/Max
// that are not powers of two.
var testParams = []Params{
	{Min: 64, Avg: 128, Max: 256},
	{Min: 64, Avg: 256, Max: 1024},
	{Min: 1000, Avg: 4096, Max: 10000},
	{Min: 2 << 10, Avg: 8 << 10, Max: 32 << 10},
	{Min: 4 << 10, Avg: 16 << 10, Max: 64 << 10},
	{Min: 16 << 10, Avg: 64 << 10, Max: 256 << 10},
}

// refCut is the textbook byte-at-a-time FastCDC judgement that cut and scan
// must reproduce exactly.
func refCut(data []byte, p Params) int {
	avg := roundPow2(p.Avg)
	b := 0
	for 1<<b < avg {
		b++
	}
	maskS := ^uint64(0) << (64 - (b + 2)) // top log2(Avg)+2 bits
	maskL := ^uint64(0) << (64 - (b - 2)) // top log2(Avg)-2 bits
	n := min(len(data), p.Max)
	if n <= p.Min {
		return n
	}
	var fp uint64
	for i := p.Min; i < n; i++ {
		fp = fp<<1 + gear[data[i]]
		mask := maskS
		if i >= avg {
			mask = maskL
		}
		if fp&mask == 0 {
			return i + 1
		}
	}
	return n
}

func refSplit(data []byte, p Params) []int {
	var cuts []int
	for off := 0; off < len(data); {
		off += refCut(data[off:], p)
		cuts = append(cuts, off)
	}
	return cuts
}

// checkCuts verifies the invariants of a cut list for data of length n.
func checkCuts(t testing.TB, cuts []int, n int, p Params) {
	t.Helper()
	if n == 0 {
		if len(cuts) != 0 {
			t.Fatalf("empty input: got cuts %v", cuts)
		}
		return
	}
	if len(cuts) == 0 || cuts[len(cuts)-1] != n {
		t.Fatalf("last cut is not len(data)=%d: %v", n, cuts[max(0, len(cuts)-3):])
	}
	prev := 0
	for i, c := range cuts {
		size := c - prev
		last := i == len(cuts)-1
		if size <= 0 || size > p.Max || (!last && size < p.Min) {
			t.Fatalf("chunk %d of %d is %d bytes, want [%d, %d] (the last may be shorter)", i, len(cuts), size, p.Min, p.Max)
		}
		prev = c
	}
}

// TestSplitmix64 checks the generator against the reference outputs of
// Vigna's splitmix64.c for seed 0, so the gear table is reproducible from
// its description alone.
func TestSplitmix64(t *testing.T) {
	s := uint64(0)
	for i, want := range []uint64{0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f} {
		if got := splitmix64(&s); got != want {
			t.Fatalf("output %d: got %#x, want %#x", i, got, want)
		}
	}
}

// TestGearTablePinned: the gear table is on-disk format. If this fails, the
// change alters every chunk boundary; it needs a new chunker version.
func TestGearTablePinned(t *testing.T) {
	for i, want := range map[int]uint64{
		0:   0xec14851b725a9862,
		1:   0xd7ca69d62fff363c,
		2:   0xd4b754584a436f44,
		127: 0x450a755a42b02f54,
		128: 0x2da5836190a88b10,
		255: 0xd2914987c17134ca,
	} {
		if gear[i] != want {
			t.Errorf("gear[%d] = %#016x, want %#016x", i, gear[i], want)
		}
	}
	h := sha256.New()
	binary.Write(h, binary.LittleEndian, gear[:])
	if got, want := hex.EncodeToString(h.Sum(nil))[:16], pinnedGearDigest; got != want {
		t.Errorf("sha256 of the gear table (little-endian) starts %s, want %s", got, want)
	}
}

const pinnedGearDigest = "1da723a3bf9be2bb"

// TestBoundariesPinned: chunk boundaries are on-disk format (they decide
// what a store already holds). It pins the cuts of a fixed pseudo-random
// input under explicit parameters, not DefaultParams, which may change.
func TestBoundariesPinned(t *testing.T) {
	data := randBytes(1<<20, 1)
	for _, tc := range []struct {
		p      Params
		n      int
		first  []int
		digest string
	}{
		{Params{Min: 1 << 10, Avg: 4 << 10, Max: 16 << 10}, 227, []int{3956, 8346, 13116, 17456, 19062, 23495}, "a8b744e6768db955"},
		{Params{Min: 4 << 10, Avg: 16 << 10, Max: 64 << 10}, 56, []int{8547, 13361, 30387, 50904, 68227, 77241}, "217a673af5ce9402"},
	} {
		cuts := Split(data, tc.p)
		h := sha256.New()
		for _, c := range cuts {
			binary.Write(h, binary.LittleEndian, uint64(c))
		}
		digest := hex.EncodeToString(h.Sum(nil))[:16]
		if len(cuts) != tc.n || !slices.Equal(cuts[:min(6, len(cuts))], tc.first) || digest != tc.digest {
			t.Errorf("%+v: %d cuts, first %v, digest %s; want %d, %v, %s",
				tc.p, len(cuts), cuts[:min(6, len(cuts))], digest, tc.n, tc.first, tc.digest)
		}
	}
}

func TestSplitMatchesReference(t *testing.T) {
	inputs := map[string][]byte{
		"random":  randBytes(3<<20+17, 7),
		"text":    []byte(strings.Repeat("the quick brown fox jumps over the lazy dog; ", 40000)),
		"zeros":   make([]byte, 1<<20+5),
		"mixed":   append(append(randBytes(100000, 8), make([]byte, 300000)...), randBytes(200001, 9)...),
		"lowbits": lowEntropy(1<<20, 10),
	}
	for name, data := range inputs {
		for _, p := range testParams {
			got, want := Split(data, p), refSplit(data, p)
			if !slices.Equal(got, want) {
				t.Fatalf("%s %+v: Split differs from the byte-at-a-time reference (%d vs %d cuts)", name, p, len(got), len(want))
			}
			checkCuts(t, got, len(data), p)
		}
	}
}

// lowEntropy is random data over a 4-symbol alphabet: few distinct gear
// values, where a weak judgement would show.
func lowEntropy(n int, seed uint64) []byte {
	b := randBytes(n, seed)
	for i := range b {
		b[i] = "ACGT"[b[i]&3]
	}
	return b
}

func TestDeterministic(t *testing.T) {
	data := randBytes(2<<20, 3)
	a := Split(data, DefaultParams())
	b := Split(bytes.Clone(data), DefaultParams())
	if !slices.Equal(a, b) {
		t.Fatal("two splits of the same bytes differ")
	}
	// A boundary depends only on the bytes of its chunk: splitting from any
	// cut onwards reproduces the remaining cuts.
	from := a[len(a)/2]
	rest := Split(data[from:], DefaultParams())
	for i := range rest {
		rest[i] += from
	}
	if !slices.Equal(rest, a[len(a)/2+1:]) {
		t.Fatal("splitting from a boundary does not reproduce the later boundaries")
	}
}

func TestChunkSizes(t *testing.T) {
	for _, p := range testParams {
		for seed := range uint64(3) {
			data := randBytes(1<<20+int(seed)*12345, 100+seed)
			cuts := Split(data, p)
			checkCuts(t, cuts, len(data), p)
			// The sizes should centre on Avg: normalized chunking keeps the
			// mean within a factor of 1.5 of it.
			mean := float64(len(data)) / float64(len(cuts))
			if len(cuts) > 20 && (mean < float64(p.Avg)/1.5 || mean > float64(p.Avg)*1.5) {
				t.Errorf("%+v: mean chunk %.0f bytes, far from Avg", p, mean)
			}
		}
	}
}

// chunkSet is the multiset of chunk contents of data.
func chunkSet(data []byte, cuts []int) map[string]int {
	m := map[string]int{}
	prev := 0
	for _, c := range cuts {
		m[string(data[prev:c])]++
		prev = c
	}
	return m
}

// TestEditLocality is the reason for content-defined chunking: a small edit
// in the middle of a large input changes only the chunks around it.
func TestEditLocality(t *testing.T) {
	data := randBytes(4<<20, 5)
	mid := len(data)/2 + 333
	edits := map[string][]byte{
		"insert 10": slices.Concat(data[:mid], []byte("0123456789"), data[mid:]),
		"delete 10": slices.Concat(data[:mid], data[mid+10:]),
		"replace 1": slices.Concat(data[:mid], []byte{data[mid] ^ 1}, data[mid+1:]),
	}
	for _, p := range testParams[1:] {
		before := Split(data, p)
		old := chunkSet(data, before)
		for name, edited := range edits {
			after := Split(edited, p)
			shared := 0
			for chunk, n := range chunkSet(edited, after) {
				shared += min(n, old[chunk])
			}
			frac := float64(shared) / float64(len(before))
			changed := len(after) - shared
			t.Logf("%+v %s: %d of %d chunks shared (%.1f%%), %d new chunks", p, name, shared, len(before), 100*frac, changed)
			if frac < 0.9 || changed > 4 {
				t.Errorf("%+v %s: %d of %d chunks shared (%.1f%%), %d new chunks", p, name, shared, len(before), 100*frac, changed)
			}
		}
	}
}

func TestEmpty(t *testing.T) {
	if cuts := Split(nil, DefaultParams()); cuts != nil {
		t.Fatalf("Split(nil) = %v", cuts)
	}
	if cuts := Split([]byte{}, DefaultParams()); cuts != nil {
		t.Fatalf("Split(empty) = %v", cuts)
	}
	k, err := New(bytes.NewReader(nil), DefaultParams())
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if c, err := k.Next(); c != nil || err != io.EOF {
			t.Fatalf("Next on empty input = %v, %v", c, err)
		}
	}
}

func TestSmallerThanMin(t *testing.T) {
	p := DefaultParams()
	for _, n := range []int{1, 100, p.Min - 1, p.Min, p.Min + 1} {
		data := randBytes(n, 11)
		cuts := Split(data, p)
		checkCuts(t, cuts, n, p)
		if n <= p.Min && len(cuts) != 1 {
			t.Fatalf("%d bytes: want one chunk, got %v", n, cuts)
		}
		got := chunkerCuts(t, bytes.NewReader(data), p)
		if !slices.Equal(got, cuts) {
			t.Fatalf("%d bytes: Chunker %v, Split %v", n, got, cuts)
		}
	}
}

// TestAllZero: constant input has no content to define boundaries (the hash
// settles to one value that, for this table, never passes the judgement),
// so every chunk is cut at Max.
func TestAllZero(t *testing.T) {
	for _, p := range testParams {
		data := make([]byte, 10*p.Max+p.Min/2)
		cuts := Split(data, p)
		checkCuts(t, cuts, len(data), p)
		for i, c := range cuts[:len(cuts)-1] {
			if c != (i+1)*p.Max {
				t.Fatalf("%+v: cut %d at %d, want %d", p, i, c, (i+1)*p.Max)
			}
		}
	}
}

// chunkerCuts runs a Chunker over r and returns the cut offsets it yields.
func chunkerCuts(t testing.TB, r io.Reader, p Params) []int {
	t.Helper()
	k, err := New(r, p)
	if err != nil {
		t.Fatal(err)
	}
	var cuts []int
	off := 0
	for {
		c, err := k.Next()
		if err == io.EOF {
			return cuts
		}
		if err != nil {
			t.Fatal(err)
		}
		off += len(c)
		cuts = append(cuts, off)
	}
}

// oddReader returns reads of varying odd sizes (and some empty ones), to
// shake out any dependence of the boundaries on read fragmentation.
type oddReader struct {
	data []byte
	n    int
}

func (r *oddReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	r.n++
	if r.n%7 == 0 {
		return 0, nil
	}
	size := []int{1, 3, 17, 4099, 65537, 999}[r.n%6]
	n := copy(p[:min(len(p), size)], r.data)
	r.data = r.data[n:]
	return n, nil
}

func TestChunkerMatchesSplit(t *testing.T) {
	data := slices.Concat(randBytes(1<<20, 12), make([]byte, 200000), lowEntropy(300001, 13))
	readers := map[string]func([]byte) io.Reader{
		"bytes":   func(b []byte) io.Reader { return bytes.NewReader(b) },
		"onebyte": func(b []byte) io.Reader { return iotest.OneByteReader(bytes.NewReader(b)) },
		"half":    func(b []byte) io.Reader { return iotest.HalfReader(bytes.NewReader(b)) },
		"dataerr": func(b []byte) io.Reader { return iotest.DataErrReader(bytes.NewReader(b)) },
		"odd":     func(b []byte) io.Reader { return &oddReader{data: b} },
		"multi": func(b []byte) io.Reader {
			return io.MultiReader(bytes.NewReader(b[:len(b)/3]), bytes.NewReader(b[len(b)/3:]))
		},
	}
	for name, mk := range readers {
		for _, p := range testParams {
			want := Split(data, p)
			if got := chunkerCuts(t, mk(data), p); !slices.Equal(got, want) {
				t.Fatalf("%s %+v: Chunker gave %d cuts, Split %d", name, p, len(got), len(want))
			}
		}
	}
}

func TestChunkerReadError(t *testing.T) {
	boom := errors.New("boom")
	data := randBytes(1<<20, 14)
	p := DefaultParams()
	k, _ := New(io.MultiReader(bytes.NewReader(data), iotest.ErrReader(boom)), p)
	var n int
	var err error
	for {
		var c []byte
		c, err = k.Next()
		if err != nil {
			break
		}
		n += len(c)
	}
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want boom", err)
	}
	// Every chunk returned before the error is a chunk of the whole input,
	// and the error came only once less than Max bytes were left to cut.
	if cuts := Split(data, p); n == 0 || !slices.Contains(cuts, n) {
		t.Fatalf("returned %d bytes before the error, not a boundary", n)
	}
	if _, err2 := k.Next(); !errors.Is(err2, boom) {
		t.Fatalf("error not sticky: %v", err2)
	}

	k, _ = New(iotest.TimeoutReader(bytes.NewReader(data)), p)
	for err = nil; err == nil; _, err = k.Next() {
	}
	if !errors.Is(err, iotest.ErrTimeout) {
		t.Fatalf("timeout reader: %v", err)
	}
}

type zeroReader struct{}

func (zeroReader) Read([]byte) (int, error) { return 0, nil }

func TestChunkerNoProgress(t *testing.T) {
	k, _ := New(zeroReader{}, DefaultParams())
	if _, err := k.Next(); !errors.Is(err, io.ErrNoProgress) {
		t.Fatalf("got %v, want io.ErrNoProgress", err)
	}
}

// TestChunkerNoAllocs: after New, Next allocates nothing.
func TestChunkerNoAllocs(t *testing.T) {
	data := randBytes(4<<20, 15)
	r := bytes.NewReader(data)
	k, _ := New(r, DefaultParams())
	allocs := testing.AllocsPerRun(1, func() {
		r.Reset(data)
		*k = Chunker{r: k.r, c: k.c, buf: k.buf}
		for {
			if _, err := k.Next(); err != nil {
				break
			}
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per stream", allocs)
	}
}

func TestParams(t *testing.T) {
	if err := DefaultParams().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, p := range testParams {
		if err := p.Validate(); err != nil {
			t.Errorf("%+v: %v", p, err)
		}
	}
	for _, tc := range []struct {
		avg, want int
	}{{1, 1}, {3, 2}, {5, 4}, {6, 4}, {7, 8}, {12000, 8192}, {12289, 16384}, {16384, 16384}} {
		if got := roundPow2(tc.avg); got != tc.want {
			t.Errorf("roundPow2(%d) = %d, want %d", tc.avg, got, tc.want)
		}
	}
	// Avg 12000 rounds to 8192: valid, and cuts as Avg 8192 does.
	data := randBytes(1<<20, 16)
	if !slices.Equal(Split(data, Params{2048, 12000, 32768}), Split(data, Params{2048, 8192, 32768})) {
		t.Error("Avg is not rounded to the nearest power of two")
	}
	for _, p := range []Params{
		{},
		{Min: 63, Avg: 256, Max: 1024},                      // Min under the limit
		{Min: 1024, Avg: 1024, Max: 4096},                   // Min == Avg
		{Min: 4096, Avg: 1024, Max: 8192},                   // Min > Avg
		{Min: 1024, Avg: 4096, Max: 4096},                   // Avg == Max
		{Min: 1024, Avg: 0, Max: 4096},                      // no Avg
		{Min: 1024, Avg: -4096, Max: 8192},                  // negative
		{Min: 1024, Avg: 3500, Max: 3800},                   // Avg rounds to 4096 >= Max
		{Min: 1100, Avg: 1500, Max: 8192},                   // Avg rounds to 1024 <= Min
		{Min: 1 << 20, Avg: 4 << 20, Max: MaxSizeLimit + 1}, // Max over the limit
		{Min: 1024, Avg: 1 << 62, Max: 1<<62 + 1},           // absurd
		{Min: 1024, Avg: int(^uint(0) >> 1), Max: 1 << 30},  // overflow in rounding
	} {
		err := p.Validate()
		if !errors.Is(err, ErrParams) {
			t.Errorf("%+v: Validate = %v, want ErrParams", p, err)
			continue
		}
		if _, err := New(bytes.NewReader(nil), p); !errors.Is(err, ErrParams) {
			t.Errorf("%+v: New = %v, want ErrParams", p, err)
		}
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%+v: Split did not panic", p)
				}
			}()
			Split([]byte("x"), p)
		}()
	}
}
