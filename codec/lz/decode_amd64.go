//go:build amd64 && !noasm

package lz

import "unsafe"

// HasAsm reports whether the assembly decoder is in use.
const HasAsm = true

// fastState is what decodeFast reads and updates; decode_amd64.s fixes the
// field offsets, so keep the order (TestFastStateLayout checks it).
type fastState struct {
	dst, tok, off0, off1, lit, ext, off2       unsafe.Pointer
	ntok, litLimit, outLimit, next, noff2      int
	c                                          cursor
	scratchExtEnd, scratchOff2End, scratchExtP uintptr // the loop's own
}

// decodeFast replays sequences while each one, with its wide copies, fits
// well inside every stream and the output; it stops at the first sequence
// that does not (near a stream's end, a length past two varint bytes, a bad
// offset) and leaves it to step, which checks everything.
//
//go:noescape
func decodeFast(s *fastState)

// decodeFastNarrow is decodeFast for Narrow blocks.
//
//go:noescape
func decodeFastNarrow(s *fastState)

// fastMargin is how far from the end of the literals and of the output the
// assembly loop stops: it always copies 32 bytes at once.
const fastMargin = 32

func ptr(b []byte) unsafe.Pointer {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Pointer(&b[0])
}

// decodeSeqs runs the assembly loop and the checked Go step in turns.
func decodeSeqs(dst []byte, pos, end int, q *seqs, pad *[]byte) error {
	c := cursor{op: pos}
	outLimit := min(end, len(dst)-fastMargin)
	if len(q.lit) >= fastMargin && outLimit > pos {
		// The loop reads the off2 byte of every sequence before it knows
		// whether the sequence has one, so give it a padded copy.
		*pad = append(append((*pad)[:0], q.off2...), make([]byte, 8)...)
		s := fastState{
			dst: ptr(dst), tok: ptr(q.tok), off0: ptr(q.off0), off1: ptr(q.off1),
			lit: ptr(q.lit), ext: ptr(q.ext), off2: ptr(*pad),
			ntok: len(q.tok), litLimit: len(q.lit) - fastMargin, outLimit: outLimit,
			next: len(q.ext), noff2: len(q.off2), c: c,
		}
		fast := decodeFast
		if q.narrow {
			fast = decodeFastNarrow
		}
		for {
			fast(&s)
			if s.c.ti >= len(q.tok) {
				break
			}
			if err := step(dst, end, q, &s.c); err != nil {
				return err
			}
		}
		c = s.c
	}
	for c.ti < len(q.tok) {
		if err := step(dst, end, q, &c); err != nil {
			return err
		}
	}
	return finish(dst, pos, end, q, &c)
}
