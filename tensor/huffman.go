package tensor

import (
	"math/bits"
	"sort"
)

// MaxCodeLen is the longest Huffman code: a decoder's lookup table of
// 2^MaxCodeLen entries always decodes at least one symbol.
const MaxCodeLen = 12

// MaxSymbols is the largest alphabet a code may have.
const MaxSymbols = 1 << MaxCodeLen

// soleLen is how a table writes the code length of the only symbol of a
// one-symbol alphabet: that symbol takes no bits at all.
const soleLen = 15

// codeLengths returns optimal code lengths, limited to maxLen bits, for the
// given symbol frequencies (package-merge). Symbols with frequency 0 get
// length 0. With one used symbol its length is soleLen (a zero-bit code);
// with none, every length is 0. len(freq) must be at most 2^maxLen.
func codeLengths(freq []uint64, maxLen int) []uint8 {
	lens := make([]uint8, len(freq))
	var syms []int
	for s, f := range freq {
		if f > 0 {
			syms = append(syms, s)
		}
	}
	n := len(syms)
	if n == 1 {
		lens[syms[0]] = soleLen
	}
	if n <= 1 {
		return lens
	}
	if n > 1<<maxLen {
		panic("tensor: alphabet too large for the code length limit")
	}
	sort.Slice(syms, func(a, b int) bool {
		fa, fb := freq[syms[a]], freq[syms[b]]
		return fa < fb || fa == fb && syms[a] < syms[b]
	})
	if n == 2 {
		lens[syms[0]], lens[syms[1]] = 1, 1
		return lens
	}
	// Package-merge: the list at depth maxLen holds the leaves; each
	// shallower list merges the leaves with pairs (packages) of the list
	// below. The first 2n-2 items of the depth-1 list give the lengths:
	// every leaf taken, at any depth, adds one bit to its symbol. Leaves
	// are taken lightest first, so only how many are taken per list
	// matters.
	w := make([]uint64, n)
	for i, s := range syms {
		w[i] = freq[s]
	}
	// leafCount[d][k]: leaves among the first k items of the list at depth d.
	leafCount := make([][]int32, maxLen+1)
	prev := w // list at depth maxLen: leaves only
	leafCount[maxLen] = make([]int32, n+1)
	for k := 0; k <= n; k++ {
		leafCount[maxLen][k] = int32(k)
	}
	for d := maxLen - 1; d >= 1; d-- {
		np := len(prev) / 2
		cur := make([]uint64, 0, n+np)
		lc := make([]int32, 1, n+np+1)
		li, pi := 0, 0
		leaves := int32(0)
		for li < n || pi < np {
			if pi >= np || (li < n && w[li] <= prev[2*pi]+prev[2*pi+1]) {
				cur = append(cur, w[li])
				li++
				leaves++
			} else {
				cur = append(cur, prev[2*pi]+prev[2*pi+1])
				pi++
			}
			lc = append(lc, leaves)
		}
		leafCount[d] = lc
		prev = cur
	}
	take := 2*n - 2
	for d := 1; d <= maxLen && take > 0; d++ {
		lc := leafCount[d]
		if take > len(lc)-1 {
			take = len(lc) - 1
		}
		leaves := int(lc[take])
		for i := 0; i < leaves; i++ {
			lens[syms[i]]++
		}
		take = 2 * (take - leaves)
	}
	return lens
}

// canonical assigns canonical codes to lengths the way DEFLATE does
// (RFC 1951 §3.2.2): shorter codes first, codes of one length in symbol
// order. It returns each symbol's code reversed for an LSB-first bit stream
// (the first bit of a code is its most significant), and false when the
// lengths do not form a complete prefix code.
func canonical(lens []uint8) ([]uint16, bool) { return canonicalInto(nil, lens, 0, len(lens)) }

// canonicalInto is canonical writing the codes into codes when it has room
// for them (zeros, or made fresh); the lengths outside [lo, hi) are known
// to be 0.
func canonicalInto(codes []uint16, lens []uint8, lo, hi int) ([]uint16, bool) {
	var count [16]int
	used, sole := 0, 0
	for _, l := range lens[lo:hi] {
		if l > 15 {
			return nil, false
		}
		count[l]++
	}
	count[0] = 0
	for l := MaxCodeLen + 1; l < 16; l++ {
		if l != soleLen && count[l] != 0 {
			return nil, false
		}
	}
	sole = count[soleLen]
	for l := 1; l <= MaxCodeLen; l++ {
		used += count[l]
	}
	used += sole
	if len(codes) != len(lens) {
		codes = make([]uint16, len(lens))
	}
	if used == 1 {
		if sole != 1 {
			return nil, false // a sole symbol must have the zero-bit code
		}
		return codes, true
	}
	if used == 0 || sole != 0 {
		return nil, false
	}
	// Kraft: the code must be complete, so every bit pattern decodes.
	var kraft uint64
	for l := 1; l <= MaxCodeLen; l++ {
		kraft += uint64(count[l]) << (MaxCodeLen - l)
	}
	if kraft != 1<<MaxCodeLen {
		return nil, false
	}
	var next [MaxCodeLen + 2]int
	code := 0
	for l := 1; l <= MaxCodeLen; l++ {
		code = (code + count[l-1]) << 1
		next[l] = code
	}
	for s := lo; s < hi; s++ {
		l := lens[s]
		if l == 0 {
			continue
		}
		c := next[l]
		next[l]++
		codes[s] = uint16(bits.Reverse16(uint16(c)) >> (16 - l))
	}
	return codes, true
}
