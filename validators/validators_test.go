package validators

import (
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// vcase is one input to one validator: whether it must ask.
type vcase struct {
	cmd string
	ask bool
}

func asks(cmds ...string) []vcase {
	out := make([]vcase, len(cmds))
	for i, c := range cmds {
		out[i] = vcase{c, true}
	}
	return out
}

func passes(cmds ...string) []vcase {
	out := make([]vcase, len(cmds))
	for i, c := range cmds {
		out[i] = vcase{c, false}
	}
	return out
}

// runValidator runs one validator alone on cmd, which must parse Simple.
func runValidator(t *testing.T, name, cmd string) policy.Decision {
	t.Helper()
	p := parse(cmd)
	if p.result.Kind != Simple {
		t.Fatalf("%q does not parse Simple: %s: %s", cmd, p.result.Kind, p.result.Reason)
	}
	ctx := &Context{Command: cmd, Parse: p.result, Views: computeViews(p), p: p, recurse: analyze}
	for _, v := range chain {
		if v.Name == name {
			return v.Fn(ctx)
		}
	}
	t.Fatalf("no validator %q", name)
	return policy.Decision{}
}

var validatorTests = map[string][]vcase{
	"incomplete_commands": append(
		asks("\tls", "-la", "  --force x", "> out ls", "echo a \\"),
		passes("ls -la", "git status", "echo -n x", "a && b")...),
	"jq_system_functions": append(
		asks(`jq env`, `jq -n 'env.HOME'`, `jq '$ENV.PATH'`, `jq '.a | system'`, `jq 'builtins'`,
			`jq -r 'input_filename'`, `jq '"\(env.SECRET)"'`, `jq 'import "x" as y; .'`, `jq "$F" x.json`,
			`timeout 5 jq env`, `xargs jq env`, `jq --arg k v 'env' x.json`, `/usr/bin/jq debug`),
		passes(`jq . x.json`, `jq '.env' x.json`, `jq '.a.env' x`, `jq 'select(.name == "env")'`,
			`jq -r '.items[] | .name' x.json`, `jq --arg v env '.x = $v' f.json`, `jq '.["system"]'`,
			`jq '.foo?.env' x`, `cat env`, `jq 'paths'`)...),
	"jq_file_arguments": append(
		asks(`jq -f prog.jq x.json`, `jq --from-file prog.jq`, `jq --rawfile f /etc/passwd -n '$f'`,
			`jq --slurpfile s a.json .`, `jq -L /tmp/mods .`, `jq --args '.' a b`, `jq --jsonargs . 1`,
			`jq -nf prog.jq`, `jq -rL lib .`, `jq --from-file=p.jq`),
		passes(`jq . x.json`, `jq -r .a x.json`, `jq -s add a.json b.json`, `jq --arg v 1 '.x=$v' f`,
			`jq -c -e . x`, `jq -- .a x.json`)...),
	"obfuscated_flags": append(
		asks(`rm "-rf" x`, `rm ""-rf x`, `rm '-'rf x`, `rm \-rf x`, `rm -"rf" x`, `git push --"force"`,
			`ls -\la`, `echo $'\x2d'rf`, `echo $"x"`, `'rm' -rf x`, `r""m -rf x`, `\rm -rf x`,
			`"${CMD:-rm}" -rf /`, `$X -rf`, `rm -r""f x`, `cat x''y`),
		passes(`rm -rf x`, `cut -d' ' -f2 f`, `git commit -m "msg"`, `grep -e "a b" f`,
			`cmd --format="%H %s"`, `cmd --opt=""`, `cmd -m''`, `sed -i'' -e 's/a/b/' f`, `sed -e's/a/b/' f`, `echo ""`, `echo ''`,
			`"/path with space/bin" x`, `find . -name "*.go"`, `x=1 ls`, `[ -d build ]`, `[ "$a" = b ]`)...),
	"shell_metacharacters": append(
		asks(`bash -c "ls"`, `sh -c 'a; b'`, `bash -lc "x"`, `eval "ls -la"`, `eval $x`,
			`echo aGk= | base64 -d | sh`, `curl -s x | bash`, "bash <<'EOF'\nls\nEOF",
			`find . -exec sh -c 'rm "$1"' _ {} \;`, `xargs -I{} bash -c 'echo {}'`, `sudo sh -c "x"`,
			`timeout 5 bash -c "x"`, `su -c "id" root`, `ssh host 'a; b'`, `ssh host "$CMD"`,
			`watch 'ps | grep x'`, `find . -name "*;rm"`, `find . -path 'a|b'`, `bash -c`,
			`rg --pre=sh x`, `rg --pre sh x`, `sort --compress-program sh f`, `man --html=x ls`, `man -Hfirefox ls`,
			`git ls-remote --upload-pack="id" o`, `git fetch --upload-pa=x o`, `git -c alias.x='!id' x`,
			`git -c core.pager='sh -c id' log`, `git -c core.sshCommand=x fetch`, `ssh -o ProxyCommand='nc %h %p' h`,
			`ssh -oProxyCommand=x h`, `scp -o LocalCommand=x a b:`, `tar --to-command=sh -xf a.tar`, `tar -I zstd -xf a`,
			`zip -TT 'sh -c id' a.zip f`, `env -S 'sh -c id'`, `timeout 5 env -S "x y"`),
		passes(`bash script.sh`, `sh ./configure`, `ssh host uptime`, `ssh -p 22 host 'ls -la'`,
			`watch -n 5 kubectl get pods`, `watch -x ls -la`, `find . -name "*.go"`, `echo bash -x`,
			`grep -c sh file`, `python3 -c "print(1)"`, `rg --pretty x`, `sort -u f`, `man ls`, `git -c color.ui=always log`,
			`git -c user.name=x commit -m y`, `git -c core.pager=cat log`, `git -c core.editor=true rebase`, `ssh -o StrictHostKeyChecking=no h uptime`, `tar -xzf a.tar.gz`,
			`env FOO=1 make`, `git log --format=%H`)...),
	"dangerous_variables": append(
		asks(`BASH_ENV=/tmp/x bash s.sh`, `ENV=x sh`, `PATH=/tmp:$PATH git status`, `export PATH="$PATH:x"`,
			`LD_PRELOAD=./x.so ls`, `DYLD_INSERT_LIBRARIES=x ls`, `PS4='$(id)' bash -x s`, `PROMPT_COMMAND=x`,
			`env GIT_SSH_COMMAND="ssh -i k" git fetch`, `GIT_PAGER='sh -c x' git log`, `PAGER="$P" man ls`,
			`echo $BASH_ENV`, `echo "${CDPATH}"`, `declare -x NODE_OPTIONS=--require=x`, `env 'BASH_FUNC_ls%%=() { id; }' bash -c ls`,
			`read PATH`, `printf -v PATH %s x`, `make LD_LIBRARY_PATH=/tmp`, `sudo PYTHONPATH=. python3 x`,
			`declare -n r=PATH; r=/tmp`, `local -n r=x`, `typeset -rn r=PATH`),
		passes(`NODE_ENV=test npm test`, `GIT_PAGER=cat git log`, `PAGER=less man ls`, `echo $PATH`,
			`echo $HOME`, `FOO=bar cmd`, `export NODE_ENV=production`, `printf "%s" PATH`, `make CC=clang`,
			`echo PATH`, `export -n FOO`, `declare -x FOO=1`)...),
	"newlines": append(
		asks("a\nb", "a;\nb", "cat <<EOF\nx\nEOF\necho done", "a # c\nb", "a &\nb"),
		passes("a; b", "a && \\\nb", "a &&\nb", "a |\nb", `echo "a
b"`, "cat <<'EOF'\nx\ny\nEOF", "a\n", "\na")...),
	"command_substitution": append(
		asks(`echo $(id)`, "echo `id`", `echo "$(id)"`, `diff <(a) <(b)`, `tee >(cat)`, `echo $((1+2))`,
			`echo $[1+2]`, `echo ${!x}`, `echo ${a[$i]}`, `echo ${x:1:2}`, `echo ${x:=v}`, `echo ${x@P}`,
			`echo ${!pre*}`, "cat <<EOF\n$(id)\nEOF", `x=$(id) cmd`, `echo "$(cat <<EOF`+"\nx\nEOF\n)\""),
		passes(`echo $x`, `echo ${x}`, `echo "${x:-default}"`, `echo ${#x}`, `echo ${x%.go}`,
			`echo ${x/a/b}`, `echo ${x^^}`, "git commit -m \"$(cat <<'EOF'\nmsg\nEOF\n)\"",
			"cat <<'EOF'\n$(id)\nEOF", `echo '$(id)'`, `echo "\$(id)"`)...),
	"evaluated_strings": append(
		asks(`test -v 'a[$(id)]'`, `[ -v "a[x]" ]`, `test -R 'a[$(id)]'`, `command test -v 'a[x]'`,
			`read 'a[$(id)]'`, `read -r x 'a[i]'`, `printf -v 'a[$(id)]' x`, `printf -v'a[i]' x`,
			`unset 'a[$(id)]'`, `mapfile 'a[x]'`, `wait -p 'a[x]'`, `declare 'a[x]=1'`, `declare -i x=1`,
			`typeset -ai x`, `local -i n`, `export 'a[$(id)]=1'`, `builtin let x=1`, `RANDOM='a[$(id)]'`,
			`OPTIND=x`, `read OPTIND`, `x='a[$(id)]'`, "x='a[`id`]' ls", `env x='b[$y]' ls`),
		passes(`test -v x`, `test -v 'a[0]'`, `[ -v 'a[ 1 ]' ]`, `test -v 'a[@]'`, `test 'a[x]' -eq 1`,
			`read -r x`, `read -a arr`, `printf -v x %s 1`, `printf '%d' 'a[x]'`, `unset x`, `declare -a x`,
			`export X=1`, `OPTIND=1`, `RANDOM=42`, `x='[abc]'`, `x='a[1]'`, `grep -v 'a[x]' f`, `echo 'a[$(id)]'`)...),
	"sensitive_redirection": append(
		asks(`echo x > ~/.bashrc`, `echo x > /etc/hosts`, `cat < /etc/shadow`, `echo x > ../x`,
			`echo x >> .git/hooks/pre-commit`, `echo x > .env`, `cmd > "$OUT"`, `cmd > out/.hidden/x`,
			`cat < /dev/tcp/example.com/80`, `exec 3<>/dev/tcp/h/80`, `cmd 2> ~/log`, `echo x >! ~/.zshrc`,
			`echo x >>! f`),
		passes(`cmd > out.txt`, `cmd >> build/log.txt 2>&1`, `cmd > /dev/null 2>&1`, `cmd 2>/dev/null`,
			`cmd >&2`, `cmd 2>&1`, `cmd < input.txt`, `cmd <&-`, `cat <<EOF`+"\nx\nEOF", `cmd <<< "x"`,
			`cmd > ./out.txt`, `cmd > /dev/stderr`, `echo x >& out.log`)...),
	"input_redirection": append(
		asks(`sort < names.txt`, `cmd <> f`, `cmd 0< in`, `cmd <& file`),
		passes(`cmd < /dev/null`, `cmd <&0`, `cmd <<< x`, "cmd <<EOF\nx\nEOF", `cmd > out`)...),
	"output_redirection": append(
		asks(`cmd > out.txt`, `cmd >> log`, `cmd >| f`, `cmd &> all.log`, `cmd &>> all.log`, `cmd 2> err.txt`,
			`cmd >& out.log`),
		passes(`cmd > /dev/null`, `cmd 2>&1`, `cmd >&2`, `cmd 1>&2`, `cmd 2>&-`, `cmd < in`,
			`cmd > /dev/stdout`)...),
	"ifs_injection": append(
		asks(`IFS=: read -ra p <<< "$PATH"`, `echo $IFS`, `cat${IFS}x`, `echo ${IFS:0:1}`, `export IFS=x`,
			`declare IFS`, `env IFS=, cmd`, `read IFS`, `local IFS=x`),
		passes(`echo IFS`, `grep IFS file`, `echo "$FIELDS"`, `cut -d: -f1 /etc/passwd`)...),
	"proc_environ": append(
		asks(`cat /proc/self/environ`, `cat /proc/1/environ | tr '\0' '\n'`, `cd /proc/self && cat environ`,
			`cat /proc/$$/status`, `cat /proc/*/cmdline`, `strings /proc/self/env*`, `cat < /proc/$PID/maps`),
		passes(`cat /proc/cpuinfo`, `cat /proc/meminfo`, `ls /proc`, `echo environment`, `cat env.txt`)...),
	"malformed_tokens": append(
		asks(`echo {a`, `echo a}`, `echo }{`, `echo \'`, `echo it\'s`, `echo \"x`),
		passes(`echo {}`, `git log @{u}`, `git stash show stash@{0}`, `find . -exec rm {} +`, `echo "{a"`,
			`echo '}'`, `echo {a}`)...),
	"backslash_whitespace": append(
		asks(`ls my\ dir`, "cat a\\\tb", "ec\\\nho hi", `touch x\ `),
		passes(`ls "my dir"`, `ls 'my dir'`, "a \\\n b", `echo a\\b`, `echo "a\ b"`)...),
	"brace_expansion": append(
		asks(`echo {a,b}`, `cp f{,.bak}`, `echo {1..5}`, `rm -{r,f} x`, `echo x{a,"b"}`, `echo {$a,b}`),
		passes(`echo {}`, `echo {a}`, `git log @{u}`, `echo "{a,b}"`, `echo '{1..3}'`, `echo a,b`,
			`echo \{a,b\}`)...),
	"control_characters": append(
		asks("echo a\x01b", "echo \x1b[31mred", "echo a\x7fb", "echo 'a\x08b'", "echo \u0085", "cat <<'EOF'\n\x1b]0;x\x07\nEOF"),
		passes("echo a\tb", "echo a\nb", `echo "é ü 日本"`)...),
	"unicode_whitespace": append(
		asks("echo a\u00a0b", "ls\u200b -la", "echo \u202eevil", "rm\u3000-rf x", "echo '\ufeff'", "echo a\u2066b",
			"echo \u00ad"),
		passes(`echo "é ü 日本 ñ"`, "echo →", "echo a b")...),
	"mid_word_hash": append(
		asks(`echo a#b`, `echo 'x'#y`, `curl https://x/#frag`, `x=a#b cmd`, `echo "a"#`),
		passes(`echo a # comment`, `echo "a#b"`, `echo 'a#b'`, `echo ${#x}`, `echo $#`, `echo \#x`,
			`echo #x`)...),
	"zsh_dangerous": append(
		asks(`zmodload zsh/system`, `emulate sh -c 'x'`, `sysopen -w -u 3 f`, `ztcp example.com 80`,
			`zpty w cmd`, `builtin zmodload x`, `command zsocket x`, `zf_rm -rf x`, `=curl evil.sh`,
			`echo =ls`, `echo $`, `echo a$`, `echo $=x`, `enable -f ./x.so x`, `sched +1 x`, `fc -e vi`,
			`command rm -rf x`, `builtin cd x`, `exec rm x`, `noglob rm *`, `nocorrect rm x`, `repeat 1 rm x`,
			`command -p rm x`),
		passes(`ls`, `echo a=b`, `[ a == b ]`, `echo '='`, `echo "$"`, `echo \$`, `test a = b`, `command -v node`,
			`command -V git`, `command`, `echo command rm`)...),
	"backslash_operators": append(
		asks(`echo a\;b`, `echo \|`, `echo x\&y`, `cat \<f`, `echo \> x`, `find . -name x \;`),
		passes(`find . -exec rm {} \;`, `find . -execdir ls \;`, `echo "a;b"`, `echo 'a|b'`, `echo a\\b`,
			`find . \( -name a -o -name b \)`)...),
	"comment_quote_desync": append(
		asks(`ls # it's here`, `ls # say "hi"`, "ls # `x`"),
		passes(`ls # plain comment`, `ls`, `echo "it's"`, `echo '#'`)...),
	"quoted_newline": append(
		asks("echo 'a\n# b'", "echo \"a\n  #b\"", "python3 -c 'x=1\n#comment'"),
		passes("echo 'a\nb'", "echo \"a\nb # c\"", "echo '# a'", "git commit -m \"line\n\nmore\"")...),
}

func TestValidators(t *testing.T) {
	names := map[string]bool{}
	for _, v := range chain {
		names[v.Name] = true
		if v.Name == "git_commit" {
			continue // TestGitCommitEarlyAllow
		}
		if _, ok := validatorTests[v.Name]; !ok {
			t.Errorf("validator %q has no table", v.Name)
		}
	}
	for name, cases := range validatorTests {
		if !names[name] {
			t.Errorf("table for unknown validator %q", name)
			continue
		}
		t.Run(name, func(t *testing.T) {
			for _, tc := range cases {
				d := runValidator(t, name, tc.cmd)
				switch {
				case d.Verdict == policy.Allow || d.Verdict == policy.Deny:
					t.Errorf("%q: %v; a validator other than git_commit must not allow or deny", tc.cmd, d)
				case tc.ask && d.Verdict != policy.Ask:
					t.Errorf("%q: %v; want ask", tc.cmd, d)
				case !tc.ask && d.Verdict != policy.Passthrough:
					t.Errorf("%q: %v; want passthrough", tc.cmd, d)
				case d.Verdict == policy.Ask && d.Reason == "":
					t.Errorf("%q: ask without a reason", tc.cmd)
				}
			}
		})
	}
}

func TestGitCommitEarlyAllow(t *testing.T) {
	allowed := []string{
		`git commit -m "Fix race in cache eviction"`,
		`git commit -am "Bump version"`,
		`git commit -m 'fix: a; b | c && d'`,
		`git commit -m fix`,
		`git commit -s -m "x" --no-verify`,
		`git commit --amend -m "x"`,
		"git commit -m \"line one\n\nline two\"",
		"git commit -m \"$(cat <<'EOF'\nAdd retry\n\n- backoff\n\nCo-Authored-By: Claude <noreply@anthropic.com>\nEOF\n)\"",
		`git commit -m "a" -m "b"`,
	}
	notAllowed := []string{
		`git commit`,                             // no message: opens an editor
		`git commit -m "$(id)"`,                  // substitution
		"git commit -m \"`id`\"",                 // backquotes
		`git commit -m "$USER"`,                  // expansion
		`git commit -m x > ~/.bashrc`,            // redirection
		`git commit -m x && rm -rf ~`,            // more commands
		`git -c core.hooksPath=/tmp commit -m x`, // global options
		`git commit --template=/tmp/t -m x`,      // unknown flag
		`git commit -F msg.txt`,                  // message from a file
		`git commit -m x file.go`,                // pathspec
		`git commit -m x # it's done`,            // comment
		"git commit -m \"a\x1bb\"",               // control character
		"git commit -m \"a\u202eb\"",             // bidi override
		`git commit -m =ls`,                      // zsh =cmd
		`git commit -m x~`,                       // unquoted text outside the safe set
		`git commit -m -x`,                       // message that looks like a flag
		`GIT_DIR=/tmp git commit -m x`,           // assignment
		`"git" commit -m x`,                      // quoted command name
		`git commit -m x -S`,                     // gpg signing runs a program
		`! git commit -m x`,                      // negation
		"git commit -m x\n",                      // fine, but see the next
		"git commit -m x\ngit push",              // newline
	}
	for _, cmd := range allowed {
		res := Analyze(cmd)
		if res.Decision.Verdict != policy.Allow || res.Validator != "git_commit" {
			t.Errorf("Check(%q) = %v (by %q); want allow by git_commit", cmd, res.Decision, res.Validator)
		}
	}
	for _, cmd := range notAllowed {
		if cmd == "git commit -m x\n" {
			continue
		}
		if d := Check(cmd); d.Verdict == policy.Allow {
			t.Errorf("Check(%q) = %v; want not allowed", cmd, d)
		}
	}
}

// TestChainOrder checks the chain against the seed's table: every row
// (1 to 23) is implemented, in order, and names are unique.
func TestChainOrder(t *testing.T) {
	seen := map[string]bool{}
	last := 0
	rows := map[int]bool{}
	for _, v := range Chain() {
		if seen[v.Name] {
			t.Errorf("duplicate validator %q", v.Name)
		}
		seen[v.Name] = true
		if v.Fn == nil || v.Seed == "" {
			t.Errorf("validator %q: missing Fn or Seed", v.Name)
		}
		var n int
		for _, c := range v.Seed {
			if c < '0' || c > '9' {
				break
			}
			n = n*10 + int(c-'0')
		}
		if n < last {
			t.Errorf("validator %q (seed %q) is out of the seed's order", v.Name, v.Seed)
		}
		last = n
		for _, r := range seedRows(v.Seed) {
			rows[r] = true
		}
	}
	for i := 1; i <= 23; i++ {
		if !rows[i] {
			t.Errorf("seed row %d has no validator", i)
		}
	}
}

// seedRows expands "9-10 ..." into 9, 10 and "14 ..." into 14; rows
// grouped in the seed (8-10, 14-16, ...) are given one number each here.
func seedRows(seed string) []int {
	f, _, _ := strings.Cut(seed, " ")
	a, b, ok := strings.Cut(f, "-")
	atoi := func(s string) int {
		n := 0
		for _, c := range s {
			n = n*10 + int(c-'0')
		}
		return n
	}
	if !ok {
		return []int{atoi(a)}
	}
	var out []int
	for i := atoi(a); i <= atoi(b); i++ {
		out = append(out, i)
	}
	return out
}

func TestCheckNeverDenies(t *testing.T) {
	for _, cmd := range seedCommands(t) {
		d := Check(cmd)
		if d.Verdict == policy.Deny {
			t.Errorf("Check(%q) denied", cmd)
		}
		if d.Verdict != policy.Passthrough && !strings.HasPrefix(d.Rule, "validator:") {
			t.Errorf("Check(%q) rule %q does not name a validator", cmd, d.Rule)
		}
	}
}
