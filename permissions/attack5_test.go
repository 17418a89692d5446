package permissions

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// Regression tests for the fifth attack pass on the decision pipeline.
// Each row failed (was allowed, or asked where a deny rule applies) before
// the fix named by the test.

// arow is one decision: rules, mode, command and the verdict wanted.
type arow struct {
	rules []string
	mode  string
	cmd   string
	want  policy.Verdict
}

func runRows(t *testing.T, cwd string, opts Options, rows []arow) {
	t.Helper()
	for _, tc := range rows {
		t.Run(tc.mode+"/"+tc.cmd, func(t *testing.T) {
			e, err := New(rules(tc.rules...), opts)
			if err != nil {
				t.Fatal(err)
			}
			r := e.Decide(Request{Command: tc.cmd, Cwd: cwd, Mode: tc.mode})
			if r.Decision.Verdict != tc.want {
				t.Errorf("rules %v, mode %q: %q = %v; want %v", tc.rules, tc.mode, tc.cmd, r.Decision, tc.want)
			}
		})
	}
}

// TestXxdStopsAtFirstOperand (H1): xxd reads its options only up to its
// first operand, and the word after that is its output file, whatever it
// looks like; a bundle such as -pc is -p alone. tree gives every value
// letter of a bundle the next word in turn (-Lo 3 FILE writes FILE).
func TestXxdStopsAtFirstOperand(t *testing.T) {
	runRows(t, testCwd, Options{}, []arow{
		{nil, "", "xxd f.txt -u", askV},
		{nil, "", "xxd -r -p cfg.hex -c/../.git/config", askV},
		{nil, "", "xxd -pc in out", askV},
		{nil, "", "xxd -ps in -autoskip", askV},
		{nil, "plan", "xxd f.txt -u", deny},
		{[]string{"Bash(xxd:*)"}, "", "xxd f.txt -u/../../../tmp/x", askV},
		{[]string{"Bash(xxd:*)"}, "", "xxd -r -p cfg.hex -c/../.git/config", askV},
		{nil, "", "tree -Lo 3 out.txt", askV},
		{[]string{"Bash(tree:*)"}, "", "tree -Lo 3 /tmp/out", askV},
		// still read-only
		{nil, "", "xxd f.txt", allow},
		{nil, "", "xxd -c 8 f.txt", allow},
		{nil, "", "xxd -c8 -g 2 f.txt", allow},
		{nil, "", "xxd -ps -cols 4 f.txt", allow},
		{nil, "", "xxd -u -- f.txt", allow},
		{nil, "", "xxd -- -u", allow},
		{nil, "", "xxd f.txt -", allow}, // standard output
		{nil, "", "tree -L 2 src", allow},
		{nil, "", "tree -aL 2 src", allow},
	})
}

