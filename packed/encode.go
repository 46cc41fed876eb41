package packed

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"sort"
	"sync"

	"github.com/glyd/glyd/codec"
	"github.com/glyd/glyd/internal/workers"
	"github.com/glyd/glyd/safetensors"
	"github.com/glyd/glyd/tensor"
)

// Options configure Encode.
type Options struct {
	// Tier codes the meta section: the header and the tensors that are not
	// floating point. Default: codec.Max.
	Tier *codec.Tier
	// Threads bounds the goroutines; 0 means one per CPU.
	Threads int
	// GroupLog2 sets the group size 2^GroupLog2 (8..16); 0 means 12.
	GroupLog2 int
	// Base is an earlier version of the file (a whole safetensors file):
	// tensors it holds unchanged cost almost nothing, and tensors changed
	// slightly are coded as their difference from it where that is
	// smaller. Decoding then needs the same base.
	Base []byte
	// Progress, when set, is called with the data bytes done so far.
	Progress func(done int64)
}

func (o *Options) threads() int {
	if o.Threads <= 0 {
		return runtime.GOMAXPROCS(0)
	}
	return o.Threads
}

// floatKind is the tensor coding for a dtype, 0 for dtypes stored through
// the meta section.
func floatKind(d safetensors.Dtype) tensor.Kind {
	switch d {
	case safetensors.BF16:
		return tensor.BF16
	case safetensors.F16:
		return tensor.F16
	case safetensors.F32:
		return tensor.F32
	case safetensors.F8E4M3, safetensors.F8E5M2:
		return tensor.B8
	}
	return 0
}

// Encode packs a safetensors file held in memory. The file is validated
// first (safetensors.Parse); a file that is not valid safetensors is
// refused with an error wrapping safetensors.ErrInvalid.
func Encode(file []byte, opts Options) ([]byte, error) {
	st, err := safetensors.Parse(file)
	if err != nil {
		return nil, err
	}
	gl := opts.GroupLog2
	if gl == 0 {
		gl = tensor.DefaultGroupLog2
	}
	if gl < tensor.MinGroupLog2 || gl > tensor.MaxGroupLog2 {
		return nil, fmt.Errorf("packed: group size 2^%d out of range (2^%d to 2^%d)", gl, tensor.MinGroupLog2, tensor.MaxGroupLog2)
	}
	tier := codec.Max
	if opts.Tier != nil {
		tier = *opts.Tier
	}
	data := file[st.DataStart:]
	hdr := fileHeader{groupLog2: uint8(gl), origSize: uint64(len(file))}

	var base *safetensors.File
	var baseData []byte
	if opts.Base != nil {
		if base, err = safetensors.Parse(opts.Base); err != nil {
			return nil, fmt.Errorf("base: %w", err)
		}
		baseData = opts.Base[base.DataStart:]
		hdr.flags |= flagBase
		hdr.baseTag = checksum(opts.Base)
	}

	// Header: verbatim, or with the data_offsets left out.
	dir := &directory{headerLen: st.HeaderLen, headerCoding: headerVerbatim, dataLen: st.DataSize}
	headerBytes := st.Raw
	if sk, order, ok := skeleton(st.Header); ok {
		if rb, err := rebuildHeader(sk, order); err == nil && bytes.Equal(rb, st.Raw) {
			dir.headerCoding, dir.order, headerBytes = headerElided, order, sk
		}
		if blob, ok := structure(st.Header); ok {
			if rb, err := rebuildStructured(blob, order, len(st.Raw)); err == nil && bytes.Equal(rb, st.Raw) {
				dir.headerCoding, dir.order, headerBytes = headerFieldsC, order, blob
			}
		}
	}
	dir.skeletonLen = int64(len(headerBytes))

	// Plan and code the spans.
	p := &planner{data: data, gl: gl, base: base, baseData: baseData, tier: tier}
	p.items(st)
	spans := p.plan()
	if err := encodeSpans(spans, data, baseData, gl, &opts); err != nil {
		return nil, err
	}
	dir.spans = spans

	// Meta section: directory (after its length), header, stored spans.
	d := dir.append(nil)
	meta := binary.AppendUvarint(nil, uint64(len(d)))
	meta = append(meta, d...)
	meta = append(meta, headerBytes...)
	for i := range spans {
		if s := &spans[i]; s.kind == spanStored {
			if s.flags&spanXOR != 0 {
				meta = append(meta, xorWords(data[s.begin:s.begin+s.length], baseData[s.baseOff:s.baseOff+s.length])...)
			} else {
				meta = append(meta, data[s.begin:s.begin+s.length]...)
			}
		}
	}
	metaFrames := encodeMeta(meta, tier, opts.threads())
	var payLen int
	for i := range spans {
		if spans[i].coded() {
			payLen += len(spans[i].payload)
		}
	}
	hdr.metaLen, hdr.payLen = uint64(len(metaFrames)), uint64(payLen)
	out := make([]byte, 0, int(hdr.payloadStart())+payLen)
	out = hdr.append(out)
	out = append(out, metaFrames...)
	out = append(out, make([]byte, int(hdr.payloadStart())-len(out))...)
	for i := range spans {
		if s := &spans[i]; s.coded() {
			out = append(out, s.payload...)
			s.payload = nil
		}
	}
	return out, nil
}

