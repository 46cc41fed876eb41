//go:build !linux

package fsbench

import (
	"errors"
	"time"
)

var errNotLinux = errors.New("only on Linux")

func dropCaches() error                          { return errNotLinux }
func getxattr(path, name string) ([]byte, error) { return nil, errNotLinux }
func syncFS(path string) error                   { return errNotLinux }
func memTotal() int64                            { return 0 }
func cpuTime() time.Duration                     { return 0 }
