package fsbench

import (
	"fmt"
	"io"

	"github.com/glyd/glyd/internal/benchfmt"
)

// modelRatio is a's median throughput over b's (original bytes), 0 when
// either is missing.
func modelRatio(a, b *ModelRead) float64 {
	if a.MBs() == 0 || b.MBs() == 0 {
		return 0
	}
	return a.MBs() / b.MBs()
}

// modelCell is a read's rate of original bytes, or why it is missing.
func modelCell(r *ModelRead) string {
	switch {
	case r == nil:
		return "-"
	case r.Err != "":
		return "failed"
	case len(r.Runs) == 0:
		return "-"
	}
	return benchfmt.FmtRate(r.MBs())
}

// stored is what glydfs's chunk frames take, 0 when the copy failed.
func (m *Models) stored() int64 { return m.Stats.Stored }

// modelSummaryRows adds the model files' rows to the summary table: stored
// bytes, then whole-file reads cold and warm.
func (r *Report) modelSummaryRows(st *benchfmt.Table) {
	m := r.Models
	if m == nil || m.stored() == 0 {
		return
	}
	sq := ""
	if m.Squash.Err == "" && m.Squash.Bytes > 0 {
		sq = fmt.Sprintf("%s (%s)", benchfmt.Commas(m.Squash.Bytes), benchfmt.Pct(m.Squash.Bytes, m.Raw))
	}
	ratio := func(peer int64) string {
		if peer <= 0 {
			return "-"
		}
		return times(float64(peer) / float64(m.stored()))
	}
	sqb := int64(0)
	if sq != "" {
		sqb = m.Squash.Bytes
	}
	st.Add(fmt.Sprintf("model weights (%d safetensors files, %s bytes): stored bytes", m.ST, benchfmt.Commas(m.Raw)),
		fmt.Sprintf("**%s (%s)**", benchfmt.Commas(m.stored()), benchfmt.Pct(m.stored(), m.Raw)), benchfmt.Commas(m.Raw), "", sq,
		fmt.Sprintf("%s / - / %s", ratio(sqb), ratio(m.Raw)))
	for _, cold := range []bool{true, false} {
		g, l, s := m.Read(tgtModelGlydfs, cold), m.Read(tgtModelLocal, cold), m.Read(tgtModelSquash, cold)
		if g == nil {
			continue
		}
		st.Add(fmt.Sprintf("model weights, every file read whole, %s, MB/s", cacheName(cold)), "**"+modelCell(g)+"**", modelCell(l), "", modelCell(s),
			fmt.Sprintf("%s / - / %s", times(modelRatio(g, s)), times(modelRatio(g, l))))
	}
}

