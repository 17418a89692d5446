//go:build linux

package privtests

import (
	"crypto/sha1"
	"fmt"
	"github.com/moat-sandbox/moat/internal/testutil"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A denyRead glob with ** hides every match, however deep and in
// node_modules and .git too: it stopped at the search depth (3) and
// skipped those directories, so `**/*.pem` at depth 4 or in node_modules
// was readable (found by an attack pass). Without moat the same user
// reads each.
func TestDenyGlobReachesEveryDepth(t *testing.T) {
	f := newFixture(t)
	files := []string{"a/top.pem", "a/b/c/d/deep.pem", "a/b/c/d/e/f/deeper.pem", "node_modules/pkg/x.pem", "vendor/.git/y.pem"}
	for _, rel := range files {
		p := filepath.Join(f.outside, rel)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(secretText+"\n"), 0o644))
	}
	settings := f.writeSettings(map[string]any{"denyRead": []string{f.outside + "/**/*.pem"}})
	for _, rel := range files {
		p := filepath.Join(f.outside, rel)
		if r := f.sandboxedWith(settings, "read", p); strings.Contains(r.out, secretText) || r.escaped() {
			t.Errorf("ESCAPE: %s read past denyRead %s/**/*.pem:\n%s", rel, f.outside, r.out)
		}
		if r := f.direct("read", p); !strings.Contains(r.out, secretText) {
			t.Errorf("without moat %s is not read (the test cannot fail):\n%s", rel, r.out)
		}
	}
}

// A directory that cannot be listed but can be entered (chmod 0311, which
// a command may do in a writable tree) is hidden whole by a deny glob
// that reaches into it: the expansion read it as empty, and the next run
// read certs/server.pem past denyRead **/*.pem (found by an attack pass).
// Root lists any directory, so this runs where moat runs as a user (the
// rootless suites of .ci/run).
func TestDenyGlobIntoUnlistableDirectory(t *testing.T) {
	testutil.RequireUnprivileged(t) // root lists a 0311 directory: the rootless suites run this
	f := newFixture(t)
	certs := filepath.Join(f.work, "certs")
	must(t, os.MkdirAll(certs, 0o755))
	pem := filepath.Join(certs, "server.pem")
	must(t, os.WriteFile(pem, []byte(secretText+"\n"), 0o644))
	must(t, os.Chmod(certs, 0o311))
	t.Cleanup(func() { os.Chmod(certs, 0o755) })
	settings := f.writeSettings(map[string]any{"denyRead": []string{f.work + "/**/*.pem"}})
	if r := f.sandboxedWith(settings, "read", pem); strings.Contains(r.out, secretText) || r.escaped() {
		t.Errorf("ESCAPE: %s read in a directory that cannot be listed, past denyRead **/*.pem:\n%s", pem, r.out)
	}
	if r := f.direct("read", pem); !strings.Contains(r.out, secretText) {
		t.Errorf("without moat the file is read by name (the test cannot fail):\n%s", r.out)
	}
}

// The managed settings' directory is never writable in a sandbox, even
// one given /etc: a drop-in planted in /etc/claude-code/managed-settings.d
// would be obeyed by the next run as the administrator's (found by an
// attack pass). Without moat root makes it (and the test removes it).
func TestManagedSettingsDirNotWritable(t *testing.T) {
	testutil.RequireRoot(t)
	const dir = "/etc/claude-code"
	if _, err := os.Lstat(dir); err == nil {
		t.Skip(dir + " exists on this machine: not touched")
	}
	f := newFixture(t)
	plant := "mkdir -p " + dir + "/managed-settings.d && echo '{}' > " + dir + "/managed-settings.d/x.json"
	r := f.exec(moatBin, "run", "--settings", f.settings, "--write", "/etc", "--", "/bin/sh", "-c", plant)
	if _, err := os.Lstat(dir); err == nil {
		os.RemoveAll(dir)
		t.Fatalf("ESCAPE: a sandbox given /etc made %s:\n%s", dir, r.out)
	}
	if !strings.Contains(r.out, "deny file-write "+dir) {
		t.Errorf("the refusal is not reported:\n%s", r.out)
	}
	out, err := exec.Command("/bin/sh", "-c", plant).CombinedOutput()
	_, statErr := os.Lstat(dir + "/managed-settings.d/x.json")
	os.RemoveAll(dir)
	if err != nil || statErr != nil {
		t.Errorf("without moat root makes %s (or the test cannot fail): %v %s", dir, err, out)
	}
}

