package storebench

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/glyd/glyd/chunkstore"
	"github.com/glyd/glyd/chunkstore/cdc"
	"github.com/glyd/glyd/codec"
	"github.com/glyd/glyd/internal/benchfmt"
)

// Column names of the release-series table.
const (
	colGlydDefault = "glyd store, default tier"
	colGlydMax     = "glyd store, max tier"
	colGlydCold    = "glyd store, cold tier"
	colRestic      = "restic"
	colBorg        = "borg"
	colZstd3       = "zstd -3, per file"
	colZstd19      = "zstd -19 --long=27, per file"
	colPatch       = "zstd -19 --long=27 --patch-from chain"
	colSolid       = "solid: cat all | zstd -19 --long=30"
)

// SeriesColumn is one way of storing the release series.
type SeriesColumn struct {
	Name  string
	How   string        // command line or configuration
	Cum   []int64       // bytes after each version, cumulative; nil when there is only a total
	Total int64         // bytes for the whole series
	Time  time.Duration // wall time for the whole series
	Err   string        // why the column is missing; "" when it was measured
}

// Series is the release-series measurement.
type Series struct {
	Dir     string
	Files   []File
	Raw     int64
	Columns []SeriesColumn
	Glyd    []GlydSeries
}

// GlydSeries is what the store did for each version in one tier.
type GlydSeries struct {
	Tier     string
	Dir      string                // the store, kept for the read tests
	Puts     []chunkstore.PutStats // per version
	Times    []time.Duration       // per version, Put's wall time
	Disk     int64                 // the store directory's apparent size after Close
	Chunking cdc.Params
}

// Column returns the named column, or nil.
func (s *Series) Column(name string) *SeriesColumn {
	for i := range s.Columns {
		if s.Columns[i].Name == name {
			return &s.Columns[i]
		}
	}
	return nil
}

func (b *bench) series() (*Series, error) {
	dir := filepath.Join(b.cfg.Corpus, "releases", "x-tools")
	all, err := listFiles(dir)
	if err != nil {
		return nil, fmt.Errorf("release series: %w", err)
	}
	var files []File
	for _, f := range all {
		if !strings.Contains(f.Name, "/") && strings.HasSuffix(f.Name, ".tar") {
			files = append(files, f)
		}
	}
	if len(files) < 2 {
		return nil, fmt.Errorf("release series: %s holds %d .tar files; need at least 2", dir, len(files))
	}
	s := &Series{Dir: dir, Files: files}
	for _, f := range files {
		s.Raw += f.Size
		if err := warm(f.Path); err != nil { // into the page cache
			return nil, err
		}
	}
	for _, tier := range []codec.Tier{codec.Default, codec.Max, codec.Cold} {
		col, g, err := b.glydSeries(files, tier)
		if err != nil {
			return nil, err
		}
		s.Columns = append(s.Columns, col)
		s.Glyd = append(s.Glyd, g)
	}
	if !b.cfg.Peers {
		for _, name := range []string{colRestic, colBorg, colZstd3, colZstd19, colPatch, colSolid} {
			s.Columns = append(s.Columns, SeriesColumn{Name: name, How: "not run", Err: "skipped (peers turned off)"})
		}
		return s, nil
	}
	s.Columns = append(s.Columns,
		b.resticSeries(files),
		b.borgSeries(files),
		b.zstdPerFile(files, colZstd3, "-3"),
		b.zstdPerFile(files, colZstd19, "-19", "--long=27"),
		b.zstdPatchChain(files),
		b.zstdSolid(files),
	)
	return s, nil
}

// glydColumn names the series column of a glyd store of the tier.
func glydColumn(tier string) string {
	switch tier {
	case "max":
		return colGlydMax
	case "cold":
		return colGlydCold
	}
	return colGlydDefault
}

