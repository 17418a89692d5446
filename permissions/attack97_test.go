package permissions

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// posixRunCases remove VICTIM when dash runs them, while bash's grammar
// reads no rm command in them: ls &>/dev/null rm is ls with three
// arguments to bash and ls & then >/dev/null rm -f VICTIM to dash;
// ((...)) is arithmetic to bash and two subshells to dash; $'...' is one
// word to bash and $ and a quoted a\ to dash 0.5.12 (Debian 12), whose #
// then comments out the quote that closed it.
var posixRunCases = []string{
	"dash -c 'ls &>/dev/null rm -f VICTIM'",
	"dash -c 'ls &>>/dev/null rm -f VICTIM'",
	"dash -c '(( rm -f / VICTIM ))'",
	`dash -c "ls \$'a\\' ; rm -f VICTIM # '"`,
	"echo 'ls &>/dev/null rm -f VICTIM' | dash",
	"printf 'ls &>/dev/null rm -f VICTIM\\n' | dash",
	"dash <<'EOF'\nls &>/dev/null rm -f VICTIM\nEOF",
	"dash <<< 'ls &>/dev/null rm -f VICTIM'",
}

// TestPosixShellReadingSeenByDenyRules: a command string that sh (dash
// on Debian and Ubuntu) runs was read with bash's grammar only: in
// bypassPermissions mode with Bash(rm:*) denied, sh -c 'ls &>/dev/null
// rm -f victim.txt' was allowed and dash removed the file on the host, as
// echo '...' | su was under Bash(echo:*) and Bash(su:*) (attack pass 97).
// Each case is judged by moat, and run by dash where it is installed (so
// the test can fail); strings bash itself runs keep bash's grammar.
func TestPosixShellReadingSeenByDenyRules(t *testing.T) {
	perms := policy.Permissions{Deny: []policy.Rule{{Rule: "Bash(rm:*)"}}}
	bypass, err := New(perms, Options{})
	if err != nil {
		t.Fatal(err)
	}
	dash, derr := exec.LookPath("dash")
	for _, c := range posixRunCases {
		dir := t.TempDir()
		victim := filepath.Join(dir, "victim")
		cmd := strings.ReplaceAll(c, "VICTIM", victim)
		if v := bypass.Decide(Request{Command: cmd, Cwd: dir, Mode: "bypassPermissions"}).Decision.Final(); v.Verdict == policy.Allow {
			t.Errorf("%q allowed (%s) with deny Bash(rm:*)", cmd, v.Reason)
		}
		if derr != nil {
			continue
		}
		if err := os.WriteFile(victim, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		run := exec.Command("bash", "-c", cmd)
		run.Dir = dir
		run.Env = append(os.Environ(), "PATH="+filepath.Dir(dash)+":"+os.Getenv("PATH"))
		run.Stdin = strings.NewReader("")
		run.Run() // the exit status does not matter: the victim does
		if _, err := os.Lstat(victim); err == nil {
			t.Errorf("dash did not remove the victim with %q: the case proves nothing", cmd)
		}
	}
	d := []string{"deny: Bash(rm:*)"}
	const b = "bypassPermissions"
	eu := []string{"deny: Bash(rm:*)", "Bash(echo:*)", "Bash(su:*)"}
	runRows(t, testCwd, Options{}, []arow{
		{d, b, "sh -c 'ls &>/dev/null rm -f victim.txt'", askV},
		{d, b, "su -c 'ls &>/dev/null rm -f victim.txt'", askV},
		{d, b, "ssh host 'ls &>/dev/null rm -f victim.txt'", askV},
		{d, b, "sh -c '(( rm -f / victim.txt ))'", deny},
		{eu, "", "echo 'ls &>/dev/null rm -f victim.txt' | su", askV},
		{d, b, "watch 'ls &>/dev/null rm -f victim.txt'", askV},
		// still read as bash: bash itself runs them
		{d, b, "bash -c 'ls &>/dev/null'", allow},
		{d, b, "eval 'ls &>/dev/null'", allow},
		{d, b, "trap 'ls &>/dev/null' EXIT", allow},
		{d, b, "bash <<< 'x=(a b); echo ${x[1]}'", allow},
		{d, b, "echo 'ls &>/dev/null' > x.sh; source /dev/stdin <<< 'ls &>/dev/null'", allow},
		// and POSIX text is read as before
		{d, b, "sh -c 'cd /tmp && ls -la >/dev/null 2>&1'", allow},
		{d, b, "echo ls | sh", allow},
		{d, b, "ssh host 'uptime; df -h'", allow},
		{d, b, "sh -c 'rm -f x'", deny},
		{eu, "", "echo ls | su", allow},
	})
}