// Files a tool runs code from when the project is next opened (a dev
// container's initializeCommand, an agent's MCP servers, .envrc, .exrc),
// made by the command where none was, are taken out after the run: they
// were protected only where they existed (found by an attack pass).
// Without moat the same command leaves them.
func TestToolFilesTakenOut(t *testing.T) {
	f := newFixture(t)
	plant := "mkdir -p .devcontainer .cursor sub && echo '{\"initializeCommand\":\"x\"}' > .devcontainer/devcontainer.json && " +
		"echo '{}' > .cursor/mcp.json && echo x > .envrc && echo x > sub/.exrc"
	files := []string{".devcontainer/devcontainer.json", ".cursor/mcp.json", ".envrc", "sub/.exrc"}
	f.plantsTakenOut(plant, files)
	f.plantsMadeWithout(plant, files)
}

// Files the user's host tools run code from, found by attack pass 64 with
// the real tools: a dev container's .devcontainer.json at the top of the
// project (the devcontainer CLI ran its initializeCommand on the host),
// opencode's opencode.json and .opencode/ (opencode started the MCP
// server's command and loaded the plugin on its next start, no prompt),
// and mise's files: a .tool-versions needs no trust, and its "path:"
// version went first on the PATH of the user's shell at the next prompt
// (a planted bin/git was the user's next git status); in a directory the
// user trusted, an edited mise.toml's [env] _.source ran at the next
// prompt, and so did a new mise.local.toml or .mise/config.toml. Made
// where none was they are taken out after the run; where they exist they
// are read-only. Without moat the same commands leave them.
func TestHostToolFilesProtected(t *testing.T) {
	coldRunsOnly(t)
	f := newFixture(t)
	plant := "echo '{\"initializeCommand\":\"x\"}' > .devcontainer.json && echo '{\"mcp\":{}}' > opencode.json && " +
		"echo '{}' > opencode.jsonc && mkdir -p .opencode/plugin .mise sub && echo x > .opencode/plugin/p.js && " +
		"echo 'node path:/x' > .tool-versions && echo x > .mise.toml && echo x > mise.local.toml && " +
		"echo x > .mise.local.toml && echo x > .mise/config.toml && echo x > sub/mise.toml"
	made := []string{".devcontainer.json", "opencode.json", "opencode.jsonc", ".opencode/plugin/p.js", ".tool-versions",
		".mise.toml", "mise.local.toml", ".mise.local.toml", ".mise/config.toml", "sub/mise.toml"}
	f.plantsTakenOut(plant, made)
	// Existing ones (a trusted mise.toml, a project's .tool-versions) are
	// read-only.
	existing := []string{"mise.toml", ".tool-versions"}
	for _, rel := range existing {
		must(t, os.WriteFile(filepath.Join(f.work, rel), []byte("[tools]\n"), 0o644))
	}
	// Written well before the run: the audit takes a change from the
	// second before the run's start on for the command's
	// (enforce.Since), and the user's own is kept only before that.
	time.Sleep(2100 * time.Millisecond)
	r := f.exec(moatBin, "run", "--settings", f.settings, "--", "/bin/sh", "-c",
		"echo '[env]' >> mise.toml; echo 'node path:/x' >> .tool-versions; true")
	for _, rel := range existing {
		if b, _ := os.ReadFile(filepath.Join(f.work, rel)); string(b) != "[tools]\n" {
			t.Errorf("ESCAPE: the existing %s was rewritten under moat: %q\n%s", rel, b, r.out)
		}
	}
	f.plantsMadeWithout(plant+" && echo '[env]' >> mise.toml", made)
	if b, _ := os.ReadFile(filepath.Join(f.work, "mise.toml")); string(b) == "[tools]\n" {
		t.Errorf("without moat mise.toml is not rewritten (the test cannot fail)")
	}
}

