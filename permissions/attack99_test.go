package permissions

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// zshRunCases remove VICTIM when zsh runs them (PAT is a file holding
// *(e:rm -f VICTIM:)), while bash's grammar reads no rm command in them:
// *(e:'cmd':) and *(+func) are glob qualifiers that run cmd for each
// file zsh matches, =rm is the path of rm, $~X makes X's value a pattern,
// and setopt globsubst (set -o globsubst) makes every $X one; print -v
// evaluates its variable name's subscript; zsh globs the word of
// ${X:-word}; hash NAME=PATH makes NAME run PATH.
var zshRunCases = []string{
	"ls *(e:'rm -f VICTIM':)",
	"ls ??????(e:'rm -f VICTIM':)", // victim
	`ls *(e:"rm -f VICTIM":)`,
	"=rm -f VICTIM",
	"ls; =rm -f VICTIM",
	"X=$(cat PAT); ls $~X",
	"X=$(cat PAT); ls ${X} $~X",
	"X=$(cat PAT); ls \"\"$~X",
	"X=$(cat PAT); setopt globsubst; ls $X",
	"X=$(cat PAT); set -o globsubst; ls $X",
	"X=$(cat PAT); set -euo GLOB_SUBST; ls $X",
	"X=$(cat PAT); emulate -L zsh -o globsubst; ls $X",
	"eval 'ls *(e:\"rm -f VICTIM\":)'",
	`ls ${X:-*(e:"rm -f VICTIM":)}`,
	`ls ${X:-v*(e:"rm -f VICTIM":)} ${Y:-a}`,
	"hash ls=/bin/rm; ls -f VICTIM",
	"builtin hash -- ls=/bin/rm; ls -f VICTIM",
	"print -v 'a[$(rm -f VICTIM)]' hi",
	"print -rnv 'a[$(rm -f VICTIM)]' -- hi",
}

// TestZshReadingSeenByDenyRules: the agent's shell is the user's when it
// is zsh (moat session, moat shell and moat mcp take $SHELL, as the
// seeds' Bash tool does), and the line was judged with bash's grammar
// only: in bypassPermissions mode with Bash(rm:*) denied, ls
// *(e:'rm -f victim.txt':), =rm -f victim.txt, X=$(cat pat); ls $~X and
// X=$(cat pat); setopt globsubst; ls $X were allowed and removed the file
// in a zsh session (attack pass 99). Each case is judged by moat, and
// run by zsh where it is installed (so the test can fail).
func TestZshReadingSeenByDenyRules(t *testing.T) {
	perms := policy.Permissions{Deny: []policy.Rule{{Rule: "Bash(rm:*)"}}}
	bypass, err := New(perms, Options{})
	if err != nil {
		t.Fatal(err)
	}
	zsh, zerr := exec.LookPath("zsh")
	if zerr != nil {
		t.Log("zsh is not installed: the cases are judged, not run (make install-packages installs it)")
	}
	for _, c := range zshRunCases {
		dir := t.TempDir()
		victim := filepath.Join(dir, "victim")
		pat := filepath.Join(dir, "pat")
		cmd := strings.ReplaceAll(strings.ReplaceAll(c, "VICTIM", victim), "PAT", pat)
		if v := bypass.Decide(Request{Command: cmd, Cwd: dir, Mode: "bypassPermissions"}).Decision.Final(); v.Verdict == policy.Allow {
			t.Errorf("%q allowed (%s) with deny Bash(rm:*)", cmd, v.Reason)
		}
		if zerr != nil {
			continue
		}
		if err := os.WriteFile(victim, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(pat, []byte("*(e:rm -f "+victim+":)"), 0o644); err != nil {
			t.Fatal(err)
		}
		run := exec.Command(zsh, "-f", "-c", cmd)
		run.Dir = dir
		run.Stdin = strings.NewReader("")
		run.Run() // the exit status does not matter: the victim does
		if _, err := os.Lstat(victim); err == nil {
			t.Errorf("zsh did not remove the victim with %q: the case proves nothing", cmd)
		}
	}
	d := []string{"deny: Bash(rm:*)"}
	const b = "bypassPermissions"
	el := []string{"deny: Bash(rm:*)", "Bash(ls:*)", "Bash(echo:*)"}
	runRows(t, testCwd, Options{}, []arow{
		{d, b, "=rm -f victim.txt", deny},
		{d, b, "nice =rm -f victim.txt", deny},
		{el, "", "ls *(e:'rm -f victim.txt':)", askV},
		{el, "acceptEdits", "ls $~X", askV},
		{el, "", "=rm -f victim.txt", deny},
		// what zsh reads as bash does is left alone
		{d, b, "set -euo pipefail; ls $X", allow},
		{d, b, "set -o xtrace +o noglob; ls", allow},
		{d, b, "ls 'a$~b' \\$~X \"$\"", allow},
		{d, b, "ls *.txt a$", allow},
		{d, b, "ls ${X:-a} ${Y:-*.txt} \"${Z:-a b}\"", allow},
		{el, "", "ls *.txt", allow},
		{el, "", "echo a=b", allow},
		{d, b, "print -v x hi; print -r -- 'a[$(rm -f x)]'", allow},
		{d, b, "hash -r; hash ls; hash -d src=/work/src; ls", allow},
		{d, b, "hash ls=/bin/rm; ls -f victim.txt", askV},
	})
}

// TestAliasOnLaterLineSeenByDenyRules: the session's bash expands
// aliases and reads the line one line at a time, so after alias Q=eval a
// later line's Q 'rm -f victim.txt' runs eval; the rules saw a command
// named Q, and in bypassPermissions mode with Bash(rm:*) denied the line
// removed the file in a bash session (attack pass 99). Each case is run
// as the session runs it (eval, aliases on), so the test can fail.
func TestAliasOnLaterLineSeenByDenyRules(t *testing.T) {
	perms := policy.Permissions{Deny: []policy.Rule{{Rule: "Bash(rm:*)"}}}
	bypass, err := New(perms, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{
		"alias Q=eval\nQ 'rm -f VICTIM'",
		"alias Q='eval ' R=rm\nQ 'R -f VICTIM'",
		"alias ll='ls -l' Q=eval\nll; Q 'rm -f VICTIM'",
		"eval 'alias Q=eval'; eval $'ls\\nQ \\'rm -f VICTIM\\''",
	} {
		dir := t.TempDir()
		victim := filepath.Join(dir, "victim")
		cmd := strings.ReplaceAll(c, "VICTIM", victim)
		if v := bypass.Decide(Request{Command: cmd, Cwd: dir, Mode: "bypassPermissions"}).Decision.Final(); v.Verdict == policy.Allow {
			t.Errorf("%q allowed (%s) with deny Bash(rm:*)", cmd, v.Reason)
		}
		if err := os.WriteFile(victim, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		run := exec.Command("bash", "-c", `shopt -s expand_aliases; builtin eval "$1"`, "bash", cmd)
		run.Dir = dir
		run.Run()
		if _, err := os.Lstat(victim); err == nil {
			t.Errorf("bash did not remove the victim with %q: the case proves nothing", cmd)
		}
	}
	d := []string{"deny: Bash(rm:*)"}
	const b = "bypassPermissions"
	runRows(t, testCwd, Options{}, []arow{
		{d, b, "alias Q='rm -f x'", deny},
		{d, b, "alias", allow},
		{d, b, "alias ll", allow},
		{d, b, "alias ll='ls -l'\nll", askV},
		{d, b, "eval 'alias Q=eval'; eval $'ls\\nQ x'", askV},
		{d, b, "alias ll='ls -l'; ll", allow}, // one line: the alias is not used
	})
}
