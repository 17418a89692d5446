//go:build linux

package gitguard

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// rewrittenURLs holds where git itself sends each URL: git remote get-url
// (insteadOf) and get-url --push (pushInsteadOf where no pushurl, a
// pushurl with insteadOf), asked of the installed git.
func TestRewrittenURLsHoldGits(t *testing.T) {
	requireGit(t)
	dir := t.TempDir()
	cfg := "[url \"A/\"]\n\tinsteadOf = https://h/\n\tinsteadOf = x:\n" +
		"[url \"B/\"]\n\tinsteadOf = https://h/long/\n" +
		"[url \"C/\"]\n\tinsteadOf = https://h/long/\n" +
		"[url \"P/\"]\n\tpushInsteadOf = https://h/\n" +
		"[url \"Q/\"]\n\tpushInsteadOf = https://h/long/p\n"
	urls := []string{"https://h/a", "https://h/long/b", "https://h/long/pq", "x:y", "ssh://other/z", "https://h", "file:///h/"}
	if err := os.WriteFile(filepath.Join(dir, "global"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	es, err := ParseConfig([]byte(cfg))
	if err != nil {
		t.Fatal(err)
	}
	rws := remoteRewrites(es)
	git := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH"), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + filepath.Join(dir, "global")}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSuffix(string(out), "\n")
	}
	git("init", "-q", "r")
	for i, u := range urls {
		name := "r" + strconv.Itoa(i)
		git("-C", "r", "remote", "add", name, u)
		for _, push := range []bool{false, true} {
			args := []string{"-C", "r", "remote", "get-url", name}
			if push {
				args = append(args, "--push")
			}
			want := git(args...)
			if got := rewrittenURLs(u, push, rws); !slices.Contains(got, want) {
				t.Errorf("%s (push %v): git goes to %q, the audit judges %q", u, push, want, got)
			}
		}
		// With a pushurl, a push goes to it with insteadOf, never pushInsteadOf.
		git("-C", "r", "remote", "set-url", "--push", name, u)
		want := git("-C", "r", "remote", "get-url", "--push", name)
		es2 := append(append([]Entry(nil), es...), Entry{Name: "remote." + name + ".url", Value: u, HasValue: true}, Entry{Name: "remote." + name + ".pushurl", Value: u, HasValue: true})
		if got := remoteURLs(es2, nil); !slices.Contains(got, want) {
			t.Errorf("%s with a pushurl: git pushes to %q, the audit judges %q", u, want, got)
		}
	}
}