// TestOutputOptionsAreWrites (H2): options and operands that name a file
// written are path-checked under allow rules too, as tee and sed w are.
func TestOutputOptionsAreWrites(t *testing.T) {
	gitLog := []string{"Bash(git log:*)"}
	runRows(t, testCwd, Options{}, []arow{
		{gitLog, "", "git log -1 --format=%H --output=.git/config", askV},
		{gitLog, "", "git log -1 --output=/tmp/x", askV},
		{gitLog, "", "git log -1 --output /tmp/x", askV},
		{gitLog, "", "git log -1 --outp=/tmp/x", askV},
		{[]string{"Bash(git show:*)"}, "", "git show --output=.git/hooks/pre-commit", askV},
		{[]string{"Bash(git diff:*)"}, "", "git diff --output=/tmp/x", askV},
		{[]string{"Bash(git diff-tree:*)"}, "", "git diff-tree -p HEAD --output=/tmp/x", askV},
		{[]string{"Bash(git format-patch:*)"}, "", "git format-patch -o /tmp/x HEAD~1", askV},
		{[]string{"Bash(git format-patch:*)"}, "", "git format-patch -k -o/tmp/x HEAD~1", askV},
		{[]string{"Bash(git format-patch:*)"}, "", "git format-patch --output-directory=/tmp/x HEAD~1", askV},
		{[]string{"Bash(git archive:*)"}, "", "git archive -o /tmp/x.tar HEAD", askV},
		{[]string{"Bash(git:*)"}, "", "git log --output=.bashrc", askV},
		{[]string{"Bash(sort:*)"}, "", "sort -o /tmp/x f.txt", askV},
		{[]string{"Bash(sort:*)"}, "", "sort -uo /tmp/x f.txt", askV},
		{[]string{"Bash(sort:*)"}, "", "sort --output=/tmp/x f.txt", askV},
		{[]string{"Bash(sort:*)"}, "", "sort --out /tmp/x f.txt", askV},
		{[]string{"Bash(sort:*)"}, "", "sort f.txt -o .git/config", askV},
		{[]string{"Bash(tree:*)"}, "", "tree -o /tmp/x", askV},
		{[]string{"Bash(tree:*)"}, "", "tree -ao .bashrc", askV},
		{[]string{"Bash(find:*)"}, "", "find . -fprint /tmp/x", askV},
		{[]string{"Bash(find:*)"}, "", "find . -name x -fprint0 /tmp/x", askV},
		{[]string{"Bash(find:*)"}, "", "find . -fprintf /tmp/x %p", askV},
		{[]string{"Bash(find:*)"}, "", "find . -fls .git/hooks/post-checkout", askV},
		{[]string{"Bash(uniq:*)"}, "", "uniq f.txt /tmp/x", askV},
		{[]string{"Bash(uniq:*)"}, "", "uniq --skip-f 1 f.txt /tmp/x", askV},
		{[]string{"Bash(xxd:*)"}, "", "xxd f.txt /tmp/x", askV},
		{[]string{"Bash(awk:*)"}, "", `awk '{print > "/tmp/x"}' f.txt`, askV},
		{[]string{"Bash(awk:*)"}, "", `awk '{print >> ".bashrc"}' f.txt`, askV},
		{[]string{"Bash(awk:*)"}, "", `awk '{printf "%s", $0 > f}' f.txt`, askV},
		{[]string{"Bash(awk:*)"}, "", `awk '{print | "sh"}' f.txt`, askV},
		{[]string{"Bash(awk:*)"}, "", `awk 'BEGIN{"id" | getline x}'`, askV},
		{[]string{"Bash(awk:*)"}, "", `awk '{print |& "sh"}' f.txt`, askV},
		{[]string{"Bash(awk:*)"}, "", `awk 'BEGIN{system("id")}'`, askV},
		{[]string{"Bash(awk:*)"}, "", `awk -f prog.awk f.txt`, askV},
		{[]string{"Bash(gawk:*)"}, "", `gawk -d/tmp/vars 'BEGIN{}'`, askV},
		{[]string{"Bash(gawk:*)"}, "", `gawk --dump=/tmp/vars 'BEGIN{}'`, askV},
		{[]string{"Bash(gawk:*)"}, "", `gawk -l /tmp/x.so 'BEGIN{}'`, askV},
		// inside the working directory, the rules still allow
		{gitLog, "", "git log -1 --output=out.txt", allow},
		{[]string{"Bash(sort:*)"}, "", "sort -o sorted.txt f.txt", allow},
		{[]string{"Bash(find:*)"}, "", "find . -fprint list.txt", allow},
		{[]string{"Bash(uniq:*)"}, "", "uniq f.txt out.txt", allow},
		{[]string{"Bash(awk:*)"}, "", `awk '{print > "out.txt"}' f.txt`, allow},
		{[]string{"Bash(awk:*)"}, "", `awk '$3 > 100 {print $1}' f.txt`, allow},
		{[]string{"Bash(awk:*)"}, "", `awk '/a|b/ || $1 == "x" {print}' f.txt`, allow},
		// and without rules these are not read-only
		{nil, "", "git log --output=out.txt", askV},
		{nil, "", "sort -o sorted.txt f.txt", askV},
		{nil, "", "uniq f.txt out.txt", askV},
	})
}

