package tests

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// storeStat is what glyd store stat --json prints (the fields the tests
// read).
type storeStat struct {
	Objects     int     `json:"objects"`
	Chunks      int     `json:"chunks"`
	Logical     int64   `json:"logical_bytes"`
	Unique      int64   `json:"unique_bytes"`
	Stored      int64   `json:"stored_bytes"`
	Ratio       float64 `json:"ratio"`
	DedupSaved  int64   `json:"dedup_saved_bytes"`
	DeltaSaved  int64   `json:"delta_saved_bytes"`
	CompSaved   int64   `json:"compression_saved_bytes"`
	DeltaChunks int     `json:"delta_chunks"`
}

func statStore(t *testing.T, dir, store string) storeStat {
	t.Helper()
	r := ok(t, dir, nil, "store", "stat", "--json", store)
	var s storeStat
	if err := json.Unmarshal(r.stdout, &s); err != nil {
		t.Fatalf("stat --json printed %q: %v", r.stdout, err)
	}
	return s
}

type lsEntry struct {
	Name   string `json:"name"`
	Size   int64  `json:"size"`
	Chunks int    `json:"chunks"`
}

func lsStore(t *testing.T, dir, store string) []lsEntry {
	t.Helper()
	r := ok(t, dir, nil, "store", "ls", "--json", store)
	var es []lsEntry
	if err := json.Unmarshal(r.stdout, &es); err != nil {
		t.Fatalf("ls --json printed %q: %v", r.stdout, err)
	}
	return es
}

func TestStoreRoundTrip(t *testing.T) {
	dir := t.TempDir()
	data := sample(3<<20+777, 21)
	writeFile(t, filepath.Join(dir, "data"), data)

	r := ok(t, dir, nil, "store", "init", "st")
	if !bytes.Contains(r.stdout, []byte("created")) || !bytes.Contains(r.stdout, []byte("st")) {
		t.Fatalf("init printed %q", r.stdout)
	}

	// Put from a file (quiet: stderr is not a terminal), from a pipe with
	// -v (a summary line), and read both back to stdout and to a file.
	if r := ok(t, dir, nil, "store", "put", "st", "file", "data"); len(r.stdout)+len(r.stderr) != 0 {
		t.Fatalf("put printed %q / %q with stderr not a terminal", r.stdout, r.stderr)
	}
	r = ok(t, dir, data, "store", "put", "-v", "-T", "2", "st", "pipe", "-")
	if line := string(r.stderr); !strings.HasPrefix(line, "pipe: 3.1 MB in ") || !strings.Contains(line, " new (") ||
		!strings.Contains(line, "stored") || strings.Count(line, "\n") != 1 {
		t.Fatalf("put -v summary %q", line)
	}
	if out := ok(t, dir, nil, "store", "get", "st", "file").stdout; !bytes.Equal(out, data) {
		t.Fatalf("get to stdout: %d bytes differ from the %d put", len(out), len(data))
	}
	ok(t, dir, nil, "store", "get", "-T", "1", "st", "pipe", "out")
	if !bytes.Equal(readFile(t, filepath.Join(dir, "out")), data) {
		t.Fatal("get to a file changed the data")
	}
	checkOnly(t, dir, "data", "st", "out")

	// An existing file is not overwritten without -f.
	writeFile(t, filepath.Join(dir, "out"), []byte("keep me"))
	fails(t, dir, nil, []string{"store", "get", "st", "file", "out"}, "out", "already exists")
	if string(readFile(t, filepath.Join(dir, "out"))) != "keep me" {
		t.Fatal("get replaced an existing file without -f")
	}
	ok(t, dir, nil, "store", "get", "-f", "st", "file", "out")
	if !bytes.Equal(readFile(t, filepath.Join(dir, "out")), data) {
		t.Fatal("get -f did not replace the file")
	}
	checkOnly(t, dir, "data", "st", "out")

	// Ranges, compared with the source slice; past the end they are cut
	// short like dd.
	n := int64(len(data))
	for _, c := range []struct {
		rng     string
		off, ln int64 // ln -1: to the end
	}{
		{"0:100", 0, 100},
		{"4KiB:1MiB", 4 << 10, 1 << 20},
		{"1000:", 1000, -1},
		{"123456", 123456, -1},
		{":4096", 0, 4096},
		{"1MB:1KB", 1000000, 1000},
		{"3MiB:1MiB", 3 << 20, 1 << 20},
		{"3145000:10000", 3145000, 10000},
		{"100MiB:5", 100 << 20, 5},
		{"0:0", 0, 0},
	} {
		off := min(c.off, n)
		end := n
		if c.ln >= 0 {
			end = min(off+c.ln, n)
		}
		out := ok(t, dir, nil, "store", "get", "--range", c.rng, "st", "file").stdout
		if !bytes.Equal(out, data[off:end]) {
			t.Fatalf("--range %s: got %d bytes, want data[%d:%d]", c.rng, len(out), off, end)
		}
	}
	ok(t, dir, nil, "store", "get", "--range", "2MiB:64KiB", "st", "pipe", "part")
	if !bytes.Equal(readFile(t, filepath.Join(dir, "part")), data[2<<20:2<<20+64<<10]) {
		t.Fatal("--range to a file")
	}
	fails(t, dir, nil, []string{"store", "get", "--range", "bogus", "st", "file"}, "--range", "bogus")
	fails(t, dir, nil, []string{"store", "get", "--range", "1:-5", "st", "file"}, "--range")

	// Empty objects go through too.
	ok(t, dir, []byte{}, "store", "put", "st", "empty")
	if out := ok(t, dir, nil, "store", "get", "st", "empty").stdout; len(out) != 0 {
		t.Fatalf("empty object came back as %d bytes", len(out))
	}
}

