package permissions

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// hiddenRunCases are command lines that run rm without naming it where
// the deny rules' extraction looked (found by an attack pass: each was
// allowed under autoAllowBashIfSandboxed and bypassPermissions with
// "deny: Bash(rm:*)"). VICTIM is a file each removes in real bash.
var hiddenRunCases = []string{
	`env -S'rm VICTIM'`,
	`env -Srm VICTIM`,
	`env -iS'rm VICTIM'`,
	`env -iS 'rm VICTIM'`,
	`script -qc'rm VICTIM' /dev/null`,
	`bash < <(echo rm VICTIM)`,
	`bash <(echo rm VICTIM)`,
	`source <(echo rm VICTIM)`,
	`. /dev/stdin <<< 'rm VICTIM'`,
	`echo rm VICTIM | source /dev/stdin`,
	`bash /dev/stdin <<< 'rm VICTIM'`,
	`mapfile -t -C rm -c 1 arr <<< VICTIM`,
	`trap -- 'rm VICTIM' EXIT`,
	`git -c 'alias.x=!rm' x VICTIM`,
	`printf -v y '\x24(rm VICTIM)'; echo "${y@P}"`,
	`printf -v y 'a[\x24(rm VICTIM)]'; echo $((y))`,
	`printf -v y 'a[\x24(rm VICTIM)]'; echo ${!y}`,
	`printf -v y 'a[\x24(rm VICTIM)]'; [[ $y -eq 1 ]]`,
	`printf -v y 'a[\x24(rm VICTIM)]'; x=abc; echo ${x:y}`,
	`printf -v y 'a[\x24(rm VICTIM)]'; declare -n r=$y; echo $r`,
	`printf -v y 'a[\x24(rm VICTIM)]'; printf -v "$y" x`,
	`printf -v y 'a[\x24(rm VICTIM)]'; read "$y" <<< x`,
	`printf -v y '\x24(rm VICTIM)'; PS4=$y; set -x; true`,
	`printf -v PS4 '\x24(rm VICTIM)'; set -x; true`,
	`read PS4 <<< '$(rm VICTIM)'; set -x; true`,
	`hash -p /bin/rm ls; ls VICTIM`,
	`BASH_CMDS[ls]=/bin/rm; ls VICTIM`,
	`GIT_EXTERNAL_DIFF=rm git diff --no-index VICTIM x`,
	// a second attack pass, on the fix: stdin scripts in blocks and
	// through other descriptors, echo/printf that decode, compgen, git
	// aliases and configuration, functions in the environment, wrappers
	`echo 'rm VICTIM' | { bash; }`,
	`echo 'rm VICTIM' | (bash)`,
	`echo 'rm VICTIM' | if true; then bash; fi`,
	`echo 'rm VICTIM' | time bash`,
	`echo 'rm VICTIM' | bash -c bash`,
	`echo 'rm VICTIM' | bash -c 'source /dev/stdin'`,
	`{ bash; } < <(echo rm VICTIM)`,
	`{ bash; } <<< 'rm VICTIM'`,
	`exec < <(echo rm VICTIM); bash`,
	`bash 3< <(echo rm VICTIM) <&3`,
	`bash <<<'rm VICTIM' 3<<<'echo hi'`,
	`echo -e 'rm VICTIM' | bash`,
	`printf 'rm VICTIM' | bash`,
	`printf 'r%s VICTIM' m | bash`,
	`printf '%s' 'rm VICTIM' | bash /dev/stdin`,
	`printf '%s' 'rm VICTIM' | source /dev/stdin`,
	`compgen -C 'rm VICTIM' x`,
	`compgen -W '$(rm VICTIM)' x`,
	`git init -q r && git -C r config alias.x '!rm VICTIM' && git -C r x`,
	`env 'BASH_FUNC_x%%=() { rm VICTIM; }' bash -c x`,
	`prlimit --nofile=100 rm VICTIM`,
	// a third pass: programs' options and start-up files that run a command
	`bash --rcfile <(echo rm VICTIM) -i </dev/null`,
	`bash --init-file <(echo rm VICTIM) -i </dev/null`,
	`tar -cf x.tar --checkpoint=1 --checkpoint-action=exec='rm VICTIM' x`,
	`tar -cf y.tar -I 'rm VICTIM;cat' x`,
	`ssh -o ProxyCommand='rm VICTIM' -o BatchMode=yes nohost.invalid`,
	`zip -q z.zip x -T -TT 'rm VICTIM #'`,
	`rsync -e 'sh -c "rm VICTIM"' nohost.invalid:x y`,
	`make -f <(printf 'a:
	rm VICTIM
')`,
	`make --eval=$'a:
	rm VICTIM'`,
	`sed -n '1e rm VICTIM' x`,
	`sed 's|.*|rm VICTIM|e' <<< x`,
	// attack pass 49: find puts the names it finds into a shell's script
	// (a name of the working tree is code there), git subcommands and
	// wrappers that run a command
	`touch '$(rm victim)' && find . -name '$(*' -exec sh -c 'echo {}' \;`,
	`touch ';rm victim' && find . -name ';*' -execdir bash -c 'echo {}' \;`,
	`touch ';rm victim' && find . -name ';*' -exec sh -c {} \;`,
	`git init -q r && git -C r -c user.name=a -c user.email=a@b commit -q --allow-empty -m a && git -C r -c user.name=a -c user.email=a@b commit -q --allow-empty -m b && git -C r -c user.name=a -c user.email=a@b rebase -q -x 'rm VICTIM' HEAD~1`,
	`git init -q r && git -C r -c user.name=a -c user.email=a@b commit -q --allow-empty -m a && git -C r -c user.name=a -c user.email=a@b commit -q --allow-empty -m b && git -C r -c user.name=a -c user.email=a@b rebase -q --exec='rm VICTIM' HEAD~1`,
	`git init -q s && git -C s -c user.name=a -c user.email=a@b commit -q --allow-empty -m a && git config --global protocol.file.allow always && git init -q r && git -C r submodule -q add "$PWD/s" s && git -C r submodule -q foreach 'rm VICTIM'`,
	`git init -q r && git -C r -c user.name=a -c user.email=a@b commit -q --allow-empty -m a && git -C r -c user.name=a -c user.email=a@b commit -q --allow-empty -m b && git -C r bisect start HEAD HEAD~1 && git -C r bisect run rm VICTIM`,
	`capsh -- -c 'rm VICTIM'`,
	`fakeroot rm VICTIM`,
}

