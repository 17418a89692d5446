package permissions

import (
	"os"
	"path/filepath"
	"testing"
)

// Regression tests for attack pass 62 on the decision pipeline. Each row
// failed (was allowed) before the fix named by the test.

// TestAwkArgvNamesOtherFiles: an awk program that stores into ARGV
// reads the files it names after BEGIN, which are not among the operands
// the path checks see ("awk 'BEGIN{ARGV[1]=\"../secret\";ARGC=2}
// {print}'" printed a file outside the working directory, decided allow
// as read-only). gawk's SYMTAB reaches ARGV and ENVIRON by a computed
// name.
func TestAwkArgvNamesOtherFiles(t *testing.T) {
	runRows(t, testCwd, Options{}, []arow{
		{nil, "", `awk 'BEGIN{ARGV[1]="../secret";ARGC=2} {print}'`, askV},
		{nil, "", `awk 'BEGIN{ARGV[ARGC++]="/etc/shadow"} {print}' f.txt`, askV},
		{nil, "", `mawk 'BEGIN{split("/etc/shadow", ARGV); ARGC=2} {print}'`, askV},
		{nil, "", `awk 'function f(a){a[1]="/etc/shadow"} BEGIN{f(ARGV);ARGC=2} {print}'`, askV},
		{nil, "", `gawk 'BEGIN{SYMTAB["AR" "GV"][1]="/etc/shadow";ARGC=2} {print}'`, askV},
		{nil, "", `gawk 'BEGIN{print SYMTAB["ENV" "IRON"]["HOME"]}'`, askV},
		{nil, "plan", `awk 'BEGIN{ARGV[1]="../secret";ARGC=2} {print}'`, deny},
		// still read-only
		{nil, "", `awk '{print $1}' f.txt`, allow},
		{nil, "", `awk '{print ARGVX, NR}' f.txt`, allow},
	})
}

// TestAwkArgvUnderAllowRule: under Bash(awk:*) the path checks still
// hold for what awk reads (awk '{print}' /etc/shadow asks), so a program
// that names its files through ARGV asks too.
func TestAwkArgvUnderAllowRule(t *testing.T) {
	a := []string{"Bash(awk:*)"}
	runRows(t, testCwd, Options{}, []arow{
		{a, "", `awk 'BEGIN{ARGV[1]="/etc/shadow";ARGC=2} {print}'`, askV},
		{a, "", `gawk 'BEGIN{SYMTAB["AR" "GV"][1]="/etc/shadow";ARGC=2} {print}'`, askV},
		{a, "", `awk '{print}' /etc/shadow`, askV},
		{a, "", `awk '{print $1}' f.txt`, allow},
	})
}

// TestUnknownFlagKeepsPathChecks: under an allow rule, a command with a
// flag its read-only table does not know (a valid one: grep's obsolete
// -u, diff -D, git diff --output-indicator-new, wc --files0-from, mawk's
// --posix) had no reads recorded, so the path checks that ask for the
// same command without the flag ("grep x ../secret") did not hold.
func TestUnknownFlagKeepsPathChecks(t *testing.T) {
	runRows(t, testCwd, Options{}, []arow{
		{[]string{"Bash(grep:*)"}, "", `grep -u "" ../secret`, askV},
		{[]string{"Bash(grep:*)"}, "", `grep -u -f../secret x f.txt`, askV},
		{[]string{"Bash(grep:*)"}, "", `grep -uf/etc/shadow x f.txt`, askV},
		{[]string{"Bash(diff:*)"}, "", `diff -D X f.txt /etc/shadow`, askV},
		{[]string{"Bash(git diff:*)"}, "", `git diff --no-index --output-indicator-new=+ f.txt /etc/shadow`, askV},
		{[]string{"Bash(wc:*)"}, "", `wc --files0-from=/etc/list`, askV},
		{[]string{"Bash(awk:*)"}, "", `awk --posix '{print}' /etc/shadow`, askV},
		// still allowed: the same flags on the working directory's files
		{[]string{"Bash(grep:*)"}, "", `grep -u "" f.txt`, allow},
		{[]string{"Bash(grep:*)"}, "", `grep -u -e '^a.b' f.txt`, allow},
		{[]string{"Bash(diff:*)"}, "", `diff -D X a.c b.c`, allow},
		{[]string{"Bash(git diff:*)"}, "", `git diff --output-indicator-new=+ HEAD~1 -- src/`, allow},
		{[]string{"Bash(awk:*)"}, "", `awk --posix '{print}' f.txt`, allow},
	})
}

