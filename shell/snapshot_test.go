package shell

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// TestSnapshotScriptGolden keeps the snapshot scripts in golden files.
func TestSnapshotScriptGolden(t *testing.T) {
	tests := []struct {
		name string
		p    Provider
		spec SnapshotSpec
	}{
		{"bash", Bash("/bin/bash"), SnapshotSpec{}},
		{"bash-ripgrep", Bash("/bin/bash"), SnapshotSpec{Ripgrep: "/opt/moat session/rg"}},
		{"zsh", Zsh("/bin/zsh"), SnapshotSpec{}},
		{"zsh-ripgrep", Zsh("/bin/zsh"), SnapshotSpec{Ripgrep: "/opt/moat/rg"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			golden(t, filepath.Join("snapshot", tc.name+".golden"), tc.p.SnapshotScript(tc.spec))
		})
	}
}

// TestSnapshotScriptParses checks the bash scripts with bash -n, and the
// zsh ones with the zsh parser (zsh itself is not installed here).
func TestSnapshotScriptParses(t *testing.T) {
	spec := SnapshotSpec{Ripgrep: "/x/rg"}
	if bash, err := exec.LookPath("bash"); err == nil {
		if out, err := exec.Command(bash, "-n", "-c", Bash(bash).SnapshotScript(spec)).CombinedOutput(); err != nil {
			t.Errorf("bash -n: %v\n%s", err, out)
		}
	}
	if _, err := parseCommand(Zsh("/bin/zsh").SnapshotScript(spec), Zsh("").Variant()); err != nil {
		t.Errorf("the zsh snapshot script does not parse as zsh: %v", err)
	}
}

func TestValidSandboxPath(t *testing.T) {
	tests := []struct {
		p    string
		want bool
	}{
		{"/tmp/x/snap.sh", true},
		{"/a b/c", true},
		{"", false},
		{"relative/x", false},
		{"/tmp/../etc/passwd", false},
		{"/tmp/x/", false},
		{"/tmp/a\nb", false},
		{"/tmp/\x1b[31m", false},
	}
	for _, tc := range tests {
		if got := validSandboxPath(tc.p); got != tc.want {
			t.Errorf("validSandboxPath(%q) = %v, want %v", tc.p, got, tc.want)
		}
	}
}
