package fs

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/glyd/glyd/chunkstore"
	"github.com/glyd/glyd/packed"
)

// modelFile builds a safetensors file of n bf16 weights spread like a
// trained layer's (plus a small f32 and an int tensor): what a training
// job writes into the mount.
func modelFile(seed uint64, n int) []byte {
	r := rand.New(rand.NewPCG(seed, 7))
	type tensor struct {
		name, dtype string
		shape       []int
		data        []byte
	}
	bf16 := func(count int, scale float64) []byte {
		b := make([]byte, 2*count)
		for i := range count {
			v := float32(r.NormFloat64() * scale)
			binary.LittleEndian.PutUint16(b[2*i:], uint16(math.Float32bits(v)>>16))
		}
		return b
	}
	f32 := make([]byte, 4*300)
	for i := range 300 {
		binary.LittleEndian.PutUint32(f32[4*i:], math.Float32bits(float32(r.NormFloat64())))
	}
	ids := make([]byte, 8*40)
	for i := range 40 {
		binary.LittleEndian.PutUint64(ids[8*i:], uint64(i*i))
	}
	ts := []tensor{
		{"layers.0.weight", "BF16", []int{n / 512, 512}, bf16(n/512*512, 0.02)},
		{"layers.0.norm", "F32", []int{300}, f32},
		{"layers.1.weight", "BF16", []int{n / 4}, bf16(n/4, 0.05)},
		{"position_ids", "I64", []int{40}, ids},
	}
	header := map[string]any{"__metadata__": map[string]string{"format": "pt"}}
	var data []byte
	for _, t := range ts {
		header[t.name] = map[string]any{"dtype": t.dtype, "shape": t.shape, "data_offsets": []int{len(data), len(data) + len(t.data)}}
		data = append(data, t.data...)
	}
	h, _ := json.Marshal(header)
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(h)))
	return append(append(out, h...), data...)
}

// storedSize is a file's user.glyd.stored.
func storedSize(t *testing.T, path string) int64 {
	t.Helper()
	buf := make([]byte, 32)
	n, err := syscall.Getxattr(path, "user.glyd.stored", buf)
	if err != nil {
		t.Fatal(err)
	}
	v, _ := strconv.ParseInt(string(buf[:n]), 10, 64)
	return v
}

// mustPacked checks that .glyd/packed/<rel> is the packed form of want.
func mustPacked(t *testing.T, m *testMount, rel string, want []byte) {
	t.Helper()
	p, err := os.ReadFile(m.path(filepath.Join(".glyd/packed", rel)))
	if err != nil {
		t.Fatalf("packed form of %s: %v", rel, err)
	}
	got, err := packed.Decode(p, nil, 2)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("packed form of %s does not decode to the file (%v)", rel, err)
	}
}

func mustNotPacked(t *testing.T, m *testMount, rel string) {
	t.Helper()
	if _, err := os.Stat(m.path(filepath.Join(".glyd/packed", rel))); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s has a packed form: %v", rel, err)
	}
}

