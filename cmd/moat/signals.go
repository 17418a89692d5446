package main

import (
	"os"
	"os/signal"
)

// processExits is set by main: the process ends when the command line
// returns, and nothing need be undone before (in-process callers, the
// tests and moat serve's runs, leave it false).
var processExits bool

// catchSignals subscribes to forwardedSignals and returns their channel
// and what ends the subscription. Go's signal.Notify hands each signal to
// a thread of its own that updates its mask and waits for the answer:
// 0.15-1 ms in a fresh process here, and as much again for signal.Stop
// (docs/PERFORMANCE.md, nineteenth session). So the subscription is made
// on a goroutine beside the launch, and not undone when the process ends
// anyway. A signal that comes before it is in place has its default
// action on moat, as one before moat's main always had: moat ends, and
// its sandbox with it (stage 2 is killed when its parent dies).
func catchSignals() (chan os.Signal, func()) {
	sigs := make(chan os.Signal, 16)
	subscribed := make(chan struct{})
	go func() {
		signal.Notify(sigs, forwardedSignals...)
		close(subscribed)
	}()
	return sigs, func() {
		if processExits {
			return
		}
		<-subscribed
		signal.Stop(sigs)
	}
}
