package main

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// The server's proof never goes on a command line in what moat tells its
// users: any process may read another's /proc/PID/cmdline, a Landlock-
// confined one included, and the token lasts as long as the server (an
// attack pass took it from the curl -H "X-Moat-Proof: $P" the docs showed
// and opened a session of moat serve from a confined process). The docs
// pipe it: curl -H @<(moat proof --header SOCKET).
func TestProofNotOnCommandLines(t *testing.T) {
	onArgv := regexp.MustCompile(`X-Moat-Proof: *\$|-H +"\$H"|-H +"\$\(moat proof|-H +"X-Moat-Proof: \$\(`)
	_, here, _, _ := runtime.Caller(0)
	dir := filepath.Dir(here)
	root := filepath.Dir(filepath.Dir(dir))
	if _, err := os.Stat(filepath.Join(root, "README.md")); err != nil {
		t.Skipf("the sources are not here (a test binary run elsewhere): %v", err)
	}
	files := []string{filepath.Join(root, "README.md")}
	docs, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files = append(files, docs...)
	goFiles, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, g := range goFiles {
		if !strings.HasSuffix(g, "_test.go") {
			files = append(files, g)
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if onArgv.MatchString(line) {
				t.Errorf("%s:%d puts the proof on a command line: %s", f, i+1, strings.TrimSpace(line))
			}
		}
	}
}
