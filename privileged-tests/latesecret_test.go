//go:build linux

package privtests

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSecretMadeDuringSession: a default secret that does not exist when
// a session's sandbox is made, and that the user makes while the session
// runs (a `gh auth login`, `aws configure`, ~/.netrc), has nothing to be
// hidden by: the sandbox hides a path by mounting over it. Attack pass 96
// read such a ~/.netrc from the session's next command; now the session
// refuses its commands from then on (and ends within a second).
func TestSecretMadeDuringSession(t *testing.T) {
	coldRunsOnly(t) // a session either way: MOAT_VIA=session would repeat it
	f := newFixture(t)
	// The session's shell finds the attack helper inside the sandbox,
	// where the go tool's build directory in /tmp is hidden.
	attack, err := copyExecutable(self, f.root+"/attack")
	must(t, err)
	netrc := f.home + "/.netrc"
	run := jsonlSession(t, f)
	quoted := "'" + attack + "' read '" + netrc + "'"
	if out := run("1", quoted); !strings.Contains(out, "blocked:") {
		t.Fatalf("the first command must find no ~/.netrc:\n%s", out)
	}
	must(t, os.WriteFile(netrc, []byte(secretText+"\n"), 0o600))
	if out := run("2", quoted); strings.Contains(out, "ESCAPED") {
		t.Errorf("ESCAPE: the session's next command read the ~/.netrc made after it started:\n%s", out)
	} else if !strings.Contains(out, "made after this session's sandbox started") {
		t.Errorf("the command was not refused for the new secret:\n%s", out)
	}
	if base := f.direct("read", netrc); !base.escaped() {
		t.Errorf("without moat ~/.netrc must be read (or this test cannot detect an escape):\n%s", base.out)
	}
}

// TestSecretReplacedDuringSession: a default secret that exists when a
// session's sandbox is made is hidden by a mount on that file. When the
// user replaces it on the host (a tool writing a new file and renaming it
// into place), the kernel detaches every mount on the old file, in every
// namespace: attack pass 98 read the new ~/.netrc from the session's next
// command, as root and rootless. Now the session refuses its commands from
// then on (and ends within a second).
func TestSecretReplacedDuringSession(t *testing.T) {
	coldRunsOnly(t) // a session either way: MOAT_VIA=session would repeat it
	f := newFixture(t)
	attack, err := copyExecutable(self, f.root+"/attack")
	must(t, err)
	netrc := f.home + "/.netrc"
	must(t, os.WriteFile(netrc, []byte("machine old login u password old\n"), 0o600))
	run := jsonlSession(t, f)
	quoted := "'" + attack + "' read '" + netrc + "'"
	if out := run("1", quoted); !strings.Contains(out, "blocked:") {
		t.Fatalf("the first command must find ~/.netrc hidden:\n%s", out)
	}
	must(t, os.WriteFile(netrc+".new", []byte(secretText+"\n"), 0o600))
	must(t, os.Rename(netrc+".new", netrc))
	if out := run("2", quoted); strings.Contains(out, "ESCAPED") {
		t.Errorf("ESCAPE: the session's next command read the ~/.netrc replaced after it started:\n%s", out)
	} else if !strings.Contains(out, "was replaced after this session's sandbox started") && !strings.Contains(out, "session is closed") {
		t.Errorf("the command was not refused for the replaced secret:\n%s", out)
	}
	if base := f.direct("read", netrc); !base.escaped() {
		t.Errorf("without moat ~/.netrc must be read (or this test cannot detect an escape):\n%s", base.out)
	}
}

// TestSecretReplacedDuringRun: the same replacement while a single moat run
// runs (a long build, an agent's long command) showed the new ~/.netrc to
// it (attack pass 98; as root the host's /etc/shadow after a useradd). Now
// the run is ended within a second of it.
func TestSecretReplacedDuringRun(t *testing.T) {
	coldRunsOnly(t) // a cold run: what a session does is the test above
	f := newFixture(t)
	attack, err := copyExecutable(self, f.root+"/attack")
	must(t, err)
	netrc := f.home + "/.netrc"
	must(t, os.WriteFile(netrc, []byte("machine old login u password old\n"), 0o600))
	go func() {
		time.Sleep(1500 * time.Millisecond)
		if err := os.WriteFile(netrc+".new", []byte(secretText+"\n"), 0o600); err == nil {
			os.Rename(netrc+".new", netrc)
		}
	}()
	read := "'" + attack + "' read '" + netrc + "'"
	r := f.exec(moatBin, "run", "--settings", f.settings, "--", "sh", "-c", read+"; sleep 4; "+read)
	if strings.Contains(r.out, "ESCAPED") {
		t.Errorf("ESCAPE: the run read the ~/.netrc replaced while it ran:\n%s", r.out)
	} else if !strings.Contains(r.out, "was replaced on the host while it ran") {
		t.Errorf("the run was not ended for the replaced secret:\n%s", r.out)
	}
	if base := f.direct("read", netrc); !base.escaped() {
		t.Errorf("without moat ~/.netrc must be read (or this test cannot detect an escape):\n%s", base.out)
	}
}

