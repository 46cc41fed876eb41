// Command synth writes a synthetic safetensors checkpoint shaped like a
// transformer language model (attention and MLP matrices, norms, an
// embedding), for timing the GPU loader at a size the corpus's small vision
// models do not reach. Weights are normal with per-tensor scales, rounded to
// bf16 (or f16); norm weights sit near 1. The data are synthetic: report
// them as such.
//
//	go run ./tests/gpu/synth -o model.safetensors -mb 2048
package main

import (
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"sync"
)

type tensorSpec struct {
	name  string
	shape []int64
	sigma float64
	norm  bool
}

func main() {
	out := flag.String("o", "synth.safetensors", "output file")
	mb := flag.Int64("mb", 1024, "approximate size in MiB")
	dtype := flag.String("dtype", "BF16", "BF16 or F16")
	hidden := flag.Int64("hidden", 0, "hidden size (0: the largest power of two to 4096 whose layer is at most a quarter of -mb)")
	flag.Parse()
	if *hidden == 0 {
		*hidden = 4096
		for *hidden > 64 && 2*(4+3*11/4)**hidden**hidden > (*mb<<20)/4 {
			*hidden /= 2
		}
	}
	if *dtype != "BF16" && *dtype != "F16" {
		fmt.Fprintln(os.Stderr, "synth: -dtype must be BF16 or F16")
		os.Exit(2)
	}
	h := *hidden
	ff := h * 11 / 4
	var specs []tensorSpec
	size := int64(0)
	add := func(s tensorSpec) {
		n := int64(1)
		for _, d := range s.shape {
			n *= d
		}
		specs = append(specs, s)
		size += 2 * n
	}
	vocab := max(16, min(32000, (*mb<<20)/8/(2*h)))
	add(tensorSpec{"model.embed_tokens.weight", []int64{vocab, h}, 0.02, false})
	for l := 0; size < *mb<<20; l++ {
		p := fmt.Sprintf("model.layers.%d.", l)
		add(tensorSpec{p + "input_layernorm.weight", []int64{h}, 0.05, true})
		for _, m := range []string{"q", "k", "v", "o"} {
			add(tensorSpec{p + "self_attn." + m + "_proj.weight", []int64{h, h}, 0.02 / (1 + 0.1*float64(l%7)), false})
		}
		add(tensorSpec{p + "post_attention_layernorm.weight", []int64{h}, 0.05, true})
		add(tensorSpec{p + "mlp.gate_proj.weight", []int64{ff, h}, 0.015, false})
		add(tensorSpec{p + "mlp.up_proj.weight", []int64{ff, h}, 0.015, false})
		add(tensorSpec{p + "mlp.down_proj.weight", []int64{h, ff}, 0.012, false})
	}
	add(tensorSpec{"model.norm.weight", []int64{h}, 0.05, true})

	hdr := map[string]any{"__metadata__": map[string]string{"format": "pt", "note": "synthetic (tests/gpu/synth)"}}
	offs := make([]int64, len(specs)+1)
	for i, s := range specs {
		n := int64(2)
		for _, d := range s.shape {
			n *= d
		}
		offs[i+1] = offs[i] + n
		hdr[s.name] = map[string]any{"dtype": *dtype, "shape": s.shape, "data_offsets": []int64{offs[i], offs[i+1]}}
	}
	hj, err := json.Marshal(hdr)
	if err != nil {
		panic(err)
	}
	for len(hj)%8 != 0 {
		hj = append(hj, ' ')
	}
	file := make([]byte, 8+int64(len(hj))+offs[len(specs)])
	binary.LittleEndian.PutUint64(file, uint64(len(hj)))
	copy(file[8:], hj)
	data := file[8+len(hj):]
	var wg sync.WaitGroup
	work := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				fill(data[offs[i]:offs[i+1]], specs[i], *dtype == "F16", uint64(i))
			}
		}()
	}
	for i := range specs {
		work <- i
	}
	close(work)
	wg.Wait()
	if err := os.WriteFile(*out, file, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "synth:", err)
		os.Exit(1)
	}
	fmt.Printf("%s: %d tensors, %d bytes (synthetic)\n", *out, len(specs), len(file))
}

func fill(b []byte, s tensorSpec, f16 bool, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	for i := 0; i < len(b); i += 2 {
		v := float32(r.NormFloat64() * s.sigma)
		if s.norm {
			v += 1
		}
		var w uint16
		if f16 {
			w = toF16(v)
		} else {
			x := math.Float32bits(v)
			w = uint16((x + 0x7fff + (x>>16)&1) >> 16)
		}
		binary.LittleEndian.PutUint16(b[i:], w)
	}
}

// toF16 rounds to the nearest f16 (ties away; subnormals flushed).
func toF16(f float32) uint16 {
	x := math.Float32bits(f)
	sign := uint16(x>>16) & 0x8000
	exp := int(x>>23&0xff) - 127 + 15
	mant := x & 0x7fffff
	switch {
	case exp <= 0:
		return sign
	case exp >= 31:
		return sign | 0x7c00
	}
	h := uint32(exp)<<10 | mant>>13
	h += (mant >> 12) & 1
	if h >= 0x7c00 {
		return sign | 0x7c00
	}
	return sign | uint16(h)
}
