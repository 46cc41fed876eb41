package codec

import (
	"fmt"
	"math/bits"
	"runtime"

	"github.com/glyd/glyd/internal/workers"
)

// Options configure an encoder.
type Options struct {
	Tier     Tier
	Threads  int // units encoded at once; 0 means one per CPU
	UnitSize int // decoded bytes per unit; 0 means the tier's default
}

func (o Options) threads() int { return threadsOr(o.Threads) }

func threadsOr(n int) int {
	if n <= 0 {
		return runtime.GOMAXPROCS(0)
	}
	return n
}

// unitSize returns the unit size in use, rounded to a power of two within
// the format's limits (the header records it as a power of two).
func (o Options) unitSize() int {
	n := o.UnitSize
	if n <= 0 {
		n = o.Tier.DefaultUnitSize()
	}
	n = max(MinUnitSize, min(MaxUnitSize, n))
	return 1 << (bits.Len(uint(n)) - 1)
}

func (o Options) validate() error {
	if o.Tier > Cold {
		return fmt.Errorf("glyd: unknown tier %d", o.Tier)
	}
	return nil
}

// Encode compresses src into a complete glyd stream, encoding units in
// parallel.
func Encode(src []byte, opts Options) ([]byte, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	us := opts.unitSize()
	n := (len(src) + us - 1) / us
	frames := make([][]byte, n)
	_ = workers.Run(n, opts.threads(), func(i int) error {
		frames[i] = encodeUnit(getFrame(), src[i*us:min(len(src), (i+1)*us)], opts.Tier)
		return nil
	})
	size := headerSize + indexHeadSize + n*indexEntrySize + 4 + trailerSize
	for _, f := range frames {
		size += len(f)
	}
	out := make([]byte, 0, size)
	out = header{tier: opts.Tier, unitLog2: uint8(bits.Len(uint(us)) - 1)}.append(out)
	units := make([]UnitInfo, n)
	for i, f := range frames {
		units[i] = UnitInfo{CompOffset: int64(len(out)), RawOffset: int64(i * us), CompLen: len(f), RawLen: min(len(src)-i*us, us)}
		out = append(out, f...)
		putFrame(f)
	}
	idx := int64(len(out))
	out = appendIndex(out, units, int64(len(src)))
	return appendTrailer(out, idx), nil
}

// Decode decompresses a complete glyd stream held in memory, decoding units
// in parallel (threads <= 0: one per CPU) straight into the result.
func Decode(src []byte, threads int) ([]byte, error) {
	f, err := OpenBytes(src, threads)
	if err != nil {
		return nil, err
	}
	out := make([]byte, f.Size())
	if err := f.decodeAll(out); err != nil {
		return nil, err
	}
	return out, nil
}

// decodeAll decodes every unit into out (len == Size) in parallel.
func (f *File) decodeAll(out []byte) error {
	return workers.Run(len(f.units), f.threads, func(i int) error {
		u := f.units[i]
		return f.decodeUnitInto(out[u.RawOffset:u.RawOffset+int64(u.RawLen)], i)
	})
}
