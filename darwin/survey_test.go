package darwin

import (
	"github.com/moat-sandbox/moat/runtime/policy"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/internal/policycases"
)

func surveyed(t *testing.T, tree []string, edit func(policycases.Env, *SurveyOptions)) (policycases.Env, map[string]string, error) {
	t.Helper()
	root, _ := filepath.EvalSymlinks(t.TempDir())
	e := policycases.NewEnv(root)
	if err := (policycases.Case{Tree: tree}).Build(e); err != nil {
		t.Fatal(err)
	}
	o := SurveyOptions{SystemGitConfigs: []string{}}
	if edit != nil {
		edit(e, &o)
	}
	prot, err := Survey(policycases.Base(e), o)
	m := map[string]string{}
	for _, p := range prot {
		m[p.Path] = p.Why
	}
	return e, m, err
}

func TestSurvey(t *testing.T) {
	e, m, err := surveyed(t, []string{
		"$H/.gitconfig=[core]\n\thooksPath = ~/.githooks\n[include]\n\tpath = ~/.gitconfig.local\n",
		"$H/.gitconfig.local=[user]\n\tname = x\n",
		"$W/.git/HEAD=ref: refs/heads/main\n", "$W/.git/config=[extensions]\n\tworktreeConfig = true\n", "$W/.git/objects/", "$W/.git/refs/",
		"$W/a/b/c/.vscode/settings.json", "$W/a/b/c/d/.envrc",
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"$H/.githooks", "$H/.gitconfig.local", // the user's git config names them
		"$W/.git/config.worktree", // extensions.worktreeConfig
		"$W/.git/hooks",           // the working directory's repository: reserved
		"$W/a/b/c/.vscode",        // an existing mandatory name at depth 3
		"$W/HEAD", "$W/.envrc",    // the top of the working directory, absent
		"$H/.bashrc", "$H/.config/git", // the home directory
		// host tools' files found by attack pass 64: Claude Code's own
		// ~/.claude.json, a dev container's top file, opencode's, mise's
		"$H/.claude.json", "$W/.devcontainer.json", "$W/opencode.json", "$W/.opencode",
		"$W/.tool-versions", "$W/mise.toml", "$W/mise.local.toml",
		// other agents' project files (attack pass 66)
		"$W/.qwen", "$W/crush.json", "$W/.crush.json", "$W/.amazonq", "$W/.kiro", "$W/.roo",
	} {
		if _, ok := m[e.Path(want)]; !ok {
			t.Errorf("%s is not protected", want)
		}
	}
	if _, ok := m[e.Path("$W/a/b/c/d/.envrc")]; ok {
		t.Errorf("a name below the search depth was found (the depth is Linux's too)")
	}
	if _, ok := m[e.Path("$W/.git/HEAD")]; ok {
		t.Errorf("an existing HEAD is git's")
	}
	for p, why := range m {
		if why == "" || !strings.Contains(why, ":") {
			t.Errorf("%s: reason %q", p, why)
		}
	}
}

// A tree too large to search is refused, not half protected.
func TestSurveyBound(t *testing.T) {
	var tree []string
	for i := 0; i < 30; i++ {
		tree = append(tree, "$W/d"+strings.Repeat("x", i)+"/")
	}
	_, _, err := surveyed(t, tree, func(_ policycases.Env, o *SurveyOptions) { o.MaxDirs = 10 })
	if err == nil {
		t.Fatal("no error past the bound")
	}
}

// The XDG config home, when set, is where the user's git config is read.
func TestSurveyXDG(t *testing.T) {
	e, m, err := surveyed(t, []string{"$O/xdg/git/config=[core]\n\thooksPath = /opt/hooks\n"}, func(e policycases.Env, o *SurveyOptions) {
		o.XDGConfigHome = e.Path("$O/xdg")
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m["/opt/hooks"]; !ok {
		t.Errorf("core.hooksPath from $XDG_CONFIG_HOME/git/config (%s)", e.Path("$O/xdg"))
	}
}

// A HEAD that is not a repository's (a file of the project) cannot be
// completed into a bare repository with objects/ and refs/.
func TestSurveyLoneHEAD(t *testing.T) {
	e, m, err := surveyed(t, []string{"$W/HEAD=ref: refs/heads/main\n"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"$W/objects", "$W/refs"} {
		if _, ok := m[e.Path(p)]; !ok {
			t.Errorf("%s is not protected beside a lone HEAD", p)
		}
	}
	if _, ok := m[e.Path("$W/HEAD")]; ok {
		t.Errorf("the existing HEAD itself is protected")
	}
}

// TestSurveyFoldsCase: names are matched with case folded, as a
// case-insensitive volume (macOS's default) does: a .GIT directory is a
// repository git finds, .Claude the settings Claude Code reads.
func TestSurveyFoldsCase(t *testing.T) {
	e, m, err := surveyed(t, []string{
		"$W/sub/.GIT/HEAD=ref: refs/heads/main\n", "$W/sub/.GIT/config=[core]\n", "$W/sub/.GIT/hooks/", "$W/sub/.GIT/objects/", "$W/sub/.GIT/refs/",
		"$W/a/.Claude/settings.json", "$W/b/.VSCode/tasks.json", "$W/c/.ENVRC",
		"$W/bare/head=ref: refs/heads/main\n", "$W/bare/Objects/", "$W/bare/REFS/", "$W/bare/config=[core]\n",
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"$W/sub/.GIT/config", "$W/sub/.GIT/hooks", "$W/sub/.mcp.json", "$W/a/.Claude", "$W/b/.VSCode", "$W/c/.ENVRC", "$W/bare/config"} {
		if _, ok := m[e.Path(want)]; !ok {
			t.Errorf("%s is not protected", want)
		}
	}
}

// TestSurveyUserGitEnv: the user's git reads its configuration from where
// the environment says ($XDG_CONFIG_HOME/git, $GIT_CONFIG_GLOBAL,
// $GIT_CONFIG_SYSTEM, $GIT_TEMPLATE_DIR), and Linux keeps each of those
// read-only during the run (attack pass 47). A dotfiles tree in a writable
// tree: the profile let the command write $XDG_CONFIG_HOME/git/config (or
// the $GIT_CONFIG_GLOBAL file) with a core.fsmonitor that the user's git,
// or an editor's git status, ran outside the sandbox during the run (found
// by attack pass 54). ~/.config/git/config is read too when
// $XDG_CONFIG_HOME names another place, as on Linux.
func TestSurveyUserGitEnv(t *testing.T) {
	e, m, err := surveyed(t, []string{
		"$W/dot/config/", "$W/dot/gitconfig=[core]\n\thooksPath = " + "$W/dot/ghooks\n[include]\n\tpath = " + "$W/dot/inc\n",
		"$W/dot/sysconfig=[user]\n\tname = x\n", "$W/dot/templates/",
		"$H/.config/git/config=[core]\n\thooksPath = " + "$W/dot/xhooks\n",
	}, func(e policycases.Env, o *SurveyOptions) {
		o.XDGConfigHome = e.Path("$W/dot/config")
		o.GitConfigGlobal = e.Path("$W/dot/gitconfig")
		o.GitConfigSystem = e.Path("$W/dot/sysconfig")
		o.GitTemplateDir = e.Path("$W/dot/templates")
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"$W/dot/config/git", "$W/dot/gitconfig", "$W/dot/sysconfig", "$W/dot/templates",
		"$W/dot/ghooks", "$W/dot/inc", // named by the $GIT_CONFIG_GLOBAL file
		"$W/dot/xhooks", // named by ~/.config/git/config
	} {
		if _, ok := m[e.Path(want)]; !ok {
			t.Errorf("%s is not protected", want)
		}
	}
	// And the profile keeps them read-only.
	checks := []policycases.Check{{Op: policycases.Write, Target: "$W/dot/notes.txt", Want: true, Why: "the rest of the tree is writable"}}
	for _, path := range []string{"$W/dot/config/git/config", "$W/dot/gitconfig", "$W/dot/sysconfig", "$W/dot/templates/hooks/post-checkout", "$W/dot/ghooks/pre-commit", "$W/dot/xhooks/pre-commit"} {
		checks = append(checks, policycases.Check{Op: policycases.Write, Target: path, Want: false, Why: "the user's git reads it"})
	}
	checkSurveyed(t, e, m, checks)
}

// TestSurveyHomeDanglingSymlink: a home's own protected name that is a
// symlink to a file not made yet (~/.gitconfig or ~/.zshenv kept in a
// dotfiles tree that is writable) has the file it would lead to protected,
// through a chain of links too, as on Linux
// (TestGitHomeDanglingSymlinkIntoTheTree): Seatbelt compares the path the
// file is made at, and the profile named only the symlink, so the command
// made the dotfiles tree's gitconfig (a core.fsmonitor) or zshenv, which
// the user's git and shells read through the home's name (found by attack
// pass 54). A dangling link found in the tree is not followed (a planted
// one would otherwise lock a path of a later run's tree).
func TestSurveyHomeDanglingSymlink(t *testing.T) {
	e, m, err := surveyed(t, []string{"$W/dot/", "$W/sub/"}, func(e policycases.Env, _ *SurveyOptions) {
		for _, l := range [][2]string{
			{"$H/.gitconfig", "$W/dot/gitconfig"},
			{"$H/.zshenv", "$W/dot/l1"}, {"$W/dot/l1", "l2"}, {"$W/dot/l2", "zshenv"},
			{"$W/sub/.vscode", "$W/build"},
		} {
			if err := os.Symlink(e.Path(l[1]), e.Path(l[0])); err != nil {
				t.Fatal(err)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	checks := []policycases.Check{
		{Op: policycases.Write, Target: "$W/dot/gitconfig", Want: false, Why: "~/.gitconfig leads there"},
		{Op: policycases.Write, Target: "$W/dot/zshenv", Want: false, Why: "~/.zshenv leads there through two links"},
		{Op: policycases.Write, Target: "$W/dot/other", Want: true, Why: "the rest of the dotfiles tree is writable"},
		{Op: policycases.Write, Target: "$W/build/out.o", Want: true, Why: "a link found in the tree is not followed"},
	}
	checkSurveyed(t, e, m, checks)
}

// TestPlantedSymlinkDoesNotLockTheTree: a protected name found in the tree
// that is a symlink the command planted in an earlier run (sub/.vscode ->
// the working directory, sub/.claude -> .git) had the profile protect
// where it leads: the whole working tree, or the repository's git
// directory, read-only in every later run (found by attack pass 54). As on
// Linux (TestPlantedSymlinkDoesNotLockTheTree there): never a target that
// holds a writable root or lies in a git directory; the symlink itself
// stays protected.
func TestPlantedSymlinkDoesNotLockTheTree(t *testing.T) {
	e, m, err := surveyed(t, []string{"$W/sub/", "$W/src/a.go", "$W/.git/HEAD=ref: refs/heads/main\n", "$W/.git/objects/", "$W/.git/refs/"}, func(e policycases.Env, _ *SurveyOptions) {
		for _, l := range [][2]string{{"$W/sub/.vscode", "$W"}, {"$W/sub/.claude", "$W/.git"}, {"$W/sub/.idea", "$W/src"}} {
			if err := os.Symlink(e.Path(l[1]), e.Path(l[0])); err != nil {
				t.Fatal(err)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	checks := []policycases.Check{
		{Op: policycases.Write, Target: "$W/new.txt", Want: true, Why: "the working tree is not locked by sub/.vscode -> .."},
		{Op: policycases.Write, Target: "$W/.git/index", Want: true, Why: "git's working state is not locked by sub/.claude -> .git"},
		{Op: policycases.Write, Target: "$W/src/a.go", Want: false, Why: "a target below the roots is protected (stricter than Linux)"},
		{Op: policycases.Write, Target: "$W/.git/hooks/pre-commit", Want: false, Why: "the repository's own protections hold"},
	}
	for _, sb := range checkSurveyed(t, e, m, checks) {
		// The symlinks themselves (not followed) stay protected.
		for _, l := range []string{"$W/sub/.vscode", "$W/sub/.claude", "$W/sub/.idea"} {
			if ok, err := sb.writable(MacRoot(e.Path(l))); ok || err != nil {
				t.Errorf("the symlink %s is writable: %v, %v", l, ok, err)
			}
		}
	}
}

// TestProtectionsInAnotherCase: a writable tree spelled in another case
// than the home directory (allowWrite /users/ME, or --write . from a shell
// that entered ~/projects for ~/Projects: $PWD keeps the case typed) is
// the home on a case-insensitive volume. The generator kept a protection
// only where a case-sensitive comparison found it writable, so the home's
// protections spelled from $HOME (the settings file moat read, ~/.srt-
// settings.json, ~/.config/git) were dropped, and the command could write
// them through the tree's spelling (found by attack pass 54). A protection
// is now kept where a writable tree holds it in any case.
func TestProtectionsInAnotherCase(t *testing.T) {
	e, _, err := surveyed(t, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	pol := policycases.Base(e)
	other := filepath.Join(filepath.Dir(e.Home), strings.ToUpper(filepath.Base(e.Home)))
	pol.FS.AllowWrite = append(pol.FS.AllowWrite, policy.PathRule{Path: other, Source: "allowWrite, the home spelled in capitals"})
	pol.Sources = []string{filepath.Join(e.Home, ".srt-settings.json")}
	prot, err := Survey(pol, SurveyOptions{SystemGitConfigs: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Generate(pol, Options{Tag: testTag, HTTPProxyPort: testHTTP, SOCKSProxyPort: testSOCKS, Protect: prot,
		CaseSensitive: func(string) bool { return false }})
	if err != nil {
		t.Fatal(err)
	}
	for _, sb := range readBoth(t, p) {
		if ok, err := sb.writable(MacRoot(filepath.Join(other, "notes.txt"))); !ok || err != nil {
			t.Fatalf("the tree is not writable in its own spelling: %v, %v", ok, err)
		}
		for _, n := range []string{".srt-settings.json", ".config/git/config", ".bashrc"} {
			if ok, err := sb.writable(MacRoot(filepath.Join(other, n))); ok || err != nil {
				t.Errorf("~/%s is writable through %s: %v, %v", n, other, ok, err)
			}
		}
	}
}

// checkSurveyed generates the base policy's profile with the protections a
// survey found (m), asks each check of both readings of it, and returns
// them for the caller's own questions.
func checkSurveyed(t *testing.T, e policycases.Env, m map[string]string, checks []policycases.Check) [2]*sbProfile {
	t.Helper()
	var prot []Protection
	for p, why := range m {
		prot = append(prot, Protection{Path: p, Why: why})
	}
	p, err := Generate(policycases.Base(e), Options{Tag: testTag, HTTPProxyPort: testHTTP, SOCKSProxyPort: testSOCKS, Protect: prot})
	if err != nil {
		t.Fatal(err)
	}
	sbs := readBoth(t, p)
	for _, sb := range sbs {
		for _, ch := range checks {
			if got, err := ask(sb, e, ch); got != ch.Want || err != nil {
				t.Errorf("write %s = %v (%v), want %v: %s", ch.Target, got, err, ch.Want, ch.Why)
			}
		}
	}
	return sbs
}
