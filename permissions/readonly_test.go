package permissions

import (
	"testing"

	"github.com/moat-sandbox/moat/runtime/policy"
)

const testCwd = "/work/proj"

func mustEngine(t testing.TB, p policy.Permissions) *Engine {
	t.Helper()
	e, err := New(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestReadOnlyTables: each command is read-only (and so allowed with no
// rules in the default mode) or not (and so asks).
func TestReadOnlyTables(t *testing.T) {
	e := mustEngine(t, policy.Permissions{})
	readOnly := []string{
		// neutral
		"true", "false", ":", "echo hello", "echo -n x", "printf '%s\\n' x", "pwd", "whoami", "id -u", "uname -a",
		"hostname", "date", "date +%s", "date -u +%Y", "sleep 1", "seq 1 10", "basename a/b.c .c", "dirname a/b",
		"which git", "type -a ls", "command -v git", "nproc", "test -f x", "test -d src",
		"tr a-z A-Z", "df -h", "locale",
		// read
		"cat README.md", "cat -n a b", "head -5 x", "head -n 20 x", "head -c100 x", "tail -f log", "tail -n +5 x",
		"wc -l x", "nl x", "od -c x", "hexdump -C x", "xxd x", "xxd -ps x", "strings x", "file x", "stat -c %s x",
		"md5sum x", "sha256sum x y", "realpath x", "readlink -f x", "cut -d, -f1 x", "sort -u x", "sort -k2 -t, -n x",
		"uniq -c x", "column -t x", "paste a b", "join a b", "comm -12 a b", "fold -w 80 x", "rev x", "tac x",
		"base64 x", "base64 -d x", "diff -u a b", "diff -ru a b", "cmp a b", "man ls", "man -k printf",
		"jq .name package.json", "jq -r '.a[]' x.json", "jq --arg n v '.[$n]' x.json",
		"awk '{print $1}' x", "awk -F, '{print $2}' x", "awk -v n=1 'NR==n' x",
		"sed -n '1,5p' x", "sed 's/a/b/g' x", "sed -e 's/a/b/' -e 's/c/d/' x", "sed -n '/start/,/end/p' x",
		"sed -E 's/(a)+/b/' x", "sed '1d' x", "sed -n '$p' x", "sed 'y/abc/xyz/' x", "sed '/x/{p;d}' x",
		// list
		"ls", "ls -la", "ls -lah src", "ls -1 --color=never", "tree", "tree -L 2 src", "du -sh .", "du -h --max-depth=1",
		// search
		"grep foo x", "grep -rn foo .", "grep -rn foo", "grep -E 'a|b' -i x", "grep -e foo -e bar x", "egrep x y",
		"rg foo", "rg -n foo src", "rg --type go -l TODO", "rg -g '*.go' foo", "rg -e foo -e bar",
		"fd foo", "fd -e go", "fd -t f -H pattern src",
		"find . -name '*.go'", "find src -type f -name x -print", "find . -maxdepth 2 -type d", "find -newer x",
		"find . -name x -o -name y", "find . \\( -name a -o -name b \\) -print0", "find . -path ./vendor -prune -o -print",
		// git
		"git status", "git status -s", "git --help", "git help -a", "git log", "git log --oneline -n 5", "git log -5", "git log --graph --all --decorate",
		"git log -p -- src/x.go", "git show HEAD", "git show HEAD~1:x", "git diff", "git diff --stat", "git diff --cached",
		"git diff main...HEAD", "git branch", "git branch -a", "git branch --show-current", "git branch -l 'feat*'",
		"git tag", "git tag -l 'v1*'", "git remote -v", "git remote get-url origin", "git config --get user.name",
		"git config user.email", "git config --list", "git config get user.name", "git rev-parse HEAD",
		"git rev-parse --show-toplevel", "git ls-files", "git ls-tree -r HEAD", "git cat-file -p HEAD", "git blame x",
		"git describe --tags", "git shortlog -sn", "git reflog", "git stash list", "git stash show -p",
		"git grep -n foo", "git merge-base HEAD main", "git show-ref", "git for-each-ref --format='%(refname)'",
		"git count-objects -v", "git check-ignore x", "git --no-pager log", "git version", "git --version",
		"git worktree list", "git log --format='%H %s'", "git show HEAD@{1}", "git show stash@{0}",
		// pipelines and lists of read-only commands
		"git log --oneline | head -5", "cat x | grep foo | sort | uniq -c", "ls && pwd", "ls; echo done",
		"grep -c foo x || true", "cat x 2>/dev/null", "ls > /dev/null 2>&1", "LANG=C sort x", "timeout 5 cat x",
		"nice -n 5 grep foo x", "ls *.go", "cat src/*.go", "grep foo *", "NO_COLOR=1 git diff",
		"grep -rn foo --include=*.ts src", "rg -g=*.go foo",
	}
	notReadOnly := []string{
		// found by the behavioural oracle: they run other programs
		"diff -l a b", "git --help log", "git log --help", "git help log", "git help -w log",
		// writes, exec, unknown
		"env", "printenv", "printenv AWS_SECRET_ACCESS_KEY", "sort --files0-from=list", "wc --files0-from=list",
		"rm x", "mkdir x", "touch x", "cp a b", "mv a b", "npm test", "make", "python x.py", "node x.js",
		"curl https://example.com", "wget x", "ping -c 1 x.example", "dig x.example", "nslookup x", "host x",
		"ps aux", "less x", "more x", "env FOO=1 ls", "env ls", "command ls", "printf -v PATH x",
		"echo hi > out.txt", "cat x >> y", "ls | tee out", "date -s 2020-01-01", "date 010100002020", "hostname evil",
		"uniq a b", "xxd a b", "tree -o out", "tree -R", "file -C -m x", "man -P 'sh -c x' ls", "man --html=x ls",
		"man -H ls", "man -l x.1", "sha256sum -c sums", "sort -o out x", "sort --output=out x", "sort --out=x y",
		"sort -uo out x", "sort --compress-program=sh x", "sort -T /tmp x", "rg --pre sh foo", "rg --pre=sh foo",
		"rg -z foo", "rg --search-zip foo", "rg --hostname-bin=sh foo", "rg --pr=sh foo", "fd -x rm", "fd -X rm",
		"fd --exec rm", "fd -l", "fd --list-details", "fd -Hx rm", "grep --fil=x y", "ls --colo=always",
		"find . -exec rm {} ;", "find . -execdir x ;", "find . -ok rm {} ;", "find . -delete", "find . -fprint out",
		"find . -fprintf out %p", "find . -fls out", "find . -fprint0 out", "find . -name x -delete",
		"find . -weird", "jq -f prog.jq x", "jq --rawfile a /etc/passwd .", "jq env", "jq '$ENV.HOME'",
		"jq -n 'input_filename'", "jq -L /tmp 'import \"x\" as x; .'", "awk '{system(\"sh\")}'",
		"awk '{print > \"out\"}' x", "awk '{print | \"sh\"}' x", "awk -f prog.awk x", "awk 'BEGIN{getline x < \"/etc/passwd\"}'",
		"awk 'BEGIN{print ENVIRON[\"HOME\"]}'", "gawk -e 'BEGIN{}' x", "awk -i inplace '{}' x",
		"sed -i 's/a/b/' x", "sed -i.bak 's/a/b/' x", "sed -ni 's/a/b/p' x", "sed -Ei 's/a/b/' x", "sed --in-place 's/a/b/' x",
		"sed 's/a/b/e' x", "sed 'e ls' x", "sed '1e ls' x", "sed 's/a/b/w out' x", "sed 'w out' x", "sed 'W out' x",
		"sed -f script.sed x", "sed -e 's/a/b/' -e 'w out' x", "sed --expression='w out' x", "sed -s -i 's/a/b/' x",
		"sed -z 's/x/y/;w out' x", "sed 'k' x", "sed 's/a/b' x",
		// git that writes or runs code
		"git commit -m x", "git push", "git pull", "git fetch", "git checkout main", "git switch x", "git reset --hard",
		"git add .", "git stash", "git stash pop", "git stash drop", "git branch new", "git branch -d x", "git branch -D x",
		"git branch -m a b", "git tag v1", "git tag -d v1", "git tag -a v1 -m x", "git remote add o u", "git remote remove o",
		"git remote show origin", "git config user.name x", "git config --unset x.y", "git config --edit", "git config -e",
		"git config set x.y z", "git config --add x.y z", "git -c core.pager=sh log", "git -c core.fsmonitor=x status",
		"git --config-env=a=b log", "git -C /tmp log", "git --git-dir=/x log", "git --work-tree=/x status",
		"git --exec-path=/x log", "git -p log", "git --paginate log", "git diff --output=/tmp/x",
		"git diff --ext-diff", "git log --output=x", "git grep -O foo", "git grep --open-files-in-pager foo",
		"git reflog expire --all", "git reflog delete x", "git worktree add x", "git clean -fd", "git gc",
		"git submodule update", "git apply x", "git am x", "git rebase main", "git merge x", "git cherry-pick x",
		"git rm x", "git mv a b", "git init", "git clone x", "git notes add", "git bisect start", "git", "git -x log",
		"git show --output=x HEAD", "git log --ext-diff -p", "git difftool", "git daemon", "git instaweb",
		"cd src && git log", "cd x; git status",
		// assignments that change what runs
		"PATH=/tmp ls", "LD_PRELOAD=/tmp/x.so ls", "GIT_EXTERNAL_DIFF=sh git diff", "PAGER=sh git log", "x=1",
		"PATH=/tmp:$PATH; ls", "BASH_ENV=x ls", "GIT_DIR=/x git log",
		// commands named by a path
		"/bin/ls", "./ls", "bin/cat x",
		// expansions
		"cat $(echo x)", "echo `id`", "ls $HOME", "cat ~/.ssh/id_rsa", "ls {a,b}", "cat <(ls)", "rg foo *; rg --pre=sh x",
		"rg foo *", "find *", "sort *", "rg --pre=* foo", "grep -*=x y",
		// complex constructs
		"for f in *; do cat $f; done", "if true; then ls; fi", "(ls)", "{ ls; }", "f() { ls; }",
	}
	for _, c := range readOnly {
		t.Run("ro/"+c, func(t *testing.T) {
			r := e.Decide(Request{Command: c, Cwd: testCwd})
			if !r.ReadOnly {
				t.Errorf("%q: ReadOnly = false; want true (decision %v)", c, r.Decision)
			}
			if r.Decision.Verdict != policy.Allow {
				t.Errorf("%q: %v; want allow", c, r.Decision)
			}
		})
	}
	for _, c := range notReadOnly {
		t.Run("rw/"+c, func(t *testing.T) {
			r := e.Decide(Request{Command: c, Cwd: testCwd})
			if r.ReadOnly {
				t.Errorf("%q: ReadOnly = true; want false", c)
			}
			if r.Decision.Verdict == policy.Allow {
				t.Errorf("%q: allowed (%v); want ask", c, r.Decision)
			}
		})
	}
}

// TestFlagParsing covers the strict flag rules on their own.
func TestFlagParsing(t *testing.T) {
	tab := flags("-n= -v -x --lines= --verbose --color? --pair%")
	for _, tc := range []struct {
		args []string
		ok   bool
		pos  int
	}{
		{[]string{"-n", "5", "f"}, true, 1},
		{[]string{"-n5", "f"}, true, 1},
		{[]string{"-vn5"}, true, 0},
		{[]string{"-vx"}, true, 0},
		{[]string{"-vy"}, false, 0},
		{[]string{"--lines=5"}, true, 0},
		{[]string{"--lines", "5", "a", "b"}, true, 2},
		{[]string{"--line=5"}, false, 0}, // abbreviations are refused
		{[]string{"--verbose=1"}, false, 0},
		{[]string{"--color"}, true, 0},
		{[]string{"--color=always"}, true, 0},
		{[]string{"--pair", "a", "b", "c"}, true, 1},
		{[]string{"--", "-rf"}, true, 1},
		{[]string{"-"}, true, 1},
		{[]string{"-n"}, false, 0},
	} {
		pa, _, ok := parseFlags(tc.args, tab, flagOpts{})
		if ok != tc.ok || (ok && len(pa.pos) != tc.pos) {
			t.Errorf("parseFlags(%q) = %v ok=%v; want ok=%v with %d positionals", tc.args, pa, ok, tc.ok, tc.pos)
		}
	}
}

// auditedEffects are commands an audit found allowed and read-only that
// write or run programs (each traced under strace), with their read-only
// neighbours. The behavioural oracle runs their likes
// (testdata/oracle.jsonl) in a project where they have their effects.
var auditedEffects = map[string][]seedCase{
	"git signature verification (runs gpg.program, writes ~/.gnupg and a temporary file)": {
		{"git log --show-signature -1", askV, false}, {"git show -s --show-signature", askV, false},
		{"git log -1 --format=%G?", askV, false}, {"git log -1 --pretty=format:%GS", askV, false},
		{"git log --format='%h %GK'", askV, false}, {"git log --format=%GF", askV, false},
		{"git log --format=%GP", askV, false}, {"git log --format=%GT", askV, false}, {"git log --format=%GG", askV, false},
		{"git log --format='%+G?'", askV, false}, {"git log --format='%-%G?'", askV, false},
		{"git log --pretty=tformat:%G?", askV, false}, {"git show -s --format=%GS HEAD", askV, false},
		{"git rev-list --format=%G? HEAD", askV, false}, {"git shortlog --format=%GS", askV, false},
		{"git stash list --format=%G?", askV, false}, {"git reflog --format=%G?", askV, false},
		{"git whatchanged --format=%G?", askV, false}, {"git diff-tree -s --format=%G? HEAD", askV, false},
		{"git for-each-ref --format='%(signature)'", askV, false},
		{"git for-each-ref --format='%(refname) %(signature:grade)'", askV, false},
		{"git branch --format='%(*signature:signer)'", askV, false}, {"git tag -l --format='%(signature)'", askV, false},
		{"git -c log.showSignature=true log", askV, false}, {"git verify-commit HEAD", askV, false},
		{"git verify-tag v1", askV, false}, {"git tag -v v1", askV, false},
		// a format name that is not git's own is an alias of the configuration
		{"git log --pretty=sig", askV, false}, {"git log --format=one", askV, false},
		// read-only: no %G placeholder, %% is a literal percent sign
		{"git log --pretty=raw", allow, true}, {"git show -s --pretty=raw", allow, true},
		{"git log --format='%H %an %s'", allow, true}, {"git log --format='%%G'", allow, true},
		{"git log --pretty=oneline", allow, true}, {"git log --pretty=fuller", allow, true}, {"git log --pretty", allow, true},
		{"git log --format='%h %gd %gs' -g", allow, true}, {"git log --date=format:%G-%V", allow, true},
		{"git log --no-show-signature", allow, true}, {"git for-each-ref --format='%(refname) %(contents:signature)'", allow, true},
		{"git ls-files --format='%(objectname)'", allow, true},
	},
	"git merge-tree (--write-tree, the default with two commits, writes objects)": {
		{"git merge-tree --write-tree x y", askV, false}, {"git merge-tree x y", askV, false},
		{"git merge-tree --write-tree --quiet x y", askV, false}, {"git merge-tree --merge-base=b x y", askV, false},
		{"git merge-tree --trivial-merge", askV, false}, {"git merge-tree a b c d", askV, false},
		{"git merge-tree --trivial-merge b x y", allow, true}, {"git merge-tree b x y", allow, true},
	},
	"git remerge-diff (merges again into a temporary object directory)": {
		{"git log --remerge-diff", askV, false}, {"git show --remerge-diff HEAD", askV, false},
		{"git log --diff-merges=remerge -p", askV, false}, {"git show --diff-merges=r", askV, false},
		{"git log --diff-merges=bogus", askV, false},
		{"git log --diff-merges=first-parent -p", allow, true}, {"git log --diff-merges=cc", allow, true},
		{"git show --diff-merges=off", allow, true}, {"git log -m -p", allow, true}, {"git show --cc HEAD", allow, true},
	},
	"git describe --dirty, --broken (take .git/index.lock, refresh the index)": {
		{"git describe --dirty", askV, false}, {"git describe --dirty=-mod", askV, false},
		{"git describe --tags --dirty --always", askV, false}, {"git describe --broken", askV, false},
		{"git describe", allow, true}, {"git describe --tags --always", allow, true}, {"git describe --long HEAD", allow, true},
	},
	"file decompressing (runs zstd, lz4, gzip... found on PATH)": {
		{"file -z x.zst", askV, false}, {"file -Z x.lz4", askV, false}, {"file -bz x", askV, false},
		{"file --uncompress x", askV, false}, {"file --uncompress-noreport x", askV, false},
		{"file x.gz", allow, true}, {"file -b --mime-type x", allow, true},
	},
	"sort's temporary files (kept read-only: docs/DECISIONS.md)": {
		{"sort -S 1K big.txt", allow, true}, {"sort --buffer-size=1K -n big.txt", allow, true},
		{"sort -T /tmp x", askV, false}, {"sort -o out x", askV, false},
	},
	"/proc: environment and other processes' arguments (as env and ps)": {
		{"cat /proc/self/environ", askV, false}, {"strings /proc/self/environ", askV, false},
		{"cat /proc/1/environ", askV, false}, {"cat < /proc/self/environ", askV, false},
		{"grep -a KEY /proc/self/environ", askV, false}, {"cat /proc/1/task/1/environ", askV, false},
		{"cd /proc/self && cat environ", askV, false}, {"cd /proc && cat 1/environ", askV, false},
		{"cd / && cat proc/1/environ", askV, false},
		{"cat /proc/1/cmdline", askV, false}, {"cat /proc/*/cmdline", askV, false}, {"cat /proc/self/*", askV, false},
		{"cat /proc/self/task/1/cmdline", askV, false},
		// outside the working directory (asks), but read-only
		{"cat /proc/self/cmdline", askV, true}, {"cat /proc/cpuinfo", askV, true}, {"cat /proc/self/status", askV, true},
		{"ls /proc", askV, true},
	},
}

func TestAuditedEffects(t *testing.T) {
	e := mustEngine(t, policy.Permissions{})
	for cat, cases := range auditedEffects {
		for _, tc := range cases {
			r := e.Decide(Request{Command: tc.cmd, Cwd: testCwd})
			if r.Decision.Verdict != tc.verdict || r.ReadOnly != tc.readOnly {
				t.Errorf("%s: %q = %v, read-only %v; want %v, read-only %v", cat, tc.cmd, r.Decision, r.ReadOnly, tc.verdict, tc.readOnly)
			}
		}
	}
	// With / as an additional directory, the /proc paths that are not
	// dangerous are allowed; the others still ask.
	for cmd, want := range map[string]policy.Verdict{
		"cat /proc/self/cmdline": allow, "cat /proc/cpuinfo": allow, "cat /proc/1/cmdline": askV,
		"cat /proc/self/environ": askV, "cat /proc/1/*": askV,
	} {
		if r := e.Decide(Request{Command: cmd, Cwd: testCwd, AdditionalDirs: []string{"/"}}); r.Decision.Verdict != want {
			t.Errorf("%q with / added: %v; want %v", cmd, r.Decision, want)
		}
	}
}

func TestPrettyVerifies(t *testing.T) {
	for f, want := range map[string]bool{
		"%G?": true, "%GS": true, "%Gx": true, "x%GG": true, "%+GS": true, "%-GK": true, "% GF": true, "%-%G?": true,
		"%%G?": false, "%%%G?": true, "%H %s": false, "%gd": false, "G": false, "%": false, "%%": false, "%C(%G)": true,
		"%-%%G": false,
	} {
		if got := prettyVerifies(f); got != want {
			t.Errorf("prettyVerifies(%q) = %v; want %v", f, got, want)
		}
	}
}
