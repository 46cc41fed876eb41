package cuda

import "fmt"

// Doctor says whether a GPU is usable here, and why not: the driver
// library, the devices it sees, and the first device's name, memory and
// compute capability.
func Doctor() (string, error) {
	g, err := Open(0)
	if err != nil {
		return "", err
	}
	defer g.Close()
	return fmt.Sprintf("GPU 0: %s, %.1f GiB, compute capability %d.%d, %d SMs; CUDA driver API %d.%d",
		g.Name, float64(g.Memory)/(1<<30), g.Major, g.Minor, g.SMs, g.Driver/1000, g.Driver%1000/10), nil
}
