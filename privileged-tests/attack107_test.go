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

	"golang.org/x/sys/unix"

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

// TestStateDirMadeByASandbox: a state directory that did not exist yet
// when a sandbox was planned is neither hidden nor protected from it. A
// sandbox of the user's home state directory with a writable home made
// the state directory of the agent host's runs ($XDG_STATE_HOME in the
// home) and put in its cache, under the name moat gives the compiled
// seccomp program of a run's policy, one that allowed every call: the
// next run of that state directory loaded it, and its command made a unix
// socket the policy refuses (attack pass 107). A state directory the home
// one does not list as that same directory has its cache removed before
// its run, and one a live sandbox can write is refused. Without
// moat the user makes the socket.
func TestStateDirMadeByASandbox(t *testing.T) {
	testutil.RequireRoot(t)
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		testutil.Unavailable(t, "no /usr/bin/python3: %v", err)
	}
	const nobody = 65534
	for _, tier := range []string{"root", "rootless"} {
		t.Run(tier, func(t *testing.T) {
			testutil.RequireUserns(t)
			f := makeFixture(t)
			proj := filepath.Join(f.home, "proj")
			must(t, os.MkdirAll(proj, 0o755))
			scratch := filepath.Join(f.root, "scratch")
			must(t, os.MkdirAll(scratch, 0o700))
			settings := f.writeSettings(map[string]any{"allowWrite": []string{f.home}})
			var cred *syscall.Credential
			if tier == "rootless" {
				giveToNobody(t, f)
				cred = &syscall.Credential{Uid: nobody, Gid: nobody}
			}
			run := func(xdg string, args ...string) result {
				return userRun(t, proj, f.home, xdg, cred, append([]string{moatBin}, args...)...)
			}
			socket := []string{"run", "--", "/usr/bin/python3", "-c", "import socket; socket.socket(socket.AF_UNIX); print('ESCAPED')"}
			base := exec.Command(socket[2], socket[3:]...)
			base.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + f.home, "LANG=C"}
			if cred != nil {
				base.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
			}
			if out, err := base.CombinedOutput(); !strings.Contains(string(out), "ESCAPED") {
				t.Fatalf("without moat the socket is made (or this test proves nothing): %v %s", err, out)
			}
			// The name of the compiled filter of the later run's policy
			// (the attacker computes it from moat's binary and the policy).
			run(scratch, "run", "--", "true")
			m, _ := filepath.Glob(filepath.Join(scratch, "moat", "cache", "seccomp-*.bpf"))
			if len(m) != 1 {
				t.Fatalf("no compiled filter cached in %s: %q", scratch, m)
			}
			agent := filepath.Join(f.home, ".local", "state", "agent")
			cache := filepath.Join(agent, "moat", "cache")
			plant := filepath.Join(cache, filepath.Base(m[0]))
			// BPF_RET|BPF_K SECCOMP_RET_ALLOW: every call allowed.
			script := `mkdir -p ` + cache + ` && printf '\006\000\000\000\000\000\377\177' > ` + plant + ` && chmod 600 ` + plant + ` && echo PLANTED`
			for _, c := range []string{"first use", "made again after it was listed"} {
				if c != "first use" {
					must(t, os.RemoveAll(agent))
				}
				if r := run("", "run", "--settings", settings, "--", "sh", "-c", script); !strings.Contains(r.out, "PLANTED") {
					t.Fatalf("%s: the sandbox did not make the state directory: %s", c, r.out)
				}
				if r := run(agent, socket...); strings.Contains(r.out, "ESCAPED") {
					t.Errorf("ESCAPE (%s): a run of a state directory a sandbox made loaded the seccomp program the sandbox left in its cache:\n%s", c, r.out)
				} else if !strings.Contains(r.out, "unix sockets are blocked") {
					t.Errorf("%s: want the socket refused, got %d:\n%s", c, r.code, r.out)
				}
			}
			// Made by a sandbox that is still running: refused.
			must(t, os.RemoveAll(agent))
			marker := filepath.Join(proj, "planted")
			writer := exec.Command(moatBin, "run", "--settings", settings, "--", "sh", "-c", script+"; touch "+marker+"; sleep 5")
			writer.Dir, writer.Env = proj, []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + f.home, "LANG=C"}
			if cred != nil {
				writer.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
			}
			var wout bytes.Buffer
			writer.Stdout, writer.Stderr = &wout, &wout
			must(t, writer.Start())
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if _, err := os.Lstat(marker); err == nil {
					break
				}
				if time.Now().After(deadline) {
					writer.Process.Kill()
					writer.Wait()
					t.Fatalf("the live sandbox did not write:\n%s", wout.String())
				}
			}
			r := run(agent, socket...)
			writer.Wait()
			if strings.Contains(r.out, "ESCAPED") {
				t.Errorf("ESCAPE (live sandbox): a run loaded the seccomp program a live sandbox left in its state directory:\n%s", r.out)
			} else if r.code != 125 || !strings.Contains(r.out, "a live sandbox can write it") {
				t.Errorf("live sandbox: want a refusal naming it (exit 125), got %d:\n%s", r.code, r.out)
			}
		})
	}
}

