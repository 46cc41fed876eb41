package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dustin/go-humanize"
)

// counter counts bytes going through a reader or writer and tags I/O errors
// with the file they happened on.
type counter struct {
	n    atomic.Int64
	name string
}

type countingReader struct {
	r io.Reader
	c *counter
}

func (r countingReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.c.n.Add(int64(n))
	if err != nil && err != io.EOF {
		err = about(r.c.name, err)
	}
	return n, err
}

type countingWriter struct {
	w io.Writer
	c *counter
}

func (w countingWriter) Write(p []byte) (int, error) {
	n, err := w.w.Write(p)
	w.c.n.Add(int64(n))
	return n, about(w.c.name, err)
}

// progress draws one status line on stderr, redrawn at most four times a
// second, while work runs.
type progress struct {
	name  string
	raw   *counter // uncompressed bytes done: what the speed is of
	base  *counter // bytes done out of total
	total int64    // -1 when unknown
	start time.Time

	stop chan struct{}
	wg   sync.WaitGroup
	out  io.Writer
}

// startProgress starts drawing when on is true; otherwise it only keeps the
// start time for the summary.
func startProgress(on bool, name string, raw, base *counter, total int64) *progress {
	p := &progress{name: name, raw: raw, base: base, total: total, start: time.Now(), stop: make(chan struct{}), out: os.Stderr}
	if on {
		p.wg.Add(1)
		go p.loop()
	}
	return p
}

func (p *progress) loop() {
	defer p.wg.Done()
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	drawn := false
	for {
		select {
		case <-p.stop:
			if drawn {
				fmt.Fprint(p.out, "\r\033[K")
			}
			return
		case <-t.C:
			fmt.Fprint(p.out, "\r\033[K"+p.line())
			drawn = true
		}
	}
}

func (p *progress) line() string {
	el := time.Since(p.start).Seconds()
	raw := p.raw.n.Load()
	s := p.name + ": "
	if p.total > 0 {
		s += fmt.Sprintf("%3.0f%%  ", 100*float64(p.base.n.Load())/float64(p.total))
	}
	s += humanize.Bytes(uint64(raw))
	if el > 0 {
		s += fmt.Sprintf("  %s/s", humanize.Bytes(uint64(float64(raw)/el)))
	}
	return s
}

// done stops drawing and clears the line.
func (p *progress) done() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	p.wg.Wait()
}
