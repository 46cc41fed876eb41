package main

import (
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/glyd/glyd/codec"
	"github.com/glyd/glyd/internal/fileio"
)

func TestPlan(t *testing.T) {
	for _, c := range []struct {
		cmd  compressCmd
		out  string
		fail string
	}{
		{cmd: compressCmd{In: "a"}, out: "a.glyd"},
		{cmd: compressCmd{In: "a", Out: "b"}, out: "b"},
		{cmd: compressCmd{In: "a", Out: "-"}, out: "-"},
		{cmd: compressCmd{In: "a", Stdout: true}, out: "-"},
		{cmd: compressCmd{In: "a", Stdout: true, Out: "-"}, out: "-"},
		{cmd: compressCmd{In: "a", Stdout: true, Out: "b"}, fail: "-c"},
		{cmd: compressCmd{In: "-"}, out: "-"},
		{cmd: compressCmd{In: "-", Out: "x.glyd"}, out: "x.glyd"},
		{cmd: compressCmd{In: "a.glyd"}, fail: "suffix"},
		{cmd: compressCmd{In: "a.glyd", Force: true}, out: "a.glyd.glyd"},
		{cmd: compressCmd{In: "a.glyd", Decompress: true}, out: "a"},
		{cmd: compressCmd{In: "dir/a.tar.glyd", Decompress: true}, out: "dir/a.tar"},
		{cmd: compressCmd{In: "a", Decompress: true}, fail: "suffix"},
		{cmd: compressCmd{In: ".glyd", Decompress: true}, fail: "suffix"},
		{cmd: compressCmd{In: "d/.glyd", Decompress: true}, fail: "suffix"},
		{cmd: compressCmd{In: "a", Decompress: true, Out: "b"}, out: "b"},
		{cmd: compressCmd{In: "-", Decompress: true}, out: "-"},
	} {
		out, err := c.cmd.plan()
		if c.fail != "" {
			if err == nil || !strings.Contains(err.Error(), c.fail) {
				t.Errorf("%+v: err %v, want one mentioning %q", c.cmd, err, c.fail)
			}
			continue
		}
		if err != nil || out != c.out {
			t.Errorf("%+v: %q, %v; want %q", c.cmd, out, err, c.out)
		}
	}
}

func TestMessage(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{about("x", &fs.PathError{Op: "open", Path: "x", Err: fs.ErrNotExist}), "x: file does not exist"},
		{about("x", &fs.PathError{Op: "create", Path: "y", Err: fs.ErrPermission}), "y: permission denied"},
		{about("x.glyd", &codec.FormatError{Unit: 1, Block: -1, Offset: 9, Msg: "bad"}), "x.glyd: bad (unit 1 at byte 9)"},
		{about("in", about("(stdout)", errors.New("broken"))), "(stdout): broken"},
		{about("a", &fileio.ExistsError{Path: "a.glyd"}), "a.glyd: already exists (use -f to overwrite)"},
		{errors.New("glyd: plain"), "plain"},
	} {
		if got := message(c.err); got != c.want {
			t.Errorf("message = %q, want %q", got, c.want)
		}
	}
}
