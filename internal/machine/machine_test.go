package machine

import (
	"strings"
	"testing"
)

func TestCPUModel(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\nflags\t: fpu\n\nprocessor\t: 1\nmodel name\t: other\n", "Intel(R) Xeon(R) CPU @ 2.20GHz"},
		{"processor\t: 0\nBogoMIPS\t: 50.00\n\nHardware\t: BCM2835\n", "BCM2835"},
		{"model name\t:\nHardware : X\n", "X"},
		{"", "unknown"},
	} {
		if got := cpuModel(strings.NewReader(c.in)); got != c.want {
			t.Errorf("cpuModel(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if LoadAvg() == "" {
		t.Error("empty load average")
	}
}
