package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/dustin/go-humanize"

	"github.com/glyd/glyd/codec"
	"github.com/glyd/glyd/internal/fileio"
	"github.com/glyd/glyd/packed"
	"github.com/glyd/glyd/safetensors"
)

// packSuffix names packed files inside a packed directory.
const packSuffix = ".glyt"

type packCmd struct {
	Force   bool   `short:"f" help:"Overwrite existing output."`
	Threads int    `short:"T" default:"0" placeholder:"N" help:"Threads to use; 0 means one per core."`
	Tier    string `default:"max" enum:"default,max,cold" help:"Tier for the header and the tensors that are not floating point (default, max, cold)."`
	Base    string `placeholder:"OLD" help:"Code against an earlier version: a safetensors file, or for a directory a directory with the same shard names. Unchanged tensors cost almost nothing; unpacking needs the same OLD."`
	Quiet   bool   `short:"q" help:"No progress line and no summary."`
	Verbose bool   `short:"v" help:"Print the summary even when stderr is not a terminal."`

	In  string `arg:"" help:"A .safetensors file, or a directory of shards (its *.safetensors.index.json and any other files are copied)."`
	Out string `arg:"" help:"The packed file; for a directory, the directory to create (packed shards get the .glyt suffix)."`
}

type unpackCmd struct {
	Force   bool   `short:"f" help:"Overwrite existing output."`
	Threads int    `short:"T" default:"0" placeholder:"N" help:"Threads to use; 0 means one per core."`
	Base    string `placeholder:"OLD" help:"The earlier version the file (or directory) was packed against with --base."`
	Quiet   bool   `short:"q" help:"No progress line and no summary."`
	Verbose bool   `short:"v" help:"Print the summary even when stderr is not a terminal."`

	In  string `arg:"" help:"A packed file, or a packed directory."`
	Out string `arg:"" help:"The safetensors file (byte for byte the one packed), or the directory to create."`
}

func (c *packCmd) Run() error {
	if c.Threads < 0 {
		return fmt.Errorf("-T %d: thread count must be 0 (one per core) or more", c.Threads)
	}
	fi, err := os.Stat(c.In)
	if err != nil {
		return about(c.In, err)
	}
	show := !c.Quiet && fileio.IsTerminal(os.Stderr)
	summary := (show || c.Verbose) && !c.Quiet
	if fi.IsDir() {
		return packWalk(c.In, c.Out, c.Force, c.checkDir, func(in, out, rel string) (bool, error) {
			if !strings.HasSuffix(in, ".safetensors") {
				return false, nil
			}
			base := ""
			if c.Base != "" {
				if b := filepath.Join(c.Base, rel); packExists(b) {
					base = b
				}
			}
			return true, c.packFile(in, out+packSuffix, base, show, summary)
		})
	}
	return c.packFile(c.In, c.Out, c.Base, show, summary)
}

// checkDir validates a checkpoint directory's index (when it has one)
// against its shards before anything is written.
func (c *packCmd) checkDir(dir string) error {
	idx, err := safetensors.FindIndex(dir)
	if err != nil || idx == "" {
		return err
	}
	if _, err := safetensors.OpenCheckpoint(dir, idx); err != nil {
		return about(filepath.Join(dir, idx), err)
	}
	return nil
}

func (c *packCmd) tier() codec.Tier {
	t, err := codec.ParseTier(c.Tier)
	if err != nil {
		return codec.Max
	}
	return t
}

func (c *packCmd) packFile(in, out, base string, show, summary bool) error {
	src, release, err := mapInput(in)
	if err != nil {
		return about(in, err)
	}
	defer release()
	var old []byte
	if base != "" {
		b, rel, err := mapInput(base)
		if err != nil {
			return about(base, err)
		}
		defer rel()
		old = b
	}
	done := &counter{name: in}
	prog := startProgress(show, in, done, done, int64(len(src)))
	tier := c.tier()
	p, err := packed.Encode(src, packed.Options{Tier: &tier, Threads: c.Threads, Base: old,
		Progress: func(n int64) { done.n.Store(n) }})
	prog.done()
	if err != nil {
		return about(in, err)
	}
	if err := packWrite(out, c.Force, in, func(w io.Writer) error { _, err := w.Write(p); return err }); err != nil {
		return err
	}
	if summary {
		f, err := packed.Open(p, old)
		if err == nil {
			st, err := f.Stats()
			if err == nil {
				bpv := ""
				if st.FloatValues > 0 {
					bpv = fmt.Sprintf(", %.3f bits per float value", st.BitsPerFloat)
				}
				fmt.Fprintf(os.Stderr, "%s: %s -> %s (%.1f%%)%s\n", in, humanize.Bytes(uint64(len(src))),
					humanize.Bytes(uint64(len(p))), 100*float64(len(p))/float64(max(1, len(src))), bpv)
			}
		}
	}
	return nil
}

