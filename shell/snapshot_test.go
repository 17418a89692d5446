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
		{"bash-default-dir", Bash("/bin/bash"), SnapshotSpec{Tag: "abc123", Name: "snapshot-bash-1-x.sh"}},
		{"bash-dir-ripgrep", Bash("/bin/bash"), SnapshotSpec{Dir: "/run/moat session", Name: "snapshot-bash-1-x.sh", Ripgrep: "/opt/moat/rg"}},
		{"zsh-default-dir", Zsh("/bin/zsh"), SnapshotSpec{Tag: "abc123", Name: "snapshot-zsh-1-x.sh"}},
		{"zsh-dir-ripgrep", Zsh("/bin/zsh"), SnapshotSpec{Dir: "/run/moat", Name: "snapshot-zsh-1-x.sh", Ripgrep: "/opt/moat/rg"}},
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
	spec := SnapshotSpec{Tag: "t", Name: "n.sh", Ripgrep: "/x/rg"}
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
