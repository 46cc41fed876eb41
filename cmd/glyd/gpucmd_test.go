package main

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/glyd/glyd/cuda"
	"github.com/glyd/glyd/packed"
)

// Without a GPU, 'glyd gpu load' and 'glyd gpu verify' fail with exit
// status 1 (and one line saying why); a missing file fails the same way
// where there is one.
func TestGPUCommandsWithoutGPU(t *testing.T) {
	t.Setenv(emulateEnv, "")
	if _, err := cuda.Doctor(); err == nil {
		t.Log("a GPU is usable here: checking the missing-file error instead")
	}
	missing := filepath.Join(t.TempDir(), "missing.glyt")
	for _, args := range [][]string{{"gpu", "load", missing}, {"gpu", "verify", missing}, {"gpu", "load", "--plain", missing}} {
		if code := run(args); code != 1 {
			t.Errorf("glyd %v: exit status %d, want 1", args, code)
		}
	}
}

// With the kernel emulated on the CPU (GLYD_GPU_EMULATE=1) the commands run
// through: a packed file verifies bit for bit and loads.
func TestGPUCommandsEmulated(t *testing.T) {
	t.Setenv(emulateEnv, "1")
	hdr := []byte(`{"w":{"dtype":"BF16","shape":[3000],"data_offsets":[0,6000]}}`)
	for len(hdr)%8 != 0 {
		hdr = append(hdr, ' ')
	}
	file := binary.LittleEndian.AppendUint64(nil, uint64(len(hdr)))
	file = append(file, hdr...)
	for i := range 3000 {
		file = binary.LittleEndian.AppendUint16(file, uint16(0x3c00+i%97))
	}
	pk, err := packed.Encode(file, packed.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "m.glyt")
	plain := filepath.Join(dir, "m.safetensors")
	if err := os.WriteFile(p, pk, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(plain, file, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"gpu", "verify", p}, {"gpu", "load", "--repeat", "2", p}, {"gpu", "load", "--json", "--plain", plain}} {
		if code := run(args); code != 0 {
			t.Errorf("glyd %v: exit status %d", args, code)
		}
	}
}
