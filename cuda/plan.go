package cuda

import (
	_ "embed"
	"encoding/binary"
	"fmt"

	"github.com/glyd/glyd/tensor"
)

// The decode kernel, kernels/decode.cu compiled to PTX by `make ptx`
// (mk/ptx.mk); the driver JIT-compiles it for the GPU at hand.
//
//go:embed kernels/decode.ptx
var decodePTX []byte

// KernelName is the decode kernel's (extern "C") name in the PTX.
const KernelName = "glyd_decode"

// ScatterKernelName is the kernel that puts the CPU's bytes in place: a
// blob of (source, destination, length) u64 triples, one per block, then
// the bytes; each piece at most ScatterPiece bytes (kernels/decode.cu).
const (
	ScatterKernelName = "glyd_scatter"
	ScatterPiece      = 65536
)

// PTX returns the embedded PTX text of the decode kernel.
func PTX() []byte { return decodePTX }

// The kernel's launch geometry and buffer layout; kernels/decode.cu has the
// same numbers.
const (
	// BlockThreads is the threads of a block, one group each. All groups
	// of a block belong to one span, whose code table the block expands
	// into shared memory.
	BlockThreads = 128
	// PackedPad is the bytes the packed buffer (16-aligned) needs past its
	// end: the kernel reads through aligned 16-byte loads, up to 8 bytes
	// past a stream's end, then to the end of that 16-byte line, and one
	// line ahead: at most 40 bytes past the buffer's last byte. Their values do not
	// matter: bits read past a stream's end never decide a value (a prefix
	// code: a code that would need them is refused as "stream ends inside
	// a value" whatever they are).
	PackedPad = 48
	// OutAlign aligns the parts of a packed file's work buffer on the
	// device.
	OutAlign = 256

	spanDescSize = 80
	tableCounts  = 16 // u16 code-length counts that open each span's table
)

// Group status words, as the kernel writes them (one per group).
const (
	StatusOK       = 0
	StatusBounds   = 1 // the group's stream offsets are out of order or past the stream area
	StatusShort    = 2 // the stream ends inside a value
	StatusNoCode   = 3 // bits that match no code
	StatusLeftover = 4 // whole bytes of the stream left unread
	StatusCRC      = 5 // the decoded bytes fail the group's CRC-32C
	StatusKind     = 6 // unknown span kind
)

var statusText = [...]string{"ok", "stream offsets out of order or out of range", "stream ends inside a value",
	"bits that match no code", "bytes of stream left over", "CRC mismatch", "unknown span kind"}

// StatusText describes a group status word.
func StatusText(st uint32) string {
	if int(st) < len(statusText) {
		return statusText[st]
	}
	return fmt.Sprintf("status %d", st)
}

// Span is one coded span (docs/tensors.md, "span payload") for the kernel:
// Values values coded with Code in groups of 2^GroupLog2, the payload at
// byte Payload of the packed buffer (PayloadLen bytes, any alignment),
// decoded to byte Out of the output buffer (any alignment).
type Span struct {
	Name       string // for messages: the tensor it belongs to
	Code       *tensor.Code
	Values     int64
	GroupLog2  int
	Payload    int64
	PayloadLen int64
	Out        int64
}

// Plan is everything the kernel reads besides the packed bytes: built on
// the CPU from the spans' geometry and code tables alone (it reads no
// payload byte), uploaded as one buffer, Meta.
//
// Meta holds, little-endian:
//   - at DescOff, one 80-byte descriptor per span (struct SpanDesc in
//     kernels/decode.cu): where the payload's group ends, CRCs, raw plane
//     and streams are in the packed buffer, the output offset, the values
//     (u64); streamLen, groups, groupLog2, kind, table, tb, statusBase,
//     nsym (u32);
//   - at BlockOff, per block of BlockThreads threads: its span and the
//     span's group its thread 0 decodes (u32 pairs);
//   - at TableOff, per span at its descriptor's table offset (4-aligned):
//     the number of codes of each length 0..15 (u16 × 16), then the
//     symbols sorted by (code length, symbol) as the 16-bit word each
//     stands for (u16 × nsym): exponent<<7 for BF16 and F32 (the high half
//     of an F32 word), high byte<<8 for F16, the dictionary word for V16.
//     A one-symbol code has no counts and its symbol alone, with tb = 0;
//   - at SummaryOff, two u32 the kernel updates atomically: the number of
//     failed groups (0 before the launch) and the lowest failed group's
//     status index (0xffffffff before).
//
// The kernel writes one status word per group (StatusOK or why not) to a
// separate array of Groups words, at the span's statusBase + group.
type Plan struct {
	Spans      []Span
	Meta       []byte
	DescOff    int
	BlockOff   int
	TableOff   int
	SummaryOff int
	Blocks     int   // grid size
	Groups     int   // status words
	PackedLen  int64 // the packed buffer, without PackedPad
	OutLen     int64 // the output buffer
	groupBase  []int // status index of each span's group 0
}