// oracleTools are the programs a case needs in bash; a case whose program
// is not installed is judged by moat but not run.
var oracleTools = []string{"ssh", "zip", "rsync", "make", "tar", "prlimit", "git", "script", "capsh", "fakeroot", "find"}

// TestDenyRulesSeeHiddenCode: a deny rule holds where nothing else is
// consulted (autoAllowBashIfSandboxed, bypassPermissions) against lines
// that run the denied program without naming it as a command; every case
// removes its victim in real bash (so the test can fail), and everyday
// lines stay allowed (so it does not pass by asking everything).
func TestDenyRulesSeeHiddenCode(t *testing.T) {
	perms := policy.Permissions{Deny: []policy.Rule{{Rule: "Bash(rm:*)"}}}
	auto, err := New(perms, Options{Sandbox: &policy.Switches{AutoAllowBashIfSandboxed: true}})
	if err != nil {
		t.Fatal(err)
	}
	bypass, err := New(perms, Options{})
	if err != nil {
		t.Fatal(err)
	}
	bash, berr := exec.LookPath("bash")
	for _, c := range hiddenRunCases {
		dir := t.TempDir()
		victim := filepath.Join(dir, "victim")
		cmd := strings.ReplaceAll(c, "VICTIM", victim)
		for name, d := range map[string]Result{
			"autoAllowBashIfSandboxed": auto.Decide(Request{Command: cmd, Cwd: dir}),
			"bypassPermissions":        bypass.Decide(Request{Command: cmd, Cwd: dir, Mode: "bypassPermissions"}),
		} {
			if v := d.Decision.Final(); v.Verdict == policy.Allow {
				t.Errorf("%s: %q allowed (%s) with deny Bash(rm:*)", name, cmd, v.Reason)
			}
		}
		if berr != nil || missingTool(cmd) {
			continue
		}
		// The same line removes the victim in bash: the case is real.
		if err := os.WriteFile(victim, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "x"), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		run := exec.Command(bash, "-c", cmd)
		run.Dir = dir
		run.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
		run.Stdin = strings.NewReader("")
		run.Run() // the exit status does not matter: the victim does
		if _, err := os.Lstat(victim); err == nil {
			t.Errorf("bash did not remove the victim with %q: the case proves nothing", cmd)
		}
	}
	// git push denied: an alias, given or configured, is another name for it.
	pushDeny, err := New(policy.Permissions{Deny: []policy.Rule{{Rule: "Bash(git push:*)"}}}, Options{Sandbox: &policy.Switches{AutoAllowBashIfSandboxed: true}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{
		"git -c alias.p=push p origin main",
		"GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.p GIT_CONFIG_VALUE_0=push git p origin main",
		"git config alias.q push; git q origin main",
		"git q origin main",
		`GIT_CONFIG_PARAMETERS="'alias.x'='push'" git x`,
	} {
		if v := pushDeny.Decide(Request{Command: c, Cwd: "/work"}).Decision.Final(); v.Verdict == policy.Allow {
			t.Errorf("deny git push: %q allowed (%s)", c, v.Reason)
		}
	}
	for _, ok := range []string{
		"echo hello", "ls -la", "git status", "echo $(date)", "ls > out.txt",
		"for i in 1 2; do echo $i; done", "echo $((1+2))", "cat a | grep b",
		"x=1; echo $x", "export FOO=bar", "env FOO=1 make", "trap - EXIT", "trap -p",
		"source ./env.sh", ". venv/bin/activate", "bash script.sh", "read -r line < f",
		"echo 'ls' | bash", "bash < script.sh", "git log --oneline", "git config user.name x",
		`find . -name '*.go' -exec grep -l TODO {} +`, `find . -type f -exec sh -c 'wc -l "$1"' _ {} \;`,
		"git rebase -i HEAD~3", "git rebase -X theirs main", "git bisect start", "git submodule update --init",
		"fakeroot dpkg-deb --build pkg", "capsh --print",
	} {
		if v := auto.Decide(Request{Command: ok, Cwd: "/work"}).Decision.Final(); v.Verdict != policy.Allow {
			t.Errorf("autoAllowBashIfSandboxed: %q not allowed (%s)", ok, v.Reason)
		}
	}
}

// TestEarlierPartRemakesTree: a path under what an earlier part of the
// same line moves, copies or links there is not judged against the tree
// as it is before the line runs (a directory of the working tree holding
// a symbolic link to outside, renamed, let a later write and read reach
// outside under acceptEdits and allow rules: found by an attack pass).
// Each line writes outside in real bash; each is asked for; everyday
// lines stay allowed.
func TestEarlierPartRemakesTree(t *testing.T) {
	root := t.TempDir()
	work, outside := filepath.Join(root, "work"), filepath.Join(root, "outside")
	setup := func() {
		os.RemoveAll(work)
		os.RemoveAll(outside)
		for _, d := range []string{filepath.Join(work, "a"), outside} {
			if err := os.MkdirAll(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Symlink(outside, filepath.Join(work, "a", "inner")); err != nil {
			t.Fatal(err)
		}
		for f, c := range map[string]string{filepath.Join(outside, "target.txt"): "orig\n", filepath.Join(work, "a.txt"): "new\n"} {
			if err := os.WriteFile(f, []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	eng, err := New(policy.Permissions{Allow: []policy.Rule{{Rule: "Bash(mv:*)"}, {Rule: "Bash(cp:*)"}, {Rule: "Bash(ln:*)"}, {Rule: "Bash(touch:*)"}, {Rule: "Bash(tar:*)"}}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := New(policy.Permissions{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cmd  string
		mode string
		e    *Engine
		read bool // the line reads outside (prints target.txt) rather than writes
	}{
		{"cp -a a c && cp a.txt c/inner/target.txt", "acceptEdits", plain, false},
		{"mv a b && echo owned | tee -a b/inner/target.txt", "acceptEdits", plain, false},
		{"mv a b; touch b/inner/newfile", "acceptEdits", plain, false},
		{"mv a b && sed -i s/orig/X/ b/inner/target.txt", "acceptEdits", plain, false},
		{"cp -r a d && tee d/inner/target.txt < a.txt", "acceptEdits", plain, false},
		{"mv a b && cat b/inner/target.txt", "default", eng, true},
		{"ln -s " + outside + " k && touch k/linked", "default", eng, false},
		// the second pass: mv -t, and tools whose results are not modelled
		{"mkdir d && mv -t d a && echo owned | tee -a d/a/inner/target.txt", "acceptEdits", plain, false},
		{"mkdir d; mv -vt d a; sed -i s/orig/X/ d/a/inner/target.txt", "acceptEdits", plain, false},
		{"mkdir d && mv --target-directory=d a && touch d/a/inner/newfile", "acceptEdits", plain, false},
		{"cp -s " + outside + "/target.txt c && echo owned | tee -a c", "acceptEdits", eng, false},
		{"mkdir d && ln -st d " + outside + " && echo owned | tee -a d/outside/target.txt", "acceptEdits", eng, false},
		{"cp -rl a c && echo owned | tee -a c/inner/target.txt", "acceptEdits", eng, false},
		{"tar cf t.tar a && mkdir e && tar xf t.tar -C e && echo owned | tee -a e/a/inner/target.txt", "acceptEdits", eng, false},
	} {
		setup()
		if d := tc.e.Decide(Request{Command: tc.cmd, Cwd: work, Mode: tc.mode}).Decision.Final(); d.Verdict == policy.Allow {
			t.Errorf("%s: %q allowed (%s)", tc.mode, tc.cmd, d.Reason)
		}
		run := exec.Command("bash", "-c", tc.cmd)
		run.Dir = work
		out, _ := run.Output()
		es, _ := os.ReadDir(outside)
		b, _ := os.ReadFile(filepath.Join(outside, "target.txt"))
		switch {
		case tc.read && string(out) != "orig\n":
			t.Errorf("%q printed %q in bash, not the file outside: the case proves nothing", tc.cmd, out)
		case !tc.read && len(es) == 1 && string(b) == "orig\n":
			t.Errorf("%q changed nothing outside in bash: the case proves nothing", tc.cmd)
		}
	}
	setup()
	os.MkdirAll(filepath.Join(work, "plain", "sub"), 0o755)
	os.WriteFile(filepath.Join(work, "plain", "sub", "f"), nil, 0o644)
	for _, ok := range []string{
		"mkdir -p build && cp -r plain build/ && touch build/plain/x",
		"cp -a plain c && touch c/new.txt",
		"mkdir -p build && cp a.txt build/ && touch build/y",
		"cp a.txt b.txt && tee -a b.txt < /dev/null",
		"mv a.txt c.txt; touch c.txt",
		"mv a b",
	} {
		if d := plain.Decide(Request{Command: ok, Cwd: work, Mode: "acceptEdits"}).Decision.Final(); d.Verdict != policy.Allow {
			t.Errorf("acceptEdits: %q not allowed (%s)", ok, d.Reason)
		}
	}
}

// missingTool reports a case that names a program (oracleTools) this
// machine does not have.
func missingTool(cmd string) bool {
	for _, w := range strings.Fields(cmd) {
		for _, t := range oracleTools {
			if w == t {
				if _, err := exec.LookPath(t); err != nil {
					return true
				}
			}
		}
	}
	return false
}
