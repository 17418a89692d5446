package runtime

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/internal/testutil"
)

// notHostEnv are the variables moat's sources read that a server running
// moat run for another process need not share with it, and why.
var notHostEnv = map[string]string{
	"MOAT_TRACE":               "read from the caller's environment (cmd/moat, invocation.getenv)",
	"PWD":                      "moat serve takes the caller's (cmd/moat, logicalCwd), as os.Getwd would have",
	"PATH":                     "the command's own environment (the shell layer, macOS's lookup)",
	"LISTEN_FDS":               "moat daemon's socket activation, not moat run",
	"LISTEN_PID":               "moat daemon's socket activation, not moat run",
	"SRT_DEBUG":                "the srt command line, which is never handed to a server",
	"SHELL":                    "the shell layer (sessions), from the session's environment",
	"MOAT_SHELL_PREFIX":        "the shell layer (sessions), from the session's environment",
	"CLAUDE_CODE_SHELL_PREFIX": "the shell layer (sessions), from the session's environment",
}

// implicit are standard library calls that read the environment.
var implicit = map[string][]string{
	"os.TempDir()":       {"TMPDIR"},
	`os.MkdirTemp("",`:   {"TMPDIR"},
	`os.CreateTemp("",`:  {"TMPDIR"},
	"os.UserHomeDir()":   {"HOME"},
	"os.UserCacheDir()":  {"XDG_CACHE_HOME", "HOME"},
	"os.UserConfigDir()": {"XDG_CONFIG_HOME", "HOME"},
	"os.Getwd()":         {"PWD"},
}

// TestHostEnvComplete: every variable moat's non-test sources read by name
// (os.Getenv, os.LookupEnv, a getenv function) is in hostEnv, which moat
// serve compares before it runs moat run for a caller, or in notHostEnv
// with the reason. A variable added to the run path without this would
// make a run through moat serve differ from the caller's own.
func TestHostEnvComplete(t *testing.T) {
	root := filepath.Dir(testutil.PackageDir(t)) // the module (CI runs this binary elsewhere)
	re := regexp.MustCompile(`(?:Getenv|LookupEnv|getenv|lookupEnv)\("([A-Za-z_][A-Za-z0-9_]*)"\)`)
	found := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		if strings.Contains(p, "internal/testutil") || strings.Contains(p, "privileged-tests") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range re.FindAllStringSubmatch(string(b), -1) {
			found[m[1]] = p
		}
		// What the standard library reads for a caller.
		for call, vars := range implicit {
			if strings.Contains(string(b), call) {
				for _, v := range vars {
					found[v] = p + " (" + call + ")"
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) < 5 {
		t.Fatalf("found only %v: the scan is broken", found)
	}
	for name, file := range found {
		if !slices.Contains(hostEnv, name) && notHostEnv[name] == "" {
			t.Errorf("%s reads $%s: add it to hostEnv (moat serve compares it with a caller's) or to notHostEnv with the reason", file, name)
		}
	}
}
