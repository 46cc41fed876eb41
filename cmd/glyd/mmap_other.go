//go:build !unix

package main

import "os"

// mapInput reads a file into memory.
func mapInput(name string) ([]byte, func(), error) {
	b, err := os.ReadFile(name)
	return b, func() {}, err
}
