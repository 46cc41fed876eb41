package main

import (
	"fmt"

	"github.com/glyd/glyd/cuda"
)

type doctorCmd struct{}

// Run says whether the GPU loader can run here, and why not.
func (c *doctorCmd) Run() error {
	msg, err := cuda.Doctor()
	if err != nil {
		fmt.Printf("GPU: not usable: %v\n", err)
		fmt.Println("glyd pack/unpack and the mount work without one; 'glyd gpu' needs an NVIDIA driver (libcuda.so.1).")
		return nil
	}
	fmt.Println(msg)
	return nil
}
