package zzprobe

import (
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/glyd/glyd/codec"
)

func TestProbe(t *testing.T) {
	a, _ := os.ReadFile("/work/shared/corpus/records/dpkg-status.csv")
	b, _ := os.ReadFile("/work/shared/corpus/weights/bf16/human-age.safetensors")
	var buf []byte
	for len(buf) < 64<<20 {
		buf = append(buf, a...)
		buf = append(buf, b...)
	}
	comp, _ := codec.Encode(buf, codec.Options{Tier: codec.Default, Threads: 2})
	for _, th := range []int{1, 2, 1, 2} {
		for i := 0; i < 4; i++ {
			runtime.GC()
			t0 := time.Now()
			out, _ := codec.Decode(comp, th)
			d := time.Since(t0)
			t.Logf("threads %d: %v  %.0f MB/s", th, d, float64(len(out))/d.Seconds()/1e6)
		}
	}
	f, _ := codec.OpenBytes(comp, 1)
	for i := 0; i < 3; i++ {
		t0 := time.Now()
		out := make([]byte, f.Size())
		for j := range out { if j%4096 == 0 { out[j] = 0 } }
		t1 := time.Now()
		f.ReadAt(out, 0)
		t.Logf("alloc+touch %v, ReadAt %v", t1.Sub(t0), time.Since(t1))
	}
}
