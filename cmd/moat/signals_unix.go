//go:build unix

package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// forwardedSignals reach the command (SIGWINCH resizes its terminal).
var forwardedSignals = []os.Signal{unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGWINCH, unix.SIGUSR1, unix.SIGUSR2}