// glydSeries puts the versions one after another into a fresh store and
// reads Usage().Stored after each.
func (b *bench) glydSeries(files []File, tier codec.Tier) (SeriesColumn, GlydSeries, error) {
	name := glydColumn(tier.String())
	p := chunkstore.DefaultChunking(tier)
	col := SeriesColumn{Name: name, How: fmt.Sprintf("chunkstore, tier %s, the tier's default chunking (average %s), %d threads; bytes = Usage().Stored (chunk frames)", tier, benchfmt.SizeName(int64(p.Avg)), b.threads)}
	g := GlydSeries{Tier: tier.String(), Dir: filepath.Join(b.cfg.Work, "series-"+tier.String())}
	b.logf("series: glyd %s tier", tier)
	st, err := chunkstore.Init(g.Dir, chunkstore.Options{Tier: tier})
	if err != nil {
		return col, g, err
	}
	g.Chunking = st.Chunking()
	for _, f := range files {
		fh, err := os.Open(f.Path)
		if err != nil {
			st.Close()
			return col, g, err
		}
		t0 := time.Now()
		ps, err := st.Put(f.Name, fh)
		d := time.Since(t0)
		fh.Close()
		if err != nil {
			st.Close()
			return col, g, fmt.Errorf("glyd put %s: %w", f.Name, err)
		}
		col.Time += d
		u, err := st.Usage()
		if err != nil {
			st.Close()
			return col, g, err
		}
		col.Cum = append(col.Cum, u.Stored)
		g.Puts = append(g.Puts, ps)
		g.Times = append(g.Times, d)
	}
	col.Total = col.Cum[len(col.Cum)-1]
	if err := st.Close(); err != nil {
		return col, g, err
	}
	g.Disk, err = dirSize(g.Dir)
	if err != nil {
		return col, g, err
	}
	// Every version must come back as it went in.
	if err := verifyObjects(g.Dir, files); err != nil {
		return col, g, err
	}
	return col, g, nil
}

// verifyObjects checks that each file comes back byte for byte.
func verifyObjects(dir string, files []File) error {
	st, err := chunkstore.Open(dir, chunkstore.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	for _, f := range files {
		want, err := os.ReadFile(f.Path)
		if err != nil {
			return err
		}
		if err := verifyObject(st, f.Name, want); err != nil {
			return err
		}
	}
	return nil
}

func verifyObject(st *chunkstore.Store, name string, want []byte) error {
	o, err := st.OpenObject(name)
	if err != nil {
		return err
	}
	if o.Size() != int64(len(want)) {
		return fmt.Errorf("read-back check: %s is %d bytes in the store, %d in the file", name, o.Size(), len(want))
	}
	got := make([]byte, len(want))
	if _, err := o.ReadAt(got, 0); err != nil && err != io.EOF {
		return fmt.Errorf("read-back check: %s: %w", name, err)
	}
	if i := firstDiff(got, want); i >= 0 {
		return fmt.Errorf("read-back check: %s differs from the file at byte %d", name, i)
	}
	return nil
}

func firstDiff(a, b []byte) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i += 4096 {
		j := min(i+4096, n)
		if string(a[i:j]) != string(b[i:j]) {
			for k := i; k < j; k++ {
				if a[k] != b[k] {
					return k
				}
			}
		}
	}
	if len(a) != len(b) {
		return n
	}
	return -1
}

func (b *bench) resticSeries(files []File) SeriesColumn {
	repo := filepath.Join(b.cfg.Work, "restic")
	col := SeriesColumn{Name: colRestic, How: "`restic init`, then `restic backup` of each tarball in order (default compression); bytes = apparent size of the repository"}
	if err := lookTool("restic"); err != nil {
		col.Err = err.Error()
		return col
	}
	b.logf("series: restic")
	env := []string{
		"RESTIC_PASSWORD=glyd-storebench",
		"RESTIC_REPOSITORY=" + repo,
		"RESTIC_CACHE_DIR=" + filepath.Join(b.cfg.Work, "restic-cache"),
	}
	t0 := time.Now()
	if _, err := runTool(env, nil, "restic", "init", "-q"); err != nil {
		col.Err = err.Error()
		return col
	}
	for _, f := range files {
		if _, err := runTool(env, nil, "restic", "backup", "-q", "--host", "storebench", f.Path); err != nil {
			col.Err = err.Error()
			return col
		}
		n, err := dirSize(repo)
		if err != nil {
			col.Err = err.Error()
			return col
		}
		col.Cum = append(col.Cum, n)
	}
	col.Time = time.Since(t0)
	col.Total = col.Cum[len(col.Cum)-1]
	if v := resticRepoVersion(env); v != "" {
		col.How += ", repository format " + v
	}
	return col
}

// resticRepoVersion reads the repository's format version ("2" compresses).
func resticRepoVersion(env []string) string {
	cmd := execCommand(env, "restic", "cat", "config", "-q")
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	s := string(out)
	i := strings.Index(s, `"version"`)
	if i < 0 {
		return ""
	}
	s = strings.TrimLeft(s[i+len(`"version"`):], ": \t")
	j := strings.IndexAny(s, ",}\n")
	if j < 0 {
		return ""
	}
	return strings.TrimSpace(s[:j])
}