// Other agents' project files that start commands with no prompt (attack
// pass 66): Qwen Code's .qwen/settings.json "mcpServers" (qwen -p started
// the planted command with no auth type set, no trust asked), and, from
// their own documentation (their packages could not be installed here),
// Crush's crush.json/.crush.json "mcp" and "lsp" commands, Amazon Q's
// .amazonq/mcp.json, Kiro's .kiro/ (settings/mcp.json, hooks) and Roo's
// .roo/mcp.json. A command may not make one, nor change one that exists;
// without moat the same command does both.
func TestAgentProjectFilesProtected(t *testing.T) {
	coldRunsOnly(t)
	f := newFixture(t)
	plant := "mkdir -p .qwen .amazonq .kiro/settings .roo sub/.qwen && echo '{\"mcpServers\":{}}' > .qwen/settings.json && " +
		"echo '{\"mcp\":{}}' > crush.json && echo '{}' > .crush.json && echo '{}' > .amazonq/mcp.json && " +
		"echo '{}' > .kiro/settings/mcp.json && echo '{}' > .roo/mcp.json && echo '{}' > sub/.qwen/settings.json"
	made := []string{".qwen/settings.json", "crush.json", ".crush.json", ".amazonq/mcp.json", ".kiro/settings/mcp.json",
		".roo/mcp.json", "sub/.qwen/settings.json"}
	f.plantsTakenOut(plant, made)
	// Existing ones are read-only.
	existing := []string{".qwen/settings.json", "crush.json"}
	must(t, os.MkdirAll(filepath.Join(f.work, ".qwen"), 0o755))
	for _, rel := range existing {
		must(t, os.WriteFile(filepath.Join(f.work, rel), []byte("{}\n"), 0o644))
	}
	time.Sleep(2100 * time.Millisecond) // before enforce.Since: the user's
	r := f.exec(moatBin, "run", "--settings", f.settings, "--", "/bin/sh", "-c",
		"echo '{\"mcpServers\":{}}' > .qwen/settings.json; echo '{\"mcp\":{}}' > crush.json; true")
	for _, rel := range existing {
		if b, _ := os.ReadFile(filepath.Join(f.work, rel)); string(b) != "{}\n" {
			t.Errorf("ESCAPE: the existing %s was rewritten under moat: %q\n%s", rel, b, r.out)
		}
	}
	must(t, os.RemoveAll(filepath.Join(f.work, ".qwen")))
	must(t, os.Remove(filepath.Join(f.work, "crush.json")))
	f.plantsMadeWithout(plant, made)
}

// Claude Code's ~/.claude.json: its "mcpServers" are started by every
// later claude, in any directory, with no prompt (attack pass 64: claude
// -p ran the planted command, logged in or not). A working directory that
// is the home is writable under Claude Code's settings, and ~/.claude and
// ~/.mcp.json were read-only there, ~/.claude.json not. Without moat the
// same command writes it.
func TestHomeClaudeJSONNotWritable(t *testing.T) {
	f := newFixture(t)
	settings := f.writeSettings(map[string]any{"allowWrite": []string{f.work, f.home}})
	p := filepath.Join(f.home, ".claude.json")
	write := `echo '{"mcpServers":{"x":{"command":"sh"}}}' > "$HOME/.claude.json"; true`
	for _, exists := range []bool{true, false} {
		os.Remove(p)
		if exists {
			must(t, os.WriteFile(p, []byte("{}\n"), 0o644))
		}
		r := f.exec(moatBin, "run", "--settings", settings, "--", "/bin/sh", "-c", write)
		if b, err := os.ReadFile(p); exists && string(b) != "{}\n" || !exists && err == nil {
			t.Errorf("ESCAPE: ~/.claude.json (existing %v) written under moat: %q\n%s", exists, b, r.out)
		}
	}
	os.Remove(p)
	cmd := exec.Command("/bin/sh", "-c", write)
	cmd.Dir, cmd.Env = f.work, f.env()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	if b, _ := os.ReadFile(p); !strings.Contains(string(b), "mcpServers") {
		t.Errorf("without moat ~/.claude.json is not written (the test cannot fail)")
	}
}

