//go:build linux

package privtests

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A directory handed to the command as a descriptor 0-2 leads, through
// /proc/self/fd/N, to the host's tree on the host's mount, below the
// sandbox's hidden paths: `moat run ... < ~` read ~/.ssh (found by an
// attack pass). moat refuses such a descriptor, naming it; without moat
// the same user reads the file that way.
func TestDirectoryStdioRefused(t *testing.T) {
	f := newFixture(t)
	rel := filepath.Base(f.secret)
	run := func(argv ...string) (int, string) {
		dir, err := os.Open(f.outside)
		if err != nil {
			t.Fatal(err)
		}
		defer dir.Close()
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Dir, cmd.Env, cmd.Stdin = f.work, f.env(), dir
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err = cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), out.String()
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, out.String()
	}
	code, out := run(moatBin, "run", "--settings", f.settings, "--", "cat", "/proc/self/fd/0/"+rel)
	if strings.Contains(out, secretText) {
		t.Fatalf("ESCAPE: the denied %s read through a directory on stdin:\n%s", f.secret, out)
	}
	if code != 125 || !strings.Contains(out, "is a directory") {
		t.Errorf("moat must refuse a directory as stdin, naming it (exit %d):\n%s", code, out)
	}
	if _, out := run("cat", "/proc/self/fd/0/"+rel); !strings.Contains(out, secretText) {
		t.Errorf("without moat the user reads %s through the descriptor (or this test cannot fail):\n%s", f.secret, out)
	}
}
