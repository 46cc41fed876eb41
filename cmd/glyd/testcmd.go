package main

import (
	"fmt"
	"io"
	"os"

	"github.com/glyd/glyd/codec"
)

type testCmd struct {
	Threads int      `short:"T" default:"0" placeholder:"N" help:"Threads to use; 0 means one per core."`
	Quiet   bool     `short:"q" help:"Print only failures."`
	Files   []string `arg:"" help:"Files to check; '-' reads standard input."`
}

// reportedError is returned after every failure has been reported on its own.
type reportedError struct{ n int }

func (e reportedError) Error() string {
	if e.n == 1 {
		return "1 file failed the test"
	}
	return fmt.Sprintf("%d files failed the test", e.n)
}

func (c *testCmd) Run() error {
	failed := 0
	for _, name := range c.Files {
		disp := displayName(name, false)
		if err := c.check(name); err != nil {
			failed++
			fmt.Fprintf(os.Stderr, "glyd: %s\n", message(about(disp, err)))
			continue
		}
		if !c.Quiet {
			fmt.Printf("%s: OK\n", disp)
		}
	}
	if failed > 0 {
		return reportedError{failed}
	}
	return nil
}

func (c *testCmd) check(name string) error {
	if name == "-" {
		// A stream check: every unit, then the index against the units.
		zr := codec.NewReader(os.Stdin, c.Threads)
		defer zr.Close()
		_, err := zr.WriteTo(io.Discard)
		return err
	}
	if isPackedFile(name) {
		return verifyPacked(name, c.Threads)
	}
	f, closeFn, err := openGlyd(name, c.Threads)
	if err != nil {
		return err
	}
	defer closeFn()
	return f.Verify()
}