// TestSedInPlaceBackupSuffix (H3): GNU sed renames the original to the
// suffix with each '*' replaced by the file's name, or to the file's name
// with the suffix appended; that path is a write.
func TestSedInPlaceBackupSuffix(t *testing.T) {
	runRows(t, testCwd, Options{}, []arow{
		{nil, "acceptEdits", "sed -i'.git/hooks/pre-commi*' s/zzz/zzz/ t", askV},
		{nil, "acceptEdits", "sed -i'/tmp/.bashr*' s/zzz/zzz/ t", askV},
		{nil, "acceptEdits", "sed --in-place='../outside/*.bak' s/zzz/zzz/ t", askV},
		{nil, "acceptEdits", "sed -i'bak/../../*' s/a/b/ t", askV},
		{nil, "acceptEdits", "sed -ni'/tmp/*' s/a/b/p t", askV},
		{nil, "acceptEdits", "sed -irc s/a/b/ .bash", askV},
		{[]string{"Bash(sed:*)"}, "", "sed -i'/tmp/*' s/a/b/ t", askV},
		// still allowed
		{nil, "acceptEdits", "sed -i.bak s/zzz/zzz/ t", allow},
		{nil, "acceptEdits", "sed -i'bak_*' s/zzz/zzz/ t", allow},
		{nil, "acceptEdits", "sed -i s/zzz/zzz/ t", allow},
	})
}

// TestCpParentsWritesDestPlusSource (M3): cp --parents SRC DEST writes
// DEST/SRC, with SRC's directories.
func TestCpParentsWritesDestPlusSource(t *testing.T) {
	runRows(t, testCwd, Options{}, []arow{
		{nil, "acceptEdits", "cp --parents ../../work/proj/x sub", askV},
		{nil, "acceptEdits", "cp --parents .git/hooks/x sub", askV},
		{nil, "acceptEdits", "cp --parents ../proj/x sub", allow}, // sub/../proj/x is proj/proj/x
		{nil, "acceptEdits", "cp --parents hooks/pre-commit .git", askV},
		{nil, "acceptEdits", "cp --parents -t .git hooks/pre-commit", askV},
		{nil, "acceptEdits", "cp --parents src/a.go sub", allow},
	})
}

// TestJqEnvironmentUnderRule (M4): jq 1.6's two-argument --argfile, and
// "$ ENV" with blanks or a comment between the two tokens.
func TestJqEnvironmentUnderRule(t *testing.T) {
	jq := []string{"Bash(jq:*)"}
	runRows(t, testCwd, Options{}, []arow{
		{nil, "", "jq -n '$ ENV.FOO_SECRET'", askV},
		{nil, "", "jq -n '$\tENV'", askV},
		{jq, "", "jq -n '$ ENV.FOO_SECRET'", askV},
		{jq, "", "jq -n --argfile x y.json env.FOO_SECRET", askV},
		{jq, "", "jq -n --argfile x y.json '$ENV'", askV},
		{jq, "", "jq -n '1 # \"\n| env.HOME'", askV},
		{nil, "", "jq -n '$ # c\nENV'", askV},
		{nil, "", "jq .name package.json", allow},
		{nil, "", `jq -n '"$ ENV"'`, allow},
	})
}

// TestAwkIndirectCalls (M5): gawk's @var() calls the function named by
// var, system among them.
func TestAwkIndirectCalls(t *testing.T) {
	runRows(t, testCwd, Options{}, []arow{
		{nil, "", `awk 'BEGIN{f="sys" "tem"; @f("touch m")}'`, askV},
		{[]string{"Bash(gawk:*)"}, "", `gawk 'BEGIN{f="sys" "tem"; @ f("id")}'`, askV},
		{[]string{"Bash(awk:*)"}, "", `awk 'BEGIN{f="sys" "tem"; @f("touch m")}'`, askV},
		{nil, "", `awk '{print "a@b"}' f.txt`, allow},
	})
}

// TestDenyThroughTimeDashDash (L1) and TestDenyThroughZshModifiers (L4):
// bash's time keyword takes one "--"; zsh's precommand modifiers run the
// command after them. Deny rules see the command, in bypassPermissions too.
func TestDenyThroughTimeDashDash(t *testing.T) {
	d := []string{"deny: Bash(rm:*)"}
	runRows(t, testCwd, Options{}, []arow{
		{d, "", "time -- rm x", deny},
		{d, "", "time -p -- rm x", deny},
		{d, "bypassPermissions", "time -- rm x", deny},
		{d, "bypassPermissions", "time -p -- rm x", deny},
		{d, "bypassPermissions", "time -- FOO=1 rm x", deny}, // an assignment after "--"
		{d, "", "time -- FOO=1 rm x", deny},
		{nil, "", "time -- ls", allow},
	})
}

