//go:build !linux && !darwin

package runtime

import "github.com/moat-sandbox/moat/runtime/enforce"

// No enforcer on this platform (yet): Run says so.
func platform() enforce.Enforcer { return nil }

func platformShared() enforce.Enforcer { return nil }

func platformReexec([]string) (bool, error) { return false, nil }

func platformSweep(string) error { return nil }

func platformPrewarm() {}