// TestLinkWalkersAsk: with FollowSymlinks the path checks follow the
// links of the paths a command names, but grep -R, rg -L, fd -L, find -L,
// find -follow, du -L, tree -l, ls -RL and diff -r (GNU diff follows links
// unless --no-dereference) follow every link they meet below them: grep
// -R x . read, through a link in the working directory, the directory
// outside it that "grep x link/f" asks for.
func TestLinkWalkersAsk(t *testing.T) {
	root := t.TempDir()
	cwd, out := filepath.Join(root, "w"), filepath.Join(root, "out")
	for _, d := range []string{cwd, filepath.Join(cwd, "a"), filepath.Join(cwd, "b"), out} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(out, filepath.Join(cwd, "a", "l")); err != nil {
		t.Fatal(err)
	}
	follow := Options{FollowSymlinks: true}
	runRows(t, cwd, follow, []arow{
		{nil, "", "grep -R x .", askV},
		{nil, "", "grep -nR x", askV},
		{nil, "", "grep --dereference-recursive x a", askV},
		{[]string{"Bash(grep:*)"}, "", "grep -R x .", askV},
		{nil, "", "rg -L x", askV},
		{nil, "", "rg --follow x a", askV},
		{nil, "", "fd -L x", askV},
		{nil, "", "find -L . -name x", askV},
		{nil, "", "find . -follow -name x", askV},
		{nil, "", "du -L .", askV},
		{nil, "", "tree -l", askV},
		{nil, "", "ls -RL", askV},
		{nil, "", "diff -r a b", askV},
		// the link named is checked as before
		{nil, "", "grep -r x a/l", askV},
		// still read-only: these do not follow links below the operands
		{nil, "", "grep -r x .", allow},
		{nil, "", "rg x", allow},
		{nil, "", "find . -name x", allow},
		{nil, "", "ls -R", allow},
		{nil, "", "ls -lL a", allow},
		{nil, "", "diff -r --no-dereference a b", allow},
	})
	// Lexical checks (no FollowSymlinks) do not look at links at all.
	runRows(t, cwd, Options{}, []arow{{nil, "", "grep -R x .", allow}})
}

// TestGitSubcommandsRunningCommands: git subcommands that run a shell
// command given on the line were not seen by deny rules: under
// Bash(git:*) with Bash(rm:*) denied (and under bypassPermissions),
// git difftool -y -x 'rm -f victim.txt' removed the file. They make the
// line unseen now, as git fetch --upload-pack does: it asks.
func TestGitSubcommandsRunningCommands(t *testing.T) {
	r := []string{"deny: Bash(rm:*)", "Bash(git:*)"}
	d := []string{"deny: Bash(rm:*)"}
	runRows(t, testCwd, Options{}, []arow{
		{r, "", `git difftool -y -x 'rm -f victim.txt'`, askV},
		{r, "", `git difftool -yx'rm x'`, askV},
		{r, "", `git difftool --extcmd='rm -rf x' -y`, askV},
		{r, "", `git difftool --ext='rm x' -y`, askV},
		{r, "", `git filter-branch --tree-filter 'rm -rf x' HEAD`, askV},
		{r, "", `git filter-branch --index-filter 'rm x' HEAD`, askV},
		{r, "", `git filter-branch --setup 'rm x' HEAD`, askV},
		{r, "", `git send-email --sendmail-cmd='rm x' a.patch`, askV},
		{r, "", `git send-email -sendmail-cmd='rm x' a.patch`, askV},
		{r, "", `git send-email --sendm='rm x' a.patch`, askV},
		{r, "", `git send-email --to-cmd='rm x' a.patch`, askV},
		{r, "", `git send-email --smtp-server=/bin/rm a.patch`, askV},
		{r, "", `git send-email --smtp-server /bin/rm a.patch`, askV},
		{r, "", `git clone -u 'rm x' y z`, askV},
		{r, "", `git clone -qu 'rm x' y z`, askV},
		{r, "", `git ls-remote -u 'rm x' y`, askV},
		{r, "", `git grep -O'rm x' y`, askV},
		{r, "", `git grep --open-files-in-pager='rm x' y`, askV},
		{r, "", `git instaweb --httpd='rm x'`, askV},
		{r, "", `git instaweb -d 'rm x'`, askV},
		{r, "", `git daemon --access-hook='rm x'`, askV},
		{r, "", `git -C sub difftool -x 'rm x'`, askV},
		{d, "bypassPermissions", `git difftool -y -x 'rm -f victim.txt'`, askV},
		{d, "bypassPermissions", `git filter-branch --tree-filter 'rm x' HEAD`, askV},
		// still allowed
		{r, "", `git difftool -y`, allow},
		{r, "", `git difftool --tool=vimdiff`, allow},
		{r, "", `git grep -O y`, allow},
		{r, "", `git clone -b main url dir`, allow},
		{r, "", `git send-email --to=a@b --smtp-server=smtp.example.com a.patch`, allow},
		{r, "", `git cherry-pick -x HEAD`, allow},
		{r, "", `git clean -xdn`, allow},
		{d, "bypassPermissions", `git difftool -y`, allow},
	})
}

