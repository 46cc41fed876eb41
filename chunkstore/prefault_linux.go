package chunkstore

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// prefault populates b's pages as a write would, without changing their
// bytes (MADV_POPULATE_WRITE, Linux 5.14 and later): safe while other
// goroutines use parts of b. Errors (an older kernel) leave b to fault in
// on first touch, as without it.
func prefault(b []byte) {
	const page = 4 << 10
	p := uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	skip := int((page - p%page) % page)
	if skip >= len(b) {
		return
	}
	b = b[skip:]
	b = b[:len(b)-len(b)%page]
	// In pieces, so the memory of a large cache comes in while the first
	// reads already run.
	for len(b) > 0 {
		n := min(len(b), 4<<20)
		if unix.Madvise(b[:n], unix.MADV_POPULATE_WRITE) != nil {
			return
		}
		b = b[n:]
	}
}
