package lz

import (
	"os"
	"testing"
	"time"
)

func TestZZWhole(t *testing.T) {
	src, err := os.ReadFile("/work/shared/corpus/releases/x-tools/x-tools-01-v0.38.0.tar")
	if err != nil {
		t.Skip()
	}
	e := NewEncoder(Level(lvl()), false)
	type blk struct {
		b        []byte
		pos, n   int
		unitBase int
	}
	var blocks []blk
	for u := 0; u < len(src); u += 1 << 20 {
		unit := src[u:min(len(src), u+1<<20)]
		e.StartUnit(len(unit))
		for s := 0; s < len(unit); s += MaxBlock {
			end := min(len(unit), s+MaxBlock)
			blocks = append(blocks, blk{e.EncodeBlock(nil, unit, s, end), s, end - s, u})
		}
	}
	d := NewDecoder()
	dst := make([]byte, len(src))
	for _, sub := range []int{1 << 20, len(src)} {
		best := time.Hour
		for range 20 {
			t0 := time.Now()
			n := 0
			for _, b := range blocks {
				if b.unitBase >= sub {
					break
				}
				ue := min(len(src), b.unitBase+1<<20)
				if err := d.DecodeBlock(dst[b.unitBase:ue], b.pos, b.n, b.b, e.Layout()); err != nil {
					t.Fatal(err)
				}
				n += b.n
			}
			best = min(best, time.Since(t0))
			_ = n
		}
		t.Logf("first %d: %.0f MB/s", sub, float64(min(sub, len(src)))/best.Seconds()/1e6)
	}
}

func lvl() int {
	if os.Getenv("LVL") == "1" {
		return 1
	}
	return 0
}
