package tests

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGlydfsCLI: the glyd commands that work through a mount — versions,
// snapshot create/ls/rm, restore (of a file from a version and of a tree
// from a snapshot, to where it was) and stats, on the mount and on the
// unmounted store.
func TestGlydfsCLI(t *testing.T) {
	ft := newFuseTest(t)
	store := ft.storeDir()
	p := ft.startFG(store, ft.mountDir())
	work := t.TempDir()

	os.MkdirAll(p.path("proj/src"), 0o755)
	for i := 1; i <= 3; i++ {
		if err := os.WriteFile(p.path("proj/src/main.go"), []byte(strings.Repeat("v", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(p.path("proj/README"), []byte("readme one\n"), 0o600)

	r := run(t, work, nil, "versions", "--json", p.path("proj/src/main.go"))
	if r.code != 0 {
		t.Fatalf("glyd versions: %v", r)
	}
	var vs []struct {
		Version uint64
		Size    int64
		Path    string
	}
	if err := json.Unmarshal(r.stdout, &vs); err != nil || len(vs) != 3 || vs[0].Size != 1 || vs[2].Size != 3 {
		t.Fatalf("versions %s (%v)", r.stdout, err)
	}
	if r := run(t, work, nil, "versions", p.path("proj/nothing")); r.code == 0 {
		t.Error("versions of a missing file succeeded")
	}
	if r := run(t, work, nil, "versions", work); r.code == 0 || !bytes.Contains(r.stderr, []byte("not inside a mounted glydfs")) {
		t.Errorf("versions outside a mount: %v", r)
	}

	if r := run(t, work, nil, "snapshot", "create", p.path("."), "before"); r.code != 0 {
		t.Fatalf("snapshot create: %v", r)
	}
	if r := run(t, work, nil, "snapshot", "create", p.path("proj"), "before"); r.code == 0 {
		t.Error("a second snapshot of the same name was taken")
	}
	if r := run(t, work, nil, "snapshot", "ls", p.path(".")); r.code != 0 || string(r.stdout) != "before\n" {
		t.Fatalf("snapshot ls: %q %v", r.stdout, r)
	}

	// Change and delete, then bring things back.
	os.WriteFile(p.path("proj/README"), []byte("changed\n"), 0o600)
	os.RemoveAll(p.path("proj/src"))
	if r := run(t, work, nil, "restore", p.path(".snapshots/before/proj")); r.code != 0 {
		t.Fatalf("restore of a tree: %v", r)
	}
	wantBytes(t, p.path("proj/README"), []byte("readme one\n"))
	wantBytes(t, p.path("proj/src/main.go"), []byte("vvv"))
	if fi, err := os.Stat(p.path("proj/README")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("restored mode: %v %v", fi.Mode(), err)
	}
	if r := run(t, work, nil, "restore", vs[0].Path, p.path("proj/old.go")); r.code != 0 {
		t.Fatalf("restore of a version: %v", r)
	}
	wantBytes(t, p.path("proj/old.go"), []byte("v"))

	r = run(t, work, nil, "stats", "--json", p.path("proj"))
	var st struct {
		Files     int   `json:"files"`
		Logical   int64 `json:"logical"`
		Stored    int64 `json:"stored"`
		Snapshots int   `json:"snapshots"`
	}
	if r.code != 0 || json.Unmarshal(r.stdout, &st) != nil || st.Files != 3 || st.Snapshots != 1 || st.Stored <= 0 {
		t.Fatalf("stats on the mount: %s %v", r.stdout, r)
	}
	if r := run(t, work, nil, "snapshot", "rm", p.path("."), "before"); r.code != 0 {
		t.Fatalf("snapshot rm: %v", r)
	}
	if _, err := os.Stat(p.path(".snapshots/before")); err == nil {
		t.Error("the snapshot is still there")
	}

	p.unmount()
	r = run(t, work, nil, "stats", "--json", store)
	var st2 struct {
		Files int `json:"files"`
	}
	if r.code != 0 || json.Unmarshal(r.stdout, &st2) != nil || st2.Files != 3 {
		t.Fatalf("stats on the store: %s %v", r.stdout, r)
	}
	if r := run(t, work, nil, "store", "verify", store); r.code != 0 {
		t.Fatalf("verify after the CLI work: %v", r)
	}
	if _, err := os.Stat(filepath.Join(store, "MANIFEST")); err != nil {
		t.Fatal(err)
	}
}