// TestRunnersSeenByDenyRules: the package runners and other programs that
// run a command (uv run CMD, npx -c 'CMD', run0 CMD, hyperfine 'CMD') were
// not looked through by deny rules: under Bash(uv run:*) with Bash(rm:*)
// denied, uv run rm x was allowed, where env rm x and nice rm x were
// denied.
func TestRunnersSeenByDenyRules(t *testing.T) {
	d := "deny: Bash(rm:*)"
	rows := []arow{}
	for _, c := range []struct{ rule, cmd string }{
		{"Bash(uv run:*)", "uv run rm x"},
		{"Bash(uv:*)", "uv --directory d run --with y rm -rf x"},
		{"Bash(poetry run:*)", "poetry run rm x"},
		{"Bash(pipenv run:*)", "pipenv run rm x"},
		{"Bash(npm exec:*)", "npm exec -- rm x"},
		{"Bash(npm:*)", "npm exec -c 'rm x'"},
		{"Bash(npx:*)", "npx -c 'rm x'"},
		{"Bash(npx:*)", "npx --yes rm x"},
		{"Bash(pnpm:*)", "pnpm exec rm x"},
		{"Bash(yarn:*)", "yarn exec rm x"},
		{"Bash(mise:*)", "mise exec node@20 -- rm x"},
		{"Bash(direnv:*)", "direnv exec . rm x"},
		{"Bash(nix:*)", "nix develop -c rm x"},
		{"Bash(nix-shell:*)", "nix-shell --run 'rm x'"},
		{"Bash(hyperfine:*)", "hyperfine 'rm x'"},
		{"Bash(concurrently:*)", "concurrently 'npm test' 'rm x'"},
		{"Bash(nodemon:*)", "nodemon --exec 'rm x'"},
		{"Bash(watchexec:*)", "watchexec -e go -- rm x"},
		{"Bash(run0:*)", "run0 rm x"},
		{"Bash(entr:*)", "entr rm x"},
		{"Bash(cgexec:*)", "cgexec -g cpu:x rm x"},
		{"Bash(perf:*)", "perf stat rm x"},
		{"Bash(flatpak-spawn:*)", "flatpak-spawn --host --directory=/ rm x"},
	} {
		rows = append(rows, arow{[]string{d, c.rule}, "", c.cmd, deny})
	}
	rows = append(rows,
		arow{[]string{d}, "bypassPermissions", "uv run rm x", deny},
		arow{[]string{d}, "bypassPermissions", "npx -c 'rm x'", deny},
		// still allowed
		arow{[]string{d, "Bash(uv run:*)"}, "", "uv run pytest -k run", allow},
		arow{[]string{d, "Bash(npx:*)"}, "", "npx prettier --check .", allow},
		arow{[]string{d, "Bash(hyperfine:*)"}, "", "hyperfine 'sleep 0.1'", allow},
		arow{[]string{d}, "bypassPermissions", "poetry run pytest", allow},
	)
	runRows(t, testCwd, Options{}, rows)
}
