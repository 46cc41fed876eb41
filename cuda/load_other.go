//go:build !(linux && (amd64 || arm64))

package cuda

// NewLoader fails on this platform.
func NewLoader(*Device) (*Loader, error) { return nil, ErrNoDriver }
