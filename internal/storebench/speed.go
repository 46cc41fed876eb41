package storebench

import (
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/glyd/glyd/chunkstore"
	"github.com/glyd/glyd/codec"
	"github.com/glyd/glyd/internal/benchfmt"
)

// CorpusRun is the whole corpus put into one fresh store.
type CorpusRun struct {
	Dir       string
	Files     []File
	Usage     chunkstore.Usage
	Puts      []chunkstore.PutStats // per file, in Files order
	Times     []time.Duration       // per file, Put's wall time
	PutTime   time.Duration         // all puts, each durable when it returns
	PutCPU    time.Duration         // process CPU time (user + system) during the puts
	CloseTime time.Duration
	Disk      int64 // apparent size of the store directory after Close
	Groups    []Group
}

// Group sums the puts of one top-level corpus folder.
type Group struct {
	Name                string
	Files               int
	Size, Stored        int64
	Chunks, New, Deltas int
	Time                time.Duration // the puts' wall time
}

// PutMBs is the put throughput in MB/s (10^6 bytes).
func (c *CorpusRun) PutMBs() float64 { return benchfmt.MBs(c.Usage.Logical, c.PutTime) }

// corpus puts every regular file of the corpus into a fresh default-tier
// store, timing the puts from the first to the last; the files are read
// once beforehand so that the page cache, not the disk, serves them.
func (b *bench) corpus(files []File) (*CorpusRun, error) {
	c := &CorpusRun{Dir: filepath.Join(b.cfg.Work, "corpus"), Files: files}
	b.logf("corpus: %d files into one store", len(files))
	for _, f := range files {
		if err := warm(f.Path); err != nil {
			return nil, err
		}
	}
	st, err := chunkstore.Init(c.Dir, chunkstore.Options{Tier: codec.Default})
	if err != nil {
		return nil, err
	}
	cpu0, t0 := cpuTime(), time.Now()
	for _, f := range files {
		fh, err := os.Open(f.Path)
		if err != nil {
			st.Close()
			return nil, err
		}
		t := time.Now()
		ps, err := st.Put(f.Name, fh)
		c.Times = append(c.Times, time.Since(t))
		fh.Close()
		if err != nil {
			st.Close()
			return nil, fmt.Errorf("glyd put %s: %w", f.Name, err)
		}
		c.Puts = append(c.Puts, ps)
	}
	c.PutTime, c.PutCPU = time.Since(t0), cpuTime()-cpu0
	if c.Usage, err = st.Usage(); err != nil {
		st.Close()
		return nil, err
	}
	t1 := time.Now()
	if err := st.Close(); err != nil {
		return nil, err
	}
	c.CloseTime = time.Since(t1)
	if c.Disk, err = dirSize(c.Dir); err != nil {
		return nil, err
	}
	c.Groups = groupPuts(files, c.Puts, c.Times)
	if err := verifyObjects(c.Dir, files); err != nil {
		return nil, err
	}
	return c, nil
}

// groupPuts sums put statistics per top-level folder ("." for files at the
// top), in order of first appearance.
func groupPuts(files []File, puts []chunkstore.PutStats, times []time.Duration) []Group {
	var out []Group
	idx := map[string]int{}
	for i, f := range files {
		name, _, ok := strings.Cut(f.Name, "/")
		if !ok {
			name = "."
		}
		k, seen := idx[name]
		if !seen {
			k = len(out)
			idx[name] = k
			out = append(out, Group{Name: name})
		}
		g := &out[k]
		g.Files++
		g.Size += puts[i].Size
		g.Stored += puts[i].Stored
		g.Chunks += puts[i].Chunks
		g.New += puts[i].New
		g.Deltas += puts[i].Deltas
		if i < len(times) {
			g.Time += times[i]
		}
	}
	return out
}

func warm(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(io.Discard, f)
	return err
}

// GetRun times whole-object reads.
type GetRun struct {
	Label  string
	Store  string // which store
	Object string
	Size   int64
	Put    chunkstore.PutStats // what the object's put stored
	Cold   bool                // store reopened before each timed read
	Runs   []time.Duration
	Median time.Duration
	Err    string
}

// MBs is the median read throughput in MB/s.
func (g *GetRun) MBs() float64 { return benchfmt.MBs(g.Size, g.Median) }

// get times reading an object whole with WriteTo. Hot: the store stays
// open and the object was read once before, so its chunks sit decoded in
// the chunk cache. Cold: each timed read opens the store afresh (empty
// chunk cache; the open itself is not timed, OpenObject is). The object is
// first checked against want, untimed.
func (b *bench) get(g GetRun, dir string, want []byte) GetRun {
	b.logf("get: %s (%s)", g.Label, g.Object)
	fail := func(err error) GetRun { g.Err = err.Error(); return g }
	g.Size = int64(len(want))
	st, err := chunkstore.Open(dir, chunkstore.Options{})
	if err != nil {
		return fail(err)
	}
	if err := verifyObject(st, g.Object, want); err != nil {
		st.Close()
		return fail(err)
	}
	read := func(st *chunkstore.Store) (time.Duration, error) {
		t0 := time.Now()
		o, err := st.OpenObject(g.Object)
		if err != nil {
			return 0, err
		}
		n, err := o.WriteTo(io.Discard)
		d := time.Since(t0)
		if err == nil && n != g.Size {
			err = fmt.Errorf("read %d bytes of %d", n, g.Size)
		}
		return d, err
	}
	if !g.Cold {
		defer st.Close()
		for range b.cfg.Runs {
			d, err := read(st)
			if err != nil {
				return fail(err)
			}
			g.Runs = append(g.Runs, d)
		}
	} else {
		if err := st.Close(); err != nil {
			return fail(err)
		}
		for range b.cfg.Runs {
			st, err := chunkstore.Open(dir, chunkstore.Options{})
			if err != nil {
				return fail(err)
			}
			d, err := read(st)
			st.Close()
			if err != nil {
				return fail(err)
			}
			g.Runs = append(g.Runs, d)
		}
	}
	g.Median = benchfmt.Median(g.Runs)
	return g
}

