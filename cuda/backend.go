package cuda

import (
	"encoding/binary"
	"fmt"
	"sort"
	"sync"
)

// backend is what the Loader needs of a device: the GPU through the driver
// (gpuBackend, Linux), or host memory with the kernel emulated on the CPU
// (emuBackend), which runs every other part of a load in tests and where
// there is no GPU.
type backend interface {
	name() string
	alloc(n uint64) (DevPtr, error)
	free(p DevPtr) error
	copyIn(p DevPtr, b []byte) error
	copyOut(b []byte, p DevPtr) error
	// copyInOrdered copies b to p ordered before every later launch (the
	// kernels' stream); b may be reused when it returns.
	copyInOrdered(p DevPtr, b []byte) error
	pin(b []byte) error
	unpin(b []byte) error
	// launch starts blocks [b0, b1) of the decode kernel of plan p with
	// the given buffers: the packed bytes (p.PackedLen + PackedPad), the
	// uploaded p.Meta, the output, and the status words (p.Groups). It
	// may return before they finish (they run beside later copies); wait
	// waits for every launch so far.
	launch(p *Plan, b0, b1 int, packed, meta, out, status DevPtr) error
	wait() error
	// scatterBlob puts the pieces of an uploaded blob (ScatterKernelName)
	// in place under dst, after the copies made so far; wait waits for it.
	scatterBlob(blob DevPtr, pieces int, dst DevPtr) error
	close()
}

// emuBackend is device memory in host memory: allocations at addresses far
// apart, the kernel run by Emulate on the bytes uploaded.
type emuBackend struct {
	mu     sync.Mutex
	next   DevPtr
	allocs map[DevPtr][]byte
}

func newEmuBackend() *emuBackend {
	return &emuBackend{next: 1 << 40, allocs: map[DevPtr][]byte{}}
}

func (e *emuBackend) name() string { return "CPU emulation of the decode kernel (no GPU)" }

func (e *emuBackend) alloc(n uint64) (DevPtr, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := e.next
	e.next += DevPtr((n + 1<<20) &^ (1<<20 - 1)) // 1 MiB apart at least, 256-aligned
	e.allocs[p] = make([]byte, max(n, 1))
	return p, nil
}

func (e *emuBackend) free(p DevPtr) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.allocs[p]; !ok {
		return fmt.Errorf("cuda (emulated): free of %#x, not an allocation", p)
	}
	delete(e.allocs, p)
	return nil
}

// mem returns the bytes [p, p+n) of one allocation, or an error as the
// device would fault.
func (e *emuBackend) mem(p DevPtr, n int) ([]byte, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	keys := make([]DevPtr, 0, len(e.allocs))
	for k := range e.allocs {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool { return keys[a] < keys[b] })
	i := sort.Search(len(keys), func(i int) bool { return keys[i] > p }) - 1
	if i >= 0 {
		b := e.allocs[keys[i]]
		off := uint64(p - keys[i])
		if off+uint64(n) <= uint64(len(b)) {
			return b[off : off+uint64(n)], nil
		}
	}
	return nil, fmt.Errorf("cuda (emulated): access [%#x, +%d) outside every allocation", p, n)
}

func (e *emuBackend) copyIn(p DevPtr, b []byte) error {
	m, err := e.mem(p, len(b))
	if err == nil {
		copy(m, b)
	}
	return err
}

func (e *emuBackend) copyInOrdered(p DevPtr, b []byte) error { return e.copyIn(p, b) }

func (e *emuBackend) copyOut(b []byte, p DevPtr) error {
	m, err := e.mem(p, len(b))
	if err == nil {
		copy(b, m)
	}
	return err
}

func (e *emuBackend) pin([]byte) error   { return nil }
func (e *emuBackend) unpin([]byte) error { return nil }
func (e *emuBackend) close()             {}

func (e *emuBackend) launch(p *Plan, b0, b1 int, packed, meta, out, status DevPtr) error {
	if b0 < 0 || b1 > p.Blocks || b0 > b1 {
		return fmt.Errorf("cuda (emulated): launch of blocks [%d, %d) of %d", b0, b1, p.Blocks)
	}
	pk, err := e.mem(packed, int(p.PackedLen+PackedPad))
	if err != nil {
		return err
	}
	mt, err := e.mem(meta, len(p.Meta))
	if err != nil {
		return err
	}
	o, err := e.mem(out, int(p.OutLen))
	if err != nil {
		return err
	}
	st, err := e.mem(status, 4*p.Groups)
	if err != nil {
		return err
	}
	// The kernel reads the plan from the device's copy of Meta and
	// updates its summary words there.
	emulateBlocks(p, pk, mt, o, st, b0, b1)
	return nil
}

func (e *emuBackend) wait() error { return nil }

func (e *emuBackend) scatterBlob(blob DevPtr, pieces int, dst DevPtr) error {
	tab, err := e.mem(blob, 24*pieces)
	if err != nil {
		return err
	}
	for i := range pieces {
		src, off, n := binary.LittleEndian.Uint64(tab[24*i:]), binary.LittleEndian.Uint64(tab[24*i+8:]), binary.LittleEndian.Uint64(tab[24*i+16:])
		if n > ScatterPiece {
			return fmt.Errorf("cuda (emulated): scatter piece of %d bytes", n)
		}
		from, err := e.mem(blob+DevPtr(src), int(n))
		if err != nil {
			return err
		}
		if err := e.copyIn(dst+DevPtr(off), from); err != nil {
			return err
		}
	}
	return nil
}
