// Package workers runs indexed work on a few goroutines: the loop the
// codec, the tensor decoder and the packed format share.
package workers

import (
	"sync"
	"sync/atomic"
)

// Run runs fn(0) … fn(n-1) on up to threads goroutines and returns the
// first error. Workers take the next index from a counter: no goroutine or
// semaphore hand-off per unit (those futex wake-ups cost ~9% of a
// single-threaded decode in profiles), and with one thread, or one unit, it
// is a plain loop.
func Run(n, threads int, fn func(i int) error) error {
	if threads <= 1 || n <= 1 {
		for i := range n {
			if err := fn(i); err != nil {
				return err
			}
		}
		return nil
	}
	var next atomic.Int64
	var failed atomic.Bool
	var once sync.Once
	var first error
	var wg sync.WaitGroup
	for range min(threads, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !failed.Load() {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(i); err != nil {
					once.Do(func() { first = err })
					failed.Store(true)
				}
			}
		}()
	}
	wg.Wait()
	return first
}
