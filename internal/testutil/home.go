package testutil

import "os"

// OwnHome gives this test binary a home of its own under /var/tmp (HOME),
// and returns what removes it. Every run lists its state directory in the
// user's home state directory, and every sandbox hides each one listed
// there: test packages that ran at once under one home hid each other's
// state directories, which each removes as it ends, and a sandbox's setup
// failed on a mount point that had just vanished (CI33). That is still
// so for a user's runs (docs/SECURITY.md); a test sees its own alone.
func OwnHome() func() {
	d, err := os.MkdirTemp("/var/tmp", "moat-home-")
	if err != nil {
		return func() {}
	}
	old, had := os.LookupEnv("HOME")
	os.Setenv("HOME", d)
	return func() {
		if had {
			os.Setenv("HOME", old)
		}
		os.RemoveAll(d)
	}
}
