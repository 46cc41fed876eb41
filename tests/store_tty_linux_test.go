package tests

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
)

// With stderr a terminal, store put prints its summary there; -q silences
// it; get writes nothing but the data.
func TestStoreTerminal(t *testing.T) {
	dir := t.TempDir()
	data := sample(2<<20, 24)
	writeFile(t, filepath.Join(dir, "a"), data)
	ok(t, dir, nil, "store", "init", "st")

	code, tty, _, _ := runTTY(t, dir, false, true, "store", "put", "st", "a", "a")
	if code != 0 || !strings.Contains(tty, "a: 2.1 MB in ") || !strings.Contains(tty, "stored") {
		t.Fatalf("put summary on a terminal: exit %d, %q", code, tty)
	}
	if code, tty, _, _ = runTTY(t, dir, false, true, "store", "put", "-q", "st", "b", "a"); code != 0 || tty != "" {
		t.Fatalf("put -q on a terminal: exit %d, %q", code, tty)
	}
	code, tty, out, _ := runTTY(t, dir, false, true, "store", "get", "st", "b")
	if code != 0 || strings.Contains(tty, "glyd") || !bytes.Equal(out, data) {
		t.Fatalf("get with stderr a terminal: exit %d, terminal %q, %d bytes out", code, tty, len(out))
	}
}
