//go:build !linux

package runtime

// birthNS: only Linux hides by a mount on the file (recordHidden).
func birthNS(string) (int64, bool) { return 0, false }
