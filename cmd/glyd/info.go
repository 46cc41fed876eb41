package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/dustin/go-humanize"

	"github.com/glyd/glyd/codec"
)

type infoCmd struct {
	JSON    bool   `help:"Print JSON with exact numbers."`
	Threads int    `short:"T" default:"0" placeholder:"N" help:"Threads to use; 0 means one per core."`
	Tensors bool   `help:"For a packed safetensors file (glyd pack): list every tensor's bits per value."`
	File    string `arg:"" help:"A .glyd file, or a packed safetensors file; '-' reads standard input."`
}

// infoJSON is what info --json prints.
type infoJSON struct {
	File           string         `json:"file"`
	Version        int            `json:"version"`
	Tier           string         `json:"tier"`
	UnitSize       int            `json:"unit_size"`
	Units          int            `json:"units"`
	CompressedSize int64          `json:"compressed_size"`
	DecodedSize    int64          `json:"decoded_size"`
	Ratio          float64        `json:"ratio"` // decoded / compressed
	Blocks         int            `json:"blocks"`
	Codings        map[string]int `json:"codings"` // blocks per coding
}

// openGlyd opens name ("-": standard input, read into memory) for random
// access. The returned closer releases the file.
func openGlyd(name string, threads int) (*codec.File, func(), error) {
	if name == "-" {
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			return nil, nil, err
		}
		f, err := codec.OpenBytes(b, threads)
		return f, func() {}, err
	}
	fh, err := os.Open(name)
	if err != nil {
		return nil, nil, err
	}
	fi, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, nil, err
	}
	if fi.IsDir() {
		fh.Close()
		return nil, nil, fmt.Errorf("is a directory")
	}
	f, err := codec.Open(fh, fi.Size(), threads)
	if err != nil {
		fh.Close()
		return nil, nil, err
	}
	return f, func() { fh.Close() }, nil
}

func (c *infoCmd) Run() error {
	if c.File != "-" && isPackedFile(c.File) {
		return c.packedInfo()
	}
	disp := displayName(c.File, false)
	f, closeFn, err := openGlyd(c.File, c.Threads)
	if err != nil {
		return about(disp, err)
	}
	defer closeFn()
	units := f.Units()
	r := infoJSON{
		File:           disp,
		Version:        codec.Version,
		Tier:           f.Tier().String(),
		UnitSize:       f.UnitSize(),
		Units:          len(units),
		CompressedSize: f.CompressedSize(),
		DecodedSize:    f.Size(),
		Codings:        map[string]int{codec.CodingRaw.String(): 0, codec.CodingLZ.String(): 0},
	}
	if r.CompressedSize > 0 {
		r.Ratio = float64(r.DecodedSize) / float64(r.CompressedSize)
	}
	for i := range units {
		bs, err := f.Blocks(i)
		if err != nil {
			return about(disp, err)
		}
		for _, b := range bs {
			r.Codings[b.Coding.String()]++
			r.Blocks++
		}
	}
	if c.JSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	pct := 0.0
	if r.DecodedSize > 0 {
		pct = 100 * float64(r.CompressedSize) / float64(r.DecodedSize)
	}
	var codings []string
	for k, n := range r.Codings {
		codings = append(codings, fmt.Sprintf("%d %s", n, k))
	}
	sort.Strings(codings)
	w := os.Stdout
	fmt.Fprintf(w, "%s\n", r.File)
	fmt.Fprintf(w, "  format      glyd v%d\n", r.Version)
	fmt.Fprintf(w, "  tier        %s\n", r.Tier)
	fmt.Fprintf(w, "  unit size   %s\n", humanize.IBytes(uint64(r.UnitSize)))
	fmt.Fprintf(w, "  units       %d\n", r.Units)
	fmt.Fprintf(w, "  compressed  %s\n", humanize.Bytes(uint64(r.CompressedSize)))
	fmt.Fprintf(w, "  decoded     %s\n", humanize.Bytes(uint64(r.DecodedSize)))
	fmt.Fprintf(w, "  ratio       %.3f (%.1f%%)\n", r.Ratio, pct)
	fmt.Fprintf(w, "  blocks      %d (%s)\n", r.Blocks, strings.Join(codings, ", "))
	return nil
}
