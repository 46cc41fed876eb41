package cputime

import "testing"

func TestMeasure(t *testing.T) {
	x := 0
	d, _ := Best(3, func() {
		for i := range 10_000_000 {
			x += i
		}
	})
	if d <= 0 {
		t.Fatalf("measured %v", d)
	}
	_ = x
}