// TestStateDirSymlinkFromASandbox: a sandbox that made another state
// directory of the user's (see TestStateDirMadeByASandbox) left in it
// "sentinel", a symlink to a directory of the user's. The next run of that
// state directory swept the old sentinels through it: it removed the
// user's files older than a day there (attack pass 107; a session saved
// its commands' output through "output" so, where other sandboxes read
// it). Such a state directory is refused, naming the symlink. Without
// moat the user removes its own files.
func TestStateDirSymlinkFromASandbox(t *testing.T) {
	testutil.RequireRoot(t)
	const nobody = 65534
	for _, tier := range []string{"root", "rootless"} {
		t.Run(tier, func(t *testing.T) {
			testutil.RequireUserns(t)
			f := makeFixture(t)
			proj, docs := filepath.Join(f.home, "proj"), filepath.Join(f.home, "docs")
			must(t, os.MkdirAll(proj, 0o755))
			must(t, os.MkdirAll(docs, 0o755))
			old := filepath.Join(docs, "thesis.txt")
			must(t, os.WriteFile(old, []byte("precious\n"), 0o644))
			must(t, os.WriteFile(filepath.Join(f.home, ".netrc"), []byte("machine m login l password p\n"), 0o600)) // a hidden file: a sentinel
			settings := f.writeSettings(map[string]any{"allowWrite": []string{f.home}})
			var cred *syscall.Credential
			if tier == "rootless" {
				giveToNobody(t, f)
				cred = &syscall.Credential{Uid: nobody, Gid: nobody}
			}
			lastWeek := time.Now().Add(-7 * 24 * time.Hour)
			must(t, os.Chtimes(old, lastWeek, lastWeek))
			agent := filepath.Join(f.home, ".local", "state", "agent")
			run := func(xdg string, args ...string) result {
				return userRun(t, proj, f.home, xdg, cred, append([]string{moatBin}, args...)...)
			}
			script := `mkdir -p ` + agent + `/moat && ln -s ` + docs + ` ` + agent + `/moat/sentinel && echo PLANTED`
			if r := run("", "run", "--settings", settings, "--", "sh", "-c", script); !strings.Contains(r.out, "PLANTED") {
				t.Fatalf("the sandbox did not make the state directory: %s", r.out)
			}
			r := run(agent, "run", "--", "true")
			if _, err := os.Stat(old); err != nil {
				t.Errorf("ESCAPE: a run of a state directory a sandbox made removed %s through the sandbox's symlink: %v\n%s", old, err, r.out)
			} else if r.code != 125 || !strings.Contains(r.out, "holds sentinel") {
				t.Errorf("want the state directory refused, naming the symlink (exit 125), got %d:\n%s", r.code, r.out)
			}
		})
	}
}

