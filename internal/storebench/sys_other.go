//go:build !unix

package storebench

import (
	"errors"
	"time"
)

func cpuTime() time.Duration { return 0 }

func dropCaches() error { return errors.New("not supported on this system") }