// payloadParts are where a span payload's parts start, from its first
// byte (docs/tensors.md, "span payload"; tensor.DecodeReference reads the
// same): the end offset of every group's stream but the last (u32 each,
// counted from the stream area; the last group's stream ends with the
// payload), every group's CRC-32C (u32 each), the raw plane, the streams.
type payloadParts struct{ ends, crcs, raw, streams int64 }

func payloadLayout(groups, values int64, k tensor.Kind) payloadParts {
	return payloadParts{ends: 0, crcs: 4 * (groups - 1), raw: 8*groups - 4, streams: 8*groups - 4 + values*int64(k.RawSize())}
}

// spanGroups is the number of groups of a span.
func spanGroups(values int64, groupLog2 int) int64 {
	return (values-1)>>groupLog2 + 1
}

// symbolWord is what symbol s of code c puts into a 16-bit output word.
func symbolWord(c *tensor.Code, s int) uint16 {
	switch c.Kind {
	case tensor.BF16, tensor.F32:
		return uint16(s) << 7
	case tensor.F16:
		return uint16(s) << 8
	}
	return c.Dict[s]
}

// appendTable appends span table of code c (see Plan) and returns it with
// the lookup bits and the number of symbols.
func appendTable(dst []byte, c *tensor.Code) ([]byte, int, int, error) {
	const sole = 15 // tensor's code length of a one-symbol alphabet
	var count [tableCounts]int
	var soleSym = -1
	n := 0
	for s, l := range c.Lens {
		switch {
		case l == 0:
		case l == sole:
			soleSym = s
			n++
		case int(l) <= tensor.MaxCodeLen:
			count[l]++
			n++
		default:
			return dst, 0, 0, fmt.Errorf("code length %d out of range", l)
		}
	}
	if n == 0 || (soleSym >= 0 && n != 1) {
		return dst, 0, 0, fmt.Errorf("code without symbols, or a zero-bit symbol among others")
	}
	if c.Kind == tensor.V16 && len(c.Dict) != len(c.Lens) {
		return dst, 0, 0, fmt.Errorf("V16 code with %d lengths and %d dictionary words", len(c.Lens), len(c.Dict))
	}
	if soleSym >= 0 {
		dst = append(dst, make([]byte, 2*tableCounts)...)
		dst = binary.LittleEndian.AppendUint16(dst, symbolWord(c, soleSym))
		return dst, 0, 1, nil
	}
	// Kraft: the kernel's table has an entry for every bit pattern only
	// for a complete code (tensor.ParseTable checks the same).
	var kraft int
	tb := 0
	for l := 1; l <= tensor.MaxCodeLen; l++ {
		kraft += count[l] << (tensor.MaxCodeLen - l)
		if count[l] > 0 {
			tb = l
		}
	}
	if kraft != 1<<tensor.MaxCodeLen {
		return dst, 0, 0, fmt.Errorf("code lengths do not form a complete prefix code")
	}
	for _, k := range count {
		dst = binary.LittleEndian.AppendUint16(dst, uint16(k))
	}
	// The symbols sorted by (length, symbol): one pass, each symbol put
	// at its length's next slot (a plan has a table per span, and a
	// 16-bit alphabet is large).
	var next [tableCounts]int
	for l, at := 1, 0; l <= tb; l++ {
		next[l] = at
		at += count[l]
	}
	base := len(dst)
	dst = append(dst, make([]byte, 2*n)...)
	for s, l := range c.Lens {
		if l != 0 {
			binary.LittleEndian.PutUint16(dst[base+2*next[l]:], symbolWord(c, s))
			next[l]++
		}
	}
	return dst, tb, n, nil
}

