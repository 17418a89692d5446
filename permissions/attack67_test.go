package permissions

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// Regression tests for attack pass 67 on the decision pipeline. Each row
// failed (was allowed) before the fix named by the test.

// TestElsewhereSeenByDenyRules: programs that run a command through a
// server, a daemon, another machine or a container (tmux, screen, at,
// ssh, docker exec, kubectl exec) and bwrap's options of two and three
// values hid the command from deny rules: under Bash(tmux:*) with
// Bash(rm:*) denied, tmux new-session -d 'rm -f victim.txt' was allowed
// and removed the file. Where the command can be read it is matched;
// where it cannot (send-keys, screen -X, a format's #(), at with no job
// on the line, an unknown bwrap option) the line asks.
func TestElsewhereSeenByDenyRules(t *testing.T) {
	d := "deny: Bash(rm:*)"
	rows := []arow{}
	for _, c := range []struct {
		rule, cmd string
		want      policy.Verdict
	}{
		{"Bash(tmux:*)", "tmux new-session -d 'rm -f x'", deny},
		{"Bash(tmux:*)", "tmux new -d -s s -c /tmp rm -f x", deny},
		{"Bash(tmux:*)", "tmux -c 'rm -f x'", deny},
		{"Bash(tmux:*)", "tmux run-shell 'rm x'", deny},
		{"Bash(tmux:*)", "tmux kill-session -t s \\; new-window 'rm x'", deny},
		{"Bash(tmux:*)", "tmux kill-session -t s\\; splitw 'rm x'", deny},
		{"Bash(tmux:*)", "tmux send-keys -t s 'rm x' Enter", askV},
		{"Bash(tmux:*)", "tmux ls -F '#(rm x)'", askV},
		{"Bash(tmux:*)", "tmux new-s -d 'rm x'", askV},
		{"Bash(tmux:*)", "tmux run -C 'run-shell \"rm x\"'", askV},
		{"Bash(screen:*)", "screen -dm rm -f x", deny},
		{"Bash(screen:*)", "screen -dmS s rm x", deny},
		{"Bash(screen:*)", "screen -S s -X stuff 'rm x\n'", askV},
		{"Bash(at:*)", "at now <<< 'rm -f x'", deny},
		{"Bash(at:*)", "echo 'rm -f x' | at now", deny},
		{"Bash(batch:*)", "batch <<< 'rm x'", deny},
		{"Bash(at:*)", "at now", askV},
		{"Bash(ssh:*)", "ssh host rm -f x", deny},
		{"Bash(ssh:*)", "ssh -p 22 host 'rm -f x'", deny},
		{"Bash(ssh:*)", "ssh host -t 'cd d && rm x'", deny},
		{"Bash(ssh:*)", "ssh -o RemoteCommand='rm x' host", deny},
		{"Bash(ssh:*)", "ssh -o 'RemoteCommand rm x' host", deny},
		{"Bash(docker:*)", "docker exec c rm -f x", deny},
		{"Bash(docker:*)", "docker exec -it -u root c rm x", deny},
		{"Bash(docker:*)", "docker compose exec web rm x", deny},
		{"Bash(docker:*)", "docker run --rm --entrypoint rm alpine -f x", deny},
		{"Bash(podman:*)", "podman exec c sh -c 'rm x'", deny},
		{"Bash(kubectl:*)", "kubectl exec p -- rm -f x", deny},
		{"Bash(kubectl:*)", "kubectl exec -n ns p -c y -- rm x", deny},
		{"Bash(kubectl:*)", "kubectl exec p rm x", deny},
		{"Bash(bwrap:*)", "bwrap --bind / / rm -f x", deny},
		{"Bash(bwrap:*)", "bwrap --dev-bind / / --setenv A B --overlay a b c rm x", deny},
		{"Bash(bwrap:*)", "bwrap --args 3 ls", askV},
	} {
		rows = append(rows, arow{[]string{d, c.rule}, "", c.cmd, c.want})
	}
	rows = append(rows,
		// still allowed: the commands they run are not denied
		arow{[]string{d, "Bash(tmux:*)"}, "", "tmux new -d 'npm run dev'", allow},
		arow{[]string{d, "Bash(tmux:*)"}, "", "tmux ls", allow},
		arow{[]string{d, "Bash(tmux:*)"}, "", "tmux capture-pane -p -t s", allow},
		arow{[]string{d, "Bash(screen:*)"}, "", "screen -ls", allow},
		arow{[]string{d, "Bash(at:*)"}, "", "at -l", allow},
		// getopt takes at's options after the time too: the job file is
		// the same either way (at now -f FILE was read as a job on
		// standard input, and asked where at -f FILE now was allowed)
		arow{[]string{d, "Bash(at:*)"}, "", "at -f job.sh now", allow},
		arow{[]string{d, "Bash(at:*)"}, "", "at now -f job.sh", allow},
		arow{[]string{d, "Bash(at:*)"}, "", "at now + 1 hour -f job.sh -q b", allow},
		arow{[]string{d, "Bash(at:*)"}, "", "at now -f /dev/stdin <<< 'rm -f x'", deny},
		arow{[]string{d, "Bash(at:*)"}, "", "at now -f /dev/fd/3", askV},
		arow{[]string{d, "Bash(at:*)"}, "", "at now -- -f job.sh", askV},
		// the last -f is the job, as at keeps it (the first was taken:
		// attack pass 81, the file removed by atd)
		arow{[]string{d, "Bash(at:*)"}, "", "at -f job.sh -f /dev/stdin now <<< 'rm -f x'", deny},
		arow{[]string{d, "Bash(at:*)"}, "", "at -fjob.sh now -f/dev/stdin <<< 'rm -f x'", deny},
		arow{[]string{d, "Bash(batch:*)"}, "", "batch -f job.sh -f /dev/stdin <<< 'rm -f x'", deny},
		arow{[]string{d, "Bash(at:*)"}, "", "at -f job.sh -f /dev/fd/3 now", askV},
		arow{[]string{d, "Bash(at:*)"}, "", "at -f /dev/stdin -f job.sh now <<< 'rm -f x'", allow},
		arow{[]string{d, "Bash(at:*)"}, "", "at -f job.sh now -- -f /dev/stdin", allow},
		arow{[]string{d, "Bash(ssh:*)"}, "", "ssh host uptime", allow},
		arow{[]string{d, "Bash(docker:*)"}, "", "docker exec c ls", allow},
		arow{[]string{d, "Bash(kubectl:*)"}, "", "kubectl get pods", allow},
		arow{[]string{d, "Bash(bwrap:*)"}, "", "bwrap --ro-bind / / ls", allow},
	)
	runRows(t, testCwd, Options{}, rows)
}