func (r *Report) writeModels(w io.Writer) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	m := r.Models
	if m == nil {
		return
	}
	p("## 5. Model files: safetensors stored packed\n\n")
	p("`%s`: %d files, %d of them `.safetensors` (%s bytes in all), copied into a freshly created glydfs store (`open`, 1 MiB `write` calls, `close`, which commits each file; %s for the lot). ", m.Dir, len(m.Files), m.ST, benchfmt.Commas(m.Raw), benchfmt.FmtSeconds(m.Copy))
	p("glydfs recognises a safetensors file by its header and stores it in glyd's packed form, tensor by tensor (docs/fs.md, docs/tensors.md); reading the file returns the original bytes, decoded on the CPU, and `MOUNT/.glyd/packed/<path>` returns the packed bytes as stored. ")
	p("Its size is `stored` in the mount root's `user.glyd.stats` after the copy (the chunk frames of everything in the store). ")
	p("The peers: %s; a squashfs image, %s.\n\n", m.Zstd.How, m.Squash.How)
	if m.stored() == 0 {
		p("The copy into glydfs failed (see the problems above), so nothing else was measured.\n\n")
		return
	}
	p("Reads: every `.safetensors` file read whole in turn, each `open`, 1 MiB `read(2)` calls to the end (made as `dd bs=1M` makes them), `close`; a run is the whole set. ")
	p("*glydfs* reads the files through the mount (decoded); *`.glyd/packed/`* reads the packed forms of the same paths (%d files, %s bytes); *local disk* reads the original files in the corpus (%s); *squashfuse* reads them from the image. ", m.Packed, benchfmt.Commas(m.PackedBytes), m.DirFS)
	p("Cold: the page cache dropped and the FUSE server (glydfs on the same store, or squashfuse) started afresh before each run; warm: the files read once just before, untimed. ")
	p("The runs go round-robin over the readers, %d of each, the median counts. ", r.Config.Runs)
	p("Once per target, untimed, the bytes were checked: every file read through glydfs and through squashfuse compared with its original (SHA-256), and every packed form decoded on the CPU (`packed.Decode`) and compared likewise.\n\n")

	t := &benchfmt.Table{Head: []string{"target", "bytes stored", "% of original", "bytes read per run", "cold, MB/s of original", "warm, MB/s of original", "cold runs (min – max)"}, Align: "lrrrrrr"}
	t.Add("the original files", benchfmt.Commas(m.Raw), "100.00%", "", "", "", "")
	for _, tg := range []string{tgtModelGlydfs, tgtModelPacked, tgtModelLocal, tgtModelSquash} {
		c, wr := m.Read(tg, true), m.Read(tg, false)
		var stored, pct string
		switch tg {
		case tgtModelGlydfs:
			stored, pct = "**"+benchfmt.Commas(m.stored())+"**", benchfmt.Pct(m.stored(), m.Raw)
		case tgtModelPacked:
			stored, pct = "(the frames above)", fmt.Sprintf("%s (packed files ÷ their originals)", benchfmt.Pct(m.PackedBytes, m.PackedOrig))
		case tgtModelLocal:
			stored, pct = benchfmt.Commas(m.Raw), "100.00%"
		case tgtModelSquash:
			if m.Squash.Err != "" {
				t.Add(tg, "not measured: "+m.Squash.Err)
				continue
			}
			stored, pct = benchfmt.Commas(m.Squash.Bytes), benchfmt.Pct(m.Squash.Bytes, m.Raw)
		}
		name := tg
		if tg == tgtModelGlydfs || tg == tgtModelPacked {
			name = "**" + tg + "**"
		}
		if c == nil {
			t.Add(name, stored, pct, "not measured")
			continue
		}
		if c.Err != "" && (wr == nil || wr.Err != "") {
			t.Add(name, stored, pct, "", "not measured: "+c.Err)
			continue
		}
		rate := func(r *ModelRead) string {
			switch {
			case r == nil:
				return "-"
			case r.Err != "":
				return "failed: " + r.Err
			case len(r.Runs) == 0:
				return "-"
			}
			s := "**" + benchfmt.FmtRate(r.MBs()) + "**"
			if r.Bytes != r.Orig {
				s += " (" + benchfmt.FmtRate(r.ReadMBs()) + " of packed bytes)"
			}
			return s
		}
		read := benchfmt.Commas(c.Bytes)
		if c.Bytes != c.Orig {
			read += fmt.Sprintf(" (packed, for %s original)", benchfmt.Commas(c.Orig))
		}
		sp := ""
		if c.Err == "" {
			sp = spread(c.Orig, c.Runs)
		}
		t.Add(name, stored, pct, read, rate(c), rate(wr), sp)
	}
	if m.Zstd.Err != "" {
		t.Add("zstd -19, each file alone", "not measured: "+m.Zstd.Err)
	} else {
		t.Add("zstd -19, each file alone", benchfmt.Commas(m.Zstd.Bytes), benchfmt.Pct(m.Zstd.Bytes, m.Raw), "", "(not a file system)", "", "")
	}
	t.Markdown(w)
	p("\n")

	s := m.Stats
	p("- `user.glyd.stats` after the copy: logical %s, history %s, stored %s bytes; packing saved %s, compression %s, dedup %s (%d chunks, %d of them deltas).\n",
		benchfmt.Commas(s.Logical), benchfmt.Commas(s.History), benchfmt.Commas(s.Stored), benchfmt.Commas(s.PackSaved), benchfmt.Commas(s.CompSaved), benchfmt.Commas(s.DedupSaved), s.Chunks, s.Deltas)
	if m.Disk.Apparent > 0 {
		p("- The store directory takes %s bytes after unmounting (%s allocated): the chunk frames and badger's tree and fixed files.\n", benchfmt.Commas(m.Disk.Apparent), benchfmt.Commas(m.Disk.Allocated))
	}
	if m.Zstd.Err == "" && m.Zstd.Time > 0 {
		p("- Time to make: zstd -19 %s (one thread, file after file), the squashfs image %s, the copy into glydfs %s (packing included).\n", benchfmt.FmtSeconds(m.Zstd.Time), benchfmt.FmtSeconds(m.Squash.Time), benchfmt.FmtSeconds(m.Copy))
	}
	p("\nThe `.glyd/packed/` row is what a GPU loader (`glyd gpu load MOUNT/path`) reads: it uploads those packed bytes as they are and decodes them on the device, so the CPU decodes nothing and the disk and FUSE move only the packed bytes; its rate counts the original bytes they stand for (the packed bytes' own rate in brackets), without the upload or the decode on the GPU.\n\n")

	// What this means.
	gc, gw := m.Read(tgtModelGlydfs, true), m.Read(tgtModelGlydfs, false)
	pc := m.Read(tgtModelPacked, true)
	lc, sc := m.Read(tgtModelLocal, true), m.Read(tgtModelSquash, true)
	p("**What this means.** glydfs keeps the weights in %s of their size (%s bytes; packing the safetensors files saved %s bytes)", benchfmt.Pct(m.stored(), m.Raw), benchfmt.Commas(m.stored()), benchfmt.Commas(s.PackSaved))
	if m.Zstd.Err == "" && m.Zstd.Bytes > 0 {
		p(", against %s for `zstd -19` of each file (glydfs ÷ zstd = %s)", benchfmt.Pct(m.Zstd.Bytes, m.Raw), times(float64(m.stored())/float64(m.Zstd.Bytes)))
	}
	if m.Squash.Err == "" && m.Squash.Bytes > 0 {
		p(" and %s for the zstd squashfs image", benchfmt.Pct(m.Squash.Bytes, m.Raw))
	}
	p(". ")
	if m.Zstd.Err == "" && m.Zstd.Bytes > 0 && s.PackSaved > 0 {
		if m.stored() < m.Zstd.Bytes {
			p("Coding the floats' exponents tensor by tensor gets further than a general-purpose compressor at its slow levels gets on the bytes. ")
		} else {
			p("Here the packed form does not beat a general-purpose compressor at its slow levels. ")
		}
	}
	if gc.MBs() > 0 {
		p("Read back cold through the mount, the files arrive at %s of original bytes", benchfmt.FmtRate(gc.MBs()))
		if v := modelRatio(gc, lc); v > 0 {
			p(", %s the rate of the plain files on the local disk (%s)", times(v), benchfmt.FmtRate(lc.MBs()))
		}
		if v := modelRatio(gc, sc); v > 0 {
			p(" and %s squashfuse's (%s)", times(v), benchfmt.FmtRate(sc.MBs()))
		}
		p("; warm, %s. ", modelCell(gw))
	}
	if pc.MBs() > 0 {
		p("The packed forms read cold at %s of original bytes (%s of packed bytes)", benchfmt.FmtRate(pc.MBs()), benchfmt.FmtRate(pc.ReadMBs()))
		if v := modelRatio(pc, gc); v > 0 {
			p(", %s the decoded read: what a loader that decodes on the GPU gets from the mount before its own upload and decode", times(v))
		}
		p(". ")
	}
	p("The set is small (%s bytes), so times are short and start-up costs (opening %d files, the first chunk fetches) weigh more than in a multi-GiB checkpoint.\n\n", benchfmt.Commas(m.STRaw), m.ST)
}
