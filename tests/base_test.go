package tests

import (
	"bytes"
	"path/filepath"
	"testing"
)

// TestBaseDelta: glyd --base OLD NEW codes NEW against OLD (content moved
// anywhere in OLD is found), -d --base restores it, through files and
// pipes; the wrong base or none is refused with a clear message.
func TestBaseDelta(t *testing.T) {
	dir := t.TempDir()
	old := sample(2<<20, 1)
	// new version: a block moved to the front, a few edits, new data at the end
	nw := append(bytes.Clone(old[1<<20:1<<20+200<<10]), old...)
	for i := 5000; i < len(nw); i += 300 << 10 {
		copy(nw[i:], "changed")
	}
	nw = append(nw, sample(50<<10, 9)...)
	writeFile(t, filepath.Join(dir, "old"), old)
	writeFile(t, filepath.Join(dir, "new"), nw)

	ok(t, dir, nil, "-k", "--base", "old", "new", "new.glyd")
	plain := ok(t, dir, nw, "-c", "-")
	delta := readFile(t, filepath.Join(dir, "new.glyd"))
	if len(delta)*4 > len(plain.stdout) {
		t.Errorf("against its base: %d bytes; alone: %d", len(delta), len(plain.stdout))
	}
	ok(t, dir, nil, "-d", "-k", "--base", "old", "new.glyd", "restored")
	if !bytes.Equal(readFile(t, filepath.Join(dir, "restored")), nw) {
		t.Fatal("restored file differs")
	}
	r := ok(t, dir, delta, "-d", "--base", "old", "-", "-")
	if !bytes.Equal(r.stdout, nw) {
		t.Fatal("restored through a pipe differs")
	}
	writeFile(t, filepath.Join(dir, "other"), sample(2<<20, 2))
	fails(t, dir, nil, []string{"-d", "-k", "--base", "other", "new.glyd", "x"}, "wrong base")
	fails(t, dir, nil, []string{"-d", "-k", "new.glyd", "y"}, "--base")
	fails(t, dir, delta, []string{"-d", "-", "-"}, "--base")
	if exists(filepath.Join(dir, "x")) || exists(filepath.Join(dir, "y")) {
		t.Fatal("a failed restore left output behind")
	}
}
