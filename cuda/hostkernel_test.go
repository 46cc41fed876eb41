package cuda

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/glyd/glyd/safetensors"
	"github.com/glyd/glyd/tensor"
)

var hostrun struct {
	once sync.Once
	path string
	err  error
}

// hostKernel builds kernels/hostrun.cpp (decode.cu itself, compiled for
// the CPU) with clang++-16 under AddressSanitizer and
// UndefinedBehaviorSanitizer, once per test binary; it skips without
// clang++-16.
func hostKernel(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the kernel source runs on the CPU in the full test lane only")
	}
	clang, err := exec.LookPath("clang++-16")
	if err != nil {
		t.Skip("clang++-16 not installed: the kernel source is not run on the CPU (Emulate still is)")
	}
	hostrun.once.Do(func() {
		dir, err := os.MkdirTemp("", "glyd-hostrun")
		if err != nil {
			hostrun.err = err
			return
		}
		hostrun.path = filepath.Join(dir, "hostrun")
		cmd := exec.Command(clang, "-std=c++20", "-O1", "-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all",
			"-Wall", "-Wno-unused-function", "-pthread", filepath.Join("kernels", "hostrun.cpp"), "-o", hostrun.path)
		if out, err := cmd.CombinedOutput(); err != nil {
			hostrun.err = fmt.Errorf("building hostrun: %v\n%s", err, out)
		}
	})
	if hostrun.err != nil {
		if strings.Contains(hostrun.err.Error(), "asan") || strings.Contains(hostrun.err.Error(), "sanitizer") {
			t.Skipf("clang++-16 cannot link the sanitizers here: %v", hostrun.err)
		}
		t.Fatal(hostrun.err)
	}
	return hostrun.path
}

// runHost runs the kernel source on the CPU over the plan's buffers (the
// packed bytes with their pad) and returns the output buffer, the status
// words and the summary.
func runHost(t *testing.T, p *Plan, pk []byte) ([]byte, []uint32, uint32, uint32) {
	t.Helper()
	bin := hostKernel(t)
	dir := t.TempDir()
	meta, pkf := filepath.Join(dir, "meta"), filepath.Join(dir, "packed")
	outf, stf := filepath.Join(dir, "out"), filepath.Join(dir, "status")
	if err := os.WriteFile(meta, p.Meta, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pkf, pk[:p.PackedLen+PackedPad], 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{meta, pkf}
	for _, v := range []int64{p.OutLen, int64(p.DescOff), int64(p.BlockOff), int64(p.TableOff), int64(p.SummaryOff), int64(p.Blocks), int64(p.Groups)} {
		args = append(args, strconv.FormatInt(v, 10))
	}
	args = append(args, outf, stf)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "ASAN_OPTIONS=detect_leaks=0")
	res, err := cmd.Output()
	if err != nil {
		stderr := ""
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("hostrun: %v\n%s", err, stderr)
	}
	var failed, first uint32
	if _, err := fmt.Sscan(string(res), &failed, &first); err != nil {
		t.Fatalf("hostrun printed %q", res)
	}
	out, _ := os.ReadFile(outf)
	sb, _ := os.ReadFile(stf)
	status := make([]uint32, len(sb)/4)
	for i := range status {
		status[i] = binary.LittleEndian.Uint32(sb[4*i:])
	}
	return out, status, failed, first
}

