//go:build linux && (amd64 || arm64)

package cuda

import (
	"fmt"
	"time"
	"unsafe"
)

// gpuBackend is a GPU through the driver API.
type gpuBackend struct {
	g       *Device
	kernel  *Kernel
	scatter *Kernel
}

// NewLoader JIT-compiles the decode kernel for g and pins the staging
// buffers.
func NewLoader(g *Device) (*Loader, error) {
	t0 := time.Now()
	m, err := g.LoadPTX(decodePTX)
	if err != nil {
		return nil, err
	}
	k, err := m.Kernel(KernelName)
	if err != nil {
		return nil, err
	}
	sk, err := m.Kernel(ScatterKernelName)
	if err != nil {
		return nil, err
	}
	l, err := newLoader(&gpuBackend{g: g, kernel: k, scatter: sk}, stageSize)
	if l != nil {
		l.JITLog = m.Log
		l.Setup = time.Since(t0)
	}
	return l, err
}

func (b *gpuBackend) name() string                     { return b.g.Name }
func (b *gpuBackend) alloc(n uint64) (DevPtr, error)   { return b.g.Alloc(n) }
func (b *gpuBackend) free(p DevPtr) error              { return b.g.Free(p) }
func (b *gpuBackend) copyIn(p DevPtr, s []byte) error  { return b.g.CopyIn(p, s) }
func (b *gpuBackend) copyOut(s []byte, p DevPtr) error { return b.g.CopyOut(s, p) }
func (b *gpuBackend) pin(s []byte) error               { return b.g.Pin(s) }
func (b *gpuBackend) unpin(s []byte) error             { return b.g.Unpin(s) }
func (b *gpuBackend) close()                           {}

func (b *gpuBackend) launch(p *Plan, b0, b1 int, packed, meta, out, status DevPtr) error {
	if b0 < 0 || b1 > p.Blocks || b0 >= b1 {
		return fmt.Errorf("cuda: launch of blocks [%d, %d) of %d", b0, b1, p.Blocks)
	}
	args := [7]uint64{uint64(packed), uint64(meta) + uint64(p.DescOff), uint64(meta) + uint64(p.BlockOff),
		uint64(meta) + uint64(p.TableOff), uint64(out), uint64(status), uint64(meta) + uint64(p.SummaryOff)}
	base := uint32(b0)
	var ptrs [8]unsafe.Pointer
	for i := range args {
		ptrs[i] = unsafe.Pointer(&args[i])
	}
	ptrs[7] = unsafe.Pointer(&base)
	return b.kernel.Launch(uint32(b1-b0), BlockThreads, 0, ptrs[:]...)
}

func (b *gpuBackend) wait() error                            { return b.g.Sync() }
func (b *gpuBackend) copyInOrdered(p DevPtr, s []byte) error { return b.g.CopyInOrdered(p, s) }

func (b *gpuBackend) scatterBlob(blob DevPtr, pieces int, dst DevPtr) error {
	if pieces <= 0 {
		return nil
	}
	a, d := uint64(blob), uint64(dst)
	return b.scatter.LaunchAfterCopies(uint32(pieces), BlockThreads, unsafe.Pointer(&a), unsafe.Pointer(&d))
}
