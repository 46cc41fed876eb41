package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/dustin/go-humanize"

	"github.com/glyd/glyd/chunkstore"
	"github.com/glyd/glyd/codec"
	"github.com/glyd/glyd/internal/fileio"
)

// storeCmd groups the chunk store commands: glyd store init|put|get|ls|rm|
// stat|gc|verify DIR ...
type storeCmd struct {
	Init   storeInitCmd   `cmd:"" help:"Create a store in DIR (which must not exist or be empty)."`
	Put    storePutCmd    `cmd:"" help:"Store FILE (default standard input) as the object NAME, replacing any object of that name."`
	Get    storeGetCmd    `cmd:"" help:"Write the object NAME, or a range of it, to FILE (default standard output)."`
	Ls     storeLsCmd     `cmd:"" help:"List the objects: size, modification time, name."`
	Rm     storeRmCmd     `cmd:"" help:"Remove objects; 'glyd store gc' then frees the chunks no other object needs."`
	Stat   storeStatCmd   `cmd:"" help:"Show what the store holds and what dedup, deltas and compression save."`
	Gc     storeGcCmd     `cmd:"" help:"Free the chunks no object needs and reclaim their space."`
	Verify storeVerifyCmd `cmd:"" help:"Decode every chunk and check it against its id; name the objects any damage breaks."`
}

// openedStore is an open store that closes once, however many times
// close is called.
type openedStore struct {
	*chunkstore.Store
	once sync.Once
	err  error
}

func (s *openedStore) close() error {
	s.once.Do(func() { s.err = s.Store.Close() })
	return s.err
}

// openStore opens the store in dir. Commands that only read open it
// read-only, so that several may run at once; a store that was not closed
// cleanly needs a read-write open to recover, which is tried next.
func openStore(dir string, threads int, readOnly bool) (*openedStore, error) {
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return nil, fmt.Errorf("%s: %w (not a directory)", dir, chunkstore.ErrNotStore)
	}
	opts := chunkstore.Options{Threads: threads, ReadOnly: readOnly}
	s, err := chunkstore.Open(dir, opts)
	if err != nil && readOnly && !errors.Is(err, chunkstore.ErrNotStore) {
		opts.ReadOnly = false
		if s2, err2 := chunkstore.Open(dir, opts); err2 == nil {
			s, err = s2, nil
		}
	}
	if err != nil {
		return nil, err
	}
	return &openedStore{Store: s}, nil
}

// objectError says what went wrong with an object in a user's terms.
func objectError(dir, name string, err error) error {
	if errors.Is(err, chunkstore.ErrNotFound) && !errors.Is(err, chunkstore.ErrCorrupt) {
		return fmt.Errorf("%s: no object %q in the store", dir, name)
	}
	return storeError(dir, err)
}

// storeError names the store an error is about, unless it is about the
// input or output file, and points at verify when the store is damaged.
func storeError(dir string, err error) error {
	var fe *fileError
	if errors.As(err, &fe) {
		return err
	}
	if errors.Is(err, chunkstore.ErrCorrupt) {
		msg := strings.Replace(message(err), chunkstore.ErrCorrupt.Error()+": ", "damaged: ", 1)
		return fmt.Errorf("%s: %s ('glyd store verify %s' checks the whole store)", dir, msg, dir)
	}
	return fmt.Errorf("%s: %w", dir, err)
}

