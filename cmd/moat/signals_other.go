//go:build !unix

package main

import "os"

var forwardedSignals = []os.Signal{os.Interrupt}
