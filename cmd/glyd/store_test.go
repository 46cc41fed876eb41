package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/glyd/glyd/chunkstore"
)

func TestParseRange(t *testing.T) {
	for _, c := range []struct {
		in     string
		off, n int64
		fail   bool
	}{
		{in: "0:100", off: 0, n: 100},
		{in: "4KiB:1MiB", off: 4096, n: 1 << 20},
		{in: "4kib:1mb", off: 4096, n: 1000000},
		{in: "100:", off: 100, n: -1},
		{in: "100", off: 100, n: -1},
		{in: ":5", off: 0, n: 5},
		{in: "1,000:2", off: 1000, n: 2},
		{in: "x:1", fail: true},
		{in: "1:y", fail: true},
		{in: "-1:5", fail: true},
		{in: "1:-5", fail: true},
		{in: "99999999999EiB", fail: true},
	} {
		off, n, err := parseRange(c.in)
		if c.fail {
			if err == nil || !strings.Contains(err.Error(), "--range") {
				t.Errorf("%q: %d, %d, %v; want an error naming --range", c.in, off, n, err)
			}
			continue
		}
		if err != nil || off != c.off || n != c.n {
			t.Errorf("%q: %d, %d, %v; want %d, %d", c.in, off, n, err, c.off, c.n)
		}
	}
}

func TestStoreMessages(t *testing.T) {
	notFound := fmt.Errorf("object %q: %w", "a", chunkstore.ErrNotFound)
	damaged := fmt.Errorf("object %q at offset 0: %w", "a", fmt.Errorf("%w: chunk 0123: frame missing", chunkstore.ErrCorrupt))
	for _, c := range []struct {
		err  error
		want string
	}{
		{objectError("st", "a", notFound), `st: no object "a" in the store`},
		{objectError("st", "a", damaged), `st: object "a" at offset 0: damaged: chunk 0123: frame missing ('glyd store verify st' checks the whole store)`},
		{objectError("st", "a", about("in", fmt.Errorf("broken"))), "in: broken"},
	} {
		if got := message(c.err); got != c.want {
			t.Errorf("message = %q, want %q", got, c.want)
		}
	}
}
