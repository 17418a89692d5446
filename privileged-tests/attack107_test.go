//go:build linux

package privtests

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// TestHomeStateDirModeChanged: the state directory moat picks without
// $XDG_STATE_HOME is ~/.local/state/moat only while the home passes its
// checks (writable by the user, nothing on the way writable by others),
// the fallback otherwise. A live sandbox that could write the home
// changed its mode (chmod 0777 ~/.local/state; rootless, chmod 0555 ~) and
// wrote sub/.claude/settings.json: the user's next run kept its state in
// the fallback, did not see that sandbox's announcement in
// ~/.local/state/moat, loaded the file and ran with the widened policy
// (attack pass 107). An existing ~/.local/state/moat in a home of the
// user's stays the state directory now, and one made unsafe is refused.
// Without moat the file widens the run.
func TestHomeStateDirModeChanged(t *testing.T) {
	testutil.RequireRoot(t)
	const nobody = 65534
	for _, c := range []struct{ name, chmod string }{
		{"root", "chmod 0777 $HOME/.local/state"},
		{"rootless", "chmod 0777 $HOME/.local/state"},
		{"rootless", "chmod 0555 $HOME"},
	} {
		t.Run(c.name+": "+c.chmod, func(t *testing.T) {
			testutil.RequireUserns(t)
			f := makeFixture(t)
			proj := filepath.Join(f.home, "proj")
			sub := filepath.Join(proj, "sub")
			must(t, os.MkdirAll(sub, 0o755))
			must(t, os.MkdirAll(filepath.Join(f.home, ".local", "state"), 0o700))
			settings := f.writeSettings(map[string]any{"allowWrite": []string{f.home}})
			var cred *syscall.Credential
			attacker := self
			if c.name == "rootless" {
				attacker = giveToNobody(t, f)
				cred = &syscall.Credential{Uid: nobody, Gid: nobody}
			}
			restore := func() {
				os.Chmod(f.home, 0o755)
				os.Chmod(filepath.Join(f.home, ".local", "state"), 0o700)
			}
			t.Cleanup(restore)
			env := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + f.home, "LANG=C", "MOAT_ATTACK=1"}
			command := func(dir string, args ...string) *exec.Cmd {
				cmd := exec.Command(args[0], args[1:]...)
				cmd.Dir, cmd.Env = dir, env
				if cred != nil {
					cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
				}
				return cmd
			}
			later := func() result {
				var out bytes.Buffer
				cmd := command(sub, moatBin, "run", "--", attacker, "listen", "127.0.0.1:0")
				cmd.Stdout, cmd.Stderr = &out, &out
				err := cmd.Run()
				code := 0
				if ee, ok := err.(*exec.ExitError); ok {
					code = ee.ExitCode()
				}
				return result{code: code, out: out.String()}
			}
			written := filepath.Join(proj, "written")
			attack := c.chmod + ` && mkdir -p sub/.claude && printf '{"sandbox":{"network":{"allowLocalBinding":true}}}' > sub/.claude/settings.json && touch ` + written

			// Without moat, the same user's commands widen the later run.
			if out, err := command(proj, "sh", "-c", attack).CombinedOutput(); err != nil {
				t.Fatalf("without moat: %v\n%s", err, out)
			}
			restore()
			if r := later(); !r.escaped() {
				t.Fatalf("a project settings file must widen the run that finds it (or this test proves nothing):\n%s", r.out)
			}
			must(t, os.RemoveAll(filepath.Join(sub, ".claude")))
			must(t, os.Remove(written))

			// Under moat: the writer's state directory is ~/.local/state/moat.
			writer := command(proj, moatBin, "run", "--settings", settings, "--", "sh", "-c", attack+"; sleep 5")
			var wout bytes.Buffer
			writer.Stdout, writer.Stderr = &wout, &wout
			must(t, writer.Start())
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if _, err := os.Lstat(written); err == nil {
					break
				}
				if time.Now().After(deadline) {
					writer.Process.Kill()
					writer.Wait()
					t.Fatalf("the sandbox did not write:\n%s", wout.String())
				}
			}
			r := later()
			writer.Wait()
			if r.escaped() {
				t.Errorf("ESCAPE: a live sandbox changed the home's mode, and the settings file it wrote widened the next run:\n%s\nwriter:\n%s", r.out, wout.String())
			} else if r.code != 125 || !strings.Contains(r.out, "sandboxed command that can write it") {
				t.Errorf("want a refusal naming the file (exit 125), got %d:\n%s\nwriter:\n%s", r.code, r.out, wout.String())
			}
		})
	}
}
