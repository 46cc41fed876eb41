package main

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime/pprof"
	"sort"
	"time"

	"github.com/glyd/glyd/cuda"
)

type gpuCmd struct {
	Load   gpuLoadCmd   `cmd:"" help:"Load a packed file (or a directory of shards, or a plain safetensors file) into GPU memory, decoding packed tensors on the GPU; report bytes read, time and GB/s."`
	Verify gpuVerifyCmd `cmd:"" help:"Load as 'gpu load' does, copy the tensors back and compare them bit for bit with the CPU's decode."`
}

type gpuFlags struct {
	Device int    `default:"0" placeholder:"N" help:"GPU ordinal."`
	Path   string `arg:"" help:"A packed file, a safetensors file, or a directory of them (sharded checkpoints follow their index)."`
}

// emulateEnv, set to 1, makes 'glyd gpu' run the decode kernel's CPU
// emulation instead of a GPU: for trying the commands and tests/gpu/run.sh
// where there is no GPU. Its numbers say nothing about a GPU's speed, and
// every output says it is emulated.
const emulateEnv = "GLYD_GPU_EMULATE"

// openLoader opens the GPU and JIT-compiles the decode kernel, or says in
// one line why it cannot.
func openLoader(ordinal int) (*cuda.Loader, func(), error) {
	if os.Getenv(emulateEnv) == "1" {
		fmt.Fprintf(os.Stderr, "glyd: %s=1: no GPU used; the decode kernel is emulated on the CPU\n", emulateEnv)
		l := cuda.NewEmulatedLoader()
		return l, l.Close, nil
	}
	g, err := cuda.Open(ordinal)
	if err != nil {
		return nil, nil, fmt.Errorf("gpu: no usable GPU: %v ('glyd doctor' says more)", err)
	}
	l, err := cuda.NewLoader(g)
	if err != nil {
		g.Close()
		return nil, nil, fmt.Errorf("gpu: %v", err)
	}
	if l.PinErr != nil {
		fmt.Fprintf(os.Stderr, "glyd: warning: staging buffers not page-locked (%v): copies run slower\n", l.PinErr)
	}
	return l, func() { l.Close(); g.Close() }, nil
}

type gpuLoadCmd struct {
	gpuFlags
	Plain   bool   `help:"Read the file as plain safetensors and copy it to the device as it is (the baseline)."`
	Repeat  int    `default:"1" placeholder:"N" help:"Load N times (freeing in between) and report the fastest and the median."`
	GPUOnly bool   `name:"gpu-only" help:"Decode every packed file with the kernel, also batches under a megabyte (which decode faster on the CPU)."`
	Profile string `name:"cpuprofile" placeholder:"FILE" help:"Write a Go CPU profile of the loads (not of the set-up) to FILE."`
	JSON    bool   `help:"Print JSON with exact numbers."`
}

// gpuLoadJSON is what gpu load --json prints.
type gpuLoadJSON struct {
	Path        string  `json:"path"`
	Mode        string  `json:"mode"` // "packed" or "plain"
	Files       int     `json:"files"`
	Tensors     int     `json:"tensors"`
	FileBytes   int64   `json:"file_bytes"`
	DeviceBytes int64   `json:"device_bytes"`
	TensorBytes int64   `json:"tensor_bytes"`
	Spans       int     `json:"spans"`
	Groups      int     `json:"groups"`
	Launches    int     `json:"launches"` // kernel launches of the best run
	CPUDecoded  int     `json:"cpu_decoded"`
	Repeat      int     `json:"repeat"`
	BestS       float64 `json:"best_s"`
	MedianS     float64 `json:"median_s"`
	ReadS       float64 `json:"read_s"`   // of the best run
	DecodeS     float64 `json:"decode_s"` // of the best run
	CPUS        float64 `json:"cpu_s"`    // of the best run
	AllocS      float64 `json:"alloc_s"`  // of the best run
	HostCopyS   float64 `json:"hostcopy_s"`
	LayoutS     float64 `json:"layout_s"`
	GBps        float64 `json:"gbps"` // tensor bytes / best
	ReadGBps    float64 `json:"read_gbps"`
	SetupS      float64 `json:"setup_s"` // PTX JIT and pinning, once
	Device      string  `json:"device"`
	Pinned      bool    `json:"pinned"` // staging buffers page-locked
	PinError    string  `json:"pin_error,omitempty"`
	JITLog      string  `json:"jit_log,omitempty"`
}

