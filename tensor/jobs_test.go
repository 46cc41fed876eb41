package tensor

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
)

// TestDecodeJobsMixed decodes the groups of many spans in one call, in a
// shuffled order — kinds that share the four-lane loop (narrow one-symbol
// tables and full multi-symbol ones), V16 spans that cannot, spans of one
// group and of many — and checks each against the reference decoder; then
// damages one span and checks that its job, and only its job, fails.
func TestDecodeJobsMixed(t *testing.T) {
	type span struct {
		words []byte
		d     *Decoder
		ref   []byte
	}
	var spans []span
	r := rand.New(rand.NewPCG(11, 12))
	for i, k := range []Kind{BF16, F16, V16, F32, B8, BF16, F16, BF16, V16, B8, BF16} {
		n := []int{1, 17, 300, 4095, 4096, 4097, 9000, 40000, 70000}[r.IntN(9)]
		if k == V16 {
			n = min(n, 5000)
		}
		words := gaussian(k, n, 0.02+0.1*r.Float64(), uint64(i))
		c := codeFor(t, k, words)
		payload, err := Encode(nil, c, words, DefaultGroupLog2, 1)
		if err != nil {
			t.Fatal(err)
		}
		d, err := NewDecoder(c, n, DefaultGroupLog2, payload)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := DecodeReference(c, n, DefaultGroupLog2, payload)
		if err != nil || !bytes.Equal(ref, words) {
			t.Fatalf("span %d: reference decoder: %v", i, err)
		}
		spans = append(spans, span{words, d, ref})
	}
	type where struct{ span, group int }
	var order []where
	for i, s := range spans {
		for g := range s.d.Groups() {
			order = append(order, where{i, g})
		}
	}
	r.Shuffle(len(order), func(a, b int) { order[a], order[b] = order[b], order[a] })
	outs := make([][]byte, len(spans))
	for i, s := range spans {
		outs[i] = make([]byte, len(s.words))
	}
	jobs := make([]GroupJob, len(order))
	for j, w := range order {
		d := spans[w.span].d
		first, n := d.Group(w.group)
		ws := d.Kind().WordSize()
		jobs[j] = GroupJob{d, w.group, outs[w.span][first*ws : (first+n)*ws]}
	}
	if j, err := DecodeJobs(jobs); err != nil {
		t.Fatalf("job %d: %v", j, err)
	}
	for i, s := range spans {
		if !bytes.Equal(outs[i], s.words) {
			t.Fatalf("span %d (%v, %d values): wrong bytes", i, s.d.Kind(), s.d.Values())
		}
	}

	// Damage the stream of one group of the largest span: its job, the only
	// one that can fail, is the one reported, with ErrCorrupt.
	big := 0
	for i, s := range spans {
		if s.d.Values() > spans[big].d.Values() {
			big = i
		}
	}
	d := spans[big].d
	g := d.Groups() / 2
	s0, s1 := d.streamRange(g)
	bad := bytes.Clone(d.payload)
	for i := s0; i < s1; i += 7 {
		bad[i] ^= 0x5a
	}
	bd, err := NewDecoder(d.code, d.values, d.groupLog2, bad)
	if err != nil {
		t.Fatal(err)
	}
	want := -1
	for j := range jobs {
		if jobs[j].D == d {
			jobs[j].D = bd
			if jobs[j].G == g && want < 0 {
				want = j
			}
		}
		clear(jobs[j].Dst)
	}
	j, err := DecodeJobs(jobs)
	if !errors.Is(err, ErrCorrupt) || j != want {
		t.Fatalf("damaged group: job %d, %v; want job %d failing with ErrCorrupt", j, err, want)
	}
}
