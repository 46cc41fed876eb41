package tensor

import (
	"testing"

	"github.com/glyd/glyd/internal/cputime"
)

func benchDecode(b *testing.B, k Kind, n int, threads int) {
	words := gaussian(k, n, 0.02, 1)
	c := codeFor(b, k, words)
	payload, err := Encode(nil, c, words, DefaultGroupLog2, 2)
	if err != nil {
		b.Fatal(err)
	}
	d, err := NewDecoder(c, n, DefaultGroupLog2, payload)
	if err != nil {
		b.Fatal(err)
	}
	out := make([]byte, len(words))
	b.SetBytes(int64(len(words)))
	b.ReportMetric(8*float64(len(payload))/float64(n), "bits/value")
	b.ResetTimer()
	for range b.N {
		if err := d.Decode(out, threads); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecode measures decoded output bytes per second on one core.
func BenchmarkDecodeBF16(b *testing.B) { benchDecode(b, BF16, 1<<22, 1) }
func BenchmarkDecodeF16(b *testing.B)  { benchDecode(b, F16, 1<<22, 1) }
func BenchmarkDecodeF32(b *testing.B)  { benchDecode(b, F32, 1<<21, 1) }

// BenchmarkDecodeBF16Threads decodes on every core.
func BenchmarkDecodeBF16Threads(b *testing.B) { benchDecode(b, BF16, 1<<22, 0) }

func BenchmarkEncodeBF16(b *testing.B) {
	words := gaussian(BF16, 1<<22, 0.02, 1)
	b.SetBytes(int64(len(words)))
	for range b.N {
		c := codeFor(b, BF16, words)
		if _, err := Encode(nil, c, words, DefaultGroupLog2, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDecodeSpeed logs the decode speed per core measured in thread CPU
// time (go test -run DecodeSpeed -v), which a busy machine distorts less
// than the wall time benchmarks report.
func TestDecodeSpeed(t *testing.T) {
	if testing.Short() {
		t.Skip("speed measurement")
	}
	for _, k := range []Kind{BF16, F16, F32} {
		n := 1 << 21
		words := gaussian(k, n, 0.02, 1)
		c := codeFor(t, k, words)
		payload, err := Encode(nil, c, words, DefaultGroupLog2, 2)
		if err != nil {
			t.Fatal(err)
		}
		d, err := NewDecoder(c, n, DefaultGroupLog2, payload)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]byte, len(words))
		best, cpu := cputime.Best(10, func() {
			if err := d.Decode(out, 1); err != nil {
				t.Fatal(err)
			}
		})
		t.Logf("%v: %.0f MB/s per core (cpu time %v)", k, float64(len(words))/best.Seconds()/1e6, cpu)
	}
}

// TestAsmVsGo compares the assembly and Go loops' speed (-v) and output.
func TestAsmVsGo(t *testing.T) {
	if testing.Short() || !haveAsm {
		t.Skip()
	}
	n := 1 << 21
	words := gaussian(BF16, n, 0.02, 1)
	c := codeFor(t, BF16, words)
	payload, _ := Encode(nil, c, words, DefaultGroupLog2, 2)
	d, _ := NewDecoder(c, n, DefaultGroupLog2, payload)
	out := make([]byte, len(words))
	defer func() { useAsm = haveAsm }()
	for range 3 {
		var speeds []float64
		for _, asm := range []bool{false, true} {
			useAsm = asm
			best, _ := cputime.Best(8, func() {
				if err := d.Decode(out, 1); err != nil {
					t.Fatal(err)
				}
			})
			speeds = append(speeds, float64(len(words))/best.Seconds()/1e6)
		}
		t.Logf("go %.0f MB/s, asm %.0f MB/s", speeds[0], speeds[1])
	}
}