// TestMakeLineRunsCommands: make's variables given on the line are
// expanded (x:=$(shell CMD)) or run (x!=CMD, SHELL=CMD for every recipe),
// -E is make 4.4's --eval and -f - reads the recipes from the line's
// standard input: under Bash(make:*) with Bash(rm:*) denied, make -f mk
// SHELL=/bin/sh 'x:=$(shell rm -f victim.txt)' was allowed and removed
// the file in moat run.
func TestMakeLineRunsCommands(t *testing.T) {
	r := []string{"deny: Bash(rm:*)", "Bash(make:*)"}
	runRows(t, testCwd, Options{}, []arow{
		{r, "", "make 'x:=$(shell rm -f x)'", askV},
		{r, "", "make -f mk SHELL=/bin/sh 'x:=$(shell rm -f x)'", askV},
		{r, "", "make 'x!=rm -f x'", askV},
		{r, "", "make SHELL=rm", deny},
		{r, "", "make CC='rm -f x' all", deny},
		{r, "", "make -E 'x:=$(shell rm x)'", askV},
		{r, "", "make -f - <<< 'all: ; rm -f x'", askV},
		{r, "", "echo 'all: ; rm -f x' | make --file=/dev/stdin", askV},
		// still allowed
		{r, "", "make CC=gcc test", allow},
		{r, "", "make -j4 -C sub build", allow},
	})
}

// TestWrapperReadingsNotDropped: a wrapper's options it does not know are
// read with and without a value, and the readings past the eighth (or
// nine levels deep) were dropped in silence: setpriv with nine
// "--pdeathsig keep" before rm -f victim.txt was allowed under
// Bash(setpriv:*) with Bash(rm:*) denied, and removed the file. A line
// with more readings than are tried now asks.
func TestWrapperReadingsNotDropped(t *testing.T) {
	r := []string{"deny: Bash(rm:*)", "Bash(setpriv:*)"}
	many := strings.Repeat("--pdeathsig keep ", 9)
	runRows(t, testCwd, Options{}, []arow{
		{r, "", "setpriv " + many + "rm -f x", askV},
		{r, "", "setpriv --pdeathsig keep rm -f x", deny},
		{r, "", "setpriv " + strings.Repeat("--pdeathsig keep ", 3) + "ls", allow},
	})
}

// TestGlobMatchingAnOption: grep x * with a file named -R in the working
// directory ran grep -R, which followed a link below a directory there
// into a directory outside it (decided allow as read-only; the checks
// took -R for a file). With FollowSymlinks a glob that may expand to an
// option and does so on disk asks.
func TestGlobMatchingAnOption(t *testing.T) {
	root := t.TempDir()
	cwd, out := filepath.Join(root, "w"), filepath.Join(root, "out")
	for _, d := range []string{cwd, filepath.Join(cwd, "a"), out} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(out, filepath.Join(cwd, "a", "l")); err != nil {
		t.Fatal(err)
	}
	follow := Options{FollowSymlinks: true}
	// before the planted option: allowed
	runRows(t, cwd, follow, []arow{{nil, "", "grep x *", allow}})
	for _, f := range []string{"-R", "--files0-from=list"} {
		if err := os.WriteFile(filepath.Join(cwd, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runRows(t, cwd, follow, []arow{
		{nil, "", "grep x *", askV},
		{nil, "", "ls *", askV},
		{nil, "", "wc ?*", askV},
		{nil, "", "cd a && grep x *", askV},
		{[]string{"Bash(grep:*)"}, "", "grep x *", askV},
		// still read-only: after "--" a match is an operand, and a glob
		// that starts with a literal cannot expand to an option
		{nil, "", "grep x -- *", allow},
		{nil, "", "grep x ./*", allow},
	})
}

// TestManPageFileAsks: man ./x.1 formats a page the repository ships,
// whose .so request read /etc/shadow (or any file) past the path checks;
// it was allowed as read-only.
func TestManPageFileAsks(t *testing.T) {
	runRows(t, testCwd, Options{}, []arow{
		{nil, "", "man ./x.1", askV},
		{nil, "", "man docs/x.1", askV},
		{nil, "plan", "man ./x.1", deny},
		{nil, "", "man ls", allow},
		{nil, "", "man -k printf", allow},
	})
}