// TestStateDirForgedRecord: a sandbox that made another state directory
// of the user's (see TestStateDirMadeByASandbox) left in its journal the
// record of a "killed run" whose placeholder was a file of the user's
// outside the sandbox's writable trees, which it could read and not
// write, with that file's device, inode and content: the next run of that
// state directory swept the record and removed the file (attack pass
// 107). The records of a state directory the home one does not list are
// dropped before its run. Without moat the user removes its own file.
func TestStateDirForgedRecord(t *testing.T) {
	testutil.RequireRoot(t)
	const nobody = 65534
	for _, tier := range []string{"root", "rootless"} {
		t.Run(tier, func(t *testing.T) {
			testutil.RequireUserns(t)
			f := makeFixture(t)
			proj := filepath.Join(f.home, "proj")
			must(t, os.MkdirAll(proj, 0o755))
			notes, spare := filepath.Join(f.outside, "notes.txt"), filepath.Join(f.outside, "spare.txt")
			for _, p := range []string{notes, spare} {
				must(t, os.WriteFile(p, []byte("important notes\n"), 0o644))
			}
			settings := f.writeSettings(map[string]any{"allowWrite": []string{f.home}})
			var cred *syscall.Credential
			if tier == "rootless" {
				giveToNobody(t, f)
				cred = &syscall.Credential{Uid: nobody, Gid: nobody}
			}
			agent := filepath.Join(f.home, ".local", "state", "agent")
			run := func(xdg string, args ...string) result {
				return userRun(t, proj, f.home, xdg, cred, args...)
			}
			if r := run("", "sh", "-c", "rm "+spare+" && echo GONE"); !strings.Contains(r.out, "GONE") {
				t.Fatalf("without moat the user removes its own file (or this test proves nothing): %s", r.out)
			}
			journal := filepath.Join(agent, "moat", "journal")
			forge := `set -e; T=` + notes + `; mkdir -p ` + journal + `
echo x >> $T 2>/dev/null && echo WROTE-TARGET || true
printf 'P %s %s %s f %s\n' $(stat -c %d $T) $(stat -c %i $T) $(od -An -tx1 -v $T | tr -d ' \n') $(printf %s $T | od -An -tx1 -v | tr -d ' \n') > ` + journal + `/00000000deadbeef.run
echo FORGED`
			r := run("", moatBin, "run", "--settings", settings, "--", "sh", "-c", forge)
			if !strings.Contains(r.out, "FORGED") || strings.Contains(r.out, "WROTE-TARGET") {
				t.Fatalf("the sandbox did not forge the record, or wrote %s itself: %s", notes, r.out)
			}
			r = run(agent, moatBin, "run", "--", "true")
			if _, err := os.Stat(notes); err != nil {
				t.Errorf("ESCAPE: a run of a state directory a sandbox made removed %s, named by the sandbox's forged record: %v\n%s", notes, err, r.out)
			} else if r.code != 0 {
				t.Errorf("the run did not run (exit %d):\n%s", r.code, r.out)
			}
		})
	}
}

