package shell_test

import (
	"strings"
	"testing"
)

// What a session carries from one command to the next (the snapshot, the
// working directory, the environment) is the host's, not something a
// command can rewrite for the next one. These run real shells on the host
// (hostrun); privileged-tests and cmd/moat hold the same attacks in the
// sandbox.

// A command cannot change the snapshot the next command sources: it
// appended `export PATH=/evil:$PATH` and a function to the snapshot file,
// and the next command, judged as read-only, ran a fake git (found by an
// attack pass). It tries every place the snapshot could be: files under
// the session's directories and $TMPDIR, and every descriptor of its
// shell, reopened through /proc (the snapshot is on one).
func TestSnapshotCannotBeRewritten(t *testing.T) {
	e := newEnv(t, testRC, nil)
	if r := e.run(t, "ll"); r.Output != "ALIAS-LL\n" {
		t.Fatalf("%q", r.Output)
	}
	const plant = `export PATH=/evil:$PATH
ll() { echo PLANTED; }
`
	attack := `n=0; for f in $(find "$HOME/.." "${TMPDIR:-/tmp}"/moat-shell-* -name 'snapshot-*.sh' 2>/dev/null) /proc/$$/fd/*; do
  printf '%s' "$PLANT" >> "$f" 2>/dev/null && n=$((n+1))
done; echo "planted $n"`
	r := e.run(t, "PLANT='"+plant+"'; "+attack)
	t.Logf("%s", r.Output)
	for i := 0; i < 2; i++ {
		r = e.run(t, `ll; echo "$PATH"`)
		if strings.Contains(r.Output, "PLANTED") || strings.Contains(r.Output, "/evil") || !strings.HasPrefix(r.Output, "ALIAS-LL\n") {
			t.Errorf("a command rewrote the snapshot the next one sourced: %q", r.Output)
		}
	}
}
