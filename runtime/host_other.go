//go:build !unix

package runtime

func writableDir(string) bool { return false }

// SettingsCheck has nothing to check where moat has no sandbox.
func SettingsCheck(string) func(string) error { return nil }
