//go:build amd64 && !noasm

package tensor

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// The amd64 decoder: fast_amd64.s decodes four groups interleaved, each
// with its own table, so groups of different spans share the loop (BMI2
// shifts keep the bit buffers out of CX), and puts values together with
// SSE4.1 or AVX2; everything else runs the Go loops.
var haveAsm = cpu.X86.HasBMI2 && cpu.X86.HasSSE41

// useAsm can be cleared by tests to measure and check the Go loops.
var useAsm = haveAsm

// useAVX2 puts values together sixteen at a time; tests clear it to check
// the SSE loop.
var useAVX2 = haveAsm && cpu.X86.HasAVX2

// AsmDecoder reports whether the assembly decode loop is in use.
func AsmDecoder() bool { return useAsm }

// laneState is what decodeLanes reads and updates; fast_amd64.s fixes the
// field offsets (TestLaneStateLayout checks them).
type laneState struct {
	iters int               // 0: iterations to run, at least 1
	out   unsafe.Pointer    // 8: the lanes' symbol bytes
	lut   [4]unsafe.Pointer // 16: each lane's table
	mask  [4]uint64         // 48: each table's size less one
	bp    [4]uint           // 80: bit positions: payload address × 8 + bit
	at    [4]int            // 112: where in out each lane's next symbol goes
}

// decodeLanes decodes four lanes' symbol bytes for s.iters iterations of
// four lookups a lane.
//
//go:noescape
func decodeLanes(s *laneState)

// decodeJobs decodes the jobs four at a time through decodeLanes, each
// lane taking the next job as its group finishes (a group's last values
// and the check of its stream finish in Go, then its values are put
// together and its CRC checked). A lane with no job left repeats the
// work of the lane with the most left to do, into the fifth region, so
// the loop runs at full speed on whatever is left. Jobs the lanes cannot
// take (V16 words, other group sizes) go through the Go loops, in pairs
// where they are consecutive groups of a span. It returns the index of the
// job that failed.
func decodeJobs(jobs []GroupJob) (int, error) {
	if !useAsm {
		return decodeJobsGo(jobs)
	}
	sp := scratchPool.Get().(*[]byte)
	defer scratchPool.Put(sp)
	syms := (*sp)[:5*laneRegion]
	s := laneState{out: unsafe.Pointer(unsafe.SliceData(syms))}
	type lane struct {
		job  int  // -1: none
		n    int  // the group's values
		src  uint // the payload's address × 8
		lim  uint // the last bit position an 8-byte load may start at
		base int  // the lane's region in syms
	}
	var ln [4]lane
	for k := range ln {
		ln[k] = lane{job: -1, base: k * laneRegion}
	}
	next, active := 0, 0
	for {
		// Give idle lanes the next jobs.
		for k := range ln {
			if ln[k].job >= 0 {
				continue
			}
			for next < len(jobs) {
				j, d := next, jobs[next].D
				next++
				if !d.lanesTake() {
					// A run of jobs the lanes cannot take: the Go loops,
					// which pair consecutive groups of a span.
					e := j + 1
					for e < len(jobs) && !jobs[e].D.lanesTake() {
						e++
					}
					if i, err := decodeJobsGo(jobs[j:e]); err != nil {
						return j + i, err
					}
					next = e
					continue
				}
				if g := jobs[j].G; g < 0 || g >= d.groups {
					return j, corruptf("group %d of %d", g, d.groups)
				}
				st, _ := d.streamRange(jobs[j].G)
				_, n := d.Group(jobs[j].G)
				if len(jobs[j].Dst) != n*d.kind.WordSize() {
					panic("tensor: decode: wrong destination size")
				}
				// The payload does not move (heap or mapped memory, held by
				// the decoder), so its address is a number here.
				src := uint(uintptr(unsafe.Pointer(unsafe.SliceData(d.payload)))) * 8
				lim := uint(0) // below every position: the lane finishes in Go
				if len(d.payload) >= 8 {
					lim = src + uint(len(d.payload)-8)*8
				}
				ln[k] = lane{job: j, n: n, src: src, lim: lim, base: k * laneRegion}
				s.lut[k] = unsafe.Pointer(unsafe.SliceData(d.lut))
				s.mask[k] = uint64(len(d.lut) - 1)
				s.bp[k], s.at[k] = src+uint(st)*8, ln[k].base
				active++
				break
			}
		}
		if active == 0 {
			return -1, nil
		}
		// Lanes near their group's end (or the payload's) finish in Go;
		// the others bound how many iterations the loop may run: one that
		// starts within them stores below its group's end and loads within
		// the payload.
		iters, done := 1<<30, false
		for k := range ln {
			l := &ln[k]
			if l.job < 0 {
				continue
			}
			room := l.n - loopMargin8 - (s.at[k] - l.base)
			if room >= 0 && s.bp[k] <= l.lim {
				iters = min(iters, room/20+1, int(l.lim-s.bp[k])/48+1)
				continue
			}
			job := &jobs[l.job]
			if err := job.D.complete(job.Dst, syms[l.base:l.base+l.n], job.G, s.bp[k]-l.src, s.at[k]-l.base); err != nil {
				return l.job, err
			}
			l.job, l.base = -1, k*laneRegion
			active--
			done = true
		}
		if done {
			continue
		}
		// Idle lanes repeat the lane with the most left to do.
		far, most := -1, -1
		for k := range ln {
			if ln[k].job >= 0 && ln[k].n-(s.at[k]-ln[k].base) > most {
				far, most = k, ln[k].n-(s.at[k]-ln[k].base)
			}
		}
		for k := range ln {
			if ln[k].job < 0 {
				s.lut[k], s.mask[k], s.bp[k] = s.lut[far], s.mask[far], s.bp[far]
				s.at[k] = 4*laneRegion + s.at[far] - ln[far].base
			}
		}
		s.iters = iters
		decodeLanes(&s)
	}
}

// combineSSE builds n words (n a multiple of 8): each symbol byte shifted
// left by shift, ORed with its raw byte r placed as r&m1 | (r&m2)<<8.
//
//go:noescape
func combineSSE(out, syms, raw unsafe.Pointer, n int, shift, m1, m2 uint64)

// combineAVX2 is combineSSE for n a multiple of 16.
//
//go:noescape
func combineAVX2(out, syms, raw unsafe.Pointer, n int, shift, m1, m2 uint64)

// combine16 builds BF16 or F16 words: AVX2 for multiples of 16, SSE for
// multiples of 8, Go for the rest.
func combine16(out, syms, raw []byte, k Kind) {
	n := len(syms) &^ 7
	if useAsm && n > 0 {
		shift, m1, m2 := uint64(7), uint64(0x007f007f007f007f), uint64(0x0080008000800080)
		if k == F16 {
			shift, m1, m2 = 8, 0x00ff00ff00ff00ff, 0
		}
		op := unsafe.Pointer(unsafe.SliceData(out))
		sp := unsafe.Pointer(unsafe.SliceData(syms))
		rp := unsafe.Pointer(unsafe.SliceData(raw))
		done := 0
		if n16 := n &^ 15; useAVX2 && n16 > 0 {
			combineAVX2(op, sp, rp, n16, shift, m1, m2)
			done = n16
		}
		if done < n {
			combineSSE(unsafe.Add(op, 2*done), unsafe.Add(sp, done), unsafe.Add(rp, done), n-done, shift, m1, m2)
		}
		combine16Go(out[2*n:], syms[n:], raw[n:], k)
		return
	}
	combine16Go(out, syms, raw, k)
}