func TestStoreDedupAndAdmin(t *testing.T) {
	dir := t.TempDir()
	v1 := sample(4<<20, 22)
	// v2: v1 with a few bytes overwritten and a few inserted.
	v2 := append([]byte(nil), v1[:1<<20]...)
	v2 = append(v2, []byte("an edit in the middle of version one")...)
	v2 = append(v2, v1[1<<20+36:5<<19]...)
	v2 = append(v2, []byte("inserted bytes")...)
	v2 = append(v2, v1[5<<19:]...)
	writeFile(t, filepath.Join(dir, "v1"), v1)
	writeFile(t, filepath.Join(dir, "v2"), v2)

	ok(t, dir, nil, "store", "init", "--max", "st")
	ok(t, dir, nil, "store", "put", "st", "v1", "v1")
	s1 := statStore(t, dir, "st")
	if s1.Objects != 1 || s1.Logical != int64(len(v1)) || s1.Stored <= 0 || s1.Stored >= s1.Logical {
		t.Fatalf("after the first put: %+v", s1)
	}
	ok(t, dir, nil, "store", "put", "st", "v2", "v2")
	s2 := statStore(t, dir, "st")
	added := s2.Stored - s1.Stored
	if s2.Objects != 2 || s2.Logical != int64(len(v1)+len(v2)) || added <= 0 || added > s1.Stored/20 {
		t.Fatalf("the edited copy added %d stored bytes (first put %d): %+v", added, s1.Stored, s2)
	}
	if s2.DedupSaved <= int64(len(v2))/2 || s2.Ratio < 1.5 {
		t.Fatalf("dedup savings %d, ratio %.2f: %+v", s2.DedupSaved, s2.Ratio, s2)
	}
	if r := ok(t, dir, nil, "store", "stat", "st"); !bytes.Contains(r.stdout, []byte("by dedup")) ||
		!bytes.Contains(r.stdout, []byte("ratio")) || !bytes.Contains(r.stdout, []byte("MB")) {
		t.Fatalf("stat printed %q", r.stdout)
	}
	if out := ok(t, dir, nil, "store", "get", "st", "v2").stdout; !bytes.Equal(out, v2) {
		t.Fatal("the edited copy came back changed")
	}

	// ls, as text and JSON.
	r := ok(t, dir, nil, "store", "ls", "st")
	if lines := strings.Split(strings.TrimSpace(string(r.stdout)), "\n"); len(lines) != 2 ||
		!strings.HasSuffix(lines[0], " v1") || !strings.HasSuffix(lines[1], " v2") || !strings.Contains(lines[0], "4.2 MB") {
		t.Fatalf("ls printed %q", r.stdout)
	}
	es := lsStore(t, dir, "st")
	if len(es) != 2 || es[0] != (lsEntry{"v1", int64(len(v1)), es[0].Chunks}) || es[1].Name != "v2" ||
		es[1].Size != int64(len(v2)) || es[0].Chunks < 10 {
		t.Fatalf("ls --json: %+v", es)
	}

	// rm, then gc: v2 still reads back whole (deltas keep their bases).
	ok(t, dir, nil, "store", "rm", "st", "v1")
	fails(t, dir, nil, []string{"store", "rm", "st", "v1"}, "v1")
	fails(t, dir, nil, []string{"store", "get", "st", "v1"}, "st", `"v1"`)
	if es := lsStore(t, dir, "st"); len(es) != 1 || es[0].Name != "v2" {
		t.Fatalf("ls after rm: %+v", es)
	}
	if r := ok(t, dir, nil, "store", "gc", "st"); !bytes.HasPrefix(r.stdout, []byte("freed ")) {
		t.Fatalf("gc printed %q", r.stdout)
	}
	s3 := statStore(t, dir, "st")
	if s3.Objects != 1 || s3.Logical != int64(len(v2)) || s3.Stored > s2.Stored || s3.Chunks > s2.Chunks {
		t.Fatalf("after rm and gc: %+v (before: %+v)", s3, s2)
	}
	if out := ok(t, dir, nil, "store", "get", "st", "v2").stdout; !bytes.Equal(out, v2) {
		t.Fatal("gc broke the remaining object")
	}
	r = ok(t, dir, nil, "store", "verify", "st")
	if want := "store OK: 1 objects, "; !bytes.HasPrefix(r.stdout, []byte(want)) {
		t.Fatalf("verify printed %q, want %q...", r.stdout, want)
	}

	// rm of several names, one missing: the rest go, exit 1 naming it.
	ok(t, dir, []byte("a"), "store", "put", "st", "a")
	ok(t, dir, []byte("b"), "store", "put", "st", "b")
	fails(t, dir, nil, []string{"store", "rm", "st", "a", "nosuch", "b"}, "nosuch")
	if es := lsStore(t, dir, "st"); len(es) != 1 || es[0].Name != "v2" {
		t.Fatalf("ls after rm a nosuch b: %+v", es)
	}
}

