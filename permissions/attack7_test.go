package permissions

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// Regression tests for the seventh attack pass, on output options again:
// under an allow rule (Bash(curl:*), Bash(git:*), ...) or acceptEdits these
// commands wrote a protected file, or one outside the working directory,
// and were allowed. Each ask row was allowed before the fix; the allow
// rows are the everyday forms (tar --lz4 asked before).

// TestToolOutputsAttack7: curl -T to file: URLs, rsync -R, gpg
// --use-embedded-filename, openssl's other output options, git pathspec
// writes (checkout, restore), apply, am, submodule add, credential-store,
// bugreport, diagnose and mailsplit, and tar's --lz4.
func TestToolOutputsAttack7(t *testing.T) {
	var rows []arow
	for _, tc := range []struct {
		name, cmd string
		want      bool // true: ask
	}{
		// curl -T / --upload-file to a file: URL writes that path
		{"curl", "curl -T payload file:///work/proj/.git/config", true},
		{"curl", "curl --upload-file payload file:///work/proj/.git/hooks/pre-commit", true},
		{"curl", "curl --upload-file=payload file:///work/proj/.git/hooks/pre-commit", true},
		{"curl", "curl -T payload file://localhost/home/x/.bashrc", true},
		{"curl", "curl -T payload FILE:///work/proj/.bashrc", true},
		{"curl", "curl -T payload file:/work/proj/.envrc", true},
		{"curl", "curl -T payload file:///work/proj/%2Egit/config", true},
		{"curl", "curl -T payload 'file:///work/proj/.bashrc?x=1'", true},
		{"curl", "curl -T .bashrc file:///work/proj/sub/", true},
		{"curl", "curl -T payload file:///tmp/x", true},
		{"curl", "curl -T payload --url file:///work/proj/.git/config", true},
		{"curl", "curl -T p 'file:///root/.bash{rc,_profile}'", true},
		{"curl", "curl -T p 'file:///work/proj/x[1-2]'", true},
		{"curl", "curl -T '{a,.bashrc}' file:///work/proj/", true},
		{"curl", "curl -T file.txt https://example.com/upload", false},
		{"curl", "curl -T file.txt https://example.com/upload/", false},
		{"curl", "curl -T out.txt file:///work/proj/copy.txt", false},
		{"curl", "curl file:///work/proj/.bashrc", false},
		// rsync -R recreates the source's path under the destination
		{"rsync", "rsync -R stage/./.git/hooks/pre-commit .", true},
		{"rsync", "rsync -aR stage/./.git/hooks/pre-commit dst", true},
		{"rsync", "rsync --relative .git/hooks/pre-commit backup", true},
		{"rsync", "rsync -R x/.vscode/tasks.json .", true},
		{"rsync", "rsync -R --no-relative x/.vscode/tasks.json dst", false},
		{"rsync", "rsync -aR src/./a.txt dst", false},
		{"rsync", "rsync -a src dst", false},
		{"rsync", "rsync -a src/ dst/", true}, // as before
		// gpg --use-embedded-filename writes the name in the message
		{"gpg", "gpg --use-embedded-filename x.gpg", true},
		{"gpg", "gpg --batch --use-embedded-filename --decrypt-files x.gpg", true},
		{"gpg", "gpg --no-use-embedded-filename -d x.gpg", false},
		// openssl options that write files
		{"openssl", "openssl cms -verify -in m.p7 -certsout .git/config", true},
		{"openssl", "openssl cms -verify -in m.p7 -signer .bashrc", true},
		{"openssl", "openssl smime -verify -in m -signer /tmp/s.pem", true},
		{"openssl", "openssl genpkey -algorithm ed25519 -out k.pem -outpubkey .bashrc", true},
		{"openssl", "openssl cmp -cmd ir -rspout .git/config", true},
		{"openssl", "openssl cmp -cmd ir -extracertsout /tmp/e.pem", true},
		{"openssl", "openssl cmp -cmd ir -cacertsout .git/config", true},
		{"openssl", "openssl cmp -cmd crlupdate -crlout .bashrc", true},
		{"openssl", "openssl cms -sign -in m -signer cert.pem -inkey k.pem -out m.p7", false},
		{"openssl", "openssl x509 -in c.pem -noout -text", false},
		// git: pathspec writes, patches, submodule paths, other files
		{"git", "git checkout evil -- .claude/settings.json", true},
		{"git", "git checkout evil .claude/settings.json", true},
		{"git", "git checkout evil .claude", true},
		{"git", "git checkout evil -- .", true},
		{"git", "git checkout evil .", true},
		{"git", "git checkout -- .vscode/tasks.json", true},
		{"git", "git checkout .vscode/tasks.json", true},
		{"git", "git checkout evil -- sub/", true},
		{"git", "git checkout evil -- '*.json'", true},
		{"git", "git checkout evil -- ':(top)'", true},
		{"git", "git checkout evil --pathspec-from-file=list.txt", true},
		{"git", "git restore --source=evil .vscode/tasks.json", true},
		{"git", "git restore -s evil .vscode/tasks.json", true},
		{"git", "git restore .vscode/tasks.json", true},
		{"git", "git restore .", true},
		{"git", "git restore --source evil -- .envrc", true},
		{"git", "git restore -SW .claude/settings.json", true},
		{"git", "git submodule add https://example.com/x.git .claude", true},
		{"git", "git submodule add -b main https://example.com/x.git .vscode", true},
		{"git", "git submodule add https://example.com/.envrc", true},
		{"git", "git apply evil.patch", true},
		{"git", "git apply --index evil.patch", true},
		{"git", "git apply --check --apply evil.patch", true},
		{"git", "git am evil.mbox", true},
		{"git", "git credential-store --file=.git/config store", true},
		{"git", "git credential-store --file .bashrc store", true},
		{"git", "git credential-store store", true},
		{"git", "git bugreport -o .git/hooks", true},
		{"git", "git bugreport -o /tmp/r", true},
		{"git", "git diagnose -o .git/hooks", true},
		{"git", "git mailsplit -o.git/hooks x.mbox", true},
		{"git", "git mailsplit -o/tmp/m x.mbox", true},
		{"git", "git checkout main", false},
		{"git", "git checkout -b feature", false},
		{"git", "git checkout -b feature origin/main", false},
		{"git", "git checkout -", false},
		{"git", "git checkout HEAD~1 -- src/main.go", false},
		{"git", "git restore README.md", false},
		{"git", "git restore --staged .claude/settings.json", false},
		{"git", "git apply --check x.patch", false},
		{"git", "git apply --stat x.patch", false},
		{"git", "git am --abort", false},
		{"git", "git submodule add https://example.com/lib.git vendor/lib", false},
		{"git", "git submodule update --init", false},
		{"git", "git credential-store --file=creds.txt get", false},
		{"git", "git bugreport -o reports", false},
		{"git", "git mailsplit -omails x.mbox", false},
		// tar's compression options
		{"tar", "tar --lz4 -xf x.tar.lz4", false},
		{"tar", "tar --zstd -xf x.tar.zst", false},
		{"tar", "tar --lz4 -cf out.tar.lz4 src", false},
		{"tar", "tar --lz4 -xf x.tar.lz4 -C .git/hooks", true}, // -C still checked
	} {
		want := allow
		if tc.want {
			want = askV
		}
		rules := []string{"Bash(" + tc.name + ":*)"}
		rows = append(rows, arow{rules, "", tc.cmd, want}, arow{rules, "acceptEdits", tc.cmd, want})
	}
	runRows(t, testCwd, Options{}, rows)
}

// git checkout REV -- DIR writes what DIR holds: a protected name inside
// a directory named without a slash asks (found by an attack pass).
func TestGitCheckoutDirectoryPathspec(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"sub/.vscode", "plain"} {
		os.MkdirAll(filepath.Join(dir, d), 0o755)
	}
	os.WriteFile(filepath.Join(dir, "sub", ".vscode", "tasks.json"), []byte("{}"), 0o644)
	os.WriteFile(filepath.Join(dir, "plain", "a.go"), []byte("package a"), 0o644)
	git := []string{"Bash(git:*)"}
	runRows(t, dir, Options{FollowSymlinks: true}, []arow{
		{rules: git, cmd: "git checkout evil -- sub", want: policy.Ask},
		{rules: git, cmd: "git restore --source=evil sub", want: policy.Ask},
		{rules: git, cmd: "git checkout evil -- plain", want: policy.Allow},
		{rules: git, cmd: "git checkout main", want: policy.Allow},
	})
}