// encodeMeta codes the meta section as chunk frames of up to maxMetaChunk
// decoded bytes each, in parallel.
func encodeMeta(meta []byte, tier codec.Tier, threads int) []byte {
	n := max(1, (len(meta)+maxMetaChunk-1)/maxMetaChunk)
	frames := make([][]byte, n)
	_ = workers.Run(n, threads, func(i int) error {
		frames[i] = codec.EncodeChunk(nil, meta[i*maxMetaChunk:min(len(meta), (i+1)*maxMetaChunk)], tier)
		return nil
	})
	return bytes.Join(frames, nil)
}

// encodeSpans codes the payload of every coded span: big spans one at a
// time on every thread, the rest side by side.
func encodeSpans(spans []span, data, baseData []byte, gl int, opts *Options) error {
	threads := opts.threads()
	var small []int
	var done int64
	var mu sync.Mutex
	progress := func(n int64) {
		if opts.Progress != nil {
			mu.Lock()
			done += n
			opts.Progress(done)
			mu.Unlock()
		}
	}
	one := func(i, threads int) error {
		s := &spans[i]
		words := data[s.begin : s.begin+s.length]
		if s.flags&spanXOR != 0 {
			words = xorWords(words, baseData[s.baseOff:s.baseOff+s.length])
		}
		var err error
		if s.payload, err = tensor.Encode(nil, s.code, words, gl, threads); err != nil {
			return err
		}
		s.payLen = int64(len(s.payload))
		progress(s.length)
		return nil
	}
	for i := range spans {
		switch s := &spans[i]; {
		case !s.coded():
			progress(s.length)
		case s.length >= 16<<20:
			if err := one(i, threads); err != nil {
				return err
			}
		default:
			small = append(small, i)
		}
	}
	sort.Slice(small, func(a, b int) bool { return spans[small[a]].length > spans[small[b]].length })
	return workers.Run(len(small), threads, func(k int) error { return one(small[k], 1) })
}

func xorWords(a, b []byte) []byte {
	out := make([]byte, len(a))
	for i := range a {
		out[i] = a[i] ^ b[i]
	}
	return out
}

// The planner cuts the data section into spans. Floating-point tensors are
// coded; runs of them share a span (and its code table) where one table
// serves them about as well as several, which a dynamic programme over the
// tensors decides from their symbol histograms: a span's cost is the
// empirical entropy of its merged histogram, its raw bits, its table, its
// groups' offsets and CRCs and its directory entry. Small tensors of other
// types between them may be coded inside a span as if they were floats;
// the rest is stored through the meta section.

type item struct {
	begin, end int64
	kind       tensor.Kind // the float coding, 0 for other dtypes
	hist       []uint64    // kind's symbol histogram (float items)
	fixed      *span       // decided alone (against the base)

	foreign map[tensor.Kind][]uint64 // histograms of a small non-float item read as floats
}

type planner struct {
	tier     codec.Tier
	data     []byte
	gl       int
	base     *safetensors.File
	baseData []byte
	its      []item
}

// Cost model, in bits.
const (
	codedSpanBits  = 8 * 7 // directory entry
	storedSpanBits = 8 * 3
	groupBits      = 64   // a group's end offset and CRC
	huffmanSlack   = 0.02 // Huffman above entropy, per value
	storedFloatBit = 7.6  // per byte of a float tensor left to the meta tier
	storedOtherBit = 4.0  // per byte of other data
	maxForeign     = 4096 // largest non-float item coded inside a float span
	maxSpanTensors = 512
	maxSpanValues  = 1 << 22
)

func (p *planner) items(st *safetensors.File) {
	for _, i := range st.DataOrder() {
		t := &st.Tensors[i]
		if t.Size() == 0 {
			continue
		}
		it := item{begin: t.Begin, end: t.End, kind: floatKind(t.Dtype)}
		if p.base != nil {
			it.fixed = p.againstBase(t, it.kind)
		}
		if it.kind != 0 && it.fixed == nil {
			it.hist = make([]uint64, 256)
			tensor.Histogram(it.kind, p.data[t.Begin:t.End], it.hist)
		}
		p.its = append(p.its, it)
	}
}

