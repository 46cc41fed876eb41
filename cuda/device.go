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
		return d.check(d.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
	}
	if err := setup(); err != nil {
		ready <- err
		return
	}
	ready <- nil
	for fn := range g.calls {
		fn()
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

// Launch runs the kernel on a grid of blocks×threads with args (each a
// pointer to the argument's value, as cuLaunchKernel wants) and waits.
func (k *Kernel) Launch(blocks, threads, shared uint32, args ...unsafe.Pointer) error {
	return k.g.do(func() error {
		var params unsafe.Pointer
		if len(args) > 0 {
			params = unsafe.Pointer(&args[0])
		}
		if err := k.g.d.check(k.g.d.cuLaunchKernel(k.f, blocks, 1, 1, threads, 1, 1, shared, 0, params, nil), "cuLaunchKernel"); err != nil {
			return err
		}
		return k.g.d.check(k.g.d.cuCtxSynchronize(), "kernel")
	})
}