// NewPlan checks the spans against a packed buffer of packedLen bytes and an
// output buffer of outLen bytes and lays out the kernel's launch.
func NewPlan(spans []Span, packedLen, outLen int64) (*Plan, error) {
	p := &Plan{Spans: spans, PackedLen: packedLen, OutLen: outLen, groupBase: make([]int, len(spans))}
	var descs, blocks, tables []byte
	groups := 0
	for i := range spans {
		s := &spans[i]
		bad := func(format string, args ...any) error {
			return fmt.Errorf("cuda: span %d (%s): %s", i, s.Name, fmt.Sprintf(format, args...))
		}
		if s.Code == nil || !kernelKind(s.Code.Kind) {
			return nil, bad("no code, or a kind the kernel does not decode")
		}
		if s.GroupLog2 < tensor.MinGroupLog2 || s.GroupLog2 > tensor.MaxGroupLog2 {
			return nil, bad("group size 2^%d out of range", s.GroupLog2)
		}
		if s.Values <= 0 || s.Values > 1<<40 {
			return nil, bad("%d values", s.Values)
		}
		ng := spanGroups(s.Values, s.GroupLog2)
		kind := s.Code.Kind
		pl := payloadLayout(ng, s.Values, kind)
		switch {
		case s.Payload < 0 || s.PayloadLen < 0 || s.Payload+s.PayloadLen > packedLen:
			return nil, bad("payload [%d, +%d) outside the %d-byte packed buffer", s.Payload, s.PayloadLen, packedLen)
		case pl.streams > s.PayloadLen:
			return nil, bad("payload of %d bytes too short for %d values", s.PayloadLen, s.Values)
		case s.PayloadLen-pl.streams > 1<<32-1:
			return nil, bad("stream area of %d bytes past 4 GiB", s.PayloadLen-pl.streams)
		case s.Out < 0 || s.Out+s.Values*int64(kind.WordSize()) > outLen:
			return nil, bad("output [%d, +%d) past the %d-byte output buffer", s.Out, s.Values*int64(kind.WordSize()), outLen)
		case int64(groups)+ng > 1<<31:
			return nil, bad("too many groups")
		}
		var err error
		tabOff := len(tables)
		var tb, nsym int
		if tables, tb, nsym, err = appendTable(tables, s.Code); err != nil {
			return nil, bad("%v", err)
		}
		for len(tables)%4 != 0 {
			tables = append(tables, 0)
		}
		if int64(len(tables)) > 1<<32-1 {
			return nil, bad("tables past 4 GiB")
		}
		p.groupBase[i] = groups
		d := make([]byte, 0, spanDescSize)
		for _, v := range []int64{s.Payload + pl.ends, s.Payload + pl.crcs, s.Payload + pl.raw, s.Payload + pl.streams, s.Out, s.Values} {
			d = binary.LittleEndian.AppendUint64(d, uint64(v))
		}
		for _, v := range []int{int(s.PayloadLen - pl.streams), int(ng), s.GroupLog2, int(kind), tabOff, tb, groups, nsym} {
			d = binary.LittleEndian.AppendUint32(d, uint32(v))
		}
		descs = append(descs, d...)
		for g := int64(0); g < ng; g += BlockThreads {
			blocks = binary.LittleEndian.AppendUint32(blocks, uint32(i))
			blocks = binary.LittleEndian.AppendUint32(blocks, uint32(g))
		}
		groups += int(ng)
	}
	p.Groups = groups
	p.Blocks = len(blocks) / 8
	p.DescOff = 0
	p.BlockOff = len(descs)
	p.TableOff = p.BlockOff + len(blocks)
	p.SummaryOff = p.TableOff + len(tables)
	meta := make([]byte, 0, p.SummaryOff+8)
	meta = append(append(append(meta, descs...), blocks...), tables...)
	meta = binary.LittleEndian.AppendUint32(meta, 0)
	meta = binary.LittleEndian.AppendUint32(meta, 0xffffffff)
	p.Meta = meta
	return p, nil
}

// GroupError names the span and group of status index i and what went
// wrong.
func (p *Plan) GroupError(i int, st uint32) error {
	s := 0
	for s+1 < len(p.groupBase) && p.groupBase[s+1] <= i {
		s++
	}
	if s >= len(p.Spans) {
		return fmt.Errorf("cuda: group %d: %s", i, StatusText(st))
	}
	return fmt.Errorf("cuda: %s: group %d: %s (decoded on the GPU)", p.Spans[s].Name, i-p.groupBase[s], StatusText(st))
}

// Check turns the kernel's status array (p.Groups words) and summary into
// an error naming the first failed group, or nil.
func (p *Plan) Check(status []uint32, failed, first uint32) error {
	if failed == 0 {
		return nil
	}
	if int(first) < len(status) {
		return fmt.Errorf("%w (%d groups failed)", p.GroupError(int(first), status[first]), failed)
	}
	return fmt.Errorf("cuda: %d groups failed to decode", failed)
}
