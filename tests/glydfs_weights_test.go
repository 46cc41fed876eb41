package tests

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/glyd/glyd/cuda"
	"github.com/glyd/glyd/packed"
)

// Every weights file of the corpus copied into a mount reads back byte for
// byte (before and after a remount), is stored packed, and its packed form
// under .glyd/packed decodes to it.
func TestGlydfsCorpusWeights(t *testing.T) {
	weights := filepath.Join(corpusDir(), "weights")
	sets, _ := filepath.Glob(filepath.Join(weights, "*"))
	if len(sets) == 0 {
		t.Skip("corpus weights not found")
	}
	ft := newFuseTest(t)
	p := ft.startFG(ft.storeDir(), ft.mountDir())
	if out, err := exec.Command("cp", "-r", weights, filepath.Join(p.dir, "weights")).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v: %s", err, out)
	}
	p = p.remount()
	var logical, stored int64
	files, _ := filepath.Glob(filepath.Join(weights, "*", "*.safetensors"))
	for _, f := range files {
		rel, _ := filepath.Rel(corpusDir(), f)
		want := readFile(t, f)
		if !bytes.Equal(readFile(t, filepath.Join(p.dir, rel)), want) {
			t.Fatalf("%s differs through the mount", rel)
		}
		pk := readFile(t, filepath.Join(p.dir, ".glyd", "packed", rel))
		got, err := packed.Decode(pk, nil, 0)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s: the packed form does not decode to the file (%v)", rel, err)
		}
		buf := make([]byte, 32)
		n, err := unix.Getxattr(filepath.Join(p.dir, rel), "user.glyd.stored", buf)
		if err != nil {
			t.Fatal(err)
		}
		s, _ := strconv.ParseInt(string(buf[:n]), 10, 64)
		logical += int64(len(want))
		stored += s
	}
	t.Logf("%d weights files, %d bytes, stored in %d (%.1f%%)", len(files), logical, stored, 100*float64(stored)/float64(logical))
	if len(files) == 0 || stored >= logical*85/100 {
		t.Errorf("%d files stored in %d of %d bytes: not packed", len(files), stored, logical)
	}
}

// The GPU loader finds the packed form of a checkpoint on the mount: a load
// of MOUNT/dir uploads .glyd/packed/dir/*, laid out as packed files whose
// CPU decode is the checkpoint (the GPU run itself is tests/gpu/run.sh).
func TestGlydfsLoaderFindsPacked(t *testing.T) {
	ft := newFuseTest(t)
	p := ft.startFG(ft.storeDir(), ft.mountDir())
	ckpt := filepath.Join(p.dir, "ckpt")
	if err := os.Mkdir(ckpt, 0o755); err != nil {
		t.Fatal(err)
	}
	var want [][]byte
	for i, name := range []string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"} {
		b := safetensorsFile(t, uint64(i), "layers.0.weight", "layers.1.weight", "layers.2.weight", "lm_head.weight")
		want = append(want, b)
		writeFile(t, filepath.Join(ckpt, name), b)
	}
	writeFile(t, filepath.Join(ckpt, "config.json"), []byte(`{"model_type": "test"}`))
	files, err := cuda.Files(ckpt, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 {
		t.Fatalf("Files: %v", files)
	}
	for i, f := range files {
		if !strings.HasPrefix(f, filepath.Join(p.dir, ".glyd", "packed", "ckpt")+"/") {
			t.Fatalf("Files picked %s, not the packed form on the mount", f)
		}
		l, err := cuda.FileLayout(f)
		if err != nil {
			t.Fatal(err)
		}
		if !l.Packed || l.Plan == nil {
			t.Errorf("%s: not laid out as a packed file", f)
		}
		l.Close()
		data, err := cuda.CPUData(f)
		if err != nil {
			t.Fatal(err)
		}
		st := want[i]
		if !bytes.Equal(data, st[len(st)-len(data):]) {
			t.Errorf("%s: CPU decode differs from the file's data section", f)
		}
	}
	plain, err := cuda.Files(ckpt, false)
	if err != nil || len(plain) != 2 || strings.Contains(plain[0], ".glyd") {
		t.Errorf("plain Files: %v %v", plain, err)
	}
}