func TestStoreErrors(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "file"), []byte("not a store"))
	for _, args := range [][]string{
		{"store", "ls", "empty"},
		{"store", "stat", "empty"},
		{"store", "verify", "empty"},
		{"store", "get", "empty", "x"},
		{"store", "put", "empty", "x", "file"},
		{"store", "gc", "empty"},
	} {
		fails(t, dir, nil, args, "empty", "not a glyd store")
	}
	fails(t, dir, nil, []string{"store", "ls", "nosuch"}, "nosuch", "not a glyd store", "no such directory")
	fails(t, dir, nil, []string{"store", "ls", "file"}, "file", "not a glyd store")
	checkOnly(t, filepath.Join(dir, "empty")) // nothing was created in it

	ok(t, dir, nil, "store", "init", "st")
	fails(t, dir, nil, []string{"store", "init", "st"}, "st", "already exists")
	fails(t, dir, nil, []string{"store", "init", "."}, "not empty")
	fails(t, dir, nil, []string{"store", "init", "--max", "--cold", "st2"}, "--max", "--cold")

	// A healthy store verifies; a missing object is named.
	ok(t, dir, []byte("hello"), "store", "put", "st", "hello")
	if r := ok(t, dir, nil, "store", "verify", "st"); !bytes.HasPrefix(r.stdout, []byte("store OK: 1 objects, 1 chunks")) {
		t.Fatalf("verify printed %q", r.stdout)
	}
	fails(t, dir, nil, []string{"store", "get", "st", "missing-object"}, `"missing-object"`)
	fails(t, dir, nil, []string{"store", "get", "st", "missing-object", "out"}, `"missing-object"`)
	fails(t, dir, nil, []string{"store", "put", "st", "x", "nosuch-input"}, "nosuch-input", "no such file")
	fails(t, dir, nil, []string{"store", "put", "st", "x", "."}, "directory")
	checkOnly(t, dir, "empty", "file", "st")
	if es := lsStore(t, dir, "st"); len(es) != 1 {
		t.Fatalf("failed puts stored something: %+v", es)
	}
}

// A store held by one process is refused to others with a clear message.
func TestStoreInUse(t *testing.T) {
	dir := t.TempDir()
	ok(t, dir, nil, "store", "init", "st")
	put := exec.Command(glydBin, "store", "put", "st", "x", "-")
	put.Dir = dir
	w, err := put.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	put.Stderr = &stderr
	if err := put.Start(); err != nil {
		t.Fatal(err)
	}
	defer put.Process.Kill()
	// badger writes its LOCK file once it holds the store (and removes it
	// on a clean close); probing with other commands instead could take
	// the store from under the put.
	deadline := time.Now().Add(10 * time.Second)
	for !exists(filepath.Join(dir, "st", "LOCK")) {
		if time.Now().After(deadline) {
			t.Fatalf("the put did not open the store: %s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	data := sample(1<<20, 23)
	if _, err := w.Write(data[:1<<19]); err != nil {
		t.Fatal(err)
	}
	fails(t, dir, nil, []string{"store", "ls", "st"}, "st", "in use")
	fails(t, dir, nil, []string{"store", "get", "st", "x"}, "in use")
	fails(t, dir, []byte("y"), []string{"store", "put", "st", "y"}, "in use")
	if _, err := w.Write(data[1<<19:]); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if err := put.Wait(); err != nil {
		t.Fatalf("the held put: %v, stderr %q", err, stderr.String())
	}
	if out := ok(t, dir, nil, "store", "get", "st", "x").stdout; !bytes.Equal(out, data) {
		t.Fatal("the held put stored something else")
	}
}
