//go:build !amd64 || noasm

package tensor

// No assembly here: the Go loops decode everything.
const haveAsm = false

// useAsm mirrors the amd64 switch for tests; there is nothing to switch.
var useAsm = false

// AsmDecoder reports whether the assembly decode loop is in use.
func AsmDecoder() bool { return false }

func decodeJobs(jobs []GroupJob) (int, error) { return decodeJobsGo(jobs) }

func combine16(out, syms, raw []byte, k Kind) { combine16Go(out, syms, raw, k) }
