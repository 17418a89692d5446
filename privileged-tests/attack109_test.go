//go:build linux

package privtests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func init() {
	// mark-then FILE ATTACK ARGS...: make FILE (the sandbox is up), then
	// the attack.
	attacks["mark-then"] = func(a []string) (string, error) {
		if err := os.WriteFile(a[0], nil, 0o644); err != nil {
			return "", err
		}
		return attacks[a[1]](a[2:])
	}
	// unlink-then PATH ATTACK ARGS...: remove PATH (a symlink of the
	// writable tree), then the attack.
	attacks["unlink-then"] = func(a []string) (string, error) {
		if err := os.Remove(a[0]); err != nil {
			return "", err
		}
		return attacks[a[1]](a[2:])
	}
}

// TestDenyReadEmptyReservedNameStaysHidden: a reserved name (.claude,
// .mcp.json) that a denyRead names and that exists empty (what another
// run's placeholder may be) was bound read-only from the host, not masked
// (attack pass 108's fix): what the user wrote there while the command ran
// (a token into the empty .mcp.json, in place; a credentials file into the
// empty .claude) showed through the bind, and the command read it; the
// runtime's look for made or replaced hidden paths saw neither (attack
// pass 109). Without moat the same user reads both.
func TestDenyReadEmptyReservedNameStaysHidden(t *testing.T) {
	f := newFixture(t)
	claude, mcp := filepath.Join(f.work, ".claude"), filepath.Join(f.work, ".mcp.json")
	must(t, os.Mkdir(claude, 0o755))
	must(t, os.WriteFile(mcp, nil, 0o644))
	cred := filepath.Join(claude, ".credentials.json")
	marker := filepath.Join(f.work, "started")
	settings := f.writeSettings(map[string]any{"denyRead": []string{f.secret, claude, mcp}})
	wait := onceStarted(marker, func() {
		os.WriteFile(cred, []byte("CLAUDE-TOKEN\n"), 0o600)
		os.WriteFile(mcp, []byte(`{"mcpServers":{"x":{"env":{"TOKEN":"MCP-TOKEN"}}}}`+"\n"), 0o644) // in place
	})
	got := f.sandboxedWith(settings, "mark-then", marker, "sleep-then", "1", "read-each", cred, mcp)
	wait()
	if _, err := os.Lstat(marker); err != nil {
		t.Fatalf("the command did not start:\n%s", got.out)
	}
	if strings.Contains(got.out, "ESCAPED") {
		t.Fatalf("ESCAPE under moat: what the host wrote into the hidden, empty reserved names was read:\n%s", got.out)
	}
	if !strings.Contains(got.out, "blocked:") {
		t.Fatalf("the attack did not run under moat:\n%s", got.out)
	}
	if base := f.direct("read-each", cred, mcp); !base.escaped() {
		t.Fatalf("the attack must work without moat:\n%s", base.out)
	}
}

// TestSecretMadeInProtectedDirectory: a hidden path missing when the run
// starts inside a writable root is not looked at, since the command may
// make it itself (a .env from .env.example) and reads its own file. But
// one in a directory the command could not write (the home's .claude,
// read-only in a writable home, as Claude Code's settings make the home
// where it starts there) it cannot make: the Claude Code login the user
// ran on the host while the command ran wrote the default secret
// ~/.claude/.credentials.json there, and the command read it (attack pass
// 109). Such a path is looked at now, and the run is ended when it is
// made. Without moat the user reads it.
func TestSecretMadeInProtectedDirectory(t *testing.T) {
	f := newFixture(t)
	claude := filepath.Join(f.home, ".claude")
	must(t, os.Mkdir(claude, 0o755))
	must(t, os.WriteFile(filepath.Join(claude, "settings.json"), []byte("{}\n"), 0o644))
	cred := filepath.Join(claude, ".credentials.json")
	marker := filepath.Join(f.work, "started")
	settings := f.writeSettings(map[string]any{"allowWrite": []string{f.work, f.home}})
	wait := onceStarted(marker, func() {
		os.WriteFile(cred, []byte(`{"claudeAiOauth":{"accessToken":"OAUTH-TOKEN"}}`+"\n"), 0o600)
	})
	got := f.sandboxedWith(settings, "mark-then", marker, "sleep-then", "2.5", "read", cred)
	wait()
	f.checkLateSecret(t, got, marker, cred, "a default secret made on the host in a read-only directory of the writable home was read")
}

// TestSecretMadeBehindSymlinkInTree: a denyRead path missing when the run
// starts, named through a symlink in a writable tree that leads outside it
// (work/link/token, link -> a directory the command may only read), was
// taken for a path in the writable tree, which the command may make
// itself, and not looked at: the file the user made there on the host
// while the command ran was read (attack pass 109). Named as it leads, it
// was looked at and the run ended. It is looked at where it leads now.
// Without moat the user reads it.
func TestSecretMadeBehindSymlinkInTree(t *testing.T) {
	f := newFixture(t)
	dir := filepath.Join(f.outside, "linked")
	must(t, os.Mkdir(dir, 0o755))
	must(t, os.Symlink(dir, filepath.Join(f.work, "link")))
	token := filepath.Join(dir, "token")
	marker := filepath.Join(f.work, "started")
	settings := f.writeSettings(map[string]any{"denyRead": []string{f.secret, filepath.Join(f.work, "link", "token")}})
	wait := onceStarted(marker, func() {
		os.WriteFile(token, []byte("TOKEN-MADE-LATER\n"), 0o600)
	})
	got := f.sandboxedWith(settings, "mark-then", marker, "sleep-then", "2.5", "read", token)
	wait()
	f.checkLateSecret(t, got, marker, token, "a hidden file made on the host behind a symlink in the writable tree was read")
}