// The kernel source, run on the CPU, agrees with Emulate byte for byte and
// status word for status word, and with the original values: every kind,
// odd sizes and alignments, one-symbol codes, damaged payloads.
func TestKernelSourceOnCPU(t *testing.T) {
	hostKernel(t)
	var specs []testSpan
	seed := uint64(100)
	for _, k := range []tensor.Kind{tensor.BF16, tensor.F16, tensor.F32, tensor.V16} {
		for _, n := range []int{1, 3, 256, 257, 5000, 33000} {
			seed++
			specs = append(specs, makeSpan(t, k, n, 8+int(seed%5), seed, false))
		}
		specs = append(specs, makeSpan(t, k, 1001, 8, seed, true))
	}
	blob, spans, outLen := buildBlob(t, specs)
	p, err := NewPlan(spans, int64(len(blob)), outLen)
	if err != nil {
		t.Fatal(err)
	}
	out := compareHost(t, p, padded(blob), true)
	for i, s := range specs {
		if !bytes.Equal(out[spans[i].Out:spans[i].Out+int64(len(s.words))], s.words) {
			t.Fatalf("%s: the kernel source decodes wrong bytes", s.span.Name)
		}
	}
	// Damage: the same verdicts, group by group, as the Go model.
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 12 {
		s := makeSpan(t, []tensor.Kind{tensor.BF16, tensor.F32, tensor.V16, tensor.F16}[trial%4], 2500+trial, 8, uint64(trial), false)
		s.payload = bytes.Clone(s.payload)
		s.payload[r.IntN(len(s.payload))] ^= byte(1 << r.IntN(8))
		blob, spans, outLen := buildBlob(t, []testSpan{s})
		p, err := NewPlan(spans, int64(len(blob)), outLen)
		if err != nil {
			t.Fatal(err)
		}
		compareHost(t, p, padded(blob), false)
	}
}

// compareHost runs both models of the kernel and compares everything they
// leave; with ok, they must also report no failure. It returns the output.
func compareHost(t *testing.T, p *Plan, pk []byte, ok bool) []byte {
	t.Helper()
	out, status, failed, first := runHost(t, p, pk)
	eout := bytes.Repeat([]byte{0xa5}, int(p.OutLen))
	estatus, efailed, efirst, err := Emulate(p, pk, eout)
	if err != nil {
		t.Fatal(err)
	}
	if failed != efailed || first != efirst {
		t.Fatalf("summary: kernel source %d %d, Emulate %d %d", failed, first, efailed, efirst)
	}
	for i := range status {
		if status[i] != estatus[i] {
			t.Fatalf("group %d: kernel source says %s, Emulate %s", i, StatusText(status[i]), StatusText(estatus[i]))
		}
	}
	if failed == 0 && !bytes.Equal(out, eout) {
		t.Fatal("kernel source and Emulate decode different bytes")
	}
	if ok && failed != 0 {
		t.Fatalf("%d groups failed", failed)
	}
	return out
}

// Packed files, as the loader lays them out, decode through the kernel
// source to their original data sections.
func TestKernelSourcePackedFiles(t *testing.T) {
	hostKernel(t)
	dir := t.TempDir()
	files := [][]byte{mixedModel(t, 5)}
	if ws, err := filepath.Glob(filepath.Join("..", "..", "shared", "corpus", "weights", "*", "human-iris.safetensors")); err == nil {
		for _, w := range ws {
			b, err := os.ReadFile(w)
			if err == nil {
				files = append(files, b)
			}
		}
	}
	for i, orig := range files {
		path := writeTemp(t, dir, fmt.Sprintf("%d.glyt", i), packFile(t, orig, 0))
		l, err := PackedLayout(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.FillHost(); err != nil {
			t.Fatal(err)
		}
		pf, _ := os.ReadFile(path)
		pk := append(pf[l.UploadOff:l.UploadOff+l.UploadLen:l.UploadOff+l.UploadLen], "pad bytes, junk"...)
		out, _, failed, _ := runHost(t, l.Plan, pk)
		if failed != 0 {
			t.Fatalf("file %d: %d groups failed", i, failed)
		}
		for _, h := range l.Host {
			copy(out[h.Off:], h.Bytes)
		}
		st, _ := safetensors.Parse(orig)
		if !bytes.Equal(out, orig[st.DataStart:]) {
			t.Fatalf("file %d: the kernel source's data section differs from the original", i)
		}
		l.Close()
	}
}
