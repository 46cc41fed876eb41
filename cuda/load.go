package cuda

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"
)

// Staging: files are read into pinned host buffers by several goroutines
// at once while the device thread copies filled ones to the device.
const (
	stageSize  = 16 << 20
	stageCount = 6
)

// Loader puts tensors on one device: it holds the device (with the
// JIT-compiled decode kernel) and the pinned staging buffers.
type Loader struct {
	dev   backend
	stage [][]byte
	free  chan []byte
	chunk int64 // staging buffer size
	// Setup is the time making the Loader took (PTX JIT, pinning).
	Setup time.Duration
	// Emulated is set when the kernel runs on the CPU (no GPU).
	Emulated bool
	// JITLog is the driver's JIT log of the kernel (registers, spills).
	JITLog string
	// PinErr says why the staging buffers could not be page-locked (then
	// copies run from pageable memory, slower), nil when they are.
	PinErr error
}

func newLoader(dev backend, chunk int64) (*Loader, error) {
	t0 := time.Now()
	l := &Loader{dev: dev, free: make(chan []byte, stageCount), chunk: chunk}
	for range stageCount {
		b := make([]byte, chunk)
		if l.PinErr == nil {
			if err := dev.pin(b); err != nil {
				l.PinErr = err
				for _, p := range l.stage {
					dev.unpin(p)
				}
			}
		}
		l.stage = append(l.stage, b)
		l.free <- b
	}
	l.Setup = time.Since(t0)
	return l, nil
}

// NewEmulatedLoader is a Loader whose "device" is host memory and whose
// kernel is Emulate: every part of a load but the driver's, on the CPU.
func NewEmulatedLoader() *Loader {
	l, _ := newLoader(newEmuBackend(), 64<<10) // small chunks: many, out of order
	l.Emulated = true
	return l
}

// Close unpins the staging buffers and releases the device.
func (l *Loader) Close() {
	for _, b := range l.stage {
		if l.PinErr == nil {
			l.dev.unpin(b)
		}
	}
	l.stage = nil
	l.dev.close()
}

// DeviceName names the device the loader loads onto.
func (l *Loader) DeviceName() string { return l.dev.name() }

// upload copies the file range [off, off+n) to device address dst: chunks
// are read into the staging buffers in parallel and copied as they fill.
func (l *Loader) upload(f *os.File, off, n int64, dst DevPtr) error {
	// Chunks small enough that reads overlap copies even for small files.
	size := min(l.chunk, max(1<<20, (n/(2*stageCount)+(64<<10)-1)&^(64<<10-1)))
	if l.chunk < 1<<20 {
		size = l.chunk
	}
	chunks := (n + size - 1) / size
	if chunks == 0 {
		return nil
	}
	type chunk struct {
		buf []byte
		at  int64
		err error
	}
	done := make(chan chunk, stageCount)
	var next atomic.Int64
	var failed atomic.Bool
	for range min(int64(stageCount), chunks) {
		go func() {
			for {
				i := next.Add(1) - 1
				if i >= chunks {
					return
				}
				buf := <-l.free
				at := i * size
				buf = buf[:min(size, n-at)]
				var err error
				if !failed.Load() {
					var k int
					k, err = f.ReadAt(buf, off+at)
					if k == len(buf) {
						err = nil
					} else if err == nil || errors.Is(err, io.EOF) {
						err = fmt.Errorf("%s: file shorter than expected (truncated while loading?)", f.Name())
					}
				}
				done <- chunk{buf, at, err}
			}
		}()
	}
	var first error
	for range chunks {
		c := <-done
		if first == nil {
			first = c.err
			if first == nil {
				first = l.dev.copyIn(dst+DevPtr(c.at), c.buf)
			}
			if first != nil {
				failed.Store(true)
			}
		}
		l.free <- c.buf[:cap(c.buf)]
	}
	return first
}

// Model is tensors loaded onto the device. Free releases them.
type Model struct {
	Tensors []Tensor
	Stats   Stats
	dev     backend
	files   []loadedFile
}

type loadedFile struct {
	layout *Layout
	data   DevPtr // the data buffer
}

// Free releases the model's device memory.
func (m *Model) Free() {
	for _, f := range m.files {
		m.dev.free(f.data)
	}
	m.files = nil
	m.Tensors = nil
}

// Load loads path onto the device: a packed file, a plain safetensors file,
// or a directory of either (Files: packed shards where there are). Packed
// files are decoded on the GPU.
func (l *Loader) Load(path string) (*Model, error) {
	return l.load(path, true, FileLayout)
}

// LoadPlain loads plain safetensors files only: read and copied to the
// device, no decoding (the baseline a packed load is measured against).
func (l *Loader) LoadPlain(path string) (*Model, error) {
	return l.load(path, false, PlainLayout)
}

func (l *Loader) load(path string, packed bool, layout func(string) (*Layout, error)) (*Model, error) {
	t0 := time.Now()
	files, err := Files(path, packed)
	if err != nil {
		return nil, err
	}
	m := &Model{dev: l.dev}
	for _, name := range files {
		if err := l.loadFile(m, name, layout); err != nil {
			m.Free()
			return nil, err
		}
	}
	m.Stats.Total = time.Since(t0)
	return m, nil
}

