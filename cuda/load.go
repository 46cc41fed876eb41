package cuda

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
)

// Staging: files are read into pinned host buffers by several goroutines
// at once while the device thread copies filled ones to the device.
const (
	stageSize  = 16 << 20
	stageCount = 6
)

// Loader puts tensors on one device: it holds the device (with the
// JIT-compiled decode kernel), the pinned staging buffers and a work
// buffer. It loads one thing at a time: callers that load from several
// goroutines serialize their calls (the models it returns are
// independent).
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
	// work is the work buffer of the last batch, kept for the next (a
	// Loader loads one thing at a time): allocating device memory costs
	// more than a small model's decode.
	work    DevPtr
	workCap uint64
	// CPUBelow is the decoded size under which a batch of packed files is
	// decoded on the CPU rather than by the kernel (DefaultCPUBelow; 0:
	// always the kernel).
	CPUBelow int64
	batch    int64 // batchBytes; tests make it small
}

// DefaultCPUBelow: below about a megabyte the CPU's decode (~2 GB/s a
// core) takes less than the kernel's latency, one thread decoding one
// 4096-value group alone (~0.5 ms measured on an H200).
const DefaultCPUBelow = 1 << 20

// workBuffer returns a work buffer of at least n bytes.
func (l *Loader) workBuffer(n uint64) (DevPtr, error) {
	if n <= l.workCap {
		return l.work, nil
	}
	if l.workCap > 0 {
		l.dev.free(l.work)
		l.work, l.workCap = 0, 0
	}
	p, err := l.dev.alloc(n)
	if err != nil {
		return 0, err
	}
	l.work, l.workCap = p, n
	return p, nil
}

func newLoader(dev backend, chunk int64) (*Loader, error) {
	t0 := time.Now()
	l := &Loader{dev: dev, free: make(chan []byte, stageCount), chunk: chunk, CPUBelow: DefaultCPUBelow, batch: batchBytes}
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
	if l.workCap > 0 {
		l.dev.free(l.work)
		l.work, l.workCap = 0, 0
	}
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

// batchBytes bounds the bytes one batch of files uploads (Loader.batch; a
// larger file is a batch of its own): small files share one plan and few
// launches, while device memory beyond the tensors stays bounded.
const batchBytes = 1 << 30

// segment is one file range uploaded to device address dst. work is its
// offset in the batch's work buffer, or -1 for a plain file's data (which
// no kernel waits for).
type segment struct {
	f       *os.File
	off, n  int64
	dst     DevPtr
	work    int64
	workEnd int64
}

// upload copies the segments to the device: chunks are read into the
// staging buffers in parallel and copied as they fill. After each copy
// ready(w) is told w, the work-buffer offset below which every packed
// byte is on the device (the kernel's blocks whose payloads lie below it
// may start).
func (l *Loader) upload(segs []segment, ready func(int64) error) error {
	var total int64
	for _, s := range segs {
		total += s.n
	}
	// Chunks small enough that reads overlap copies even for small files.
	size := min(l.chunk, max(1<<20, (total/(2*stageCount)+(64<<10)-1)&^(64<<10-1)))
	if l.chunk < 1<<20 {
		size = l.chunk
	}
	type piece struct {
		seg     int
		at, n   int64 // within the segment
		workEnd int64 // work offset of its end; -1 for plain data
	}
	var pieces []piece
	for i, s := range segs {
		for at := int64(0); at < s.n; at += size {
			pc := piece{seg: i, at: at, n: min(size, s.n-at), workEnd: -1}
			if s.work >= 0 {
				pc.workEnd = s.work + pc.at + pc.n
			}
			pieces = append(pieces, pc)
		}
	}
	if len(pieces) == 0 {
		return ready(1 << 62)
	}
	type filled struct {
		i   int
		buf []byte
		err error
	}
	done := make(chan filled, stageCount)
	var next atomic.Int64
	var failed atomic.Bool
	for range min(stageCount, len(pieces)) {
		go func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(pieces) {
					return
				}
				pc := pieces[i]
				s := segs[pc.seg]
				buf := (<-l.free)[:pc.n]
				var err error
				if !failed.Load() {
					var k int
					k, err = s.f.ReadAt(buf, s.off+pc.at)
					if k == len(buf) {
						err = nil
					} else if err == nil || errors.Is(err, io.EOF) {
						err = fmt.Errorf("%s: file shorter than expected (truncated while loading?)", s.f.Name())
					}
				}
				done <- filled{i, buf, err}
			}
		}()
	}
	ends := make([]int64, len(pieces))
	for i, pc := range pieces {
		ends[i] = pc.workEnd
	}
	arr := newArrivals(ends)
	var first error
	for range pieces {
		c := <-done
		if first == nil {
			first = c.err
			if first == nil {
				pc := pieces[c.i]
				first = l.dev.copyIn(segs[pc.seg].dst+DevPtr(pc.at), c.buf)
			}
			if first == nil {
				if mark, moved := arr.arrived(c.i); moved {
					first = ready(mark)
				}
			}
			if first != nil {
				failed.Store(true)
			}
		}
		l.free <- c.buf[:cap(c.buf)]
	}
	return first
}