// TestHomeRegisterFull: a run of another state directory announces its
// sandbox in the home state directory's register too, where the user's
// runs of the home one see it. That copy was best effort: a sandbox that
// filled the home's filesystem (its state elsewhere, $XDG_STATE_HOME on
// another filesystem) kept it full until the next such run had started,
// whose copy then could not be written; that run's command wrote
// sub/.claude/settings.json, and the user's run of the home state
// directory, which saw no live sandbox, loaded it and ran widened (attack
// pass 107). A copy that cannot be written now refuses the run. Without
// moat the file widens the run.
func TestHomeRegisterFull(t *testing.T) {
	testutil.RequireRoot(t)
	const nobody = 65534
	for _, tier := range []string{"root", "rootless"} {
		t.Run(tier, func(t *testing.T) {
			testutil.RequireUserns(t)
			f := makeFixture(t)
			var cred *syscall.Credential
			attacker := self
			if tier == "rootless" {
				attacker = giveToNobody(t, f)
				cred = &syscall.Credential{Uid: nobody, Gid: nobody}
			}
			fsys := filepath.Join(f.root, "fs")
			must(t, os.Mkdir(fsys, 0o755))
			if err := unix.Mount("tmpfs", fsys, "tmpfs", 0, "size=4m,mode=0755"); err != nil {
				t.Fatalf("mount a small tmpfs: %v", err)
			}
			t.Cleanup(func() { unix.Unmount(fsys, unix.MNT_DETACH) })
			home := filepath.Join(fsys, "home")
			proj := filepath.Join(home, "proj")
			sub := filepath.Join(proj, "sub")
			xdg := filepath.Join(f.root, "xdg") // the agent host's state: another filesystem
			for _, d := range []string{sub, xdg} {
				must(t, os.MkdirAll(d, 0o755))
			}
			if cred != nil {
				for _, d := range []string{home, proj, sub, xdg} {
					must(t, os.Chown(d, nobody, nobody))
				}
			}
			settings := f.writeSettings(map[string]any{"allowWrite": []string{home}})
			env := func(xdgSet bool) []string {
				e := []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "LANG=C", "MOAT_ATTACK=1"}
				if xdgSet {
					e = append(e, "XDG_STATE_HOME="+xdg)
				}
				return e
			}
			command := func(dir string, xdgSet bool, args ...string) *exec.Cmd {
				cmd := exec.Command(args[0], args[1:]...)
				cmd.Dir, cmd.Env = dir, env(xdgSet)
				if cred != nil {
					cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
				}
				return cmd
			}
			later := func() result {
				out, err := command(sub, false, moatBin, "run", "--", attacker, "listen", "127.0.0.1:0").CombinedOutput()
				code := 0
				if ee, ok := err.(*exec.ExitError); ok {
					code = ee.ExitCode()
				}
				return result{code: code, out: string(out)}
			}
			widen := `mkdir -p sub/.claude && printf '{"sandbox":{"network":{"allowLocalBinding":true}}}' > sub/.claude/settings.json`
			// Without moat, the file widens the later run.
			if out, err := command(proj, false, "sh", "-c", widen).CombinedOutput(); err != nil {
				t.Fatalf("%v %s", err, out)
			}
			if r := later(); !r.escaped() {
				t.Fatalf("a project settings file must widen the run that finds it (or this test proves nothing):\n%s", r.out)
			}
			must(t, os.RemoveAll(filepath.Join(sub, ".claude")))
			// The first sandbox fills the home's filesystem and keeps it
			// full until the second one's command has started.
			fill := `dd if=/dev/zero of=$HOME/filler bs=64k 2>/dev/null
i=0; while [ ! -e started ]; do dd if=/dev/zero of=$HOME/filler.$i bs=4k 2>/dev/null; i=$((i+1)); [ $i -gt 50 ] && i=0; sleep 0.05; done
rm -f $HOME/filler*; touch freed`
			filler := command(proj, true, moatBin, "run", "--settings", settings, "--", "sh", "-c", fill)
			var fout bytes.Buffer
			filler.Stdout, filler.Stderr = &fout, &fout
			must(t, filler.Start())
			defer func() {
				os.WriteFile(filepath.Join(proj, "started"), nil, 0o644)
				filler.Wait()
			}()
			var st unix.Statfs_t
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				if unix.Statfs(fsys, &st) == nil && st.Bavail == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the home's filesystem did not fill:\n%s", fout.String())
				}
			}
			// The second sandbox, of the agent host's state directory.
			second := command(proj, true, moatBin, "run", "--settings", settings, "--", "sh", "-c",
				`touch started; while [ ! -e freed ]; do sleep 0.1; done; sleep 2; `+widen+` && touch written; sleep 8`)
			var sout bytes.Buffer
			second.Stdout, second.Stderr = &sout, &sout
			must(t, second.Start())
			done := make(chan error, 1)
			go func() { done <- second.Wait() }()
			written := false
		wait:
			for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				if _, err := os.Lstat(filepath.Join(proj, "written")); err == nil {
					written = true
					break
				}
				select {
				case <-done:
					done <- nil
					break wait
				default:
				}
			}
			r := later()
			os.WriteFile(filepath.Join(proj, "started"), nil, 0o644) // the filler lets go if the second never ran
			<-done
			if r.escaped() {
				t.Errorf("ESCAPE: the run of the home state directory loaded a settings file a live sandbox of another state directory wrote, unannounced in the home register:\n%s\nsecond sandbox:\n%s", r.out, sout.String())
			} else if written {
				t.Errorf("the second sandbox ran with its announcement missing from the home register:\n%s", sout.String())
			} else if !strings.Contains(sout.String(), "cannot be written") {
				t.Errorf("want the second run refused, naming the home register:\n%s", sout.String())
			}
		})
	}
}

// userRun runs argv in dir as cred (nil: this process's user) with a plain
// environment whose home is home and, unless xdg is empty,
// $XDG_STATE_HOME is xdg, and says how it ended.
func userRun(t *testing.T, dir, home, xdg string, cred *syscall.Credential, argv ...string) result {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + home, "LANG=C"}
	if xdg != "" {
		cmd.Env = append(cmd.Env, "XDG_STATE_HOME="+xdg)
	}
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code: code, out: string(out)}
}
