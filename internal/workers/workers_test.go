package workers

import (
	"errors"
	"sync/atomic"
	"testing"
)

func TestRunEveryIndexOnce(t *testing.T) {
	for _, threads := range []int{0, 1, 3, 64} {
		seen := make([]atomic.Int32, 1000)
		if err := Run(len(seen), threads, func(i int) error { seen[i].Add(1); return nil }); err != nil {
			t.Fatal(err)
		}
		for i := range seen {
			if n := seen[i].Load(); n != 1 {
				t.Fatalf("threads %d: index %d ran %d times", threads, i, n)
			}
		}
	}
}

func TestRunStopsAtFirstError(t *testing.T) {
	bad := errors.New("bad")
	var ran atomic.Int32
	err := Run(10000, 4, func(i int) error {
		ran.Add(1)
		if i == 10 {
			return bad
		}
		return nil
	})
	if !errors.Is(err, bad) {
		t.Fatalf("got %v, want the error", err)
	}
	if ran.Load() == 10000 {
		t.Error("every index ran after an error")
	}
}