// arrivals tracks the work-buffer watermark of an upload whose pieces,
// in work-buffer order, are copied in any order: the end of the last
// packed piece (end >= 0; plain data is -1) of the longest copied prefix.
type arrivals struct {
	ends   []int64
	copied []bool
	prefix int
}

func newArrivals(ends []int64) *arrivals {
	return &arrivals{ends: ends, copied: make([]bool, len(ends))}
}

// arrived records piece i copied and returns the watermark when it moved
// (past everything, 1<<62, once every piece is in).
func (a *arrivals) arrived(i int) (mark int64, moved bool) {
	a.copied[i] = true
	for a.prefix < len(a.ends) && a.copied[a.prefix] {
		if e := a.ends[a.prefix]; e >= 0 {
			mark, moved = e, true
		}
		a.prefix++
	}
	if a.prefix == len(a.ends) {
		return 1 << 62, true
	}
	return mark, moved
}

// launchable returns the end of the run of blocks from first on whose
// needs (the work-buffer offset each block's payloads end at, running
// maxima) lie at or below mark.
func launchable(need []int64, first int, mark int64) int {
	k := first
	for k < len(need) && need[k] <= mark {
		k++
	}
	return k
}

// Model is tensors loaded onto the device. Free releases them.
type Model struct {
	Tensors []Tensor
	Stats   Stats
	dev     backend
	files   []loadedFile
	allocs  []DevPtr
}

type loadedFile struct {
	layout *Layout
	data   DevPtr // the file's data section on the device
}

// Free releases the model's device memory.
func (m *Model) Free() {
	for _, p := range m.allocs {
		m.dev.free(p)
	}
	m.allocs = nil
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
	// The files' layouts (headers, plans) on every core.
	lays := make([]*Layout, len(files))
	var g errgroup.Group
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, name := range files {
		g.Go(func() (err error) {
			lays[i], err = layout(name)
			return err
		})
	}
	err = g.Wait()
	defer func() {
		for _, lay := range lays {
			if lay != nil {
				lay.Close()
			}
		}
	}()
	if err != nil {
		return nil, err
	}
	m.Stats.Layout = time.Since(t0)
	for _, lay := range lays {
		if lay.Packed {
			m.Stats.CPU = m.Stats.Layout // headers and plans, all at once
			break
		}
	}
	for i := 0; i < len(lays); {
		j, n := i+1, lays[i].UploadLen
		for j < len(lays) && n+lays[j].UploadLen <= l.batch {
			n += lays[j].UploadLen
			j++
		}
		if err := l.loadBatch(m, lays[i:j]); err != nil {
			m.Free()
			return nil, err
		}
		i = j
	}
	m.Stats.Total = time.Since(t0)
	return m, nil
}