func checkThreads(n int) error {
	if n < 0 {
		return fmt.Errorf("-T %d: thread count must be 0 (one per core) or more", n)
	}
	return nil
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// signed renders a byte count that may be negative.
func signed(n int64) string {
	if n < 0 {
		return "-" + humanize.Bytes(uint64(-n))
	}
	return humanize.Bytes(uint64(n))
}

// printable quotes an object name that would not print as one clean word
// of a line.
func printable(name string) string {
	if strconv.Quote(name) != `"`+name+`"` || strings.ContainsAny(name, " \t") {
		return strconv.Quote(name)
	}
	return name
}

// dirSize is what the files under dir take, for the on-disk figure.
func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// --- init ---

type storeInitCmd struct {
	Max  bool   `xor:"tier" help:"Code chunks with the max tier: better ratio, slower puts, same fast reads."`
	Cold bool   `xor:"tier" help:"Code chunks with the cold tier: archive ratio, slowest puts."`
	Dir  string `arg:"" help:"Directory to create the store in."`
}

func (c *storeInitCmd) Run() error {
	tier := codec.Default
	if c.Max {
		tier = codec.Max
	}
	if c.Cold {
		tier = codec.Cold
	}
	s, err := chunkstore.Init(c.Dir, chunkstore.Options{Tier: tier})
	if err != nil {
		return err
	}
	p := s.Chunking()
	if err := s.Close(); err != nil {
		return fmt.Errorf("%s: %w", c.Dir, err)
	}
	fmt.Printf("created a glyd store in %s: %s tier, chunks of %s to %s (%s on average)\n",
		c.Dir, tier, humanize.IBytes(uint64(p.Min)), humanize.IBytes(uint64(p.Max)), humanize.IBytes(uint64(p.Avg)))
	return nil
}

// --- put ---

type storePutCmd struct {
	Threads int    `short:"T" default:"0" placeholder:"N" help:"Chunk coding workers; 0 means one per core."`
	Quiet   bool   `short:"q" help:"No progress line and no summary."`
	Verbose bool   `short:"v" help:"Print the summary line even when stderr is not a terminal."`
	Dir     string `arg:"" help:"The store."`
	Name    string `arg:"" help:"Name to store the object under."`
	File    string `arg:"" optional:"" default:"-" help:"Input file; '-' (the default) is standard input."`
}

func (c *storePutCmd) Run() error {
	if err := checkThreads(c.Threads); err != nil {
		return err
	}
	inDisp := displayName(c.File, false)
	var in *os.File
	if c.File == "-" {
		in = os.Stdin
		if fileio.IsTerminal(in) {
			return errors.New("refusing to read from a terminal (stdin); give a file name or redirect")
		}
	} else {
		var err error
		if in, err = os.Open(c.File); err != nil {
			return about(c.File, err)
		}
		defer in.Close()
	}
	fi, err := in.Stat()
	if err != nil {
		return about(inDisp, err)
	}
	if fi.IsDir() {
		return about(inDisp, errors.New("is a directory"))
	}
	var size int64 = -1
	if fi.Mode().IsRegular() {
		size = fi.Size()
		if pos, err := in.Seek(0, io.SeekCurrent); err == nil && pos <= size {
			size -= pos // standard input may be a file read from part-way
		}
	}

	s, err := openStore(c.Dir, c.Threads, false)
	if err != nil {
		return err
	}
	defer s.close()

	stderrTTY := fileio.IsTerminal(os.Stderr)
	count := &counter{name: inDisp}
	prog := startProgress(stderrTTY && !c.Quiet, c.Name, count, count, size)
	st, err := s.Put(c.Name, countingReader{in, count})
	prog.done()
	if err != nil {
		return storeError(c.Dir, err)
	}
	if err := s.close(); err != nil {
		return fmt.Errorf("%s: %w", c.Dir, err)
	}
	if (stderrTTY && !c.Quiet) || c.Verbose {
		pct := 0.0
		if st.Size > 0 {
			pct = 100 * float64(st.Stored) / float64(st.Size)
		}
		fmt.Fprintf(os.Stderr, "%s: %s in %s, %d new (%s), %s stored (%.1f%%)\n",
			printable(c.Name), humanize.Bytes(uint64(st.Size)), plural(st.Chunks, "chunk"), st.New, plural(st.Deltas, "delta"),
			humanize.Bytes(uint64(st.Stored)), pct)
	}
	return nil
}

// --- get ---

type storeGetCmd struct {
	Range   string `placeholder:"OFF:LEN" help:"Only LEN bytes from offset OFF; both take plain integers or sizes such as 4KiB or 1MB; without LEN, to the end. A range past the end is cut short, like dd."`
	Force   bool   `short:"f" help:"Overwrite an existing output file."`
	Threads int    `short:"T" default:"0" placeholder:"N" help:"Chunks decoded at once; 0 means one per core."`
	Quiet   bool   `short:"q" help:"No progress line."`
	Dir     string `arg:"" help:"The store."`
	Name    string `arg:"" help:"The object."`
	File    string `arg:"" optional:"" default:"-" help:"Output file; '-' (the default) is standard output."`
}

// parseRange reads OFF:LEN, OFF: or OFF; n is -1 for "to the end".
func parseRange(s string) (off, n int64, err error) {
	offStr, lenStr, hasLen := strings.Cut(s, ":")
	parse := func(what, v string) (int64, error) {
		v = strings.TrimSpace(v)
		u, err := humanize.ParseBytes(v)
		if err != nil || u > 1<<62 || strings.HasPrefix(v, "-") {
			return 0, fmt.Errorf("--range %s: %s %q is not a size (use a plain integer or a size such as 4KiB)", s, what, v)
		}
		return int64(u), nil
	}
	if strings.TrimSpace(offStr) == "" {
		off = 0
	} else if off, err = parse("offset", offStr); err != nil {
		return 0, 0, err
	}
	n = -1
	if hasLen && strings.TrimSpace(lenStr) != "" {
		if n, err = parse("length", lenStr); err != nil {
			return 0, 0, err
		}
	}
	return off, n, nil
}

func (c *storeGetCmd) Run() error {
	if err := checkThreads(c.Threads); err != nil {
		return err
	}
	var off, n int64 = 0, -1
	if c.Range != "" {
		var err error
		if off, n, err = parseRange(c.Range); err != nil {
			return err
		}
	}
	if c.File != "-" && !c.Force {
		// Fail before any decoding; Create checks again.
		if _, err := os.Lstat(c.File); err == nil {
			return &fileio.ExistsError{Path: c.File}
		}
	}
	s, err := openStore(c.Dir, c.Threads, true)
	if err != nil {
		return err
	}
	defer s.close()
	obj, err := s.OpenObject(c.Name)
	if err != nil {
		return objectError(c.Dir, c.Name, err)
	}
	size := obj.Size()
	off = min(off, size)
	if n < 0 || n > size-off {
		n = size - off
	}

	outDisp := displayName(c.File, true)
	var out io.Writer = os.Stdout
	var file *fileio.Output
	if c.File != "-" {
		if file, err = fileio.Create(c.File, c.Force); err != nil {
			return about(c.File, err)
		}
		defer file.Abort() // no-op once committed
		out = file
	}
	count := &counter{name: outDisp}
	prog := startProgress(fileio.IsTerminal(os.Stderr) && !c.Quiet, c.Name, count, count, n)
	err = copyAt(countingWriter{out, count}, obj, off, n, 8<<20)
	prog.done()
	if err != nil {
		return objectError(c.Dir, c.Name, err)
	}
	if file != nil {
		if err := file.Commit(); err != nil {
			return about(c.File, err)
		}
	}
	return nil
}

// --- ls ---

type storeLsCmd struct {
	JSON bool   `help:"Print JSON with exact numbers."`
	Dir  string `arg:"" help:"The store."`
}

type lsJSON struct {
	Name     string `json:"name"`
	Size     int64  `json:"size"`
	Chunks   int    `json:"chunks"`
	Modified string `json:"modified"` // RFC 3339
}

func (c *storeLsCmd) Run() error {
	s, err := openStore(c.Dir, 0, true)
	if err != nil {
		return err
	}
	defer s.close()
	objs, err := s.List()
	if err != nil {
		return storeError(c.Dir, err)
	}
	if c.JSON {
		out := make([]lsJSON, 0, len(objs))
		for _, o := range objs {
			out = append(out, lsJSON{o.Name, o.Size, o.Chunks, o.Modified.Format("2006-01-02T15:04:05.999999999Z07:00")})
		}
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(out)
	}
	for _, o := range objs {
		fmt.Printf("%9s  %s  %s\n", humanize.Bytes(uint64(o.Size)), o.Modified.Local().Format("2006-01-02 15:04"), printable(o.Name))
	}
	return nil
}

// --- rm ---

type storeRmCmd struct {
	Dir   string   `arg:"" help:"The store."`
	Names []string `arg:"" name:"name" help:"Objects to remove."`
}

func (c *storeRmCmd) Run() error {
	s, err := openStore(c.Dir, 0, false)
	if err != nil {
		return err
	}
	defer s.close()
	// One line per failure: all but the last here, the last as the
	// command's error.
	var last error
	for _, name := range c.Names {
		if err := s.Delete(name); err != nil {
			if last != nil {
				fmt.Fprintf(os.Stderr, "glyd: %s\n", message(last))
			}
			last = objectError(c.Dir, name, err)
		}
	}
	if err := s.close(); err != nil && last == nil {
		last = fmt.Errorf("%s: %w", c.Dir, err)
	}
	return last
}

// --- stat ---

type storeStatCmd struct {
	JSON bool   `help:"Print JSON with exact numbers."`
	Dir  string `arg:"" help:"The store."`
}

type statJSON struct {
	Store            string  `json:"store"`
	Tier             string  `json:"tier"`
	ChunkMin         int     `json:"chunk_min"`
	ChunkAvg         int     `json:"chunk_avg"`
	ChunkMax         int     `json:"chunk_max"`
	Objects          int     `json:"objects"`
	Chunks           int     `json:"chunks"`
	DeltaChunks      int     `json:"delta_chunks"`
	LogicalBytes     int64   `json:"logical_bytes"` // all objects
	UniqueBytes      int64   `json:"unique_bytes"`  // distinct chunks, plain
	StoredBytes      int64   `json:"stored_bytes"`  // chunk frames
	DiskBytes        int64   `json:"disk_bytes"`    // the directory's files
	Ratio            float64 `json:"ratio"`         // logical / stored
	DedupSaved       int64   `json:"dedup_saved_bytes"`
	CompressionSaved int64   `json:"compression_saved_bytes"`
	DeltaSaved       int64   `json:"delta_saved_bytes"`
	GarbageBytes     int64   `json:"garbage_bytes"` // frames the next gc frees
}

func (c *storeStatCmd) Run() error {
	disk := dirSize(c.Dir) // before an open that recovers could change it
	s, err := openStore(c.Dir, 0, true)
	if err != nil {
		return err
	}
	defer s.close()
	u, err := s.Usage()
	if err != nil {
		return storeError(c.Dir, err)
	}
	p := s.Chunking()
	r := statJSON{
		Store: c.Dir, Tier: s.Tier().String(), ChunkMin: p.Min, ChunkAvg: p.Avg, ChunkMax: p.Max,
		Objects: u.Objects, Chunks: u.Chunks, DeltaChunks: u.DeltaChunks,
		LogicalBytes: u.Logical, UniqueBytes: u.Unique, StoredBytes: u.Stored, DiskBytes: disk,
		DedupSaved: u.DedupSaved, CompressionSaved: u.CompressSaved, DeltaSaved: u.DeltaSaved,
		GarbageBytes: u.Garbage,
	}
	if r.StoredBytes > 0 {
		r.Ratio = float64(r.LogicalBytes) / float64(r.StoredBytes)
	}
	if c.JSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	pct := 0.0
	if r.LogicalBytes > 0 {
		pct = 100 * float64(r.StoredBytes) / float64(r.LogicalBytes)
	}
	w := os.Stdout
	fmt.Fprintf(w, "%s\n", r.Store)
	fmt.Fprintf(w, "  tier        %s, chunks of %s to %s (%s on average)\n", r.Tier,
		humanize.IBytes(uint64(p.Min)), humanize.IBytes(uint64(p.Max)), humanize.IBytes(uint64(p.Avg)))
	fmt.Fprintf(w, "  objects     %d\n", r.Objects)
	fmt.Fprintf(w, "  chunks      %d (%s)\n", r.Chunks, plural(r.DeltaChunks, "delta"))
	fmt.Fprintf(w, "  logical     %s\n", humanize.Bytes(uint64(r.LogicalBytes)))
	fmt.Fprintf(w, "  stored      %s\n", humanize.Bytes(uint64(r.StoredBytes)))
	fmt.Fprintf(w, "  ratio       %.3f (%.1f%%)\n", r.Ratio, pct)
	fmt.Fprintf(w, "  saved       %s by dedup, %s by deltas, %s by compression\n", signed(r.DedupSaved), signed(r.DeltaSaved), signed(r.CompressionSaved))
	if r.GarbageBytes > 0 {
		fmt.Fprintf(w, "  garbage     %s (freed by glyd store gc)\n", humanize.Bytes(uint64(r.GarbageBytes)))
	}
	fmt.Fprintf(w, "  on disk     %s\n", humanize.Bytes(uint64(r.DiskBytes)))
	return nil
}

// --- gc ---

type storeGcCmd struct {
	Dir string `arg:"" help:"The store."`
}

func (c *storeGcCmd) Run() error {
	before := dirSize(c.Dir) // before badger opens (and sizes) a new value log
	s, err := openStore(c.Dir, 0, false)
	if err != nil {
		return err
	}
	defer s.close()
	st, err := s.GC()
	if err != nil {
		return storeError(c.Dir, err)
	}
	if err := s.close(); err != nil {
		return fmt.Errorf("%s: %w", c.Dir, err)
	}
	fmt.Printf("freed %s (%s stored), %d live; on disk %s -> %s\n",
		plural(st.Freed, "chunk"), humanize.Bytes(uint64(st.FreedBytes)), st.Live, humanize.Bytes(uint64(before)), humanize.Bytes(uint64(dirSize(c.Dir))))
	return nil
}

// --- verify ---

type storeVerifyCmd struct {
	Dir string `arg:"" help:"The store."`
}

func (c *storeVerifyCmd) Run() error {
	s, err := openStore(c.Dir, 0, true)
	if err != nil {
		return err
	}
	defer s.close()
	rep, err := s.Verify()
	if err != nil {
		return storeError(c.Dir, err)
	}
	if len(rep.Damaged) == 0 {
		fmt.Printf("store OK: %d objects, %d chunks\n", rep.Objects, rep.Chunks)
		return nil
	}
	broken := map[string]bool{}
	for _, d := range rep.Damaged {
		problem := strings.TrimPrefix(d.Problem, chunkstore.ErrCorrupt.Error()+": ")
		problem = strings.TrimPrefix(problem, "chunk "+d.Chunk.Short()+": ")
		names := make([]string, len(d.Objects))
		for i, n := range d.Objects {
			names[i] = strconv.Quote(n)
			broken[n] = true
		}
		breaks := "no object uses it"
		if len(names) > 0 {
			breaks = "breaks " + strings.Join(names, ", ")
		}
		fmt.Fprintf(os.Stderr, "glyd: %s: damaged chunk %s: %s; %s\n", c.Dir, d.Chunk.Short(), problem, breaks)
	}
	return fmt.Errorf("%s: store damaged: %d of %d chunks, %d of %d objects", c.Dir, len(rep.Damaged), rep.Chunks, len(broken), rep.Objects)
}