// jsonlSession starts a moat session --jsonl (the host decided: --gate
// off) with the fixture's settings and returns a function that runs one
// command in it and returns its output and error text; the session ends
// with the test.
func jsonlSession(t *testing.T, f *fixture) func(id, command string) string {
	t.Helper()
	cmd := exec.Command(moatBin, "session", "--jsonl", "--gate", "off", "--settings", f.settings)
	cmd.Dir, cmd.Env = f.work, f.env()
	in, err := cmd.StdinPipe()
	must(t, err)
	outp, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	t.Cleanup(func() { cmd.Wait() })
	t.Cleanup(func() { in.Close() })
	sc := bufio.NewScanner(outp)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	return func(id, command string) string {
		req, _ := json.Marshal(map[string]any{"id": id, "op": "run", "command": command, "auto_background_ms": -1})
		if _, err := in.Write(append(req, '\n')); err != nil {
			t.Fatal(err)
		}
		for sc.Scan() {
			var ev struct {
				ID, Event, Output, Error string
			}
			if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.ID == id && ev.Event == "finished" {
				return ev.Output + ev.Error
			}
		}
		t.Fatalf("the session ended before command %s finished: %v", id, sc.Err())
		return ""
	}
}

// TestSecretReplacedAtRunEnd: a command that reads a hidden file replaced
// on the host and ends before the run's next look (once a second) is told
// too (a history the user hides, here). Attack pass 101: a loop reading
// ~/.bash_history every 10 ms copied
// the history a host shell saved (by rename) at its exit, and the run
// ended with the command's exit 0, unsaid. Now the run's last look makes
// it moat's error (exit 125), naming the file; the read itself is left
// (docs/SECURITY.md).
func TestSecretReplacedAtRunEnd(t *testing.T) {
	coldRunsOnly(t) // a cold run: a session looks before each command
	f := newFixture(t)
	hist := f.home + "/.bash_history"
	must(t, os.WriteFile(hist, []byte("echo old\n"), 0o600))
	settings := f.writeSettings(map[string]any{"denyRead": []string{f.secret, f.outside + "/secretdir", hist}})
	go func() {
		time.Sleep(1500 * time.Millisecond)
		if err := os.WriteFile(hist+".new", []byte(secretText+"\n"), 0o600); err == nil {
			os.Rename(hist+".new", hist)
		}
	}()
	// Read until the file has contents, then end at once (within 30 s).
	loop := `for i in $(seq 3000); do c=$(cat '` + hist + `' 2>/dev/null); if [ -n "$c" ]; then echo "read: $c"; exit 0; fi; sleep 0.01; done; exit 3`
	r := f.exec(moatBin, "run", "--settings", settings, "--", "sh", "-c", loop)
	if r.code == 0 || !strings.Contains(r.out, "was replaced on the host while the command ran") {
		t.Errorf("the run that read the replaced history ended unsaid (exit %d):\n%s", r.code, r.out)
	}
	if !strings.Contains(r.out, "read: "+secretText) {
		t.Logf("the command did not read the new file first (the run's look came first):\n%s", r.out)
	}
	if base := f.direct("read", hist); !base.escaped() {
		t.Errorf("without moat the history must be read (or this test cannot detect an escape):\n%s", base.out)
	}
}

// TestSecretReplacedTwiceDuringRun: a hidden file replaced on the host by
// one that gets the old one's inode number is told apart. bash saves its
// history by a new file renamed over the old one at its start and again
// at its exit (a `bash -i -c` does both within milliseconds), and ext4
// hands the number the first rename freed to the second new file: the
// run's look found the recorded number and took it for the hidden file,
// and a command read ~/.bash_history for the rest of the run, which ended
// with exit 0 (attack pass 101, 2 of 4 tries by hand). The birth time
// tells them apart.
func TestSecretReplacedTwiceDuringRun(t *testing.T) {
	coldRunsOnly(t) // a cold run: a session's look is the same function
	f := newFixture(t)
	hist := f.home + "/.bash_history"
	must(t, os.WriteFile(hist, []byte("echo old\n"), 0o600))
	settings := f.writeSettings(map[string]any{"denyRead": []string{f.secret, f.outside + "/secretdir", hist}})
	st, err := os.Stat(hist)
	must(t, err)
	ino := st.Sys().(*syscall.Stat_t).Ino
	reused := make(chan bool, 1)
	go func() {
		time.Sleep(1500 * time.Millisecond)
		// Replace it until a new file gets the old number (the sandbox's
		// mask holds the old file until the kernel drops it).
		for i := 0; i < 500; i++ {
			if os.WriteFile(hist+".tmp", []byte(secretText+"\n"), 0o600) != nil || os.Rename(hist+".tmp", hist) != nil {
				break
			}
			if st, err := os.Stat(hist); err == nil && st.Sys().(*syscall.Stat_t).Ino == ino {
				reused <- true
				return
			}
		}
		reused <- false
	}()
	loop := `for i in $(seq 300); do c=$(cat '` + hist + `' 2>/dev/null); [ -n "$c" ] && echo "read: $c"; sleep 0.01; done; exit 0`
	r := f.exec(moatBin, "run", "--settings", settings, "--", "sh", "-c", loop)
	if !<-reused {
		t.Skip("no new file got the old one's inode number on this filesystem: nothing to tell apart")
	}
	if r.code == 0 || !strings.Contains(r.out, "was replaced on the host") {
		t.Errorf("the run was not ended for the history replaced by a file with its inode number (exit %d):\n%s", r.code, firstLine([]byte(r.out)))
	}
	if base := f.direct("read", hist); !base.escaped() {
		t.Errorf("without moat the history must be read (or this test cannot detect an escape):\n%s", base.out)
	}
}
