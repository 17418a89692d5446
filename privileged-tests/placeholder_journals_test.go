//go:build linux

package privtests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func init() {
	// plant-when MARKER READY: makes READY, waits (20 s at most) for
	// MARKER, then makes .vscode/tasks.json in its working directory, a
	// task VS Code runs when the folder opens; escaped when it is written.
	attacks["plant-when"] = func(a []string) (string, error) {
		if err := os.WriteFile(a[1], nil, 0o644); err != nil {
			return "", err
		}
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if _, err := os.Lstat(a[0]); err == nil {
				break
			}
			if time.Now().After(deadline) {
				return "", fmt.Errorf("%s never came", a[0])
			}
		}
		if err := os.MkdirAll(".vscode", 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(".vscode/tasks.json", []byte(`{"tasks":[{"label":"x","command":"id","runOptions":{"runOn":"folderOpen"}}]}`), 0o644); err != nil {
			return "", err
		}
		return "wrote .vscode/tasks.json", nil
	}
	// wait-file MARKER: waits (20 s at most) for MARKER, then exits.
	attacks["wait-file"] = func(a []string) (string, error) {
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if _, err := os.Lstat(a[0]); err == nil {
				return "", os.ErrExist
			}
		}
		return "", fmt.Errorf("%s never came", a[0])
	}
}

// TestPlaceholderOfAnotherJournal: two runs of one user in one project,
// whose state directories differ ($XDG_STATE_HOME set for one, as for an
// agent host's runs beside the user's own, or moatd's beside a rootless
// one), each record their placeholders in a journal of their own. The
// first run made the placeholder .vscode and the second mounted over it,
// taking it for the user's file; when the first ended it removed it, the
// kernel detached the second's mount over the name, and the second's
// command made .vscode/tasks.json in the project (found in the sixteenth
// session). Every run now holds the directories it mounts over a name in,
// and no run removes a placeholder in a held directory. The same user
// makes the file without moat.
func TestPlaceholderOfAnotherJournal(t *testing.T) {
	f := newFixture(t)
	vscode := filepath.Join(f.work, ".vscode")
	if _, err := os.Lstat(vscode); err == nil {
		t.Fatalf("%s exists before the runs", vscode)
	}
	otherState := filepath.Join(f.root, "state-other")
	must(t, os.MkdirAll(otherState, 0o700))
	markerB := filepath.Join(f.work, "end-b")
	markerA := filepath.Join(f.work, "plant-now")
	readyA := filepath.Join(f.work, "a-ready")

	// B: the first run, of the other journal, until markerB.
	var env []string
	for _, kv := range f.env() {
		if !strings.HasPrefix(kv, "XDG_STATE_HOME=") {
			env = append(env, kv)
		}
	}
	b := exec.Command(moatBin, "run", "--settings", f.settings, "--", self, "wait-file", markerB)
	b.Dir, b.Env = f.work, append(env, "XDG_STATE_HOME="+otherState)
	var bOut strings.Builder
	b.Stdout, b.Stderr = &bOut, &bOut
	must(t, b.Start())
	var bErr error
	bDone := make(chan struct{})
	go func() { bErr = b.Wait(); close(bDone) }()
	defer func() {
		os.WriteFile(markerB, nil, 0o644)
		<-bDone
	}()
	waitPath(t, vscode, "the first run's placeholder", bDone, &bOut)

	// A: the second run, of the fixture's journal, mounts over it; then B
	// ends, then A's command plants.
	aDone := make(chan result, 1)
	go func() { aDone <- f.sandboxed("plant-when", markerA, readyA) }()
	waitPath(t, readyA, "the second run's command", nil, nil)
	must(t, os.WriteFile(markerB, nil, 0o644))
	<-bDone
	if !strings.Contains(bOut.String(), "blocked: file already exists") {
		t.Errorf("the first run did not run to its end: %v\n%s", bErr, bOut.String())
	}
	must(t, os.WriteFile(markerA, nil, 0o644))
	got := <-aDone
	if got.escaped() {
		t.Errorf("ESCAPE: the command made .vscode/tasks.json once the other journal's run removed the placeholder it was mounted over:\n%s", got.out)
	} else if !strings.Contains(got.out, "blocked:") {
		t.Errorf("the attack did not run under moat (exit %d):\n%s", got.code, got.out)
	}
	if _, err := os.Stat(filepath.Join(vscode, "tasks.json")); err == nil {
		t.Errorf("%s/tasks.json is on the host", vscode)
	}
	if fi, err := os.Lstat(vscode); err == nil && fi.Mode()&os.ModeSocket == 0 {
		t.Errorf("%s is on the host, not a placeholder: %v", vscode, fi.Mode())
	}

	// The placeholders go once no run holds the project: a later run's
	// sweep of the first journal removes what the first run kept.
	b2 := exec.Command(moatBin, "run", "--settings", f.settings, "--", "true")
	b2.Dir, b2.Env = f.work, append(env, "XDG_STATE_HOME="+otherState)
	if out, err := b2.CombinedOutput(); err != nil {
		t.Fatalf("a later run of the first journal: %v\n%s", err, out)
	}
	if _, err := os.Lstat(vscode); err == nil {
		t.Errorf("%s stayed after every run ended and the journal's next run swept", vscode)
	}

	// Without moat the same user makes it.
	os.Remove(markerA)
	os.Remove(readyA)
	must(t, os.WriteFile(markerA, nil, 0o644))
	if base := f.direct("plant-when", markerA, readyA); !base.escaped() {
		t.Errorf("without moat the file must be made (or this test cannot fail):\n%s", base.out)
	}
}

// waitPath waits (30 s at most) until path exists; done, if it ends first,
// fails the test with out.
func waitPath(t *testing.T, path, what string, done <-chan struct{}, out *strings.Builder) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Lstat(path); err == nil {
			return
		}
		select {
		case <-done:
			t.Fatalf("%s ended before %s appeared:\n%s", what, path, out)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never made %s", what, path)
		}
	}
}
