//go:build unix

package runtime

import (
	"fmt"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/runtime/live"
)

func writableDir(d string) bool { return unix.Access(d, unix.W_OK) == nil }

// SettingsCheck returns a check for settings.Options.Check: a default
// settings file that a live sandbox (or one killed before its audit: see
// AuditDeadRuns) could have written since it started is refused, because a sandboxed command must never widen a later run (when
// that run ends, its audit takes such a file out).
func SettingsCheck(stateDir string) func(file string) error {
	if stateDir == "" {
		stateDir = DefaultStateDir()
	}
	dir := filepath.Join(stateDir, "journal")
	return func(file string) error {
		ws := live.Writers(dir) // the dead ones too, until their audit
		if len(ws) == 0 {
			return nil
		}
		real := file
		if r, err := filepath.EvalSymlinks(file); err == nil {
			real = r
		}
		changed := func(w live.Writer) bool {
			for _, p := range []string{file, filepath.Dir(file), real} {
				var st syscall.Stat_t
				if syscall.Lstat(p, &st) == nil && ctime(&st) >= w.Since.UnixNano() {
					return true
				}
			}
			return false
		}
		for _, w := range ws {
			if (w.Writes(file) || w.Writes(real)) && changed(w) && w.Dead {
				return fmt.Errorf("changed since a moat run that could write it (%s, started %s) was killed before its git audit: moat does not load settings a sandbox could have written; the next moat run or session audits that run's trees first", w.ID, w.Since.Format("15:04:05"))
			}
			if (w.Writes(file) || w.Writes(real)) && changed(w) {
				return fmt.Errorf("changed while a sandboxed command that can write it is running (moat run %s, started %s): moat does not load settings a sandbox could have written; when that run ends its audit takes the file out if it did", w.ID, w.Since.Format("15:04:05"))
			}
		}
		return nil
	}
}
