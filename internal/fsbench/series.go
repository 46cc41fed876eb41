package fsbench

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/glyd/glyd/chunkstore"
	"github.com/glyd/glyd/codec"
)

// Series is the release series copied into the mount, against zstd.
type Series struct {
	Dir    string
	Files  []File
	Raw    int64
	Glydfs []GlydfsSeries
	Peers  []PeerColumn
}

// GlydfsSeries is the series copied into a fresh glydfs store one way.
type GlydfsSeries struct {
	Mode  string // "new files" or "one file overwritten"
	How   string
	Steps []SeriesStep
	Disk  DiskUsage // the store directory after unmounting
	Err   string
}

// Stored is the store's chunk frames after the last version.
func (g *GlydfsSeries) Stored() int64 {
	if len(g.Steps) == 0 {
		return 0
	}
	return g.Steps[len(g.Steps)-1].Stats.Stored
}

// SeriesStep is one version copied in and the mount's stats after it.
type SeriesStep struct {
	Name  string
	Size  int64
	Copy  time.Duration // open, write, close (the commit)
	Stats Stats
}

// PeerColumn is another way of storing the series: the chunk store
// without the mount, zstd.
type PeerColumn struct {
	Name  string
	How   string
	Cum   []int64 // bytes after each version, cumulative
	Total int64
	Time  time.Duration
	Err   string
}

const (
	modeNew  = "new files"
	modeSame = "one file overwritten"
)

// seriesFiles lists the release tarballs in release order.
func (b *bench) seriesFiles() ([]File, error) {
	dir := filepath.Join(b.cfg.Corpus, "releases", "x-tools")
	all, err := listFiles(dir)
	if err != nil {
		return nil, err
	}
	var files []File
	for _, f := range all {
		if !strings.Contains(f.Name, "/") && strings.HasSuffix(f.Name, ".tar") {
			files = append(files, f)
		}
	}
	if len(files) < 2 {
		return nil, fmt.Errorf("%s holds %d .tar files; need at least 2", dir, len(files))
	}
	return files, nil
}

// copyInto writes src to dst (created or truncated) in 1 MiB writes and
// closes it, which commits it in glydfs.
func copyInto(src, dst string) (time.Duration, error) {
	in, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer in.Close()
	t0 := time.Now()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return 0, err
	}
	_, err = io.CopyBuffer(struct{ io.Writer }{out}, struct{ io.Reader }{in}, make([]byte, 1<<20))
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return time.Since(t0), err
}

func (b *bench) series() (*Series, error) {
	files, err := b.seriesFiles()
	if err != nil {
		return nil, err
	}
	s := &Series{Dir: filepath.Join(b.cfg.Corpus, "releases", "x-tools"), Files: files}
	for _, f := range files {
		s.Raw += f.Size
		if _, err := sha256File(f.Path); err != nil { // into the page cache
			return nil, err
		}
	}
	for _, mode := range []string{modeNew, modeSame} {
		g, err := b.glydfsSeries(files, mode)
		if err != nil {
			return nil, err
		}
		s.Glydfs = append(s.Glydfs, g)
	}
	s.Peers = append(s.Peers, b.storeSeries(files))
	if !b.cfg.Peers {
		return s, nil
	}
	alone, chain := b.zstdSeries(files)
	s.Peers = append(s.Peers, alone, chain)
	return s, nil
}

// glydfsSeries copies the versions into a fresh store one after another,
// reading user.glyd.stats after each, then checks every version.
func (b *bench) glydfsSeries(files []File, mode string) (GlydfsSeries, error) {
	g := GlydfsSeries{Mode: mode}
	const same = "x-tools.tar"
	if mode == modeNew {
		g.How = "each tarball copied in as a new file under its own name (open O_CREAT|O_TRUNC, 1 MiB writes, close)"
	} else {
		g.How = "each tarball copied over the same file `" + same + "` (open O_TRUNC, 1 MiB writes, close): every copy is a new version of one file, kept under `.glyd/versions/" + same + "/`"
	}
	b.logf("series: glydfs, %s", mode)
	store := b.path("store-series")
	os.RemoveAll(store)
	mnt := b.path("mnt")
	m, err := b.mountGlydfs(store, mnt)
	if err != nil {
		return g, err
	}
	for _, f := range files {
		dst := filepath.Join(mnt, f.Name)
		if mode == modeSame {
			dst = filepath.Join(mnt, same)
		}
		d, err := copyInto(f.Path, dst)
		if err != nil {
			g.Err = err.Error()
			b.problem("series (%s): copying %s into glydfs: %v", mode, f.Name, err)
			break
		}
		st, err := glydfsStats[Stats](mnt)
		if err != nil {
			g.Err = err.Error()
			b.problem("series (%s): reading user.glyd.stats: %v", mode, err)
			break
		}
		g.Steps = append(g.Steps, SeriesStep{Name: f.Name, Size: f.Size, Copy: d, Stats: st})
	}
	if g.Err == "" {
		if err := b.checkSeries(mnt, files, mode, same); err != nil {
			b.problem("series (%s): %v", mode, err)
		}
	}
	if err := b.unmount(m); err != nil {
		b.problem("%v", err)
	}
	if g.Disk, err = dirUsage(store); err != nil {
		return g, err
	}
	os.RemoveAll(store)
	return g, nil
}

