package cdc

import "fmt"

// randBytes returns n pseudo-random bytes from splitmix64(seed): a generator
// defined here, so the pinned boundaries never depend on a library's stream.
func randBytes(n int, seed uint64) []byte {
	out := make([]byte, n)
	s := seed
	for i := 0; i < n; i += 8 {
		v := splitmix64(&s)
		for j := 0; j < 8 && i+j < n; j++ {
			out[i+j] = byte(v >> (8 * j))
		}
	}
	return out
}

func sizeName(n int) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%dMiB", n>>20)
	}
	if n%(1<<10) == 0 {
		return fmt.Sprintf("%dKiB", n>>10)
	}
	return fmt.Sprint(n)
}
