package cuda

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The committed PTX is what `make ptx` makes of the committed source. The
// flags are read from mk/ptx.mk, the rule itself. CI has no clang-16: the
// test is skipped there, saying so.
func TestPTXMatchesSource(t *testing.T) {
	clang, err := exec.LookPath("clang++-16")
	if err != nil {
		t.Skip("clang++-16 not installed: cannot check that cuda/kernels/decode.ptx matches decode.cu (run `make ptx` where it is)")
	}
	mk, err := os.ReadFile(filepath.Join("..", "mk", "ptx.mk"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^PTX_FLAGS\s*:=\s*(.+)$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("mk/ptx.mk: no PTX_FLAGS")
	}
	out := filepath.Join(t.TempDir(), "decode.ptx")
	args := append(strings.Fields(string(m[1])), filepath.Join("kernels", "decode.cu"), "-o", out)
	if b, err := exec.Command(clang, args...).CombinedOutput(); err != nil {
		t.Fatalf("clang++-16 %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, decodePTX) {
		t.Fatal("cuda/kernels/decode.ptx is stale: run `make ptx` and commit it")
	}
}

// The embedded PTX declares the kernel the loader looks up, with the
// parameters it passes and no more shared memory than a block may have
// without opting in (48 KiB).
func TestPTXKernel(t *testing.T) {
	ptx := string(decodePTX)
	if !strings.Contains(ptx, ".visible .entry "+KernelName+"(") {
		t.Fatalf("PTX lacks entry %s", KernelName)
	}
	if n := strings.Count(ptx, ".param .u64 "+KernelName+"_param_"); n != 7 {
		t.Fatalf("%s has %d pointer parameters, the loader passes 7", KernelName, n)
	}
	if !strings.Contains(ptx, ".maxntid 128, 1, 1") || BlockThreads != 128 {
		t.Fatal("block size of the PTX and BlockThreads differ")
	}
	shared := 0
	for _, m := range regexp.MustCompile(`\.shared \.align \d+ \.b8 \S+\[(\d+)\]`).FindAllStringSubmatch(ptx, -1) {
		n := 0
		for _, c := range m[1] {
			n = 10*n + int(c-'0')
		}
		shared += n
	}
	if shared == 0 || shared > 48<<10 {
		t.Fatalf("%d bytes of static shared memory", shared)
	}
	if strings.Contains(ptx, ".local") {
		t.Error("the kernel spills to local memory")
	}
}
