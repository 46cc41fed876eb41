package main

import (
	"fmt"
	"strings"

	"github.com/glyd/glyd/cuda"
)

type doctorCmd struct{}

// Run says whether the GPU loader can run here, and why not: the driver,
// the device, and whether the embedded decode kernel JIT-compiles for it.
func (c *doctorCmd) Run() error {
	msg, err := cuda.Doctor()
	if err != nil {
		fmt.Printf("GPU: not usable: %v\n", err)
		fmt.Println("glyd pack/unpack and the mount work without one; 'glyd gpu' needs an NVIDIA driver (libcuda.so.1).")
		return nil
	}
	fmt.Println(msg)
	g, err := cuda.Open(0)
	if err != nil {
		fmt.Printf("GPU 0: cannot open it again: %v\n", err)
		return nil
	}
	defer g.Close()
	l, err := cuda.NewLoader(g)
	if err != nil {
		fmt.Printf("decode kernel: not usable: %v\n", err)
		return nil
	}
	defer l.Close()
	fmt.Printf("decode kernel: JIT-compiled from the embedded PTX in %v", l.Setup.Round(1e5))
	if l.PinErr != nil {
		fmt.Printf("; staging buffers not page-locked (%v)", l.PinErr)
	}
	fmt.Println()
	for _, line := range strings.Split(l.JITLog, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			fmt.Println("  " + line)
		}
	}
	return nil
}
