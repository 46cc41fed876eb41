package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/dustin/go-humanize"

	"github.com/glyd/glyd/codec"
	"github.com/glyd/glyd/delta"
	"github.com/glyd/glyd/internal/fileio"
)

const suffix = ".glyd"

type compressCmd struct {
	Decompress bool   `short:"d" help:"Decompress instead of compressing."`
	Max        bool   `xor:"tier" help:"Max tier: better ratio, slower compression, same fast decoding."`
	Cold       bool   `xor:"tier" help:"Cold tier: archive ratio, 8 MiB units, slowest compression."`
	Keep       bool   `short:"k" help:"Keep the input file (by default it is removed once the output is complete)."`
	Force      bool   `short:"f" help:"Overwrite existing output; write compressed data to a terminal."`
	Stdout     bool   `short:"c" help:"Write to standard output; keep the input."`
	Threads    int    `short:"T" default:"0" placeholder:"N" help:"Threads to use; 0 means one per core."`
	Quiet      bool   `short:"q" help:"No progress line and no summary."`
	Verbose    bool   `short:"v" help:"Print the summary line even when stderr is not a terminal."`
	Base       string `placeholder:"OLD" type:"existingfile" help:"Code against (or, with -d, restore with) an older version OLD of the file: content found anywhere in OLD costs almost nothing."`

	In  string `arg:"" optional:"" default:"-" help:"Input file; '-' (the default) is standard input."`
	Out string `arg:"" optional:"" help:"Output file; '-' is standard output. Default: IN with .glyd added (or, with -d, removed); standard output when IN is '-'."`
}

// plan resolves where output goes: out is "-" for standard output.
func (c *compressCmd) plan() (out string, err error) {
	switch {
	case c.Stdout:
		if c.Out != "" && c.Out != "-" {
			return "", fmt.Errorf("-c writes to standard output: do not also give an output file (%s)", c.Out)
		}
		return "-", nil
	case c.Out != "":
		return c.Out, nil
	case c.In == "-":
		return "-", nil
	case c.Decompress:
		base := strings.TrimSuffix(c.In, suffix)
		if base == c.In || base == "" || strings.HasSuffix(base, "/") {
			return "", fmt.Errorf("%s: unknown suffix (want %s); give an output name or use -c", c.In, suffix)
		}
		return base, nil
	default:
		if strings.HasSuffix(c.In, suffix) && !c.Force {
			return "", fmt.Errorf("%s: already has the %s suffix; give an output name or use -f to compress it again", c.In, suffix)
		}
		return c.In + suffix, nil
	}
}

