//go:build linux

package privtests

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/runtime/live"
)

// TestStateDirVanishesDuringSetup: every sandbox hides the user's other
// state directories, which the runs of an agent host that keeps one a task
// make and remove. One removed between a run's plan and its mounts failed
// that run's set-up ("mount a tmpfs over DIR: no such file or directory":
// CI33, where test packages running at once under one home did just
// that). A mask over a hidden path that vanished is skipped now, and
// nothing is made in its place. Each run here lists six state directories
// that are removed at random moments of its first 25 ms.
func TestStateDirVanishesDuringSetup(t *testing.T) {
	s := newGitScene(t)
	env := s.homeEnv()
	first := exec.Command(moatBin, "run", "--", "true")
	first.Dir, first.Env = s.repo, env
	if out, err := first.CombinedOutput(); err != nil {
		t.Fatalf("the first run failed: %v\n%s", err, out)
	}
	home := filepath.Join(s.home, ".local", "state", "moat")
	const runs, perRun = 30, 6
	var failed []string
	for i := 0; i < runs; i++ {
		var dirs []string
		for k := 0; k < perRun; k++ {
			d := filepath.Join(s.root, fmt.Sprintf("task-%d-%d", i, k))
			must(t, os.MkdirAll(filepath.Join(d, "journal"), 0o700))
			must(t, live.RecordStateDir(home, d))
			dirs = append(dirs, d)
		}
		if got := live.StateDirs(home); len(got) < perRun {
			t.Fatalf("the home state directory lists %q: the test proves nothing", got)
		}
		cmd := exec.Command(moatBin, "run", "--", "true")
		cmd.Dir, cmd.Env = s.repo, env
		removed := removeDuring(dirs, 25*time.Millisecond)
		out, err := cmd.CombinedOutput()
		removed()
		if err != nil {
			failed = append(failed, fmt.Sprintf("run %d: %v: %s", i, err, strings.TrimSpace(string(out))))
		}
		for _, d := range dirs {
			if _, err := os.Lstat(d); err == nil {
				t.Errorf("run %d: %s was made again after it was removed", i, d)
			}
		}
	}
	if len(failed) > 0 {
		t.Errorf("%d of %d runs failed while state directories they hid were removed:\n%s", len(failed), runs, strings.Join(failed, "\n"))
	}
}

// TestReadAgainVanishesDuringSetup: a path shown again inside a hidden
// directory (allowRead below a denyRead; a mount the host has below an
// autofs mount) is bound from the host at the set-up. One removed or
// unmounted between the plan and the mounts failed the run ("open DIR":
// CI40, a run beside a test that unmounted its share below an autofs);
// now its mount point inside the mask stays empty, as if it had not been
// there at plan time. Each run shows six directories again, removed at
// random moments of its first 25 ms; what the mask hides stays hidden.
func TestReadAgainVanishesDuringSetup(t *testing.T) {
	f := newFixture(t)
	hidden := filepath.Join(f.outside, "vanishing")
	must(t, os.MkdirAll(hidden, 0o755))
	must(t, os.WriteFile(filepath.Join(hidden, "token"), []byte("HIDDEN-TOKEN"), 0o644))
	const runs, perRun = 30, 6
	var failed []string
	for i := 0; i < runs; i++ {
		var shown, allow []string
		for k := 0; k < perRun; k++ {
			d := filepath.Join(hidden, fmt.Sprintf("shown-%d-%d", i, k))
			must(t, os.MkdirAll(d, 0o755))
			must(t, os.WriteFile(filepath.Join(d, "file"), []byte("SHOWN"), 0o644))
			shown, allow = append(shown, d), append(allow, d)
		}
		settings := f.writeSettings(map[string]any{"denyRead": []string{hidden}, "allowRead": allow})
		cmd := exec.Command(moatBin, "run", "--settings", settings, "--", "/bin/sh", "-c", "cat "+filepath.Join(hidden, "token")+" 2>&1; ls "+hidden+" 2>&1; true")
		cmd.Dir, cmd.Env = f.work, f.env()
		removed := removeDuring(shown, 25*time.Millisecond)
		out, err := cmd.CombinedOutput()
		removed()
		if err != nil {
			failed = append(failed, fmt.Sprintf("run %d: %v: %s", i, err, strings.TrimSpace(string(out))))
		}
		if strings.Contains(string(out), "HIDDEN-TOKEN") || slices.Contains(strings.Split(string(out), "\n"), "token") {
			t.Errorf("ESCAPE under moat: run %d saw the hidden directory's own files:\n%s", i, out)
		}
	}
	if len(failed) > 0 {
		t.Errorf("%d of %d runs failed while paths they showed again were removed:\n%s", len(failed), runs, strings.Join(failed, "\n"))
	}
	if out, _ := exec.Command("cat", filepath.Join(hidden, "token")).Output(); string(out) != "HIDDEN-TOKEN" {
		t.Errorf("without moat the token is readable (or this test cannot fail): %q", out)
	}
}

// removeDuring removes each path at a random moment of the next d, and
// returns what waits for the removals.
func removeDuring(paths []string, d time.Duration) (wait func()) {
	var wg sync.WaitGroup
	start := time.Now()
	for _, p := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Until(start.Add(rand.N(d))))
			os.RemoveAll(p)
		}()
	}
	return wg.Wait
}