func (c *unpackCmd) Run() error {
	if c.Threads < 0 {
		return fmt.Errorf("-T %d: thread count must be 0 (one per core) or more", c.Threads)
	}
	fi, err := os.Stat(c.In)
	if err != nil {
		return about(c.In, err)
	}
	show := !c.Quiet && fileio.IsTerminal(os.Stderr)
	summary := (show || c.Verbose) && !c.Quiet
	if fi.IsDir() {
		return packWalk(c.In, c.Out, c.Force, nil, func(in, out, rel string) (bool, error) {
			if !strings.HasSuffix(in, packSuffix) || !isPackedFile(in) {
				return false, nil
			}
			base := ""
			if c.Base != "" {
				if b := filepath.Join(c.Base, strings.TrimSuffix(rel, packSuffix)); packExists(b) {
					base = b
				}
			}
			return true, c.unpackFile(in, strings.TrimSuffix(out, packSuffix), base, show, summary)
		})
	}
	return c.unpackFile(c.In, c.Out, c.Base, show, summary)
}

func (c *unpackCmd) unpackFile(in, out, base string, show, summary bool) error {
	src, release, err := mapInput(in)
	if err != nil {
		return about(in, err)
	}
	defer release()
	var old []byte
	if base != "" {
		b, rel, err := mapInput(base)
		if err != nil {
			return about(base, err)
		}
		defer rel()
		old = b
	}
	f, err := packed.Open(src, old)
	if err != nil {
		if errors.Is(err, packed.ErrNeedBase) {
			return about(in, errors.New("this file was packed against an earlier version: give it with --base OLD"))
		}
		return about(in, err)
	}
	done := &counter{name: in}
	prog := startProgress(show, in, done, done, f.Size())
	err = packWrite(out, c.Force, in, func(w io.Writer) error {
		_, err := f.WriteTo(w, c.Threads, func(n int64) { done.n.Store(n) })
		return err
	})
	prog.done()
	if err != nil {
		return err
	}
	if summary {
		fmt.Fprintf(os.Stderr, "%s: %s -> %s\n", in, humanize.Bytes(uint64(len(src))), humanize.Bytes(uint64(f.Size())))
	}
	return nil
}

// packWrite writes name through a temporary file that takes its final
// name only when complete, with the permissions and time of the file from.
func packWrite(name string, force bool, from string, write func(io.Writer) error) error {
	if ifi, err := os.Stat(from); err == nil {
		if ofi, err := os.Stat(name); err == nil && os.SameFile(ifi, ofi) {
			return about(name, errors.New("is the input file"))
		}
	}
	out, err := fileio.Create(name, force)
	if err != nil {
		return about(name, err)
	}
	defer out.Abort()
	if err := write(out); err != nil {
		return about(from, err)
	}
	if fi, err := os.Stat(from); err == nil {
		out.CopyMetadata(fi)
	}
	if err := out.Commit(); err != nil {
		return about(name, err)
	}
	return nil
}

// packWalk mirrors the directory in into out: for every regular file (a
// symbolic link to one counts as one, as in a Hugging Face cache), handle
// either deals with it (in, the out path it would have, its relative
// path) or declines, and the file is copied byte for byte. check, when
// set, vets the input first.
func packWalk(in, out string, force bool, check func(string) error, handle func(in, out, rel string) (bool, error)) error {
	if check != nil {
		if err := check(in); err != nil {
			return err
		}
	}
	if fi, err := os.Stat(out); err == nil {
		if !fi.IsDir() {
			return about(out, errors.New("exists and is not a directory"))
		}
		if !force {
			return about(out, errors.New("already exists (use -f to write into it)"))
		}
	}
	if err := os.MkdirAll(out, 0o777); err != nil {
		return about(out, err)
	}
	var files []string
	err := filepath.WalkDir(in, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(in, path)
		if err != nil {
			return err
		}
		if d.IsDir() {
			if rel != "." {
				return os.MkdirAll(filepath.Join(out, rel), 0o777)
			}
			return nil
		}
		fi, err := os.Stat(path)
		if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return nil // sockets, devices, links to directories
		}
		files = append(files, rel)
		return nil
	})
	if err != nil {
		return about(in, err)
	}
	sort.Strings(files)
	for _, rel := range files {
		src, dst := filepath.Join(in, rel), filepath.Join(out, rel)
		ok, err := handle(src, dst, rel)
		if err != nil {
			return err
		}
		if !ok {
			if err := packCopy(src, dst, force); err != nil {
				return err
			}
		}
	}
	return nil
}

