package gitguard

import (
	"os/exec"
	"strings"
	"testing"
)

// ParseBool reads a value as git does. Where git is installed, every case
// is also asked of git itself (`git config --type=bool`), so that moat's
// reading cannot drift from the git it protects.
func TestParseBoolAsGit(t *testing.T) {
	cases := []struct {
		v     string
		b, ok bool
	}{
		{"true", true, true}, {"YES", true, true}, {"on", true, true},
		{"false", false, true}, {"No", false, true}, {"off", false, true}, {"", false, true},
		{"1", true, true}, {"0", false, true}, {"2", true, true}, {"-1", true, true}, {"+3", true, true},
		{"1k", true, true}, {"0k", false, true}, {"1G", true, true}, {"0x1", true, true}, {"0X0", false, true},
		{"010", true, true}, {"00", false, true}, {" 1", true, true},
		{"08", false, false}, {"0x", false, false}, {"1kb", false, false}, {"maybe", false, false},
		{"1 ", false, false}, {"3g", false, false}, {"0b1", false, false}, {"1_0", false, false}, {"0o7", false, false},
	}
	git, _ := exec.LookPath("git")
	for _, c := range cases {
		b, ok := ParseBool(c.v)
		if b != c.b || ok != c.ok {
			t.Errorf("ParseBool(%q) = %v, %v; want %v, %v", c.v, b, ok, c.b, c.ok)
		}
		if git == "" {
			continue
		}
		cmd := exec.Command(git, "-c", "x.y="+c.v, "config", "--type=bool", "--get", "x.y")
		cmd.Dir = t.TempDir()
		out, err := cmd.Output()
		gitOK := err == nil
		gitB := strings.TrimSpace(string(out)) == "true"
		if gitOK != c.ok || (gitOK && gitB != c.b) {
			t.Errorf("git reads %q as %q (ok %v), this case says %v, %v", c.v, strings.TrimSpace(string(out)), gitOK, c.b, c.ok)
		}
	}
}
