// Command glyd compresses and decompresses files in the glyd format, with
// zstd's command-line conventions.
package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime/debug"
	"strings"

	"github.com/alecthomas/kong"

	"github.com/glyd/glyd/codec"
	"github.com/glyd/glyd/internal/fileio"
)

type cli struct {
	Compress compressCmd `cmd:"" default:"withargs" help:"Compress IN to OUT, or decompress with -d. This is the default command: 'glyd FILE' is 'glyd compress FILE'."`
	Info     infoCmd     `cmd:"" help:"Describe a .glyd file: tier, units, sizes, ratio, block codings."`
	Test     testCmd     `cmd:"" help:"Verify every checksum in .glyd files."`
	Bench    benchCmd    `cmd:"" help:"Measure compression ratio and speed."`
	Store    storeCmd    `cmd:"" help:"A deduplicating chunk store: init, put, get, ls, rm, stat, gc, verify."`
	Versions versionsCmd `cmd:"" help:"List the kept versions of a file in a mounted glydfs."`
	Snapshot snapshotCmd `cmd:"" help:"Whole-tree snapshots of a mounted glydfs: create, ls, rm."`
	Restore  restoreCmd  `cmd:"" help:"Bring back a file or tree from a snapshot or a version."`
	Stats    statsCmd    `cmd:"" help:"Logical and stored bytes of a mounted glydfs or of its store."`
	Pack     packCmd     `cmd:"" help:"Pack a safetensors file, or a directory of shards, tensor by tensor: smaller, byte for byte the same after unpack."`
	Unpack   unpackCmd   `cmd:"" help:"Unpack what glyd pack wrote back to the original safetensors file or directory."`
	Doctor   doctorCmd   `cmd:"" help:"Say whether a GPU is usable for loading packed tensors, and why not."`
	Gpu      gpuCmd      `cmd:"" help:"Load packed tensors into GPU memory, decoding them there: load, verify."`

	Version kong.VersionFlag `short:"V" help:"Print the version and exit."`
}

const description = `A fast compressor for data written once and read many times.

  glyd FILE                 compress FILE to FILE.glyd, then remove FILE
  glyd -d FILE.glyd         decompress to FILE, then remove FILE.glyd
  glyd -k --max FILE        compress harder, keep FILE
  tar c dir | glyd - - > dir.tar.glyd
  glyd -dc dir.tar.glyd | tar x
  glyd store put DIR NAME FILE    keep FILE in a deduplicating store

A file named like a command (info, test, bench, store, versions, snapshot,
restore, stats, compress) needs a path
('./info') or the explicit command ('glyd compress info').
Run 'glyd compress --help' for the compression and decompression flags.`

func version() string {
	v := "devel"
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		v = bi.Main.Version
	}
	return fmt.Sprintf("glyd %s (container format v%d)", v, codec.Version)
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(os.Stderr, "glyd: internal error: %v\n", r)
			code = 2
		}
	}()
	var c cli
	parser, err := kong.New(&c,
		kong.Name("glyd"),
		kong.Description(description),
		kong.UsageOnError(),
		kong.Vars{"version": version()},
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
	)
	if err != nil {
		fmt.Fprintf(os.Stderr, "glyd: %v\n", err)
		return 2
	}
	fileio.HandleSignals(func(sig os.Signal) {
		fmt.Fprintf(os.Stderr, "\nglyd: interrupted (%v); unfinished output removed\n", sig)
	})
	ctx, err := parser.Parse(args)
	if err != nil {
		fmt.Fprintf(os.Stderr, "glyd: %s\nRun 'glyd --help' for usage.\n", err)
		return 1
	}
	if err := ctx.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "glyd: %s\n", message(err))
		return 1
	}
	return 0
}

// fileError ties an error to the file it is about, so that the one line the
// user sees names it.
type fileError struct {
	name string
	err  error
}

func (e *fileError) Error() string {
	var pe *fs.PathError
	if errors.As(e.err, &pe) && pe.Path == e.name {
		return e.name + ": " + strip(pe.Err.Error())
	}
	return e.name + ": " + message(e.err)
}

func (e *fileError) Unwrap() error { return e.err }

// about names the file an error is about, unless it already names one.
func about(name string, err error) error {
	if err == nil {
		return nil
	}
	var fe *fileError
	var ee *fileio.ExistsError
	if errors.As(err, &fe) || errors.As(err, &ee) {
		return err
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path != name && pe.Path != "" {
		// The error is about another file than the one at hand.
		return &fileError{pe.Path, pe.Err}
	}
	return &fileError{name, err}
}

// message renders err for the user: no doubled "glyd:" prefixes, and a
// path error reduced to the path and its cause.
func message(err error) string {
	var fe *fileError
	if errors.As(err, &fe) {
		return fe.Error()
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Path != "" {
		return pe.Path + ": " + strip(pe.Err.Error())
	}
	return strip(err.Error())
}

func strip(s string) string {
	for strings.HasPrefix(s, "glyd: ") {
		s = strings.TrimPrefix(s, "glyd: ")
	}
	return s
}

// displayName is how messages name a file given on the command line.
func displayName(name string, out bool) string {
	if name == "-" {
		if out {
			return "(stdout)"
		}
		return "(stdin)"
	}
	return name
}