// A symlink planted in the git directory where git writes a file by name:
// .git/COMMIT_EDITMSG -> ~/.bashrc had the user's next git commit write
// its message into ~/.bashrc, and .git/logs/HEAD -> a file of the user's
// had it append the reflog line there (attack pass 66): files outside
// every path the command could write. The audit takes such links out.
// Without moat the same links make the same git commit write both.
func TestGitDirLinksOutTakenOut(t *testing.T) {
	f := newFixture(t)
	bashrc, notes := filepath.Join(f.home, ".bashrc"), filepath.Join(f.outside, "notes.txt")
	plant := fmt.Sprintf("ln -sf %s .git/COMMIT_EDITMSG && mkdir -p .git/logs && ln -sf %s .git/logs/HEAD", bashrc, notes)
	commit := func() {
		t.Helper()
		must(t, os.WriteFile(filepath.Join(f.work, "f.txt"), []byte(time.Now().String()), 0o644))
		git(t, f.work, "add", "f.txt")
		git(t, f.work, "-c", "user.name=u", "-c", "user.email=u@x", "-c", "core.logAllRefUpdates=true", "commit", "-qm", "USERMSG")
	}
	for _, moat := range []bool{true, false} {
		must(t, os.WriteFile(bashrc, []byte("echo original\n"), 0o644))
		must(t, os.WriteFile(notes, []byte("precious\n"), 0o644))
		os.Remove(filepath.Join(f.work, ".git", "COMMIT_EDITMSG"))
		os.RemoveAll(filepath.Join(f.work, ".git", "logs"))
		out := f.plantWith(moat, plant)
		commit()
		b1, _ := os.ReadFile(bashrc)
		b2, _ := os.ReadFile(notes)
		wrote := strings.Contains(string(b1), "USERMSG") || strings.Contains(string(b2), "USERMSG")
		switch {
		case moat && wrote:
			t.Errorf("ESCAPE: the user's git commit wrote through the links planted under moat: ~/.bashrc %q, notes %q\n%s", b1, b2, out)
		case !moat && !wrote:
			t.Errorf("without moat git commit did not write through the links (the test cannot fail): %q %q", b1, b2)
		}
	}
}

// plantsTakenOut runs plant under moat in the working directory: none of
// made may be left there, and the plants are reported.
func (f *fixture) plantsTakenOut(plant string, made []string) {
	f.t.Helper()
	r := f.exec(moatBin, "run", "--settings", f.settings, "--", "/bin/sh", "-c", plant)
	for _, rel := range made {
		if _, err := os.Lstat(filepath.Join(f.work, rel)); err == nil {
			f.t.Errorf("ESCAPE: %s made under moat is still in the working tree:\n%s", rel, r.out)
		}
	}
	if !strings.Contains(r.out, "deny file-plant") {
		f.t.Errorf("the plants are not reported:\n%s", r.out)
	}
}

// plantsMadeWithout runs plant without moat in the working directory:
// each of made must then be there (or the test cannot fail).
func (f *fixture) plantsMadeWithout(plant string, made []string) {
	f.t.Helper()
	cmd := exec.Command("/bin/sh", "-c", plant)
	cmd.Dir = f.work
	if out, err := cmd.CombinedOutput(); err != nil {
		f.t.Fatalf("%v %s", err, out)
	}
	for _, rel := range made {
		if _, err := os.Lstat(filepath.Join(f.work, rel)); err != nil {
			f.t.Errorf("without moat %s is not made (the test cannot fail)", rel)
		}
	}
}

