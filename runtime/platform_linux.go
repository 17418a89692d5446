package runtime

import (
	"github.com/moat-sandbox/moat/linux"
	"github.com/moat-sandbox/moat/runtime/enforce"
)

func platform() enforce.Enforcer { return linux.New() }

func platformShared() enforce.Enforcer { return linux.NewShared() }

func platformReexec(args []string) (bool, error) { return linux.Reexec(args) }

func platformSweep(stateDir string) error { return linux.Sweep(stateDir) }

func platformPrewarm() { linux.Prewarm() }