func TestDenyThroughZshModifiers(t *testing.T) {
	d := []string{"deny: Bash(rm:*)"}
	runRows(t, testCwd, Options{}, []arow{
		{d, "", "noglob rm x", deny},
		{d, "", "nocorrect rm x", deny},
		{d, "bypassPermissions", "noglob rm x", deny},
		{d, "bypassPermissions", "nocorrect noglob rm x", deny},
		{d, "bypassPermissions", "- rm x", deny},
		{d, "bypassPermissions", "repeat 2 rm x", deny},
		{d, "bypassPermissions", "noglob builtin command rm x", deny},
	})
}

// TestFileListFromFile (L3): file -f LIST reads the files LIST names,
// which no path check sees.
func TestFileListFromFile(t *testing.T) {
	runRows(t, testCwd, Options{}, []arow{
		{nil, "", "file -f names.txt", askV},
		{nil, "", "file --files-from names.txt", askV},
		{nil, "", "file --files-from=names.txt", askV},
		{nil, "", "file -bf names.txt", askV},
		{nil, "", "file -b x", allow},
	})
}

// TestGitSubcommandAfterFlag: the operand that selects a git subcommand's
// own subcommand is its first operand, flags before it or not.
func TestGitSubcommandAfterFlag(t *testing.T) {
	runRows(t, testCwd, Options{}, []arow{
		{nil, "", "git reflog -n1 delete HEAD@{0}", askV},
		{nil, "", "git reflog -n 1 expire --all", askV},
		{nil, "", "git worktree -v add wt", askV},
		{nil, "", "git worktree --porcelain remove wt", askV},
		{nil, "", "git reflog -n1", allow},
		{nil, "", "git reflog -n1 show", allow},
		{nil, "", "git worktree list -v", allow},
		{nil, "", "git worktree --porcelain list", allow},
	})
}

