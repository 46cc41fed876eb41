package main

import "runtime"

func defaultThreads() int { return runtime.GOMAXPROCS(0) }
