//go:build linux

package privtests

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// historyMarker is the line the shell-history attack's shell adds to its
// history.
const historyMarker = "echo moat-history-marker"

func init() {
	// shell-history FILE: run an interactive bash whose history is FILE,
	// add a line to it and exit (bash then saves it), and read FILE;
	// escaped when the user's own history (the planted secret) was read.
	attacks["shell-history"] = func(a []string) (string, error) {
		cmd := exec.Command("/bin/bash", "--norc", "--noprofile", "-i", "-c", "shopt -s histappend; history -s "+historyMarker+"; exit 0")
		cmd.Env = append(os.Environ(), "HISTFILE="+a[0], "HISTSIZE=100", "HISTFILESIZE=100")
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("bash: %v: %s", err, out.String())
		}
		b, err := readContent(a[0])
		if err != nil {
			return "", err
		}
		if !bytes.Contains(b, []byte(secretText)) {
			return "", fmt.Errorf("%s holds no secret: %q", a[0], firstLine(b))
		}
		return "read " + a[0] + ": " + firstLine(b), nil
	}
}

// TestHistoriesAndAppStoresHidden: the histories written in place or kept
// in a directory of their own (where a token typed on a command line
// stays), the build tools' files that hold only credentials, desktop
// applications' session stores and further tools' token files (Copilot's,
// Hugging Face's, ...) are default secrets. Attack pass 101 read each with
// the default policy, as root and rootless; fish's universal variables,
// the other builds of VS Code and Teams' stores were left readable, and a
// command read them. (Histories saved by rename are
// not: TestRenameSavedHistoriesNotDefault.)
func TestHistoriesAndAppStoresHidden(t *testing.T) {
	f := newFixture(t)
	files := []string{
		f.home + "/.local/share/fish/fish_history",
		f.home + "/.node_repl_history",
		f.home + "/.rediscli_history",
		f.home + "/.irb_history",
		f.home + "/.local/share/atuin/history.db",
		f.home + "/.local/share/atuin/key",
		f.home + "/.m2/settings-security.xml",
		f.home + "/.sbt/.credentials",
		f.home + "/.sbt/credentials",
		f.home + "/.ivy2/.credentials",
		f.home + "/.config/Slack/Cookies",
		f.home + "/.config/discord/Local Storage/leveldb/000003.log",
		f.home + "/.config/Signal/config.json",
		f.home + "/.config/Element/Cookies",
		f.home + "/.config/Code/User/globalStorage/state.vscdb",
		f.home + "/.config/Cursor/User/globalStorage/state.vscdb",
		f.home + "/.config/fish/fish_variables",
		f.home + "/.config/fish/config.fish",
		f.home + "/.config/Code - Insiders/User/globalStorage/state.vscdb",
		f.home + "/.config/Code - OSS/User/globalStorage/state.vscdb",
		f.home + "/.config/VSCodium/User/globalStorage/state.vscdb",
		f.home + "/.config/Windsurf/User/globalStorage/state.vscdb",
		f.home + "/.config/Microsoft/Microsoft Teams/Cookies",
		f.home + "/.config/teams-for-linux/Cookies",
		f.home + "/.config/github-copilot/apps.json",
		f.home + "/.cache/huggingface/token",
		f.home + "/.huggingface/token",
		f.home + "/.kaggle/kaggle.json",
		f.home + "/.config/doctl/config.yaml",
		f.home + "/.fly/config.yml",
		f.home + "/.databrickscfg",
		f.home + "/.s3cfg",
	}
	f.hiddenByDefault(t, files)
}

// TestHiddenHistoryInSandboxShell: a shell inside the sandbox, with the
// home writable, whose history is the user's ~/.bash_history, hidden by
// the user's denyRead (it is not a default secret), sees it empty, runs
// and exits normally, and its history never reaches the host's file
// (bash's save fails on the read-only mask). Without moat the same shell
// reads the history and appends to it.
func TestHiddenHistoryInSandboxShell(t *testing.T) {
	if _, err := os.Stat("/bin/bash"); err != nil {
		t.Skip("no /bin/bash")
	}
	f := newFixture(t)
	hist := f.home + "/.bash_history"
	want := secretText + "\n"
	must(t, os.WriteFile(hist, []byte(want), 0o600))
	settings := f.writeSettings(map[string]any{"allowWrite": []string{f.work, f.home}, "denyRead": []string{f.secret, f.outside + "/secretdir", hist}})
	got := f.sandboxedWith(settings, "shell-history", hist)
	if got.escaped() {
		t.Errorf("ESCAPE under moat: %s", got.out)
	} else if !strings.Contains(got.out, "blocked:") || strings.Contains(got.out, "blocked: bash:") {
		t.Errorf("the sandboxed shell did not run and exit normally (exit %d):\n%s", got.code, got.out)
	}
	if b, _ := os.ReadFile(hist); string(b) != want {
		t.Errorf("the sandboxed shell wrote the host's %s: %q", hist, b)
	}
	base := f.direct("shell-history", hist)
	if !base.escaped() {
		t.Errorf("without moat the shell must read the history (or this test cannot detect an escape):\n%s", base.out)
	}
	if b, _ := os.ReadFile(hist); !strings.Contains(string(b), historyMarker) {
		t.Errorf("without moat the shell must append to %s (or this test cannot detect a write): %q", hist, b)
	}
}

// TestRenameSavedHistoriesNotDefault: the histories their tools save by a
// new file renamed over the old one (bash, zsh, readline's REPLs, less)
// are not default secrets: the kernel drops a file's mask when it is
// renamed over, moat then ends what runs (fail closed), and every terminal
// closed or less quit on the host would end the user's sandboxes. They are
// readable by default, as documented (docs/SECURITY.md), and hidden when
// the user lists them (TestHiddenHistoryInSandboxShell).
func TestRenameSavedHistoriesNotDefault(t *testing.T) {
	f := newFixture(t)
	var files []string
	for _, n := range []string{".bash_history", ".zsh_history", ".python_history", ".psql_history", ".lesshst"} {
		p := f.home + "/" + n
		must(t, os.WriteFile(p, []byte(secretText+"\n"), 0o600))
		files = append(files, p)
	}
	got := f.sandboxed(append([]string{"read-each"}, files...)...)
	for _, p := range files {
		if !strings.Contains(got.out, p+": "+secretText) {
			t.Errorf("%s is hidden by default: a host's save of it would end every running sandbox:\n%s", p, got.out)
		}
	}
}
