//go:build !(linux && (amd64 || arm64))

package cuda

import "errors"

// Device is unavailable on this platform.
type Device struct {
	Name                           string
	Memory                         uint64
	Major, Minor, SMs, Driver, Ord int
}

// DevPtr is an address in device memory.
type DevPtr uint64

// ErrNoDriver is returned where the CUDA driver cannot be used.
var ErrNoDriver = errors.New("the GPU loader runs on Linux (amd64, arm64) only")

// Open fails on this platform.
func Open(int) (*Device, error) { return nil, ErrNoDriver }

// Close does nothing.
func (*Device) Close() {}
