package codec

import (
	"bytes"
	"errors"
	"testing"
)

func TestChunkRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 5000, BlockSize + 7, 300 << 10} {
		src := sample(n, uint64(n))
		for _, tier := range tiers {
			fr := EncodeChunk(nil, src, tier)
			info, err := InspectChunk(fr)
			if err != nil || info.RawLen != n || info.Delta {
				t.Fatalf("inspect: %+v %v", info, err)
			}
			got, err := DecodeChunk(fr, nil)
			if err != nil || !bytes.Equal(got, src) {
				t.Fatalf("n=%d tier %v: %v", n, tier, err)
			}
		}
	}
}

func TestDeltaChunk(t *testing.T) {
	base := sample(200<<10, 1)
	target := bytes.Clone(base)
	copy(target[5000:], "an edit in the middle")
	target = append(target[:100<<10], append([]byte("inserted text"), target[100<<10:]...)...)
	for _, tier := range tiers {
		fr := EncodeDelta(nil, base, target, tier)
		alone := EncodeChunk(nil, target, tier)
		if len(fr)*10 > len(alone) {
			t.Errorf("tier %v: delta %d bytes, alone %d", tier, len(fr), len(alone))
		}
		info, err := InspectChunk(fr)
		if err != nil || !info.Delta {
			t.Fatalf("inspect: %+v %v", info, err)
		}
		got, err := DecodeChunk(fr, base)
		if err != nil || !bytes.Equal(got, target) {
			t.Fatalf("tier %v: %v", tier, err)
		}
		if _, err := DecodeChunk(fr, nil); !errors.Is(err, ErrFormat) {
			t.Fatalf("no base: %v", err)
		}
		wrong := bytes.Clone(base)
		wrong[5] ^= 1
		wrong[150<<10] ^= 1
		if got, err := DecodeChunk(fr, wrong); err == nil && !bytes.Equal(got, target) {
			t.Fatal("wrong base decoded to wrong bytes without an error")
		}
	}
}

// A chunk made of parts of two chunks codes against both at once; the
// frame is the one-base frame against their concatenation, and the wrong
// bases give an error, never other bytes.
func TestDeltaFromTwoBases(t *testing.T) {
	a, b := sample(96<<10, 3), sample(80<<10, 4)
	target := append(append(bytes.Clone(a[40<<10:]), "glue between the two"...), b[:50<<10]...)
	cat := append(bytes.Clone(a), b...)
	for _, tier := range tiers {
		fr := EncodeDeltaFrom(nil, [][]byte{a, b}, target, tier)
		if want := EncodeDelta(nil, cat, target, tier); !bytes.Equal(fr, want) {
			t.Fatalf("tier %v: the two-base frame differs from the frame against the concatenation", tier)
		}
		if one := EncodeDelta(nil, a, target, tier); len(fr)*4 > len(one) {
			t.Errorf("tier %v: %d bytes against both bases, %d against the first", tier, len(fr), len(one))
		}
		got := make([]byte, len(target))
		if err := DecodeChunkFrom(got, fr, [][]byte{a, b}); err != nil || !bytes.Equal(got, target) {
			t.Fatalf("tier %v: %v", tier, err)
		}
		if err := DecodeChunkFrom(got, fr, [][]byte{b, a}); err == nil && !bytes.Equal(got, target) {
			t.Fatal("bases in the wrong order decoded to wrong bytes without an error")
		}
		if err := DecodeChunkFrom(got, fr, [][]byte{a}); err == nil {
			t.Fatal("a missing base decoded without an error")
		}
	}
}

// FuzzDecodeChunk: chunk frames from the store are parsed by DecodeChunk.
func FuzzDecodeChunk(f *testing.F) {
	base := sample(3000, 2)
	f.Add(EncodeChunk(nil, sample(3000, 1), Default), false)
	f.Add(EncodeDelta(nil, base, sample(3000, 1), Max), true)
	f.Fuzz(func(t *testing.T, fr []byte, withBase bool) {
		var b []byte
		if withBase {
			b = base
		}
		InspectChunk(fr)
		DecodeChunk(fr, b)
	})
}
