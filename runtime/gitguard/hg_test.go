package gitguard

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
)

// An hgrc that hg clone writes is kept; anything that could run a
// program is not (attack pass 89).
func TestHgrcHarmless(t *testing.T) {
	for _, c := range []struct {
		text string
		want bool
	}{
		{"# example\n[paths]\ndefault = /src\n\n[ui]\n# username = x\n", true},
		{"[ui]\nusername = Jane <j@x>\n", true},
		{"[paths]\ndefault = /a\n  /b\n", true},
		{"[hooks]\npre-status = touch x\n", false},
		{"[paths]\ndefault = /a\n[extensions]\nevil = /x.py\n", false},
		{"[ui]\neditor = sh -c x\n", false},
		{"[paths]\r[alias]\rst = !x\r", false}, // a lone CR ends a line for hg
		{"%include /x\n", false},
		{"[paths]\n%unset default\n", false},
		{"[ paths]\ndefault = /a\n", false},
		{"default = /a\n", false},
		{"  continued\n", false},
		{"[paths\n", false},
	} {
		if got := hgrcHarmless([]byte(c.text)); got != c.want {
			t.Errorf("hgrcHarmless(%q) = %v, want %v", c.text, got, c.want)
		}
	}
}

func TestHgIncludes(t *testing.T) {
	got := hgIncludes([]byte("%include ../shared.rc\n%include ~/x.rc\r%include /abs\n%include $HOME/y\n%include ${XDG_CONFIG_HOME}/hg/z.rc\n%include $OTHER/w\n%include ${HOME\n%include $/v\n%includex z\n #%include no\n"), "/r/.hg", "/home/u",
		map[string]string{"HOME": "/home/u", "XDG_CONFIG_HOME": "/x"})
	want := []string{"/r/shared.rc", "/home/u/x.rc", "/abs", "/home/u/y", "/x/hg/z.rc"}
	if !slices.Equal(got, want) {
		t.Errorf("hgIncludes = %v, want %v", got, want)
	}
}

// The user's ~/.hgrc, older than the run, includes a file the run makes
// in a writable home (%include ~/.hgrc.local, a common local override;
// hg skips an include that does not exist): the included file's hook ran
// at the user's next hg status. ~/.config/hg/hgrc's includes were judged,
// ~/.hgrc's were not (attack pass 92).
func TestAuditHomeHgrcInclude(t *testing.T) {
	if _, err := exec.LookPath("hg"); err != nil {
		t.Skip("hg (Mercurial) is not installed")
	}
	s := newScene(t)
	s.roots = []string{s.w, s.home}
	hgRepo := filepath.Join(s.w, "hgr")
	s.write(filepath.Join(s.home, ".hgrc"), "[ui]\nusername = u\n%include ~/.hgrc.local\n")
	hg := func() bool {
		t.Helper()
		os.Remove(s.mark)
		cmd := exec.Command("hg", "status")
		cmd.Dir, cmd.Env = hgRepo, []string{"HOME=" + s.home, "PATH=" + os.Getenv("PATH")}
		_, _ = cmd.CombinedOutput()
		_, err := os.Stat(s.mark)
		os.Remove(s.mark)
		return err == nil
	}
	cmd := exec.Command("hg", "init", hgRepo)
	cmd.Env = []string{"HOME=" + s.home, "PATH=" + os.Getenv("PATH")}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hg init: %v\n%s", err, out)
	}
	s.begin()
	s.write(filepath.Join(s.home, ".hgrc.local"), "[hooks]\npre-status = "+s.prog+"\n")
	if !hg() {
		t.Fatal("the included file's hook did not run before the audit: this test cannot see an escape")
	}
	s.audit()
	if hg() {
		t.Error("ESCAPE: the user's hg status ran the hook of a file ~/.hgrc includes, made during the run")
	}
}