// againstBase decides a tensor that the base holds too (same name, dtype
// and size): a copy when unchanged, the XOR of the two coded whole (V16)
// when that is clearly smaller than coding the tensor alone.
func (p *planner) againstBase(t *safetensors.Tensor, kind tensor.Kind) *span {
	bt, ok := p.base.Lookup(t.Name)
	if !ok || bt.Dtype != t.Dtype || bt.Size() != t.Size() {
		return nil
	}
	cur := p.data[t.Begin:t.End]
	old := p.baseData[bt.Begin:bt.End]
	if bytes.Equal(cur, old) {
		return &span{kind: spanCopy, length: t.Size(), baseOff: bt.Begin}
	}
	res := xorWords(cur, old)
	// Two ways to code the XOR: whole 16-bit words with a dictionary code
	// (GPU-decodable; at least a bit a value), or through the meta
	// section's tier, whose matches make long runs of zeros almost free
	// when few values changed.
	xorBits, storedBits := math.Inf(1), math.Inf(1)
	var c *tensor.Code
	if t.Size()%2 == 0 {
		if dict, freq := tensor.WordHistogram(res, tensor.MaxSymbols); dict != nil {
			if c, _ = tensor.NewCode(tensor.V16, freq, dict); c != nil {
				xorBits = float64(c.Bits(freq)) + float64(8*len(c.AppendTable(nil))) + codedSpanBits
			}
		}
	}
	if zeros := bytes.Count(res, []byte{0}); zeros > len(res)*3/4 {
		var n int
		for i := 0; i < len(res); i += maxMetaChunk {
			n += len(codec.EncodeChunk(nil, res[i:min(len(res), i+maxMetaChunk)], p.tier))
		}
		storedBits = 8*float64(n) + storedSpanBits
	}
	var alone float64
	if kind != 0 {
		h := make([]uint64, 256)
		tensor.Histogram(kind, cur, h)
		alone = entropyBits(h) + float64(int64(len(cur)/kind.WordSize())*int64(8*kind.RawSize()))
	} else {
		alone = storedOtherBit * float64(len(cur))
	}
	switch {
	case min(xorBits, storedBits) > 0.9*alone:
		return nil
	case storedBits < xorBits:
		return &span{kind: spanStored, length: t.Size(), flags: spanXOR, baseOff: bt.Begin}
	}
	return &span{kind: uint8(tensor.V16), length: t.Size(), flags: spanXOR, baseOff: bt.Begin, code: c}
}

func entropyBits(h []uint64) float64 {
	var n, s float64
	for _, c := range h {
		if c > 0 {
			f := float64(c)
			n += f
			s += f * math.Log2(f)
		}
	}
	if n == 0 {
		return 0
	}
	return n*math.Log2(n) - s
}

// foreignHist is item i's bytes read as values of kind k, or nil when it
// may not go into a span of kind k.
func (p *planner) foreignHist(i int, k tensor.Kind) []uint64 {
	it := &p.its[i]
	if it.kind == k {
		return it.hist
	}
	if it.kind != 0 || it.fixed != nil || it.end-it.begin > maxForeign || (it.end-it.begin)%int64(k.WordSize()) != 0 {
		return nil
	}
	if h, ok := it.foreign[k]; ok {
		return h
	}
	h := make([]uint64, 256)
	tensor.Histogram(k, p.data[it.begin:it.end], h)
	if it.foreign == nil {
		it.foreign = map[tensor.Kind][]uint64{}
	}
	it.foreign[k] = h
	return h
}

func (p *planner) storedBits(i int) float64 {
	it := &p.its[i]
	if it.kind != 0 {
		return storedFloatBit * float64(it.end-it.begin)
	}
	return storedOtherBit * float64(it.end-it.begin)
}

type choice struct {
	from int         // the span covers items from..j-1
	kind tensor.Kind // 0: stored
}

