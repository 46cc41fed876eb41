package fileio

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestCommitAppearsOnlyWhenDone(t *testing.T) {
	dir := t.TempDir()
	final := filepath.Join(dir, "out")
	o, err := Create(final, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(final); !os.IsNotExist(err) {
		t.Fatalf("final name exists before Commit: %v", err)
	}
	if filepath.Dir(o.TempName()) != dir {
		t.Fatalf("temporary file %s not in %s", o.TempName(), dir)
	}
	if err := o.Commit(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(final)
	if err != nil || string(b) != "hello" {
		t.Fatalf("got %q, %v", b, err)
	}
	if names := listDir(t, dir); len(names) != 1 {
		t.Fatalf("directory holds %v, want only out", names)
	}
	o.Abort() // no effect after Commit
	if _, err := os.Stat(final); err != nil {
		t.Fatal("Abort after Commit removed the output")
	}
}

func TestAbortRemovesTemp(t *testing.T) {
	dir := t.TempDir()
	o, err := Create(filepath.Join(dir, "out"), false)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = o.Write([]byte("partial"))
	o.Abort()
	o.Abort()
	if names := listDir(t, dir); len(names) != 0 {
		t.Fatalf("directory holds %v after Abort", names)
	}
	if err := o.Commit(); err == nil {
		t.Fatal("Commit after Abort succeeded")
	}
}

func TestRefuseOverwrite(t *testing.T) {
	dir := t.TempDir()
	final := filepath.Join(dir, "out")
	if err := os.WriteFile(final, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Create(final, false)
	var ee *ExistsError
	if !errors.As(err, &ee) || !errors.Is(err, ErrExists) || ee.Path != final {
		t.Fatalf("Create over existing file: %v", err)
	}
	o, err := Create(final, true)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = o.Write([]byte("new"))
	if err := o.Commit(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(final); string(b) != "new" {
		t.Fatalf("forced overwrite left %q", b)
	}
}

// A file that appears under the final name while the output is written is
// not replaced without force.
func TestCommitDoesNotReplaceLateFile(t *testing.T) {
	dir := t.TempDir()
	final := filepath.Join(dir, "out")
	o, err := Create(final, false)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = o.Write([]byte("new"))
	if err := os.WriteFile(final, []byte("late"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := o.Commit(); !errors.Is(err, ErrExists) {
		t.Fatalf("Commit over a late file: %v", err)
	}
	if b, _ := os.ReadFile(final); string(b) != "late" {
		t.Fatalf("late file replaced by %q", b)
	}
	if names := listDir(t, dir); len(names) != 1 {
		t.Fatalf("directory holds %v, want only out", names)
	}
}

func TestRenameNoReplaceFallback(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	_ = os.WriteFile(a, []byte("a"), 0o644)
	_ = os.WriteFile(b, []byte("b"), 0o644)
	if err := renameNoReplace(a, b); !errors.Is(err, os.ErrExist) {
		t.Fatalf("rename over existing: %v", err)
	}
	_ = os.Remove(b)
	if err := renameNoReplace(a, b); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(a); !os.IsNotExist(err) {
		t.Fatal("source still there after rename")
	}
}

func TestCreateErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Create(dir, true); err == nil {
		t.Fatal("Create over a directory with force succeeded")
	}
	missing := filepath.Join(dir, "no", "such", "out")
	_, err := Create(missing, false)
	var pe *os.PathError
	if !errors.As(err, &pe) || pe.Path != missing {
		t.Fatalf("Create in a missing directory: %v", err)
	}
}

func TestCopyMetadata(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.WriteFile(src, []byte("x"), 0o640); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(src, 0o640)
	mt := time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)
	if err := os.Chtimes(src, mt, mt); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	o, err := Create(filepath.Join(dir, "dst"), false)
	if err != nil {
		t.Fatal(err)
	}
	o.CopyMetadata(fi)
	_, _ = o.Write([]byte("y"))
	if err := o.Commit(); err != nil {
		t.Fatal(err)
	}
	got, err := os.Stat(filepath.Join(dir, "dst"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Mode().Perm() != 0o640 || !got.ModTime().Equal(mt) {
		t.Fatalf("dst has mode %v mtime %v, want 0640 %v", got.Mode().Perm(), got.ModTime(), mt)
	}
}

func TestRemoveTemps(t *testing.T) {
	dir := t.TempDir()
	o, err := Create(filepath.Join(dir, "out"), false)
	if err != nil {
		t.Fatal(err)
	}
	RemoveTemps()
	mu.Unlock() // RemoveTemps leaves the registry locked for the exit path
	if _, err := os.Stat(o.TempName()); !os.IsNotExist(err) {
		t.Fatal("temporary file survived RemoveTemps")
	}
	if err := o.Commit(); err == nil {
		t.Fatal("Commit of a removed temporary file succeeded")
	}
	if names := listDir(t, dir); len(names) != 0 {
		t.Fatalf("directory holds %v", names)
	}
}

func TestIsTerminal(t *testing.T) {
	f, err := os.CreateTemp(t.TempDir(), "x")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) {
		t.Fatal("regular file reported as a terminal")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if IsTerminal(r) {
		t.Fatal("pipe reported as a terminal")
	}
}
