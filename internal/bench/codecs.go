package bench

import (
	"fmt"

	"github.com/glyd/glyd/codec"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Kind tells where a codec runs.
type Kind int

const (
	// KindGlyd is one of glyd's tiers, run in process.
	KindGlyd Kind = iota
	// KindGo is a Go peer library, run in process.
	KindGo
	// KindCLI is a C command-line tool, run as a subprocess.
	KindCLI
)

func (k Kind) String() string {
	switch k {
	case KindGlyd:
		return "glyd"
	case KindGo:
		return "Go peer"
	case KindCLI:
		return "C CLI"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Row names of the codecs the summary refers to.
const (
	NameGlydDefault = "glyd default"
	NameGlydMax     = "glyd max"
	NameGlydCold    = "glyd cold"
	NameZstdGoDef   = "zstd-go default"
	NameLZ4CLI      = "lz4 -1 (C)"
	NameZstd1CLI    = "zstd -1 (C)"
	NameZstd3CLI    = "zstd -3 (C)"
	NameZstd19CLI   = "zstd -19 --long=27 (C)"
	NameXzCLI       = "xz -9 (C)"
)

// memCodec is a codec run in this process. threads is 1 for the one-thread
// columns and Config.Threads for the all-threads columns; codecs without a
// multi-thread mode (multi false) are only called with 1.
//
// compress allocates its output, as glyd's Encode does. decompress must
// fill out, which is exactly as long as the original and reused from call
// to call, like the C tools' benchmarks do: what is timed is decoding, not
// the page faults of a fresh buffer, which on a shared virtual machine vary
// from run to run far more than decoding does.
type memCodec struct {
	name       string
	kind       Kind
	multi      bool
	compress   func(src []byte, threads int) ([]byte, error)
	decompress func(comp, out []byte, threads int) error
	tier       codec.Tier // glyd only
}

// filled checks that a decoder that returns its output wrote all of out.
func filled(out, got []byte) error {
	if len(got) != len(out) {
		return fmt.Errorf("decoded %d bytes, want %d", len(got), len(out))
	}
	if len(out) > 0 && &got[0] != &out[0] {
		copy(out, got) // the decoder allocated after all; still correct
	}
	return nil
}

func glydCodec(name string, tier codec.Tier) memCodec {
	return memCodec{
		name:  name,
		kind:  KindGlyd,
		multi: true,
		tier:  tier,
		compress: func(src []byte, threads int) ([]byte, error) {
			return codec.Encode(src, codec.Options{Tier: tier, Threads: threads})
		},
		// File.ReadAt over the whole output is Decode (the same parallel
		// loop over units) into a buffer the caller gives.
		decompress: func(comp, out []byte, threads int) error {
			f, err := codec.OpenBytes(comp, threads)
			if err != nil {
				return err
			}
			if f.Size() != int64(len(out)) {
				return fmt.Errorf("stream holds %d bytes, want %d", f.Size(), len(out))
			}
			_, err = f.ReadAt(out, 0)
			return err
		},
	}
}

func zstdCodec(name string, level zstd.EncoderLevel) (memCodec, error) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(level), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return memCodec{}, err
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return memCodec{}, err
	}
	return memCodec{
		name: name,
		kind: KindGo,
		compress: func(src []byte, _ int) ([]byte, error) {
			return enc.EncodeAll(src, nil), nil
		},
		decompress: func(comp, out []byte, _ int) error {
			got, err := dec.DecodeAll(comp, out[:0])
			if err != nil {
				return err
			}
			return filled(out, got)
		},
	}, nil
}

func s2Codec(name string, enc func(dst, src []byte) []byte) memCodec {
	return memCodec{
		name: name,
		kind: KindGo,
		compress: func(src []byte, _ int) ([]byte, error) {
			return enc(nil, src), nil
		},
		decompress: func(comp, out []byte, _ int) error {
			got, err := s2.Decode(out, comp)
			if err != nil {
				return err
			}
			return filled(out, got)
		},
	}
}

// lz4Codec is pierrec/lz4's block API at its fast level. The output buffer
// is CompressBlockBound long, so compression always succeeds (incompressible
// input comes out as literals, a little larger than the input).
func lz4Codec(name string) memCodec {
	var c lz4.Compressor
	return memCodec{
		name: name,
		kind: KindGo,
		compress: func(src []byte, _ int) ([]byte, error) {
			dst := make([]byte, lz4.CompressBlockBound(len(src)))
			n, err := c.CompressBlock(src, dst)
			if err != nil {
				return nil, err
			}
			if n == 0 && len(src) > 0 {
				return nil, fmt.Errorf("lz4 block compression returned nothing")
			}
			return dst[:n], nil
		},
		decompress: func(comp, out []byte, _ int) error {
			n, err := lz4.UncompressBlock(comp, out)
			if err != nil {
				return err
			}
			return filled(out, out[:n])
		},
	}
}

// memCodecs lists glyd's tiers then the Go peers, in table order.
func memCodecs() ([]memCodec, error) {
	cs := []memCodec{
		glydCodec(NameGlydDefault, codec.Default),
		glydCodec(NameGlydMax, codec.Max),
		glydCodec(NameGlydCold, codec.Cold),
	}
	for _, z := range []struct {
		name  string
		level zstd.EncoderLevel
	}{
		{"zstd-go fastest", zstd.SpeedFastest},
		{NameZstdGoDef, zstd.SpeedDefault},
		{"zstd-go best", zstd.SpeedBestCompression},
	} {
		c, err := zstdCodec(z.name, z.level)
		if err != nil {
			return nil, err
		}
		cs = append(cs, c)
	}
	cs = append(cs,
		s2Codec("s2-go", s2.Encode),
		s2Codec("s2-go better", s2.EncodeBetter),
		s2Codec("s2-go best", s2.EncodeBest),
		lz4Codec("lz4-go fast"),
	)
	return cs, nil
}