func (p *planner) plan() []span {
	n := len(p.its)
	best := make([]float64, n+1)
	how := make([]choice, n+1)
	kinds := map[tensor.Kind]bool{}
	for i := range p.its {
		if k := p.its[i].kind; k != 0 && p.its[i].fixed == nil {
			kinds[k] = true
		}
	}
	counts := make([]float64, 256)
	for j := 1; j <= n; j++ {
		best[j] = math.Inf(1)
		if p.its[j-1].fixed != nil {
			best[j], how[j] = best[j-1], choice{from: j - 1}
			continue
		}
		// Stored: any run of items.
		sum := 0.0
		for i := j - 1; i >= 0 && i >= j-maxSpanTensors && p.its[i].fixed == nil; i-- {
			sum += p.storedBits(i)
			if c := best[i] + sum + storedSpanBits; c < best[j] {
				best[j], how[j] = c, choice{from: i}
			}
		}
		// Coded as kind k: runs of k items and small foreign ones, with at
		// least one k item.
		for k := range kinds {
			ws, rs := int64(k.WordSize()), float64(8*k.RawSize())
			clear(counts)
			var vals, slog float64 // values; sum of c*log2(c)
			lo, hi := 255, 0
			hasK := false
			for i := j - 1; i >= 0 && i >= j-maxSpanTensors; i-- {
				h := p.foreignHist(i, k)
				if h == nil || (vals > maxSpanValues && i < j-1) {
					break
				}
				hasK = hasK || p.its[i].kind == k
				for s, c := range h {
					if c == 0 {
						continue
					}
					old := counts[s]
					if old > 0 {
						slog -= old * math.Log2(old)
					}
					counts[s] = old + float64(c)
					slog += counts[s] * math.Log2(counts[s])
					lo, hi = min(lo, s), max(hi, s)
				}
				vals += float64((p.its[i].end - p.its[i].begin) / ws)
				if !hasK {
					continue
				}
				groups := math.Ceil(vals / float64(int(1)<<p.gl))
				cost := vals*math.Log2(vals) - slog + vals*(rs+huffmanSlack) +
					8*float64(2+(hi-lo+2)/2) + groups*groupBits + codedSpanBits
				if c := best[i] + cost; c < best[j] {
					best[j], how[j] = c, choice{from: i, kind: k}
				}
			}
		}
	}
	// Walk back, then build the spans in order.
	var cuts []choice
	var ends []int
	for j := n; j > 0; j = how[j].from {
		cuts = append(cuts, how[j])
		ends = append(ends, j)
	}
	var spans []span
	var pos int64
	for c := len(cuts) - 1; c >= 0; c-- {
		ch, j := cuts[c], ends[c]
		first, last := &p.its[ch.from], &p.its[j-1]
		if first.begin != pos {
			panic("packed: internal error: spans do not tile the data")
		}
		pos = last.end
		s := span{begin: first.begin, length: last.end - first.begin}
		switch {
		case first.fixed != nil:
			s.kind, s.flags, s.baseOff, s.code = first.fixed.kind, first.fixed.flags, first.fixed.baseOff, first.fixed.code
		case ch.kind == 0:
			s.kind = spanStored
			// Adjacent stored spans merge.
			if n := len(spans); n > 0 && spans[n-1].kind == spanStored && spans[n-1].flags == 0 {
				spans[len(spans)-1].length += s.length
				continue
			}
		default:
			s.code = p.spanCode(ch.kind, p.data[s.begin:s.begin+s.length])
			s.kind = uint8(s.code.Kind)
		}
		spans = append(spans, s)
	}
	return spans
}

// shorterCode returns the code with the shortest length limit, down to 10
// bits, that costs at most shortCodeSlack bits a value more than c. A
// decoder builds a table of 2^(longest code) entries per span: in the
// small spans of small models the rare exponents' 11- and 12-bit codes
// quadruple the table for a few bits, and building it costs more than
// decoding the span (docs/tensors.md has the measurement).
func shorterCode(c *tensor.Code, k tensor.Kind, h []uint64) *tensor.Code {
	var vals uint64
	for _, f := range h {
		vals += f
	}
	base := c.Bits(h)
	for l := 10; l < c.MaxLen(); l++ {
		s, err := tensor.NewCodeLimit(k, h, nil, l)
		if err == nil && float64(s.Bits(h)-base) <= shortCodeSlack*float64(vals) {
			return s
		}
	}
	return c
}

// shortCodeSlack is the bits a value a shorter code may cost.
const shortCodeSlack = 0.01

// spanCode builds the code for a span of kind k: the split code from its
// histogram, or, for 16-bit kinds with few distinct values (quantized
// weights), a dictionary code of whole values when that is smaller.
func (p *planner) spanCode(k tensor.Kind, words []byte) *tensor.Code {
	h := make([]uint64, 256)
	tensor.Histogram(k, words, h)
	c, err := tensor.NewCode(k, h, nil)
	if err != nil {
		panic(err) // a span always has values
	}
	c = shorterCode(c, k, h)
	if k == tensor.F32 || k == tensor.B8 {
		return c
	}
	dict, freq := tensor.WordHistogram(words, tensor.MaxSymbols)
	if dict == nil {
		return c
	}
	// The entropy bounds the dictionary code from below: build it only
	// when it might win.
	splitBits := c.Bits(h) + int64(8*len(c.AppendTable(nil)))
	if entropyBits(freq)+float64(12*len(dict)) >= float64(splitBits) {
		return c
	}
	v, err := tensor.NewCode(tensor.V16, freq, dict)
	if err != nil {
		return c
	}
	if v.Bits(freq)+int64(8*len(v.AppendTable(nil))) < splitBits {
		return v
	}
	return c
}
