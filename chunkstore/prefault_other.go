//go:build !linux

package chunkstore

// prefault does nothing where Linux's MADV_POPULATE_WRITE is missing: the
// cache's memory faults in on first touch.
func prefault([]byte) {}
