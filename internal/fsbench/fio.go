package fsbench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"time"
)

// FioRun is one fio job of 4 KiB random reads on the test file.
type FioRun struct {
	Target string
	Cached bool
	IOs    int64 // reads done
	Time   time.Duration
	IOPS   float64
	P50    time.Duration
	P90    time.Duration
	P99    time.Duration
	P999   time.Duration
	Mean   time.Duration
	Args   string // the job, for the report
	Err    string
}

// fioArgs is the job: one thread, synchronous 4 KiB pread at random
// offsets (fio's random map: no block twice), FADV_RANDOM so the kernel
// reads ahead nothing. Uncached jobs do a fixed number of reads; cached
// ones run for a fixed time.
func fioArgs(file string, size int64, seed uint64, cached bool, ios int, runtime time.Duration) []string {
	a := []string{"--name=rand4k", "--filename=" + file, "--readonly", "--rw=randread", "--bs=4k",
		"--ioengine=psync", "--iodepth=1", "--numjobs=1", "--fadvise_hint=1",
		"--size=" + strconv.FormatInt(size, 10), "--randseed=" + strconv.FormatUint(seed, 10),
		"--percentile_list=50:90:99:99.9", "--output-format=json"}
	if cached {
		return append(a, "--invalidate=0", "--time_based", fmt.Sprintf("--runtime=%dms", runtime.Milliseconds()))
	}
	return append(a, "--invalidate=1", "--number_ios="+strconv.Itoa(ios), "--runtime=300s")
}

// parseFio reads what fio --output-format=json printed (after any warning
// lines) into r.
func parseFio(out []byte, r *FioRun) error {
	i := bytes.IndexByte(out, '{')
	if i < 0 {
		return errors.New("fio printed no JSON")
	}
	var v struct {
		Jobs []struct {
			Error   int   `json:"error"`
			Runtime int64 `json:"job_runtime"` // ms
			Read    struct {
				TotalIOs int64   `json:"total_ios"`
				IOPS     float64 `json:"iops"`
				Runtime  int64   `json:"runtime"` // ms
				Clat     struct {
					Mean       float64            `json:"mean"`
					Percentile map[string]float64 `json:"percentile"`
				} `json:"clat_ns"`
			} `json:"read"`
		} `json:"jobs"`
	}
	if err := json.NewDecoder(bytes.NewReader(out[i:])).Decode(&v); err != nil {
		return fmt.Errorf("fio's JSON: %w", err)
	}
	if len(v.Jobs) != 1 {
		return fmt.Errorf("fio reported %d jobs, want 1", len(v.Jobs))
	}
	j := v.Jobs[0]
	if j.Error != 0 {
		return fmt.Errorf("fio job error %d", j.Error)
	}
	if j.Read.TotalIOs == 0 {
		return errors.New("fio read nothing")
	}
	p := func(k string) (time.Duration, error) {
		ns, ok := j.Read.Clat.Percentile[k]
		if !ok {
			return 0, fmt.Errorf("fio reported no %s percentile", k)
		}
		return time.Duration(ns), nil
	}
	var err error
	r.IOs, r.IOPS = j.Read.TotalIOs, j.Read.IOPS
	r.Time = time.Duration(j.Read.Runtime) * time.Millisecond
	r.Mean = time.Duration(j.Read.Clat.Mean)
	for _, q := range []struct {
		k string
		d *time.Duration
	}{{"50.000000", &r.P50}, {"90.000000", &r.P90}, {"99.000000", &r.P99}, {"99.900000", &r.P999}} {
		if *q.d, err = p(q.k); err != nil {
			return err
		}
	}
	return nil
}

// fio runs one job.
func (b *bench) fio(target, file string, cached bool) FioRun {
	r := FioRun{Target: target, Cached: cached}
	args := fioArgs(file, b.rep.Test.Size, b.cfg.Seed, cached, b.cfg.FioIOs, b.cfg.FioTime)
	r.Args = "fio " + joinArgs(args[:len(args)-1]) // without --output-format
	var out bytes.Buffer
	if _, err := b.runTool(&out, "fio", args...); err != nil {
		r.Err = err.Error()
		return r
	}
	if err := parseFio(out.Bytes(), &r); err != nil {
		r.Err = err.Error()
	}
	return r
}

// fios runs the random-read jobs on the local disk, glydfs and squashfuse:
// uncached first (page cache dropped, the FUSE server freshly started),
// then cached (the file read whole first, so the page cache holds it).
func (b *bench) fios(store string) error {
	t := b.rep.Test
	if err := lookTool("fio"); err != nil {
		for _, tg := range []string{tgtLocal, tgtGlydfs, tgtSquash} {
			for _, c := range []bool{false, true} {
				b.rep.Fio = append(b.rep.Fio, FioRun{Target: tg, Cached: c, Err: err.Error()})
			}
		}
		return nil
	}
	pair := func(target, file string) {
		b.logf("random reads: %s", target)
		b.rep.Fio = append(b.rep.Fio, b.fio(target, file, false))
		if _, err := readFile(file, t.Size); err != nil {
			b.rep.Fio = append(b.rep.Fio, FioRun{Target: target, Cached: true, Err: err.Error()})
			return
		}
		b.rep.Fio = append(b.rep.Fio, b.fio(target, file, true))
	}

	b.drop()
	pair(tgtLocal, t.Path)

	mnt := b.path("mnt")
	b.drop()
	m, err := b.mountGlydfs(store, mnt)
	if err != nil {
		return err
	}
	pair(tgtGlydfs, filepath.Join(mnt, "big.bin"))
	for _, r := range b.rep.Fio[len(b.rep.Fio)-2:] {
		if r.Err != "" {
			b.problem("fio random reads through glydfs: %s", r.Err)
		}
	}
	if err := b.unmount(m); err != nil {
		b.problem("%v", err)
	}

	img := b.path("local", "big.sqfs")
	if !b.cfg.Peers || lookTool("squashfuse") != nil || !exists(img) {
		for _, c := range []bool{false, true} {
			b.rep.Fio = append(b.rep.Fio, FioRun{Target: tgtSquash, Cached: c, Err: "no squashfs image (peers off or squashfs-tools missing)"})
		}
		return nil
	}
	mnt = b.path("mnt-squash")
	b.drop()
	m, err = b.mountSquash(img, mnt)
	if err != nil {
		for _, c := range []bool{false, true} {
			b.rep.Fio = append(b.rep.Fio, FioRun{Target: tgtSquash, Cached: c, Err: err.Error()})
		}
		return nil
	}
	pair(tgtSquash, filepath.Join(mnt, filepath.Base(t.Path)))
	return b.unmount(m)
}
