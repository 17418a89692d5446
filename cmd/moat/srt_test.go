//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// moat srt and moat invoked as srt take the npm runtime's command line
// unchanged: words joined and run by the shell, -c, -s/--settings,
// -d/--debug, SRT_DEBUG, and exit 1 for the runtime's own errors.
func TestSRTCompat(t *testing.T) {
	tr := newTree(t)
	link := filepath.Join(filepath.Dir(tr.dir), "srt")
	if err := os.Symlink(moatBin(t), link); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(filepath.Dir(tr.dir), "outside")
	os.Mkdir(outside, 0o755)
	for _, tc := range []struct {
		name   string
		args   []string
		env    []string
		code   int
		stdout string
		stderr string
	}{
		{"words", []string{"srt", "-s", tr.settings, "echo", "a b", "c'd"}, nil, 0, "a b c'd\n", ""},
		{"dash dash", []string{"srt", "--settings", tr.settings, "--", "sh", "-c", "exit 7"}, nil, 7, "", ""},
		{"-c", []string{"srt", "-s", tr.settings, "-c", "echo $((6*7))"}, nil, 0, "42\n", ""},
		{"sandboxed", []string{"srt", "-s", tr.settings, "-c", "touch " + outside + "/x"}, nil, 1, "", "deny file-write " + outside + "/x"},
		{"debug", []string{"srt", "-d", "-s", tr.settings, "true"}, nil, 0, "", "tier="},
		{"SRT_DEBUG", []string{"srt", "-s", tr.settings, "true"}, tr.env("SRT_DEBUG=1"), 0, "", "stage 2"},
		{"bad settings", []string{"srt", "-s", "/nonexistent/s.json", "true"}, nil, 1, "", "no such file"},
		{"bad flag", []string{"srt", "--bogus", "true"}, nil, 1, "", "unknown flag"},
		{"no command", []string{"srt", "-s", tr.settings}, nil, 1, "", "no command: use moat srt [-s FILE] -c 'STRING' or moat srt [-s FILE] [--] CMD [ARGS...]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tr.moat(t, "", tc.env, tc.args...)
			if r.code != tc.code || !strings.Contains(r.stdout, tc.stdout) || !strings.Contains(r.stderr, tc.stderr) {
				t.Errorf("exit %d (want %d), stdout %q (want %q), stderr %q (want %q)", r.code, tc.code, r.stdout, tc.stdout, r.stderr, tc.stderr)
			}
		})
	}
	for _, args := range [][]string{{"srt", "-s", tr.settings}, {"srt"}} {
		if r := tr.moat(t, "", nil, args...); strings.Contains(r.stderr, "moat run") {
			t.Errorf("moat %v names moat run's usage: %q", args, r.stderr)
		}
	}
	// Without ~/.srt-settings.json and -s, srt's defaults (nothing
	// writable), never the working directory's .claude/settings.json
	// that a repository ships (it made the working directory writable and
	// allowed its domains: found by an attack pass).
	os.MkdirAll(filepath.Join(tr.dir, ".claude"), 0o755)
	writeJSON(t, filepath.Join(tr.dir, ".claude", "settings.json"), map[string]any{
		"sandbox": map[string]any{"network": map[string]any{"allowedDomains": []string{"example.com"}}},
	})
	if r := tr.moat(t, "", nil, "srt", "-c", "echo planted > srt-wrote-here"); r.code == 0 || fileExists(filepath.Join(tr.dir, "srt-wrote-here")) {
		t.Errorf("moat srt without settings used the project's file: exit %d, stderr %q", r.code, r.stderr)
	}
	// Under the name srt, the same command line without the subcommand.
	cmd0 := exec.Command(link, "-s", tr.settings)
	cmd0.Dir, cmd0.Env = tr.dir, tr.env()
	out0, err := cmd0.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out0), "no command: use srt [-s FILE] -c 'STRING' or srt [-s FILE] [--] CMD") {
		t.Errorf("srt with no command: %v\n%s", err, out0)
	}
	cmd := exec.Command(link, "-s", tr.settings, "-c", "echo as-srt; touch "+outside+"/y")
	cmd.Dir, cmd.Env = tr.dir, tr.env()
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 || !strings.Contains(string(out), "as-srt") || !strings.Contains(string(out), "deny file-write") {
		t.Errorf("invoked as srt: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(outside, "y")); err == nil {
		t.Error("ESCAPE: the write outside the policy landed")
	}
	if err := os.WriteFile(filepath.Join(outside, "y"), nil, 0o644); err != nil {
		t.Fatalf("without moat the write must succeed: %v", err)
	}
}
