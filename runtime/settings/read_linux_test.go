package settings

import (
	"errors"
	"os"
	"strings"
	"testing"
	"time"
)

// Files of the kernel's pseudo filesystems report themselves as regular:
// refused at once, without a read (as root, /proc/kmsg blocked moat policy
// for ever).
func TestKernelFilesystemSettingsFiles(t *testing.T) {
	e := newEnv(t)
	cases := map[string]string{
		"/proc/self/status": "procfs",
		"/proc/version":     "procfs",
		"/sys/kernel/mm/transparent_hugepage/enabled": "sysfs",
	}
	if os.Geteuid() == 0 {
		cases["/proc/kmsg"] = "procfs"
	}
	for file, want := range cases {
		if _, err := os.Stat(file); err != nil {
			t.Logf("%s: %v", file, err)
			continue
		}
		done := make(chan error, 1)
		go func() { _, err := e.load(file); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "not a settings file") || !errors.Is(err, ErrInvalid) {
				t.Errorf("%s: want an error naming %s, got %v", file, want, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: reading the settings file hangs", file)
		}
	}
}