// readMmap reads a file through mmap, as model loaders do.
func readMmap(t *testing.T, path string) []byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	b, err := syscall.Mmap(int(f.Fd()), 0, int(fi.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(b)
	return bytes.Clone(b)
}

// A safetensors file written into the mount is stored tensor by tensor
// (recognised by its header, whatever its name), reads and maps back
// exactly, shows its packed form under .glyd/packed, and stays so in
// versions, snapshots and after a remount.
func TestSafetensorsStoredPacked(t *testing.T) {
	m := newMount(t)
	model := modelFile(1, 1<<20) // ~2.5 MiB
	os.MkdirAll(m.path("ckpt/step1"), 0o755)
	mustWrite(t, m.path("ckpt/step1/model.safetensors"), model)
	mustWrite(t, m.path("ckpt/step1/weights.bin"), model)
	mustWrite(t, m.path("ckpt/step1/notes.txt"), text(1, 5000))
	for _, name := range []string{"model.safetensors", "weights.bin"} {
		p := m.path("ckpt/step1/" + name)
		mustEqual(t, p, model)
		if !bytes.Equal(readMmap(t, p), model) {
			t.Fatalf("%s: mmap gives other bytes", name)
		}
		mustPacked(t, m, "ckpt/step1/"+name, model)
		if s := storedSize(t, p); s > int64(len(model))*80/100 {
			t.Errorf("%s: stored in %d bytes of %d: not packed", name, s, len(model))
		}
	}
	mustNotPacked(t, m, "ckpt/step1/notes.txt")
	ents, err := os.ReadDir(m.path(".glyd/packed/ckpt/step1"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"model.safetensors", "weights.bin"}) {
		t.Errorf(".glyd/packed lists %v", names)
	}

	// Random reads at odd offsets and lengths, across window edges.
	f, err := os.Open(m.path("ckpt/step1/model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 3))
	for range 200 {
		off := r.Int64N(int64(len(model)))
		buf := make([]byte, r.IntN(300000))
		n, _ := f.ReadAt(buf, off)
		if want := model[off:min(int64(len(model)), off+int64(len(buf)))]; !bytes.Equal(buf[:n], want) {
			t.Fatalf("ReadAt(%d, %d): bytes differ", len(buf), off)
		}
	}
	f.Close()

	// A write into a tensor: the next version is packed again.
	edited := bytes.Clone(model)
	mid := int64(len(model)) / 2
	copy(edited[mid:], "\x12\x34\x56")
	wf, err := os.OpenFile(m.path("ckpt/step1/model.safetensors"), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wf.WriteAt([]byte("\x12\x34\x56"), mid); err != nil {
		t.Fatal(err)
	}
	wf.Close()
	mustEqual(t, m.path("ckpt/step1/model.safetensors"), edited)
	mustPacked(t, m, "ckpt/step1/model.safetensors", edited)
	mustEqual(t, m.path(".glyd/versions/ckpt/step1/model.safetensors/1"), model)
	mustEqual(t, m.path(".glyd/versions/ckpt/step1/model.safetensors/2"), edited)

	// Truncated, it is no safetensors file any more: stored as bytes.
	if err := os.Truncate(m.path("ckpt/step1/weights.bin"), mid); err != nil {
		t.Fatal(err)
	}
	mustEqual(t, m.path("ckpt/step1/weights.bin"), model[:mid])
	mustNotPacked(t, m, "ckpt/step1/weights.bin")
	// And appended back to whole, packed again.
	af, err := os.OpenFile(m.path("ckpt/step1/weights.bin"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	af.Write(model[mid:])
	af.Close()
	mustEqual(t, m.path("ckpt/step1/weights.bin"), model)
	mustPacked(t, m, "ckpt/step1/weights.bin", model)

	if err := os.Mkdir(m.path(".snapshots/s1"), 0o755); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, m.path("ckpt/step1/model.safetensors"), text(2, 1000))
	mustNotPacked(t, m, "ckpt/step1/model.safetensors")
	mustEqual(t, m.path(".snapshots/s1/ckpt/step1/model.safetensors"), edited)
	if s := storedSize(t, m.path(".snapshots/s1/ckpt/step1/model.safetensors")); s == 0 || s > int64(len(model))*80/100 {
		t.Errorf("snapshot of a packed file: stored %d", s)
	}

	// Stats count a packed version at its file's size, and say what
	// packing saved.
	st, err := StoreStats(m.st)
	if err != nil {
		t.Fatal(err)
	}
	if st.PackSaved <= 0 || st.History < st.Logical {
		t.Errorf("stats: packing saved %d, history %d, logical %d", st.PackSaved, st.History, st.Logical)
	}

	m = m.remount()
	mustEqual(t, m.path("ckpt/step1/weights.bin"), model)
	mustPacked(t, m, "ckpt/step1/weights.bin", model)
	mustEqual(t, m.path(".snapshots/s1/ckpt/step1/model.safetensors"), edited)
	mustEqual(t, m.path(".glyd/versions/ckpt/step1/model.safetensors/2"), edited)
}

// Files that only look like safetensors, and a mount told not to pack,
// store bytes.
func TestNotPacked(t *testing.T) {
	m := newMount(t)
	bad := binary.LittleEndian.AppendUint64(nil, 20)
	bad = append(bad, `{"a": not json at all`...)
	bad = append(bad, text(3, 100000)...)
	mustWrite(t, m.path("bad.safetensors"), bad)
	mustEqual(t, m.path("bad.safetensors"), bad)
	mustNotPacked(t, m, "bad.safetensors")
	// A valid header whose data runs past the end of the file.
	model := modelFile(2, 1<<16)
	mustWrite(t, m.path("short.safetensors"), model[:len(model)-1])
	mustEqual(t, m.path("short.safetensors"), model[:len(model)-1])
	mustNotPacked(t, m, "short.safetensors")

	opts := DefaultOptions()
	opts.NoPack = true
	n := mountStore(t, filepath.Join(t.TempDir(), "store"), opts)
	mustWrite(t, n.path("model.safetensors"), model)
	mustEqual(t, n.path("model.safetensors"), model)
	mustNotPacked(t, n, "model.safetensors")
}

// Many readers of one packed file at once (run under -race).
func TestPackedConcurrentReads(t *testing.T) {
	m := newMount(t)
	model := modelFile(4, 1<<21)
	mustWrite(t, m.path("m.safetensors"), model)
	m = m.remount() // a cold cache
	errs := make(chan error, 4)
	for k := range 4 {
		go func() {
			f, err := os.Open(m.path("m.safetensors"))
			if err != nil {
				errs <- err
				return
			}
			defer f.Close()
			r := rand.New(rand.NewPCG(uint64(k), 9))
			for range 50 {
				off := r.Int64N(int64(len(model)))
				buf := make([]byte, 1+r.IntN(1<<20))
				n, _ := f.ReadAt(buf, off)
				if !bytes.Equal(buf[:n], model[off:min(int64(len(model)), off+int64(len(buf)))]) {
					errs <- fmt.Errorf("reader %d: ReadAt(%d, %d): bytes differ", k, len(buf), off)
					return
				}
			}
			errs <- nil
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// A damaged chunk of a packed file's object fails the read with EIO (and
// the packed form's read too): never wrong bytes.
func TestPackedDamagedChunkIsEIO(t *testing.T) {
	m := newMount(t)
	mustWrite(t, m.path("m.safetensors"), modelFile(6, 1<<20))
	m.unmount()
	if a := damageChunk(t, m.store, 2); !a.packed() {
		t.Fatal("not stored packed")
	}
	opts := DefaultOptions()
	opts.Logger = log.New(io.Discard, "", 0)
	m2 := mountStore(t, m.store, opts)
	for _, p := range []string{"m.safetensors", ".glyd/packed/m.safetensors"} {
		if _, err := os.ReadFile(m2.path(p)); !errors.Is(err, syscall.EIO) {
			t.Errorf("reading %s with a damaged chunk: %v, want EIO", p, err)
		}
	}
}

// A packed form read again, unchanged, comes from the kernel's page cache
// (its inode number is stable and the open keeps the cache); once the file
// is rewritten, the next open reads the new version through glydfs.
func TestPackedViewKeepsPageCache(t *testing.T) {
	m := newMount(t)
	model := modelFile(7, 1<<18)
	os.MkdirAll(m.path("a/b"), 0o755)
	const rel = "a/b/m.safetensors"
	mustWrite(t, m.path(rel), model)
	mustPacked(t, m, rel, model)
	before := m.fsys.packedReads.Load()
	if before == 0 {
		t.Fatal("no reads counted")
	}
	for range 3 {
		time.Sleep(5 * time.Millisecond) // past the names' timeouts
		mustPacked(t, m, rel, model)
	}
	if n := m.fsys.packedReads.Load(); n != before {
		t.Errorf("reading an unchanged packed form again made %d reads through glydfs", n-before)
	}
	model2 := modelFile(8, 1<<18)
	mustWrite(t, m.path(rel), model2)
	mustPacked(t, m, rel, model2)
	if n := m.fsys.packedReads.Load(); n == before {
		t.Error("the new version was not read through glydfs")
	}
	mustEqual(t, m.path(rel), model2)
}

// Replies written from a packed body's windows (Slices) keep their window's
// buffer while they are held, even when the window is evicted and its
// buffer would serve the next one: many readers hold slices across other
// reads of a file larger than the windows kept, and every slice still
// holds the file's bytes when it is let go.
func TestPackedSlicesHeldAcrossEviction(t *testing.T) {
	saved := keepWindows
	keepWindows = 1
	defer func() { keepWindows = saved }()
	model := modelFile(5, 5<<20) // ~12 MiB: three windows
	pk, err := packed.Encode(model, packed.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := chunkstore.Init(filepath.Join(t.TempDir(), "store"), chunkstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Put("m"+packedSuffix, bytes.NewReader(pk)); err != nil {
		t.Fatal(err)
	}
	f := &FS{store: st}
	b, err := f.openBody("m" + packedSuffix)
	if err != nil {
		t.Fatal(err)
	}
	pb := b.(*packedBody)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for k := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(k), 3))
			type hold struct {
				off     int64
				vecs    [][]byte
				release func()
			}
			var holds []hold
			check := func(h hold) bool {
				var got []byte
				for _, v := range h.vecs {
					got = append(got, v...)
				}
				return bytes.Equal(got, model[h.off:h.off+int64(len(got))])
			}
			for range 40 {
				off := r.Int64N(int64(len(model)))
				vecs, release, err := pb.Slices(off, 1+r.IntN(1<<20))
				if err != nil && err != io.EOF {
					errs <- err
					return
				}
				holds = append(holds, hold{off, vecs, release})
				if len(holds) > 3 || r.IntN(2) == 0 {
					h := holds[0]
					holds = holds[1:]
					if !check(h) {
						errs <- fmt.Errorf("reader %d: slices at %d changed while held", k, h.off)
						return
					}
					h.release()
				}
			}
			for _, h := range holds {
				if !check(h) {
					errs <- fmt.Errorf("reader %d: slices at %d changed while held", k, h.off)
					return
				}
				h.release()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	pb.mu.Lock()
	defer pb.mu.Unlock()
	for i, w := range pb.wins {
		if w.held != 0 {
			t.Fatalf("window %d still held %d times", i, w.held)
		}
	}
}