func (l *Loader) loadFile(m *Model, name string, layout func(string) (*Layout, error)) error {
	st := &m.Stats
	t0 := time.Now()
	lay, err := layout(name)
	if err != nil {
		return err
	}
	defer lay.Close()
	st.Files++
	st.FileBytes += lay.Size
	if lay.Packed {
		st.Packed++
		st.CPU += time.Since(t0) // directory, header, plan
	}
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()

	data, err := l.dev.alloc(uint64(lay.DataLen))
	if err != nil {
		return err
	}
	m.files = append(m.files, loadedFile{layout: lay, data: data})
	for _, t := range lay.Tensors {
		m.Tensors = append(m.Tensors, Tensor{Name: t.Name, Dtype: t.Dtype, Shape: t.Shape, Ptr: data + DevPtr(t.Off), Size: t.Size, File: name})
		st.TensorBytes += t.Size
	}
	st.DeviceBytes += lay.UploadLen
	if !lay.Packed {
		t1 := time.Now()
		err := l.upload(f, lay.UploadOff, lay.UploadLen, data)
		st.Read += time.Since(t1)
		return err
	}
	// Packed: one work buffer holds the payload section (uploaded while the
	// CPU decodes the meta section's tensors), PackedPad bytes of any
	// value, the plan's Meta and the status words. The CPU's bytes go to
	// their places in the data buffer, then the kernel runs.
	t1 := time.Now()
	metaOff, statusOff, workLen := workLayout(lay)
	work, err := l.dev.alloc(workLen)
	if err != nil {
		return err
	}
	defer l.dev.free(work)
	hostDone := make(chan error, 1)
	var hostTime time.Duration
	go func() {
		t := time.Now()
		err := lay.FillHost()
		hostTime = time.Since(t)
		hostDone <- err
	}()
	err = l.upload(f, lay.UploadOff, lay.UploadLen, work)
	if herr := <-hostDone; err == nil {
		err = herr
	}
	st.CPU += hostTime
	if err != nil {
		return err
	}
	for _, h := range lay.Host {
		if err := l.dev.copyIn(data+DevPtr(h.Off), h.Bytes); err != nil {
			return err
		}
		st.DeviceBytes += int64(len(h.Bytes))
	}
	st.Read += time.Since(t1)
	if lay.Plan == nil {
		return nil
	}
	t2 := time.Now()
	err = l.decode(lay.Plan, work, work+DevPtr(metaOff), data, work+DevPtr(statusOff))
	st.Decode += time.Since(t2)
	st.DeviceBytes += int64(len(lay.Plan.Meta))
	st.Spans += len(lay.Plan.Spans)
	st.Groups += lay.Plan.Groups
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// workLayout places a packed file's work buffer: the payload section and
// PackedPad, then the plan's Meta and the status words, each 256-aligned.
func workLayout(lay *Layout) (metaOff, statusOff int64, n uint64) {
	metaOff = alignOut(lay.UploadLen + PackedPad)
	statusOff = metaOff
	if lay.Plan != nil {
		statusOff = alignOut(metaOff + int64(len(lay.Plan.Meta)))
		return metaOff, statusOff, uint64(statusOff + 4*int64(lay.Plan.Groups))
	}
	return metaOff, statusOff, uint64(metaOff)
}

// decode runs the kernel of plan p over the packed buffer into out, with
// meta and status in device memory, and checks every group's status.
func (l *Loader) decode(p *Plan, packed, meta, out, status DevPtr) error {
	d := l.dev
	if err := d.copyIn(meta, p.Meta); err != nil {
		return err
	}
	if err := d.launch(p, packed, meta, out, status); err != nil {
		return err
	}
	var sum [8]byte
	if err := d.copyOut(sum[:], meta+DevPtr(p.SummaryOff)); err != nil {
		return err
	}
	failed, first := binary.LittleEndian.Uint32(sum[:]), binary.LittleEndian.Uint32(sum[4:])
	if failed == 0 {
		return nil
	}
	sb := make([]byte, 4*p.Groups)
	if err := d.copyOut(sb, status); err != nil {
		return err
	}
	st := make([]uint32, p.Groups)
	for i := range st {
		st[i] = binary.LittleEndian.Uint32(sb[4*i:])
	}
	return p.Check(st, failed, first)
}

// Verify loads path as Load does, copies every file's data buffer back and
// compares it bit for bit with the CPU's decode of the file (for a plain
// file, its bytes). It returns the load's stats and the first mismatch of
// each file that has one.
func (l *Loader) Verify(path string) (*Stats, []*Mismatch, error) {
	m, err := l.Load(path)
	if err != nil {
		return nil, nil, err
	}
	defer m.Free()
	var bad []*Mismatch
	for _, f := range m.files {
		got := make([]byte, f.layout.DataLen)
		if err := l.dev.copyOut(got, f.data); err != nil {
			return nil, nil, err
		}
		want, err := CPUData(f.layout.Path)
		if err != nil {
			return nil, nil, err
		}
		if mm := compareData(f.layout, got, want); mm != nil {
			bad = append(bad, mm)
		}
	}
	return &m.Stats, bad, nil
}

// alignOut rounds a device offset up to OutAlign.
func alignOut(n int64) int64 { return (n + OutAlign - 1) / OutAlign * OutAlign }
