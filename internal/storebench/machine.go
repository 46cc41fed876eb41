package storebench

import (
	"runtime"

	"github.com/glyd/glyd/internal/machine"
)

// Machine describes where the run happened.
type Machine struct {
	CPU       string // "model name" from /proc/cpuinfo
	Cores     int    // logical CPUs
	Kernel    string
	Go        string // the Go release the benchmark was built with
	OS        string
	LoadStart string // /proc/loadavg's 1, 5 and 15 minute averages at the start
	LoadEnd   string // and at the end
}

func machineInfo() Machine {
	return Machine{
		CPU:       machine.CPU(),
		Cores:     runtime.NumCPU(),
		Kernel:    machine.Kernel(),
		Go:        runtime.Version(),
		OS:        runtime.GOOS + "/" + runtime.GOARCH,
		LoadStart: machine.LoadAvg(),
	}
}