func packCopy(src, dst string, force bool) error {
	in, err := os.Open(src)
	if err != nil {
		return about(src, err)
	}
	defer in.Close()
	return packWrite(dst, force, src, func(w io.Writer) error {
		_, err := io.Copy(w, in)
		return err
	})
}

func packExists(name string) bool {
	fi, err := os.Stat(name)
	return err == nil && fi.Mode().IsRegular()
}

// isPackedFile reports whether name starts with the packed magic.
func isPackedFile(name string) bool {
	f, err := os.Open(name)
	if err != nil {
		return false
	}
	defer f.Close()
	var b [4]byte
	if _, err := io.ReadFull(f, b[:]); err != nil {
		return false
	}
	return packed.IsPacked(b[:])
}

// verifyPacked decodes a packed file (glyd test), checking every CRC. A file
// packed against a base is checked as far as it can be without it.
func verifyPacked(name string, threads int) error {
	src, release, err := mapInput(name)
	if err != nil {
		return err
	}
	defer release()
	if packed.NeedsBase(src) {
		f, err := packed.OpenInfo(src)
		if err != nil {
			return err
		}
		_, err = f.Stats()
		return err
	}
	return packed.Verify(src, nil, threads)
}

// packedInfo is info for a packed file.
func (c *infoCmd) packedInfo() error {
	src, release, err := mapInput(c.File)
	if err != nil {
		return about(c.File, err)
	}
	defer release()
	// Sizes need no base file, even for a file coded against one.
	f, err := packed.OpenInfo(src)
	if err != nil {
		return about(c.File, err)
	}
	st, err := f.Stats()
	if err != nil {
		return about(c.File, err)
	}
	if c.JSON {
		out := struct {
			File    string `json:"file"`
			Format  string `json:"format"`
			Version int    `json:"version"`
			*packed.Stats
		}{c.File, "packed safetensors", packed.Version, st}
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	w := os.Stdout
	pct := 100 * float64(st.PackedSize) / float64(max(1, st.OriginalSize))
	fmt.Fprintf(w, "%s\n", c.File)
	fmt.Fprintf(w, "  format      packed safetensors v%d\n", packed.Version)
	fmt.Fprintf(w, "  original    %s\n", humanize.Bytes(uint64(st.OriginalSize)))
	fmt.Fprintf(w, "  packed      %s (%.1f%%)\n", humanize.Bytes(uint64(st.PackedSize)), pct)
	fmt.Fprintf(w, "  tensors     %d\n", len(st.Tensors))
	if st.FloatValues > 0 {
		fmt.Fprintf(w, "  float       %d values, %.3f bits per value (whole file)\n", st.FloatValues, st.BitsPerFloat)
	}
	var kinds []string
	for k, n := range st.SpanKinds {
		kinds = append(kinds, fmt.Sprintf("%d %s", n, k))
	}
	sort.Strings(kinds)
	fmt.Fprintf(w, "  spans       %d (%s), groups of %d values\n", st.Spans, strings.Join(kinds, ", "), st.GroupSize)
	if st.BaseCoded {
		fmt.Fprintf(w, "  base        coded against an earlier version\n")
	}
	if c.Tensors {
		fmt.Fprintf(w, "\n%10s %12s %12s %-8s %-8s %s\n", "bits/value", "packed", "values", "dtype", "coding", "name")
		hdr, err := f.Header() // Stats parsed it already
		if err != nil {
			return about(c.File, err)
		}
		for _, i := range hdr.DataOrder() {
			t := st.Tensors[i]
			fmt.Fprintf(w, "%10.3f %12.0f %12d %-8s %-8s %s\n", t.BitsPerValue, t.Packed, t.Values, t.Dtype, t.Coding, t.Name)
		}
	}
	return nil
}