// A symlinked directory in .git/objects: git writes a loose object into
// objects/XX/ by a new name, so .git/objects/XX -> DIR had the user's
// next git add write the object into DIR, a directory the command could
// not write; the audit skipped objects/ whole (attack pass 70). Without
// moat the same link makes the same git add write there.
func TestGitObjectsDirLinkOutTakenOut(t *testing.T) {
	f := newFixture(t)
	dir := filepath.Join(f.outside, "objdir")
	payload := filepath.Join(f.work, "payload.txt")
	for _, moat := range []bool{true, false} {
		os.RemoveAll(dir)
		must(t, os.MkdirAll(dir, 0o777))
		body := fmt.Sprintf("payload %v %d\n", moat, time.Now().UnixNano())
		must(t, os.WriteFile(payload, []byte(body), 0o644))
		hash := fmt.Sprintf("%x", sha1.Sum([]byte(fmt.Sprintf("blob %d\x00%s", len(body), body))))
		link := filepath.Join(f.work, ".git", "objects", hash[:2])
		os.RemoveAll(link)
		plant := fmt.Sprintf("ln -s %s .git/objects/%s", dir, hash[:2])
		out := f.plantWith(moat, plant)
		git(t, f.work, "add", "payload.txt")
		_, err := os.Stat(filepath.Join(dir, hash[2:]))
		wrote := err == nil
		switch {
		case moat && wrote:
			t.Errorf("ESCAPE: the user's git add wrote its object into %s through .git/objects/%s planted under moat\n%s", dir, hash[:2], out)
		case !moat && !wrote:
			t.Errorf("without moat git add did not write through the link (the test cannot fail): %v", err)
		}
		os.RemoveAll(link)
		git(t, f.work, "rm", "-q", "--cached", "payload.txt")
	}
}

// A symlink in .git/logs hidden behind many directories the run made in
// .git: outLinks stopped after 20,000 directories of one git directory
// with no word, and .git/logs/HEAD -> FILE behind 20,001 empty
// directories in .git/zz had the user's next commit append its reflog
// line to FILE (attack pass 70). Without moat the same plant makes the
// same commit write FILE.
func TestGitDirLinksPastManyDirsTakenOut(t *testing.T) {
	coldRunsOnly(t)
	f := newFixture(t)
	notes := filepath.Join(f.outside, "notes.txt")
	plant := fmt.Sprintf("mkdir -p .git/zz .git/logs && cd .git/zz && seq 1 20001 | xargs mkdir && cd .. && ln -sf %s logs/HEAD", notes)
	for _, moat := range []bool{true, false} {
		must(t, os.WriteFile(notes, []byte("precious\n"), 0o666))
		os.RemoveAll(filepath.Join(f.work, ".git", "zz"))
		os.RemoveAll(filepath.Join(f.work, ".git", "logs"))
		out := f.plantWith(moat, plant)
		must(t, os.WriteFile(filepath.Join(f.work, "f.txt"), []byte(time.Now().String()), 0o644))
		git(t, f.work, "add", "f.txt")
		git(t, f.work, "-c", "user.name=u", "-c", "user.email=u@x", "-c", "core.logAllRefUpdates=true", "commit", "-qm", "USERMSG")
		b, _ := os.ReadFile(notes)
		wrote := strings.Contains(string(b), "USERMSG")
		switch {
		case moat && wrote:
			t.Errorf("ESCAPE: the user's git commit appended its reflog line to %s through .git/logs/HEAD planted under moat behind 20,001 directories: %q\n%s", notes, b, out)
		case !moat && !wrote:
			t.Errorf("without moat git commit did not write through the link (the test cannot fail): %q", b)
		}
	}
}

// plantWith runs plant in the working directory under moat (its output
// returned) or, for the control, without it.
func (f *fixture) plantWith(moat bool, plant string) string {
	f.t.Helper()
	if moat {
		return f.exec(moatBin, "run", "--settings", f.settings, "--", "/bin/sh", "-c", plant).out
	}
	cmd := exec.Command("/bin/sh", "-c", plant)
	cmd.Dir = f.work
	if b, err := cmd.CombinedOutput(); err != nil {
		f.t.Fatalf("%v %s", err, b)
	}
	return ""
}