// hg reads $XDG_CONFIG_HOME/hg/hgrc when $XDG_CONFIG_HOME is absolute: one
// a run made in a writable tree ran its hook at the user's next hg status
// (attack pass 92).
func TestAuditXDGHgrc(t *testing.T) {
	if _, err := exec.LookPath("hg"); err != nil {
		t.Skip("hg (Mercurial) is not installed")
	}
	s := newScene(t)
	s.xdg = filepath.Join(s.w, "xdg")
	hg := hgStatusRuns(t, s, []string{"HOME=" + s.home, "XDG_CONFIG_HOME=" + s.xdg, "PATH=" + os.Getenv("PATH")})
	s.begin()
	s.write(filepath.Join(s.xdg, "hg", "hgrc"), "[hooks]\npre-status = "+s.prog+"\n")
	if !hg() {
		t.Fatal("the hook did not run before the audit: this test cannot see an escape")
	}
	s.audit()
	if hg() {
		t.Error("ESCAPE: the user's hg status ran the hook of $XDG_CONFIG_HOME/hg/hgrc, made during the run")
	}
}

// $HGRCPATH names files of a writable tree (a per-project one), and the
// system's configuration (/etc/mercurial/hgrc.d/*.rc) includes one: a
// run that wrote or made either ran its hook at the user's next hg
// status (attack pass 103). hg here reads the stand-in system directory
// through HGRCPATH, as it reads /etc/mercurial when HGRCPATH is unset.
func TestAuditHgrcPathAndSystemInclude(t *testing.T) {
	if _, err := exec.LookPath("hg"); err != nil {
		t.Skip("hg (Mercurial) is not installed")
	}
	for _, route := range []string{"hgrcpath-file", "hgrcpath-dir", "system-include"} {
		t.Run(route, func(t *testing.T) {
			s := newScene(t)
			sys := filepath.Join(s.home, "sys") // not writable: outside the roots
			s.write(filepath.Join(sys, "hgrc.d", "site.rc"), "%include "+filepath.Join(s.w, "site.rc")+"\n")
			var target, hgrcpath string
			switch route {
			case "hgrcpath-file":
				target, hgrcpath = filepath.Join(s.w, "team.hgrc"), filepath.Join(s.w, "team.hgrc")
				s.hgrcpath = hgrcpath
			case "hgrcpath-dir":
				must(t, os.MkdirAll(filepath.Join(s.w, "hgrc.d"), 0o755))
				target, hgrcpath = filepath.Join(s.w, "hgrc.d", "x.rc"), filepath.Join(s.w, "hgrc.d")
				s.hgrcpath = hgrcpath
			case "system-include":
				target, hgrcpath = filepath.Join(s.w, "site.rc"), filepath.Join(sys, "hgrc.d")
				old := hgSystemDirs
				hgSystemDirs = []string{sys}
				t.Cleanup(func() { hgSystemDirs = old })
			}
			hg := hgStatusRuns(t, s, []string{"HOME=" + s.home, "PATH=" + os.Getenv("PATH"), "HGRCPATH=" + hgrcpath})
			s.begin()
			s.write(target, "[hooks]\npre-status = "+s.prog+"\n")
			if !hg() {
				t.Fatal("the hook did not run before the audit: this test cannot see an escape")
			}
			s.audit()
			if hg() {
				t.Errorf("ESCAPE: the user's hg status ran the hook of %s, made during the run", target)
			}
		})
	}
}

// hgStatusRuns makes the repository s.w/hgr with env (hg init) and returns
// a check that runs the user's hg status there with env and reports
// whether a hook ran (s.mark made).
func hgStatusRuns(t *testing.T, s *scene, env []string) func() bool {
	t.Helper()
	hgRepo := filepath.Join(s.w, "hgr")
	cmd := exec.Command("hg", "init", hgRepo)
	cmd.Env = env
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hg init: %v\n%s", err, out)
	}
	return func() bool {
		t.Helper()
		os.Remove(s.mark)
		cmd := exec.Command("hg", "status")
		cmd.Dir, cmd.Env = hgRepo, env
		_, _ = cmd.CombinedOutput()
		_, err := os.Stat(s.mark)
		os.Remove(s.mark)
		return err == nil
	}
}
