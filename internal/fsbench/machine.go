package fsbench

import (
	"runtime"

	"github.com/glyd/glyd/internal/machine"
)

// Machine describes where the run happened.
type Machine struct {
	CPU       string // "model name" from /proc/cpuinfo
	Cores     int    // logical CPUs
	Memory    int64  // bytes of RAM (the page cache can hold the test file when it is well above it)
	Kernel    string
	Go        string // the Go release the benchmark was built with
	OS        string
	LoadStart string // /proc/loadavg's 1, 5 and 15 minute averages at the start
	LoadEnd   string // and at the end
	WorkFS    string // file system and device of the scratch directory ("local disk")
}

func machineInfo() Machine {
	return Machine{
		CPU:       machine.CPU(),
		Cores:     runtime.NumCPU(),
		Memory:    memTotal(),
		Kernel:    machine.Kernel(),
		Go:        runtime.Version(),
		OS:        runtime.GOOS + "/" + runtime.GOARCH,
		LoadStart: machine.LoadAvg(),
	}
}