// checkSeries compares what the mount holds with the tarballs: every file
// (new files), or every kept version and the live file (one file).
func (b *bench) checkSeries(mnt string, files []File, mode, same string) error {
	if mode == modeNew {
		for _, f := range files {
			if err := sameFile(filepath.Join(mnt, f.Name), f.Path); err != nil {
				return err
			}
		}
		return nil
	}
	if err := sameFile(filepath.Join(mnt, same), files[len(files)-1].Path); err != nil {
		return err
	}
	vdir := filepath.Join(mnt, ".glyd", "versions", same)
	ents, err := os.ReadDir(vdir)
	if err != nil {
		return err
	}
	var vs []uint64
	for _, e := range ents {
		n, err := strconv.ParseUint(e.Name(), 10, 64)
		if err != nil {
			return fmt.Errorf("%s: unexpected entry %q", vdir, e.Name())
		}
		vs = append(vs, n)
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i] < vs[j] })
	if len(vs) != len(files) {
		return fmt.Errorf("%s lists %d versions (%v) after %d copies, want %d", vdir, len(vs), vs, len(files), len(files))
	}
	for i, v := range vs {
		if err := sameFile(filepath.Join(vdir, strconv.FormatUint(v, 10)), files[i].Path); err != nil {
			return fmt.Errorf("version %d: %w", v, err)
		}
	}
	return nil
}

// storeSeries puts the versions into a fresh chunk store directly (what
// `glyd store put` does), to tell the store's cost from the mount's.
func (b *bench) storeSeries(files []File) PeerColumn {
	col := PeerColumn{Name: colStore, How: "each tarball put into a fresh default-tier chunk store directly, through the Go API (`chunkstore.Put`, what `glyd store put` does), under its own name; bytes = `Usage().Stored`"}
	b.logf("series: %s", colStore)
	dir := b.path("store-direct")
	st, err := chunkstore.Init(dir, chunkstore.Options{Tier: codec.Default})
	if err != nil {
		col.Err = err.Error()
		return col
	}
	defer os.RemoveAll(dir)
	defer st.Close()
	t0 := time.Now()
	for _, f := range files {
		fh, err := os.Open(f.Path)
		if err != nil {
			col.Err = err.Error()
			return col
		}
		_, err = st.Put(f.Name, fh)
		fh.Close()
		if err != nil {
			col.Err = err.Error()
			return col
		}
		u, err := st.Usage()
		if err != nil {
			col.Err = err.Error()
			return col
		}
		col.Cum = append(col.Cum, u.Stored)
	}
	col.Time = time.Since(t0)
	col.Total = col.Cum[len(col.Cum)-1]
	return col
}

const colStore = "chunk store, no mount (default tier)"

// zstdSeries compresses each file alone with zstd -19 --long=27, and each
// after the first as a patch against its predecessor; the chain's first
// element is the first file alone, compressed once for both columns.
func (b *bench) zstdSeries(files []File) (alone, chain PeerColumn) {
	alone = PeerColumn{Name: "zstd -19 --long=27, each tar alone", How: "`zstd -T1 -19 --long=27` of each tarball alone; bytes = sum of the outputs"}
	chain = PeerColumn{Name: "zstd -19 --long=27 --patch-from chain", How: "first tarball `zstd -T1 -19 --long=27`, each later one `zstd -T1 -19 --long=27 --patch-from=<previous>`; bytes = sum"}
	if err := lookTool("zstd"); err != nil {
		alone.Err, chain.Err = err.Error(), err.Error()
		return
	}
	zstd := func(extra ...string) func(f File) (int64, time.Duration, error) {
		return func(f File) (int64, time.Duration, error) {
			t0 := time.Now()
			args := append([]string{"-q", "-c", "-T1", "-19", "--long=27"}, extra...)
			n, err := b.runTool(nil, "zstd", append(args, f.Path)...)
			return n, time.Since(t0), err
		}
	}
	b.logf("series: %s", alone.Name)
	for _, f := range files {
		n, d, err := zstd()(f)
		if err != nil {
			alone.Err, chain.Err = err.Error(), err.Error()
			return
		}
		alone.Total += n
		alone.Time += d
		alone.Cum = append(alone.Cum, alone.Total)
		if len(chain.Cum) == 0 {
			chain.Total, chain.Time = n, d
			chain.Cum = append(chain.Cum, n)
		}
	}
	b.logf("series: %s", chain.Name)
	for i, f := range files[1:] {
		n, d, err := zstd("--patch-from=" + files[i].Path)(f)
		if err != nil {
			chain.Err = err.Error()
			return
		}
		chain.Total += n
		chain.Time += d
		chain.Cum = append(chain.Cum, chain.Total)
	}
	return
}