// loadBatch loads files together: one device buffer holds their data
// sections, one work buffer their packed payloads, the merged plan's Meta
// and status words. The kernel's blocks start as soon as their payloads
// are on the device, while later bytes are still being copied.
func (l *Loader) loadBatch(m *Model, lays []*Layout) error {
	st := &m.Stats
	var dataLen, workLen int64
	dataOff := make([]int64, len(lays))
	workOff := make([]int64, len(lays))
	// A batch too small to fill the GPU decodes faster on the CPU than
	// one thread of the kernel decodes one group: its data sections are
	// produced as the meta sections' tensors are, and uploaded as they are.
	var decoded int64
	for _, lay := range lays {
		if lay.Plan != nil {
			for _, s := range lay.Plan.Spans {
				decoded += s.Values * int64(s.Code.Kind.WordSize())
			}
		}
	}
	onCPU := decoded > 0 && decoded <= l.CPUBelow
	var spans []Span
	for i, lay := range lays {
		st.Files++
		st.FileBytes += lay.Size
		dataOff[i] = dataLen
		dataLen = alignOut(dataLen + lay.DataLen)
		workOff[i] = -1
		if !lay.Packed {
			continue
		}
		st.Packed++
		if onCPU {
			st.CPUDecoded++
			lay.Host = []HostRange{{Off: 0, Len: lay.DataLen}}
			continue
		}
		workOff[i] = workLen
		workLen = alignOut(workLen + lay.UploadLen)
		if lay.Plan == nil {
			continue
		}
		for _, s := range lay.Plan.Spans {
			s.Payload += workOff[i]
			s.Out += dataOff[i]
			if len(lays) > 1 {
				s.Name = filepath.Base(lay.Path) + ": " + s.Name
			}
			spans = append(spans, s)
		}
	}
	ta := time.Now()
	data, err := l.dev.alloc(uint64(dataLen))
	st.Alloc += time.Since(ta)
	if err != nil {
		return err
	}
	m.allocs = append(m.allocs, data)
	for i, lay := range lays {
		fd := data + DevPtr(dataOff[i])
		m.files = append(m.files, loadedFile{layout: lay, data: fd})
		for _, t := range lay.Tensors {
			m.Tensors = append(m.Tensors, Tensor{Name: t.Name, Dtype: t.Dtype, Shape: t.Shape, Ptr: fd + DevPtr(t.Off), Size: t.Size, File: lay.Path})
			st.TensorBytes += t.Size
		}
		if workOff[i] >= 0 || !lay.Packed {
			st.DeviceBytes += lay.UploadLen
		}
	}
	var plan *Plan
	if len(lays) == 1 && lays[0].Plan != nil && !onCPU {
		plan = lays[0].Plan // offsets 0: the file's own plan
	} else if len(spans) > 0 {
		t := time.Now()
		if plan, err = NewPlan(spans, workLen, dataLen); err != nil {
			return err
		}
		st.CPU += time.Since(t)
	}
	// The CPU's bytes travel as one blob (ScatterKernelName): the
	// (source, destination, length) triple of every piece, then the bytes.
	var pieces, hostBytes int64
	for _, lay := range lays {
		for _, h := range lay.Host {
			pieces += (h.Len + ScatterPiece - 1) / ScatterPiece
			hostBytes += h.Len
		}
	}
	// The work buffer: payloads, PackedPad, the plan's Meta, status words,
	// the CPU's blob.
	var work DevPtr
	var metaOff, statusOff, blobOff int64
	if workLen > 0 || pieces > 0 {
		metaOff = alignOut(workLen + PackedPad)
		statusOff = metaOff
		blobOff = metaOff
		if plan != nil {
			statusOff = alignOut(metaOff + int64(len(plan.Meta)))
			blobOff = alignOut(statusOff + 4*int64(plan.Groups))
		}
		n := blobOff + 24*pieces + hostBytes
		ta := time.Now()
		work, err = l.workBuffer(uint64(n))
		st.Alloc += time.Since(ta)
		if err != nil {
			return err
		}
	}
	// Each block may start once the payloads of its span and of every
	// span before it are on the device.
	var need []int64
	launched := 0
	meta, status := work+DevPtr(metaOff), work+DevPtr(statusOff)
	if plan != nil {
		if err := l.dev.copyInOrdered(meta, plan.Meta); err != nil {
			return err
		}
		st.DeviceBytes += int64(len(plan.Meta))
		st.Spans += len(plan.Spans)
		st.Groups += plan.Groups
		need = make([]int64, plan.Blocks)
		var hi int64
		for b := range need {
			si := binary.LittleEndian.Uint32(plan.Meta[plan.BlockOff+8*b:])
			s := &plan.Spans[si]
			hi = max(hi, s.Payload+s.PayloadLen)
			need[b] = hi
		}
	}
	ready := func(mark int64) error {
		if plan == nil {
			return nil
		}
		k := launchable(need, launched, mark)
		if k == launched {
			return nil
		}
		st.Launches++
		err := l.dev.launch(plan, launched, k, work, meta, data, status)
		launched = k
		return err
	}

	// The CPU decodes the meta sections' tensors while the uploads run.
	t1 := time.Now()
	hostDone := make(chan error, 1)
	var hostTime time.Duration
	go func() {
		t := time.Now()
		var g errgroup.Group
		g.SetLimit(runtime.GOMAXPROCS(0))
		for _, lay := range lays {
			if len(lay.Host) > 0 {
				g.Go(lay.FillHost)
			}
		}
		err := g.Wait()
		hostTime = time.Since(t)
		hostDone <- err
	}()
	var segs []segment
	for i, lay := range lays {
		f := lay.file
		if f == nil { // a Layout made elsewhere
			if f, err = os.Open(lay.Path); err != nil {
				<-hostDone
				return err
			}
			defer f.Close()
		}
		sg := segment{f: f, off: lay.UploadOff, n: lay.UploadLen, dst: data + DevPtr(dataOff[i]), work: -1}
		if lay.Packed {
			if workOff[i] < 0 {
				continue // decoded on the CPU
			}
			sg.dst, sg.work = work+DevPtr(workOff[i]), workOff[i]
		}
		segs = append(segs, sg)
	}
	err = l.upload(segs, ready)
	if herr := <-hostDone; err == nil {
		err = herr
	}
	st.CPU += hostTime
	if err == nil && pieces > 0 {
		th := time.Now()
		blob := make([]byte, 24*pieces, 24*pieces+hostBytes)
		k := 0
		for i, lay := range lays {
			for _, h := range lay.Host {
				for at := int64(0); at < h.Len; at += ScatterPiece {
					n := min(ScatterPiece, h.Len-at)
					binary.LittleEndian.PutUint64(blob[24*k:], uint64(len(blob)))
					binary.LittleEndian.PutUint64(blob[24*k+8:], uint64(dataOff[i]+h.Off+at))
					binary.LittleEndian.PutUint64(blob[24*k+16:], uint64(n))
					blob = append(blob, h.Bytes[at:at+n]...)
					k++
				}
			}
		}
		if err = l.dev.copyIn(work+DevPtr(blobOff), blob); err == nil {
			err = l.dev.scatterBlob(work+DevPtr(blobOff), int(pieces), data)
		}
		st.DeviceBytes += int64(len(blob))
		st.HostCopy += time.Since(th)
	}
	st.Read += time.Since(t1)
	if plan == nil && pieces == 0 {
		return err
	}
	// Whatever happened, the launched blocks finish before the buffers go.
	t2 := time.Now()
	werr := l.dev.wait()
	st.Decode += time.Since(t2)
	if err != nil {
		return err
	}
	if werr != nil {
		return werr
	}
	if plan == nil {
		return nil
	}
	if launched != plan.Blocks {
		return fmt.Errorf("cuda: %d of %d blocks never launched", plan.Blocks-launched, plan.Blocks)
	}
	return l.check(plan, meta, status)
}

// check reads the kernel's summary words and, when a group failed, the
// status words, and names the first failed group.
func (l *Loader) check(p *Plan, meta, status DevPtr) error {
	d := l.dev
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
	// Verify checks the kernel: every packed file is decoded by it.
	below := l.CPUBelow
	l.CPUBelow = 0
	m, err := l.Load(path)
	l.CPUBelow = below
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