// symlinkFixture builds root/proj (the working directory) with lnk ->
// root/outside/sub, and returns proj.
func symlinkFixture(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	proj := filepath.Join(root, "proj")
	outside := filepath.Join(root, "outside")
	for _, d := range []string{filepath.Join(proj, "sub"), filepath.Join(proj, "src"), filepath.Join(outside, "sub"), filepath.Join(proj, ".git", "hooks")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(proj, "f.txt"), filepath.Join(proj, "src", "a.go"), filepath.Join(proj, ".git", "config"), filepath.Join(outside, "secret"),
		filepath.Join(outside, "sub", "secret2"), filepath.Join(outside, "sub", "victim")} {
		if err := os.WriteFile(f, []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(outside, "sub"), filepath.Join(proj, "lnk")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("src", filepath.Join(proj, "src-link")); err != nil {
		t.Fatal(err)
	}
	return proj
}

// TestSymlinkThenDotDot (M1): "lnk/.." is the parent of lnk's target, not
// the working directory: the kernel resolves ".." after the link.
func TestSymlinkThenDotDot(t *testing.T) {
	proj := symlinkFixture(t)
	runRows(t, proj, Options{FollowSymlinks: true}, []arow{
		{nil, "acceptEdits", "touch lnk/../pwned", askV},
		{nil, "acceptEdits", "mkdir -p lnk/../newdir", askV},
		{nil, "acceptEdits", "cp f.txt lnk/../copied", askV},
		{nil, "acceptEdits", "echo x > lnk/../redirected", askV},
		{nil, "acceptEdits", "mkdir -p new/../lnk/../x", askV},
		{nil, "", "cat lnk/../secret", askV},
		{nil, "", "cat ./lnk/./../secret", askV},
		{nil, "", "cd lnk/.. && cat secret", askV},
		// a link that stays inside, and ".." without links
		{nil, "", "cat src-link/../f.txt", allow},
		{nil, "", "cat sub/../f.txt", allow},
		{nil, "acceptEdits", "touch src/../new", allow},
	})
}

// TestGlobThroughSymlinks (M2): a glob pattern is checked by what it
// expands to, each match with its links resolved.
func TestGlobThroughSymlinks(t *testing.T) {
	proj := symlinkFixture(t)
	runRows(t, proj, Options{FollowSymlinks: true}, []arow{
		{nil, "acceptEdits", "cp f.txt l*/victim", askV},
		{nil, "acceptEdits", "tee l*/victim", askV},
		{nil, "acceptEdits", "sed -i s/a/b/ l*/victim", askV},
		{nil, "acceptEdits", "touch l*/victim", askV},
		{nil, "acceptEdits", "touch l?k/victim", askV},
		{nil, "acceptEdits", "touch [l]nk/victim", askV},
		{nil, "acceptEdits", "touch [!s]nk/victim", askV},
		{nil, "acceptEdits", "touch [^s]nk/victim", askV},
		{nil, "acceptEdits", "touch [[:alpha:]]nk/victim", askV},
		{nil, "acceptEdits", "touch .gi?/config", askV},
		{nil, "acceptEdits", "touch .gi?/hooks/pre-commit", allow}, // no match: bash passes the pattern as written
		{nil, "", "cat l*/secret2", askV},
		{nil, "", "cat ./*/secret2", askV},
		{nil, "", "grep -r x l*", askV},
		{nil, "", "ls l*/", askV},
		{nil, "", "ls *", askV},
		{nil, "", "cat s*/../l*/secret2", askV},
		{nil, "", "cat **/secret2", askV},
		{nil, "", "cat src/../*/secret2", askV},
		{nil, "", "cat .?/outside/secret", askV}, // "..", in bash before 5.2
		{nil, "", "cat .*/outside/secret", askV},
		// globs that stay inside
		{nil, "", "cat f*.txt", allow},
		{nil, "", "ls s*", allow},
		{nil, "", "cat src/*.go", allow},
		{nil, "", "cat src-l*/a.go", allow},
		{nil, "", "cat nomatch*", allow},
		{nil, "", "ls */", askV},       // lnk/
		{nil, "", "cat */a.go", allow}, // src/a.go, src-link/a.go: never ../a.go
		{nil, "", "cat ?ub/../f.txt", allow},
		{nil, "acceptEdits", "touch sub/*.new", allow},
	})
}

// The attack pass on the fixes above: git -C moves where --output writes,
// and less -o writes its log file.
func TestOutputsAfterGitCAndLess(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"git", []string{"-C", ".git", "log", "--output=config"}, []string{".git/config"}},
		{"git", []string{"-C", "a", "-C", "b", "log", "--output", "x"}, []string{"a/b/x"}},
		{"git", []string{"-C", "a", "log", "--output=/abs/x"}, []string{"/abs/x"}},
		{"git", []string{"-c", "x.y=z", "log", "--output=o"}, []string{"o"}},
		{"less", []string{"-o", ".git/config"}, []string{".git/config"}},
		{"less", []string{"-O.bashrc"}, []string{".bashrc"}},
		{"less", []string{"--log-file=x"}, []string{"x"}},
		{"less", []string{"--LOG-FILE", "y"}, []string{"y"}},
		{"less", []string{"-p", "pattern", "file"}, nil},
	} {
		got, _ := outputPaths(tc.name, tc.args)
		if strings.Join(got, "\x00") != strings.Join(tc.want, "\x00") {
			t.Errorf("outputPaths(%s %q) = %q, want %q", tc.name, tc.args, got, tc.want)
		}
	}
}

// Writing git's sequencer or rerere state directly asks in acceptEdits
// (git writes it itself; the user's --continue acts on it): found by an
// attack pass.
func TestGitStateWritesAsk(t *testing.T) {
	for _, p := range []string{"/w/.git/rebase-merge/git-rebase-todo", "/w/.git/rebase-apply/apply-opt", "/w/.git/sequencer/opts", "/w/.git/MERGE_RR", "/w/.git/rr-cache/x/postimage"} {
		if protectedWrite(p) == "" {
			t.Errorf("writing %s does not ask", p)
		}
	}
	if why := protectedWrite("/w/.git/objects/ab/cdef"); why != "" {
		t.Errorf("writing an object asks: %s", why)
	}
}
