package q

import (
	"os"
	"testing"

	"github.com/glyd/glyd/codec"
)

func BenchmarkDec(b *testing.B) {
	src, _ := os.ReadFile("/work/shared/corpus/releases/x-tools/x-tools-01-v0.38.0.tar")
	tier := codec.Default
	if os.Getenv("TIER") == "max" {
		tier = codec.Max
	}
	enc, _ := codec.Encode(src, codec.Options{Tier: tier, Threads: 1, UnitSize: us()})
	f, _ := codec.OpenBytes(enc, 1)
	out := make([]byte, len(src))
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		f.ReadAt(out, 0)
	}
}

func us() int {
	switch os.Getenv("US") {
	case "128":
		return 128 << 10
	case "256":
		return 256 << 10
	case "4096":
		return 4 << 20
	}
	return 1 << 20
}
