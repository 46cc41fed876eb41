//go:build linux && (amd64 || arm64)

package cuda

import (
	"fmt"
	"runtime"
	"strings"
	"unsafe"
)

// Device is one GPU with its primary context. CUDA binds contexts to OS
// threads, so every driver call runs on one locked thread of the Device.
type Device struct {
	Ordinal  int
	Name     string
	Memory   uint64 // bytes
	Major    int    // compute capability
	Minor    int
	SMs      int
	Driver   int // driver API version, e.g. 12040
	d        *driver
	dev      cuDevice
	streams  [kernelStreams]cuStream // where kernels run, beside the copies of the default stream
	next     int                     // the stream of the next launch
	calls    chan func()
	released bool
}

// Open initialises the driver and opens device ordinal.
func Open(ordinal int) (*Device, error) {
	d, err := load()
	if err != nil {
		return nil, err
	}
	g := &Device{Ordinal: ordinal, d: d, calls: make(chan func())}
	ready := make(chan error)
	go g.thread(ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	return g, nil
}

// thread is the Device's locked OS thread: it sets the context up, then
// runs calls until Close.
func (g *Device) thread(ready chan<- error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	d := g.d
	setup := func() error {
		if err := d.check(d.cuInit(0), "cuInit"); err != nil {
			return err
		}
		var v, n int32
		d.cuDriverGetVersion(&v)
		g.Driver = int(v)
		if err := d.check(d.cuDeviceGetCount(&n), "cuDeviceGetCount"); err != nil {
			return err
		}
		if g.Ordinal < 0 || g.Ordinal >= int(n) {
			return fmt.Errorf("cuda: no device %d (the driver sees %d)", g.Ordinal, n)
		}
		if err := d.check(d.cuDeviceGet(&g.dev, int32(g.Ordinal)), "cuDeviceGet"); err != nil {
			return err
		}
		name := make([]byte, 256)
		d.cuDeviceGetName(&name[0], int32(len(name)), g.dev)
		g.Name = cString(&name[0])
		d.cuDeviceTotalMem(&g.Memory, g.dev)
		var a int32
		d.cuDeviceGetAttribute(&a, attrComputeMajor, g.dev)
		g.Major = int(a)
		d.cuDeviceGetAttribute(&a, attrComputeMinor, g.dev)
		g.Minor = int(a)
		d.cuDeviceGetAttribute(&a, attrSMCount, g.dev)
		g.SMs = int(a)
		var ctx cuContext
		if err := d.check(d.cuDevicePrimaryCtxRet(&ctx, g.dev), "cuDevicePrimaryCtxRetain"); err != nil {
			return err
		}
		if err := d.check(d.cuCtxSetCurrent(ctx), "cuCtxSetCurrent"); err != nil {
			return err
		}
		// Non-blocking streams (CU_STREAM_NON_BLOCKING) do not wait for
		// the default stream, so kernels decode while later copies run
		// there; several, so that launches run beside each other.
		for i := range g.streams {
			if err := d.check(d.cuStreamCreate(&g.streams[i], 1), "cuStreamCreate"); err != nil {
				return err
			}
		}
		return nil
	}
	if err := setup(); err != nil {
		ready <- err
		return
	}
	ready <- nil
	for fn := range g.calls {
		fn()
	}
	for _, st := range g.streams {
		if st != 0 {
			d.cuStreamDestroy(st)
		}
	}
	d.cuDevicePrimaryCtxRel(g.dev)
}

// do runs fn on the Device's thread.
func (g *Device) do(fn func() error) error {
	if g.released {
		return fmt.Errorf("cuda: device closed")
	}
	done := make(chan error)
	g.calls <- func() { done <- fn() }
	return <-done
}

// Close releases the context.
func (g *Device) Close() {
	if !g.released {
		g.released = true
		close(g.calls)
	}
}

// Alloc reserves n bytes of device memory.
func (g *Device) Alloc(n uint64) (DevPtr, error) {
	var p DevPtr
	err := g.do(func() error { return g.d.check(g.d.cuMemAlloc(&p, max(n, 1)), fmt.Sprintf("cuMemAlloc(%d)", n)) })
	return p, err
}

// Free returns device memory.
func (g *Device) Free(p DevPtr) error {
	return g.do(func() error { return g.d.check(g.d.cuMemFree(p), "cuMemFree") })
}

// CopyIn copies b to device address p.
func (g *Device) CopyIn(p DevPtr, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return g.do(func() error {
		return g.d.check(g.d.cuMemcpyHtoD(p, unsafe.Pointer(&b[0]), uint64(len(b))), "cuMemcpyHtoD")
	})
}

// CopyOut copies len(b) bytes from device address p into b.
func (g *Device) CopyOut(b []byte, p DevPtr) error {
	if len(b) == 0 {
		return nil
	}
	return g.do(func() error {
		return g.d.check(g.d.cuMemcpyDtoH(unsafe.Pointer(&b[0]), p, uint64(len(b))), "cuMemcpyDtoH")
	})
}

// Pin page-locks b so copies from it run at full bus speed; Unpin undoes
// it. (b must stay referenced while pinned.)
func (g *Device) Pin(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return g.do(func() error {
		return g.d.check(g.d.cuMemHostRegister(unsafe.Pointer(&b[0]), uint64(len(b)), 0), "cuMemHostRegister")
	})
}

// Unpin releases a Pin.
func (g *Device) Unpin(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return g.do(func() error { return g.d.check(g.d.cuMemHostUnregister(unsafe.Pointer(&b[0])), "cuMemHostUnregister") })
}

// Module is loaded PTX.
type Module struct {
	g *Device
	m cuModule
	// Log is the JIT compiler's information log (registers, spills).
	Log string
}

// JIT options of cuModuleLoadDataEx (CUjit_option).
const (
	jitInfoLogBuffer      = 3
	jitInfoLogBufferBytes = 4
	jitErrorLogBuffer     = 5
	jitErrorLogBytes      = 6
	jitLogVerbose         = 12
)

// LoadPTX JIT-compiles NUL-free PTX text for this device. A failure
// carries the JIT compiler's error log.
func (g *Device) LoadPTX(ptx []byte) (*Module, error) {
	img := append(append([]byte(nil), ptx...), 0)
	m := &Module{g: g}
	const logBytes = 16 << 10
	info, errLog := make([]byte, logBytes+1), make([]byte, logBytes+1) // a NUL always ends them
	opts := [5]int32{jitInfoLogBuffer, jitInfoLogBufferBytes, jitErrorLogBuffer, jitErrorLogBytes, jitLogVerbose}
	vals := [5]uintptr{uintptr(unsafe.Pointer(&info[0])), logBytes, uintptr(unsafe.Pointer(&errLog[0])), logBytes, 1}
	err := g.do(func() error {
		return g.d.check(g.d.cuModuleLoadDataEx(&m.m, unsafe.Pointer(&img[0]), uint32(len(opts)), &opts[0], &vals[0]),
			"cuModuleLoadDataEx (JIT of the embedded PTX)")
	})
	runtime.KeepAlive(img)
	runtime.KeepAlive(info)
	runtime.KeepAlive(errLog)
	m.Log = strings.TrimSpace(cString(&info[0]))
	if err != nil {
		if e := strings.TrimSpace(cString(&errLog[0])); e != "" {
			err = fmt.Errorf("%w: %s", err, e)
		}
		return nil, err
	}
	return m, nil
}

// Kernel is a function of a Module.
type Kernel struct {
	g *Device
	f cuFunction
}

// Kernel looks a kernel up by its (unmangled, extern "C") name.
func (m *Module) Kernel(name string) (*Kernel, error) {
	k := &Kernel{g: m.g}
	b := append([]byte(name), 0)
	err := m.g.do(func() error {
		return m.g.d.check(m.g.d.cuModuleGetFunction(&k.f, m.m, &b[0]), "cuModuleGetFunction "+name)
	})
	return k, err
}

// CopyInOrdered copies b to device address p and waits until the device
// holds it (a copy from pageable memory may return before its DMA ends):
// kernels launched afterwards, in any stream, read it.
func (g *Device) CopyInOrdered(p DevPtr, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return g.do(func() error {
		if err := g.d.check(g.d.cuMemcpyHtoD(p, unsafe.Pointer(&b[0]), uint64(len(b))), "cuMemcpyHtoD"); err != nil {
			return err
		}
		return g.d.check(g.d.cuCtxSynchronize(), "cuCtxSynchronize")
	})
}

// kernelStreams is how many launches may run at once: a launch lasts at
// least one thread's decode of a group, so launches made as the bytes
// arrive must not queue behind each other.
const kernelStreams = 8

// Launch starts the kernel on a grid of blocks×threads with args (each a
// pointer to the argument's value, as cuLaunchKernel wants, which copies
// the values) in the next of the kernels' streams; Sync waits for them.
func (k *Kernel) Launch(blocks, threads, shared uint32, args ...unsafe.Pointer) error {
	return k.g.do(func() error {
		var params unsafe.Pointer
		if len(args) > 0 {
			params = unsafe.Pointer(&args[0])
		}
		st := k.g.streams[k.g.next%kernelStreams]
		k.g.next++
		return k.g.d.check(k.g.d.cuLaunchKernel(k.f, blocks, 1, 1, threads, 1, 1, shared, st, params, nil), "cuLaunchKernel")
	})
}

// LaunchAfterCopies starts the kernel in the default stream, after the
// copies made before it (cuMemcpyHtoD runs there, and may return before a
// pageable copy's DMA ends); Sync waits for it too.
func (k *Kernel) LaunchAfterCopies(blocks, threads uint32, args ...unsafe.Pointer) error {
	return k.g.do(func() error {
		return k.g.d.check(k.g.d.cuLaunchKernel(k.f, blocks, 1, 1, threads, 1, 1, 0, 0, unsafe.Pointer(&args[0]), nil), "cuLaunchKernel")
	})
}

// Sync waits for everything launched in the kernels' streams and the
// default stream; a kernel's fault is reported here.
func (g *Device) Sync() error {
	return g.do(func() error {
		if err := g.d.check(g.d.cuStreamSynchronize(0), "kernel"); err != nil {
			return err
		}
		for _, st := range g.streams {
			if err := g.d.check(g.d.cuStreamSynchronize(st), "kernel"); err != nil {
				return err
			}
		}
		return nil
	})
}