// TestSecretReplacedBehindRemovedSymlink: a hidden file named through a
// symlink in a writable tree (work/link/token, link -> a directory the
// command may only read) was looked at by that name: the command removed
// the symlink, the look found nothing there and took the file for gone,
// and the file the user saved over the hidden one on the host (a new file
// renamed into place, which takes the mask away) was read (attack pass
// 109). It is looked at where it was at the start. Without moat the user
// reads it.
func TestSecretReplacedBehindRemovedSymlink(t *testing.T) {
	f := newFixture(t)
	dir := filepath.Join(f.outside, "linked")
	must(t, os.Mkdir(dir, 0o755))
	link := filepath.Join(f.work, "link")
	must(t, os.Symlink(dir, link))
	token := filepath.Join(dir, "token")
	must(t, os.WriteFile(token, []byte("old\n"), 0o600))
	marker := filepath.Join(f.work, "started")
	settings := f.writeSettings(map[string]any{"denyRead": []string{f.secret, filepath.Join(link, "token")}})
	wait := onceStarted(marker, func() {
		time.Sleep(200 * time.Millisecond) // the symlink removed
		saveOver(token)
	})
	got := f.sandboxedWith(settings, "unlink-then", link, "mark-then", marker, "sleep-then", "2.5", "read", token)
	wait()
	f.checkLateSecret(t, got, marker, token, "a hidden file replaced on the host behind a symlink the command removed was read")
}

// TestSecretReplacedBelowReadAgain: a hidden file below a hidden directory
// was left out of the run's look for replaced hidden files, since the
// directory's mask hides whatever it becomes; but below an allowRead that
// shows a part of that directory again (denyRead D and D/sub/token,
// allowRead D/sub) nothing but its own mask hides it, and the file the
// user saved over it on the host (a new file renamed into place, which
// takes the mask away) was read (attack pass 109). Without moat the user
// reads it.
func TestSecretReplacedBelowReadAgain(t *testing.T) {
	f := newFixture(t)
	d := filepath.Join(f.outside, "conf")
	sub := filepath.Join(d, "sub")
	must(t, os.MkdirAll(sub, 0o755))
	token := filepath.Join(sub, "token")
	must(t, os.WriteFile(token, []byte("old\n"), 0o600))
	marker := filepath.Join(f.work, "started")
	settings := f.writeSettings(map[string]any{"denyRead": []string{f.secret, d, token}, "allowRead": []string{sub}})
	wait := onceStarted(marker, func() {
		saveOver(token)
	})
	got := f.sandboxedWith(settings, "mark-then", marker, "sleep-then", "2.5", "read", token)
	wait()
	f.checkLateSecret(t, got, marker, token, "a hidden file below an allowRead in a hidden directory, replaced on the host, was read")
}

// TestHiddenBelowPlaceholderNotMade: a denyRead path below a reserved name
// that is missing (.vscode/x.json: the run's placeholder at .vscode) is
// looked at since attack pass 109 (its directory is read-only to the
// command); the placeholder is no directory, and the look's lstat said
// ENOTDIR, which it took for a file made there: the run was ended.
func TestHiddenBelowPlaceholderNotMade(t *testing.T) {
	f := newFixture(t)
	settings := f.writeSettings(map[string]any{"denyRead": []string{f.secret, filepath.Join(f.work, ".vscode", "x.json")}})
	got := f.sandboxedWith(settings, "sleep-then", "1.5", "read", filepath.Join(f.work, ".vscode", "x.json"))
	if strings.Contains(got.out, "ESCAPED") || strings.Contains(got.out, "which the policy hides") {
		t.Fatalf("the run was ended, or read a file that cannot exist:\n%s", got.out)
	}
	if !strings.Contains(got.out, "blocked:") {
		t.Fatalf("the command did not run to its end:\n%s", got.out)
	}
}

// onceStarted runs write, as the host, once the command has made marker
// (for 20 s at most), in the background; wait waits for it.
func onceStarted(marker string, write func()) (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if _, err := os.Lstat(marker); err == nil {
				write()
				return
			}
		}
	}()
	return func() { <-done }
}

// checkLateSecret: the command started (marker), did not read path (what
// the escape was, if it did), and its run was ended naming path (a
// session's command is refused instead); without moat the read succeeds.
func (f *fixture) checkLateSecret(t *testing.T, got result, marker, path, what string) {
	t.Helper()
	if _, err := os.Lstat(marker); err != nil {
		t.Fatalf("the command did not start:\n%s", got.out)
	}
	if strings.Contains(got.out, "ESCAPED") {
		t.Fatalf("ESCAPE under moat: %s:\n%s", what, got.out)
	}
	if !viaSession() && !strings.Contains(got.out, path) {
		t.Fatalf("the run must be ended naming %s:\n%s", path, got.out)
	}
	if base := f.direct("read", path); !base.escaped() {
		t.Fatalf("the attack must work without moat:\n%s", base.out)
	}
}

// saveOver saves a new secret over path as editors and login tools do: a
// new file renamed into place, which takes a mask on the old one away.
func saveOver(path string) {
	if os.WriteFile(path+".new", []byte("TOKEN-SAVED-LATER\n"), 0o600) == nil {
		os.Rename(path+".new", path)
	}
}