func (c *gpuLoadCmd) Run() error {
	l, done, err := openLoader(c.Device)
	if err != nil {
		return err
	}
	defer done()
	if c.GPUOnly {
		l.CPUBelow = 0
	}
	load := l.Load
	mode := "packed"
	if c.Plain {
		load, mode = l.LoadPlain, "plain"
	}
	if c.Profile != "" {
		pf, err := os.Create(c.Profile)
		if err != nil {
			return err
		}
		defer pf.Close()
		if err := pprof.StartCPUProfile(pf); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	var runs []cuda.Stats
	var tensors int
	for range max(1, c.Repeat) {
		m, err := load(c.Path)
		if err != nil {
			return about(c.Path, err)
		}
		runs = append(runs, m.Stats)
		tensors = len(m.Tensors)
		m.Free()
	}
	best := runs[0]
	times := make([]time.Duration, len(runs))
	for i, r := range runs {
		times[i] = r.Total
		if r.Total < best.Total {
			best = r
		}
	}
	sort.Slice(times, func(a, b int) bool { return times[a] < times[b] })
	median := times[len(times)/2]
	if best.Packed == 0 && mode == "packed" {
		mode = "plain"
	}
	if c.JSON {
		e := json.NewEncoder(os.Stdout)
		e.SetIndent("", "  ")
		return e.Encode(gpuLoadJSON{Path: c.Path, Mode: mode, Files: best.Files, Tensors: tensors,
			FileBytes: best.FileBytes, DeviceBytes: best.DeviceBytes, TensorBytes: best.TensorBytes,
			Spans: best.Spans, Groups: best.Groups, Launches: best.Launches, CPUDecoded: best.CPUDecoded, Repeat: len(runs),
			BestS: best.Total.Seconds(), MedianS: median.Seconds(), ReadS: best.Read.Seconds(),
			DecodeS: best.Decode.Seconds(), CPUS: best.CPU.Seconds(), AllocS: best.Alloc.Seconds(), HostCopyS: best.HostCopy.Seconds(), LayoutS: best.Layout.Seconds(), GBps: best.GBps(), ReadGBps: best.ReadGBps(),
			SetupS: l.Setup.Seconds(), Device: l.DeviceName(), Pinned: l.PinErr == nil, PinError: errText(l.PinErr),
			JITLog: l.JITLog})
	}
	fmt.Printf("%s: %d tensors, %s\n", c.Path, tensors, best.String())
	if len(runs) > 1 {
		fmt.Printf("  best of %d: %v, median %v (kernel JIT and pinning once: %v)\n", len(runs),
			best.Total.Round(time.Microsecond), median.Round(time.Microsecond), l.Setup.Round(time.Millisecond))
	}
	return nil
}

type gpuVerifyCmd struct {
	gpuFlags
}

func (c *gpuVerifyCmd) Run() error {
	l, done, err := openLoader(c.Device)
	if err != nil {
		return err
	}
	defer done()
	st, bad, err := l.Verify(c.Path)
	if err != nil {
		return about(c.Path, err)
	}
	for _, m := range bad {
		fmt.Fprintf(os.Stderr, "glyd: %v\n", m)
	}
	if len(bad) > 0 {
		return fmt.Errorf("gpu verify: %d of %d files differ from the CPU decode", len(bad), st.Files)
	}
	fmt.Printf("%s: bit-exact: %d tensor bytes in %d file(s) match the CPU decode (%d spans, %d groups decoded on %s)\n",
		c.Path, st.TensorBytes, st.Files, st.Spans, st.Groups, l.DeviceName())
	return nil
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