func (c *compressCmd) Run() error {
	if c.Threads < 0 {
		return fmt.Errorf("-T %d: thread count must be 0 (one per core) or more", c.Threads)
	}
	outName, err := c.plan()
	if err != nil {
		return err
	}
	inDisp, outDisp := displayName(c.In, false), displayName(outName, true)

	// Input.
	var in *os.File
	if c.In == "-" {
		in = os.Stdin
		if fileio.IsTerminal(in) && !c.Force {
			return errors.New("refusing to read from a terminal (stdin); give a file name, redirect, or use -f")
		}
	} else {
		in, err = os.Open(c.In)
		if err != nil {
			return about(c.In, err)
		}
		defer in.Close()
	}
	inInfo, err := in.Stat()
	if err != nil {
		return about(inDisp, err)
	}
	if inInfo.IsDir() {
		return about(inDisp, errors.New("is a directory"))
	}

	// Output.
	var out io.Writer
	var file *fileio.Output
	if outName == "-" {
		if !c.Decompress && !c.Force && fileio.IsTerminal(os.Stdout) {
			return errors.New("refusing to write compressed data to a terminal; redirect standard output or use -f")
		}
		out = os.Stdout
	} else {
		if oi, err := os.Stat(outName); err == nil && os.SameFile(inInfo, oi) {
			return about(outName, errors.New("is the input file"))
		}
		file, err = fileio.Create(outName, c.Force)
		if err != nil {
			return about(outName, err)
		}
		defer file.Abort() // no-op once committed
		out = file
	}

	stderrTTY := fileio.IsTerminal(os.Stderr)
	showProgress := stderrTTY && !c.Quiet
	inCount, outCount := &counter{name: inDisp}, &counter{name: outDisp}
	src := countingReader{in, inCount}
	dst := countingWriter{out, outCount}
	var size int64 = -1
	if inInfo.Mode().IsRegular() {
		size = inInfo.Size()
	}

	var prog *progress
	if c.Decompress {
		prog, err = c.decompress(dst, in, src, inCount, outCount, size, showProgress, inDisp)
	} else {
		prog = startProgress(showProgress, inDisp, inCount, inCount, size)
		err = c.compress(dst, src)
	}
	prog.done()
	if err != nil {
		return about(inDisp, err)
	}

	if file != nil {
		if inInfo.Mode().IsRegular() {
			file.CopyMetadata(inInfo)
		}
		if err := file.Commit(); err != nil {
			return about(outName, err)
		}
	}
	if (stderrTTY && !c.Quiet) || c.Verbose {
		c.summary(inDisp, inCount.n.Load(), outCount.n.Load())
	}
	if !c.Keep && c.In != "-" && outName != "-" {
		if err := os.Remove(c.In); err != nil {
			return about(c.In, fmt.Errorf("output complete, but cannot remove the input: %w", unwrapPath(err)))
		}
	}
	return nil
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func (c *compressCmd) options() codec.Options {
	o := codec.Options{Tier: codec.Default, Threads: c.Threads}
	if c.Max {
		o.Tier = codec.Max
	}
	if c.Cold {
		o.Tier = codec.Cold
	}
	return o
}

func (c *compressCmd) compress(dst io.Writer, src io.Reader) error {
	if c.Base != "" {
		old, err := os.ReadFile(c.Base)
		if err != nil {
			return err
		}
		return delta.EncodeFile(dst, old, src, delta.FileOptions{Tier: c.options().Tier, Threads: c.Threads})
	}
	zw, err := codec.NewWriter(dst, c.options())
	if err != nil {
		return err
	}
	if _, err := zw.ReadFrom(src); err != nil {
		_ = zw.Close()
		return err
	}
	return zw.Close()
}

func (c *compressCmd) summary(name string, in, out int64) {
	if c.Decompress {
		fmt.Fprintf(os.Stderr, "%s: %s -> %s\n", name, humanize.Bytes(uint64(in)), humanize.Bytes(uint64(out)))
		return
	}
	pct := 0.0
	if in > 0 {
		pct = 100 * float64(out) / float64(in)
	}
	fmt.Fprintf(os.Stderr, "%s: %s -> %s (%.1f%%)\n", name, humanize.Bytes(uint64(in)), humanize.Bytes(uint64(out)), pct)
}

// decompress decodes in (counted through src) to dst. A regular file is
// opened through its seek index and decoded many units at once; anything
// else is read as a stream.
func (c *compressCmd) decompress(dst io.Writer, in *os.File, src io.Reader, inCount, outCount *counter, size int64, showProgress bool, inDisp string) (*progress, error) {
	if size >= 0 {
		// Standard input may be a file read from part-way.
		start, err := in.Seek(0, io.SeekCurrent)
		if err == nil && start <= size {
			ra := countingReaderAt{io.NewSectionReader(in, start, size-start), inCount}
			f, err := codec.Open(ra, size-start, c.Threads)
			if err == nil {
				err = c.setBase(f)
			}
			if err != nil {
				return startProgress(false, "", inCount, inCount, 0), err
			}
			prog := startProgress(showProgress, inDisp, outCount, outCount, f.Size())
			err = decodeFile(dst, f, c.Threads)
			inCount.n.Store(size - start) // reads of the index count twice otherwise
			return prog, err
		}
	}
	prog := startProgress(showProgress, inDisp, outCount, inCount, size)
	var zr *codec.Reader
	if c.Base != "" {
		bf, err := os.Open(c.Base)
		if err != nil {
			return prog, err
		}
		defer bf.Close()
		st, err := bf.Stat()
		if err != nil {
			return prog, err
		}
		zr = codec.NewReaderBase(src, c.Threads, bf, st.Size())
	} else {
		zr = codec.NewReader(src, c.Threads)
	}
	defer zr.Close()
	// The Reader also rejects data after the stream's trailer.
	_, err := zr.WriteTo(dst)
	return prog, err
}

// setBase gives f the --base file when the stream needs one.
func (c *compressCmd) setBase(f *codec.File) error {
	if !f.NeedsBase() {
		return nil
	}
	if c.Base == "" {
		return errors.New("this file was compressed against an older version: give it with --base OLD")
	}
	bf, err := os.Open(c.Base)
	if err != nil {
		return err
	}
	// The base stays open until the process ends: f reads it lazily.
	st, err := bf.Stat()
	if err != nil {
		return err
	}
	if err := f.SetBase(bf, st.Size()); err != nil {
		return fmt.Errorf("--base %s: %s", c.Base, strings.TrimPrefix(err.Error(), "glyd: "))
	}
	return nil
}

type countingReaderAt struct {
	r io.ReaderAt
	c *counter
}

func (r countingReaderAt) ReadAt(p []byte, off int64) (int, error) {
	n, err := r.r.ReadAt(p, off)
	r.c.n.Add(int64(n))
	if err != nil && err != io.EOF {
		err = about(r.c.name, err)
	}
	return n, err
}

// decodeFile writes f's decoded bytes to dst, decoding the next chunk of
// units in parallel while the previous one is written.
func decodeFile(dst io.Writer, f *codec.File, threads int) error {
	if threads <= 0 {
		threads = defaultThreads()
	}
	us := int64(f.UnitSize())
	chunk := min(max(us*int64(threads), us), 128<<20)
	return copyAt(dst, f, 0, f.Size(), chunk)
}

// copyAt writes n bytes of ra from off to dst, chunk bytes at a time,
// reading the next chunk while the previous one is written.
func copyAt(dst io.Writer, ra io.ReaderAt, off, n, chunk int64) error {
	if n <= 0 {
		return nil
	}
	chunk = max(min(chunk, n), 1)

	type piece struct {
		buf []byte
		err error
	}
	free := make(chan []byte, 2)
	full := make(chan piece, 2)
	stop := make(chan struct{})
	defer close(stop)
	free <- make([]byte, chunk)
	free <- make([]byte, chunk)
	go func() {
		defer close(full)
		for done := int64(0); done < n; done += chunk {
			var buf []byte
			select {
			case buf = <-free:
			case <-stop:
				return
			}
			buf = buf[:min(chunk, n-done)]
			k, err := ra.ReadAt(buf, off+done)
			if err == io.EOF && k == len(buf) {
				err = nil
			} else if err == nil && k < len(buf) {
				err = io.ErrUnexpectedEOF
			}
			full <- piece{buf[:k], err}
			if err != nil {
				return
			}
		}
	}()
	for p := range full {
		if p.err != nil {
			return p.err
		}
		if _, err := dst.Write(p.buf); err != nil {
			return err
		}
		free <- p.buf[:cap(p.buf)]
	}
	return nil
}
