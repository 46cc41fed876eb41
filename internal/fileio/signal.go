package fileio

import (
	"os"
	"os/signal"
	"syscall"
	"time"
)

// HandleSignals makes SIGINT, SIGTERM and SIGHUP remove every uncommitted
// output file before the process dies. notify, when not nil, runs after the
// files are gone (to print a message); the process then ends by the same
// signal, so a shell sees it was interrupted.
func HandleSignals(notify func(os.Signal)) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		sig := <-ch
		RemoveTemps()
		if notify != nil {
			notify(sig)
		}
		signal.Reset(sig)
		if p, err := os.FindProcess(os.Getpid()); err == nil {
			_ = p.Signal(sig)
			time.Sleep(200 * time.Millisecond) // let it land
		}
		code := 1
		if s, ok := sig.(syscall.Signal); ok {
			code = 128 + int(s)
		}
		os.Exit(code)
	}()
}