func (b *bench) borgSeries(files []File) SeriesColumn {
	repo := filepath.Join(b.cfg.Work, "borg")
	col := SeriesColumn{Name: colBorg, How: "`borg init -e none`, then `borg create --compression zstd,3` of each tarball in order (default chunker); bytes = apparent size of the repository"}
	if err := lookTool("borg"); err != nil {
		col.Err = err.Error()
		return col
	}
	b.logf("series: borg")
	env := []string{
		"BORG_BASE_DIR=" + filepath.Join(b.cfg.Work, "borg-base"),
		"BORG_UNKNOWN_UNENCRYPTED_REPO_ACCESS_IS_OK=yes",
		"BORG_RELOCATED_REPO_ACCESS_IS_OK=yes",
	}
	t0 := time.Now()
	if _, err := runTool(env, nil, "borg", "init", "-e", "none", repo); err != nil {
		col.Err = err.Error()
		return col
	}
	for i, f := range files {
		archive := fmt.Sprintf("%s::v%02d", repo, i+1)
		if _, err := runTool(env, nil, "borg", "create", "--compression", "zstd,3", archive, f.Path); err != nil {
			col.Err = err.Error()
			return col
		}
		n, err := dirSize(repo)
		if err != nil {
			col.Err = err.Error()
			return col
		}
		col.Cum = append(col.Cum, n)
	}
	col.Time = time.Since(t0)
	col.Total = col.Cum[len(col.Cum)-1]
	return col
}

// zstdPerFile compresses each file alone.
func (b *bench) zstdPerFile(files []File, name string, level ...string) SeriesColumn {
	col := SeriesColumn{Name: name, How: "`zstd -T1 " + strings.Join(level, " ") + "` of each tarball alone; bytes = sum of the outputs"}
	if err := lookTool("zstd"); err != nil {
		col.Err = err.Error()
		return col
	}
	b.logf("series: %s", name)
	return zstdEach(col, files, func(int) []string { return append([]string{"-q", "-c", "-T1"}, level...) })
}

// zstdEach runs zstd with args(i) on each file in order and sums the
// compressed sizes into col.
func zstdEach(col SeriesColumn, files []File, args func(i int) []string) SeriesColumn {
	t0 := time.Now()
	var sum int64
	for i, f := range files {
		n, err := runTool(nil, nil, "zstd", append(args(i), f.Path)...)
		if err != nil {
			col.Err = err.Error()
			return col
		}
		sum += n
		col.Cum = append(col.Cum, sum)
	}
	col.Time = time.Since(t0)
	col.Total = sum
	return col
}

// zstdPatchChain compresses the first file alone and each later one as a
// patch against its predecessor.
func (b *bench) zstdPatchChain(files []File) SeriesColumn {
	col := SeriesColumn{Name: colPatch, How: "first tarball `zstd -T1 -19 --long=27`, each later one `zstd -T1 -19 --long=27 --patch-from=<previous>`; bytes = sum"}
	if err := lookTool("zstd"); err != nil {
		col.Err = err.Error()
		return col
	}
	b.logf("series: %s", colPatch)
	return zstdEach(col, files, func(i int) []string {
		args := []string{"-q", "-c", "-T1", "-19", "--long=27"}
		if i > 0 {
			args = append(args, "--patch-from="+files[i-1].Path)
		}
		return args
	})
}

// zstdSolid compresses all versions as one stream.
func (b *bench) zstdSolid(files []File) SeriesColumn {
	col := SeriesColumn{Name: colSolid, How: "`cat` of all tarballs in order piped to `zstd -T1 -19 --long=30`: one stream, no random access; total only"}
	if err := lookTool("zstd"); err != nil {
		col.Err = err.Error()
		return col
	}
	b.logf("series: %s", colSolid)
	var rs []io.Reader
	for _, f := range files {
		fh, err := os.Open(f.Path)
		if err != nil {
			col.Err = err.Error()
			return col
		}
		defer fh.Close()
		rs = append(rs, fh)
	}
	t0 := time.Now()
	n, err := runTool(nil, io.MultiReader(rs...), "zstd", "-q", "-c", "-T1", "-19", "--long=30")
	if err != nil {
		col.Err = err.Error()
		return col
	}
	col.Time = time.Since(t0)
	col.Total = n
	return col
}
