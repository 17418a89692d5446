//go:build linux

package linux

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// The user's git configuration is the user's: planning a client's sandbox
// (moatd, whose $HOME and $XDG_CONFIG_HOME are root's) reads the client's
// ~/.config/git/config, never the one this process's XDG_CONFIG_HOME
// names; a process planning for its own home reads both.
func TestGlobalGitFactsUsersConfig(t *testing.T) {
	root := t.TempDir()
	own, client := filepath.Join(root, "own"), filepath.Join(root, "client")
	ownXDG := filepath.Join(root, "own-xdg")
	write := func(p, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(ownXDG, "git", "config"), "[core]\n\thooksPath = /own-xdg-hooks\n")
	write(filepath.Join(own, ".config", "git", "config"), "[core]\n\thooksPath = /own-hooks\n")
	write(filepath.Join(client, ".config", "git", "config"), "[core]\n\thooksPath = /client-hooks\n")
	write(filepath.Join(client, ".gitconfig"), "[core]\n\thooksPath = ~/client-gitconfig-hooks\n")
	t.Setenv("HOME", own)
	t.Setenv("XDG_CONFIG_HOME", ownXDG)

	got := globalGitFacts(client).hooksPaths
	for _, want := range []string{"/client-hooks", "~/client-gitconfig-hooks"} {
		if !slices.Contains(got, want) {
			t.Errorf("another user's home: core.hooksPath %s not read (%q)", want, got)
		}
	}
	for _, bad := range []string{"/own-xdg-hooks", "/own-hooks"} {
		if slices.Contains(got, bad) {
			t.Errorf("another user's home: this process's %s read as the user's (%q)", bad, got)
		}
	}

	got = globalGitFacts(own).hooksPaths
	for _, want := range []string{"/own-xdg-hooks", "/own-hooks"} {
		if !slices.Contains(got, want) {
			t.Errorf("this process's own home: core.hooksPath %s not read (%q)", want, got)
		}
	}
}

// extensions.worktreeConfig is a boolean as git reads one: "2", "1k" or
// "0x1" turn it on (git then reads config.worktree), and a linked
// worktree's config.worktree is reserved for them as for "true". moat
// read only true/yes/on/1 before, and left it unreserved.
func TestWorktreeConfigAsGitReadsIt(t *testing.T) {
	for _, v := range []string{"true", "2", "1k", "0x1", "-1", "On"} {
		g := t.TempDir()
		if err := os.MkdirAll(filepath.Join(g, "worktrees", "wt"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(g, "config"), []byte("[extensions]\n\tworktreeConfig = "+v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		want := filepath.Join(g, "worktrees", "wt", "config.worktree")
		reserved := false
		for _, tg := range gitRepoTargets(g, filepath.Dir(g), "", gitFacts{}, readConfigFile) {
			if tg.path == want && tg.reserve {
				reserved = true
			}
		}
		if !reserved {
			t.Errorf("extensions.worktreeConfig = %s: %s not reserved", v, want)
		}
	}
}

// The user's init.templateDir (in ~/.gitconfig or a file it includes) is
// a fact the plan protects: git clone and git init copy its hooks and
// config into every new repository (attack pass 45: a writable home's
// ~/.git_template/hooks/post-checkout ran on the user's next clone).
func TestGlobalGitFactsTemplateDir(t *testing.T) {
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[include]\n\tpath = ~/.gitconfig.local\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".gitconfig.local"), []byte("[init]\n\ttemplateDir = ~/.git_template\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := readGitFacts(globalGitConfigs(home, ""), home, readConfigFile).templateDirs
	if !slices.Contains(got, "~/.git_template") {
		t.Fatalf("init.templateDir not read: %q", got)
	}
}

// Another user's config in a shared tree including its directory's config
// through 20 symlinks to that directory names a new path at each of 20^10
// steps: the plan of a run that could write the tree never ended (attack
// pass 59). It ends now, with what it read.
func TestReadGitFactsIncludeFanOut(t *testing.T) {
	g := t.TempDir()
	body := "[core]\n\thooksPath = .h\n[include]\n"
	for i := 1; i <= 20; i++ {
		l := "l" + string(rune('a'+i))
		if err := os.Symlink(".", filepath.Join(g, l)); err != nil {
			t.Fatal(err)
		}
		body += "\tpath = " + l + "/config\n"
	}
	if err := os.WriteFile(filepath.Join(g, "config"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan gitFacts, 1)
	go func() { done <- readGitFacts([]string{filepath.Join(g, "config")}, t.TempDir(), readConfigFile) }()
	select {
	case f := <-done:
		if !slices.Contains(f.hooksPaths, ".h") {
			t.Fatalf("the config's own hooks path not read: %q", f.hooksPaths)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("reading the config's includes did not end in 30 seconds")
	}
}

// A linked worktree's modules/ holds its submodules' git directories (git
// takes .git/worktrees/W/modules/NAME, not the common modules/): it is
// read-only during the run like the repository's own (attack pass 68: a
// core.fsmonitor written there ran on the user's git status in the
// worktree).
func TestWorktreeModulesProtected(t *testing.T) {
	g := t.TempDir()
	if err := os.MkdirAll(filepath.Join(g, "worktrees", "wt", "modules", "m"), 0o755); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(g, "worktrees", "wt", "modules")
	for _, tg := range gitRepoTargets(g, filepath.Dir(g), "", gitFacts{}, readConfigFile) {
		if tg.path == want {
			return
		}
	}
	t.Fatalf("%s not protected", want)
}