// RandomRun is the random-read latency test on the large object.
type RandomRun struct {
	Size, Round int64 // object size; bytes of one round of the corpus
	Seed        uint64
	Put         chunkstore.PutStats
	PutTime     time.Duration
	PutCPU      time.Duration // process CPU time during the put
	CloseTime   time.Duration
	Stored      int64 // Usage().Stored
	Dropped     bool  // page cache dropped before reopening
	DropNote    string
	OpenTime    time.Duration
	Reads       int
	ReadSize    int
	Latencies   []time.Duration // sorted
	Err         string
}

// Quantile is the q-quantile of the latencies (nearest rank).
func (r *RandomRun) Quantile(q float64) time.Duration { return benchfmt.Quantile(r.Latencies, q) }

// Mean is the mean latency.
func (r *RandomRun) Mean() time.Duration {
	if len(r.Latencies) == 0 {
		return 0
	}
	var s time.Duration
	for _, d := range r.Latencies {
		s += d
	}
	return s / time.Duration(len(r.Latencies))
}

func (b *bench) random(contents [][]byte) *RandomRun {
	r := &RandomRun{Size: b.cfg.BigSize, Seed: b.cfg.Seed, Reads: b.cfg.Reads, ReadSize: b.cfg.ReadSize}
	fail := func(err error) *RandomRun { r.Err = err.Error(); return r }
	obj, err := newBigObject(contents, r.Size, r.Seed)
	if err != nil {
		return fail(err)
	}
	r.Round = obj.round
	dir := filepath.Join(b.cfg.Work, "big")
	b.logf("random reads: putting a %d-byte object", r.Size)
	st, err := chunkstore.Init(dir, chunkstore.Options{Tier: codec.Default})
	if err != nil {
		return fail(err)
	}
	cpu0, t0 := cpuTime(), time.Now()
	r.Put, err = st.Put("big", obj.Reader())
	r.PutTime, r.PutCPU = time.Since(t0), cpuTime()-cpu0
	if err != nil {
		st.Close()
		return fail(err)
	}
	if u, err := st.Usage(); err == nil {
		r.Stored = u.Stored
	}
	t1 := time.Now()
	if err := st.Close(); err != nil {
		return fail(err)
	}
	r.CloseTime = time.Since(t1)

	if b.cfg.DropCaches {
		if err := dropCaches(); err != nil {
			r.DropNote = "the page cache could not be dropped (" + err.Error() + "): the store's files may come from memory"
		} else {
			r.Dropped = true
			r.DropNote = "the page cache was dropped (`sync; echo 3 > /proc/sys/vm/drop_caches`), so the store's files come from the disk"
		}
	} else {
		r.DropNote = "the page cache was not dropped (turned off): the store's files may come from memory"
	}
	t2 := time.Now()
	st, err = chunkstore.Open(dir, chunkstore.Options{})
	if err != nil {
		return fail(err)
	}
	defer st.Close()
	o, err := st.OpenObject("big")
	if err != nil {
		return fail(err)
	}
	r.OpenTime = time.Since(t2)
	if o.Size() != r.Size {
		return fail(fmt.Errorf("big object is %d bytes, want %d", o.Size(), r.Size))
	}
	b.logf("random reads: %d x %d bytes", r.Reads, r.ReadSize)
	rng := rand.New(rand.NewPCG(r.Seed, 0x5eed))
	offs := make([]int64, r.Reads)
	bufs := make([][]byte, r.Reads)
	span := max(r.Size-int64(r.ReadSize), 0) + 1
	for i := range offs {
		offs[i] = rng.Int64N(span)
		bufs[i] = make([]byte, min(int64(r.ReadSize), r.Size))
	}
	lat := make([]time.Duration, r.Reads)
	for i, off := range offs {
		t := time.Now()
		n, err := o.ReadAt(bufs[i], off)
		lat[i] = time.Since(t)
		if err != nil && !(err == io.EOF && n == len(bufs[i])) {
			return fail(fmt.Errorf("ReadAt %d: %w", off, err))
		}
	}
	// Check every read against the generator, untimed.
	want := make([]byte, r.ReadSize)
	for i, off := range offs {
		w := want[:len(bufs[i])]
		if _, err := obj.ReadAt(w, off); err != nil && err != io.EOF {
			return fail(err)
		}
		if j := firstDiff(bufs[i], w); j >= 0 {
			return fail(fmt.Errorf("ReadAt %d returned wrong bytes (first difference at +%d)", off, j))
		}
	}
	slices.Sort(lat)
	r.Latencies = lat
	return r
}
