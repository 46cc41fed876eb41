//go:build linux && (amd64 || arm64)

package cuda

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// The CUDA driver API, loaded from libcuda.so.1 at run time with purego:
// no cgo, no toolkit at build time; only the NVIDIA driver where it runs.

type (
	cuResult   int32
	cuDevice   int32
	cuContext  uintptr
	cuModule   uintptr
	cuFunction uintptr
	cuStream   uintptr
	// DevPtr is an address in device memory.
	DevPtr uint64
)

const (
	attrComputeMajor = 75 // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
	attrComputeMinor = 76
	attrSMCount      = 16 // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
)

type driver struct {
	cuInit                func(flags uint32) cuResult
	cuDriverGetVersion    func(v *int32) cuResult
	cuDeviceGetCount      func(n *int32) cuResult
	cuDeviceGet           func(d *cuDevice, ordinal int32) cuResult
	cuDeviceGetName       func(name *byte, n int32, d cuDevice) cuResult
	cuDeviceTotalMem      func(bytes *uint64, d cuDevice) cuResult
	cuDeviceGetAttribute  func(v *int32, attr int32, d cuDevice) cuResult
	cuDevicePrimaryCtxRet func(ctx *cuContext, d cuDevice) cuResult
	cuDevicePrimaryCtxRel func(d cuDevice) cuResult
	cuCtxSetCurrent       func(ctx cuContext) cuResult
	cuCtxSynchronize      func() cuResult
	cuModuleLoadData      func(m *cuModule, image unsafe.Pointer) cuResult
	cuModuleLoadDataEx    func(m *cuModule, image unsafe.Pointer, n uint32, opts *int32, vals *uintptr) cuResult
	cuModuleUnload        func(m cuModule) cuResult
	cuModuleGetFunction   func(f *cuFunction, m cuModule, name *byte) cuResult
	cuMemAlloc            func(p *DevPtr, size uint64) cuResult
	cuMemFree             func(p DevPtr) cuResult
	cuMemcpyHtoD          func(dst DevPtr, src unsafe.Pointer, size uint64) cuResult
	cuMemcpyDtoH          func(dst unsafe.Pointer, src DevPtr, size uint64) cuResult
	cuMemHostRegister     func(p unsafe.Pointer, size uint64, flags uint32) cuResult
	cuMemHostUnregister   func(p unsafe.Pointer) cuResult
	cuStreamCreate        func(s *cuStream, flags uint32) cuResult
	cuStreamSynchronize   func(s cuStream) cuResult
	cuStreamDestroy       func(s cuStream) cuResult
	cuLaunchKernel        func(f cuFunction, gx, gy, gz, bx, by, bz, shared uint32, stream cuStream, params unsafe.Pointer, extra unsafe.Pointer) cuResult
	cuGetErrorString      func(r cuResult, s **byte) cuResult
}

var (
	loadOnce sync.Once
	drv      *driver
	loadErr  error
)

// ErrNoDriver is returned when libcuda.so.1 cannot be loaded.
var ErrNoDriver = errors.New("no NVIDIA driver: libcuda.so.1 could not be loaded")

func load() (*driver, error) {
	loadOnce.Do(func() {
		var lib uintptr
		var err error
		for _, name := range []string{"libcuda.so.1", "libcuda.so"} {
			if lib, err = purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_GLOBAL); err == nil {
				break
			}
		}
		if err != nil {
			loadErr = fmt.Errorf("%w (%v)", ErrNoDriver, err)
			return
		}
		d := &driver{}
		syms := []struct {
			fn   any
			name string
		}{
			{&d.cuInit, "cuInit"}, {&d.cuDriverGetVersion, "cuDriverGetVersion"},
			{&d.cuDeviceGetCount, "cuDeviceGetCount"}, {&d.cuDeviceGet, "cuDeviceGet"},
			{&d.cuDeviceGetName, "cuDeviceGetName"}, {&d.cuDeviceTotalMem, "cuDeviceTotalMem_v2"},
			{&d.cuDeviceGetAttribute, "cuDeviceGetAttribute"},
			{&d.cuDevicePrimaryCtxRet, "cuDevicePrimaryCtxRetain"}, {&d.cuDevicePrimaryCtxRel, "cuDevicePrimaryCtxRelease_v2"},
			{&d.cuCtxSetCurrent, "cuCtxSetCurrent"}, {&d.cuCtxSynchronize, "cuCtxSynchronize"},
			{&d.cuModuleLoadData, "cuModuleLoadData"}, {&d.cuModuleLoadDataEx, "cuModuleLoadDataEx"},
			{&d.cuModuleUnload, "cuModuleUnload"},
			{&d.cuModuleGetFunction, "cuModuleGetFunction"},
			{&d.cuMemAlloc, "cuMemAlloc_v2"}, {&d.cuMemFree, "cuMemFree_v2"},
			{&d.cuMemcpyHtoD, "cuMemcpyHtoD_v2"}, {&d.cuMemcpyDtoH, "cuMemcpyDtoH_v2"},
			{&d.cuMemHostRegister, "cuMemHostRegister_v2"}, {&d.cuMemHostUnregister, "cuMemHostUnregister"},
			{&d.cuStreamCreate, "cuStreamCreate"}, {&d.cuStreamSynchronize, "cuStreamSynchronize"},
			{&d.cuStreamDestroy, "cuStreamDestroy_v2"},
			{&d.cuLaunchKernel, "cuLaunchKernel"}, {&d.cuGetErrorString, "cuGetErrorString"},
		}
		for _, s := range syms {
			if _, err := purego.Dlsym(lib, s.name); err != nil {
				loadErr = fmt.Errorf("libcuda.so.1 lacks %s (driver too old?)", s.name)
				return
			}
			purego.RegisterLibFunc(s.fn, lib, s.name)
		}
		drv = d
	})
	return drv, loadErr
}

func (d *driver) check(r cuResult, what string) error {
	if r == 0 {
		return nil
	}
	var s *byte
	msg := "unknown error"
	if d.cuGetErrorString(r, &s) == 0 && s != nil {
		msg = cString(s)
	}
	return fmt.Errorf("cuda: %s: %s (CUresult %d)", what, msg, r)
}

func cString(p *byte) string {
	var b []byte
	for q := unsafe.Pointer(p); *(*byte)(q) != 0; q = unsafe.Add(q, 1) {
		b = append(b, *(*byte)(q))
	}
	return string(b)
}
