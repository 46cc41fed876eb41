package cdc

import (
	"errors"
	"io"
	"sync"
)

// Chunker cuts a stream into the same chunks Split would cut the whole
// stream into, holding at most 2*Max bytes of it.
//
// A boundary is decided by at most Max bytes from the chunk's start (or the
// end of the stream), so the Chunker reads until it has Max bytes past the
// current chunk start, or EOF, and cuts exactly as Split does. How the reader
// fragments its reads therefore cannot change a boundary.
type Chunker struct {
	r          io.Reader
	c          config
	buf        []byte // len 2*Max; buf[start:end] is read but not yet returned
	start, end int
	eof        bool
	err        error // sticky: a read error, or io.EOF once the last chunk is out
}

// New returns a Chunker reading from r. It fails only if p is invalid.
func New(r io.Reader, p Params) (*Chunker, error) {
	c, err := p.compile()
	if err != nil {
		return nil, err
	}
	// 2*Max rather than Max: the unreturned tail (< Max) is moved to the
	// front only when less than Max remains, so each move is followed by at
	// least Max bytes of reading, and copying costs less than a byte per byte.
	var buf []byte
	if b, ok := bufPool.Get().(*[]byte); ok && len(*b) == 2*p.Max {
		buf = *b
	} else {
		buf = make([]byte, 2*p.Max)
	}
	return &Chunker{r: r, c: c, buf: buf}, nil
}

// bufPool keeps chunker buffers: the filesystem starts a chunker for every
// small file it commits, and a fresh zeroed 512 KiB buffer each time cost
// more than chunking the file.
var bufPool sync.Pool

// Close returns the chunker's buffer for reuse; chunks returned by Next
// are invalid after it.
func (k *Chunker) Close() {
	if k.buf != nil {
		b := k.buf
		k.buf = nil
		k.err = errors.New("cdc: chunker closed")
		bufPool.Put(&b)
	}
}

// Next returns the next chunk. The slice aliases the Chunker's buffer and is
// valid only until the next call to Next. After the last chunk Next returns
// nil, io.EOF. A read error other than io.EOF is returned as is, and again on
// every later call; the bytes buffered before it are not returned as chunks,
// since their boundaries could depend on the bytes that were not read.
func (k *Chunker) Next() ([]byte, error) {
	if k.err != nil {
		return nil, k.err
	}
	if k.end-k.start < k.c.max && !k.eof {
		if err := k.fill(); err != nil {
			k.err = err
			return nil, err
		}
	}
	if k.start == k.end {
		k.err = io.EOF
		return nil, io.EOF
	}
	n := k.c.cut(k.buf[k.start:k.end])
	chunk := k.buf[k.start : k.start+n : k.start+n]
	k.start += n
	return chunk, nil
}

// maxEmptyReads is how many (0, nil) reads in a row fill tolerates before
// giving up with io.ErrNoProgress, as bufio does.
const maxEmptyReads = 100

// fill moves the unreturned bytes to the front of buf and reads until at
// least Max bytes are buffered or the reader reports EOF.
func (k *Chunker) fill() error {
	if k.start > 0 {
		k.end = copy(k.buf, k.buf[k.start:k.end])
		k.start = 0
	}
	empty := 0
	for k.end < k.c.max {
		n, err := k.r.Read(k.buf[k.end:])
		if n < 0 || n > len(k.buf)-k.end {
			return errors.New("cdc: reader returned an invalid count")
		}
		k.end += n
		if err == io.EOF {
			k.eof = true
			return nil
		}
		if err != nil {
			return err
		}
		if n == 0 {
			if empty++; empty >= maxEmptyReads {
				return io.ErrNoProgress
			}
		} else {
			empty = 0
		}
	}
	return nil
}
