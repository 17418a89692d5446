package settings

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Settings files that are not files, or far too large, are refused at once
// with the reason: reading them must not hang or fill memory.
func TestHostileSettingsFiles(t *testing.T) {
	e := newEnv(t)
	fifo := filepath.Join(e.cwd, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	big := e.write(filepath.Join(e.cwd, "big.json"), `{"network":{"allowedDomains":[],"deniedDomains":[]},"filesystem":{"denyRead":[],"allowWrite":[],"denyWrite":[]},"x":"`+strings.Repeat("a", MaxFileSize)+`"}`)
	link := filepath.Join(e.cwd, "zero.json")
	os.Symlink("/dev/zero", link)
	cases := map[string]struct{ file, want string }{
		"fifo":                {fifo, "FIFO"},
		"/dev/zero":           {"/dev/zero", "character device"},
		"symlink to a device": {link, "character device"},
		"too large":           {big, "more than"},
		"a directory":         {e.cwd, "directory"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			done := make(chan error, 1)
			start := time.Now()
			go func() { _, err := e.load(tc.file); done <- err }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrInvalid) {
					t.Fatalf("want an error saying %q, got %v", tc.want, err)
				}
				if d := time.Since(start); d > 2*time.Second {
					t.Fatalf("took %v", d)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("reading the settings file hangs")
			}
		})
	}
}

// A key twice in a section moat reads is refused, naming it and both
// places; elsewhere (another tool's keys) it is not moat's business.
func TestDuplicateKeys(t *testing.T) {
	e := newEnv(t)
	srt := e.write(filepath.Join(e.cwd, "dup.json"), `{"network":{"allowedDomains":[],"deniedDomains":[]},
"filesystem":{"denyRead":[],"allowWrite":[],"denyWrite":[]},
"network":{"allowedDomains":["evil.com"],"deniedDomains":[]}}`)
	_, err := e.load(srt)
	if err == nil || !strings.Contains(err.Error(), "network") || !strings.Contains(err.Error(), "line 1") || !strings.Contains(err.Error(), "line 3") {
		t.Fatalf("duplicate network: %v", err)
	}
	nested := e.write(filepath.Join(e.cwd, "dup2.json"), `{"network":{"allowedDomains":["a.com"],"deniedDomains":[],"allowedDomains":["evil.com"]},"filesystem":{"denyRead":[],"allowWrite":[],"denyWrite":[]}}`)
	if _, err := e.load(nested); err == nil || !strings.Contains(err.Error(), "network.allowedDomains") {
		t.Fatalf("duplicate nested key: %v", err)
	}
	other := e.write(filepath.Join(e.cwd, "dup3.json"), `{"permissions":{"allow":[]},"hooks":{"a":1,"a":2}}`)
	if _, err := e.load(other); err != nil {
		t.Fatalf("a duplicate in a key moat does not read: %v", err)
	}
}

func TestControlCharactersInPaths(t *testing.T) {
	e := newEnv(t)
	f := e.write(filepath.Join(e.cwd, "nl.json"), `{"network":{"allowedDomains":[],"deniedDomains":[]},"filesystem":{"denyRead":[],"allowWrite":["a\nb"],"denyWrite":[]}}`)
	if _, err := e.load(f); err == nil || !strings.Contains(err.Error(), "control character") || !strings.Contains(err.Error(), "allowWrite") {
		t.Fatalf("a newline in a path: %v", err)
	}
}

// Unicode line separators and bidirectional controls are refused like
// control characters, with the field: printed raw, they break a line or
// reorder what the reader sees.
func TestLineSeparatorsAndBidiControlsInPaths(t *testing.T) {
	e := newEnv(t)
	runes := []rune{0x2028, 0x2029, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069, 0x200e, 0x200f, 0x061c, 0x0085, 0x009b}
	for _, r := range runes {
		for _, field := range []string{"allowWrite", "denyRead"} {
			path, _ := json.Marshal("a" + string(r) + "b")
			f := e.write(filepath.Join(e.cwd, "u.json"), strings.Replace(`{"network":{"allowedDomains":[],"deniedDomains":[]},"filesystem":{"denyRead":[],"allowWrite":[],"denyWrite":[]}}`, `"`+field+`":[]`, `"`+field+`":[`+string(path)+`]`, 1))
			_, err := e.load(f)
			if err == nil || !strings.Contains(err.Error(), field) || !strings.Contains(err.Error(), fmt.Sprintf("%U", r)) || !strings.Contains(err.Error(), "cannot be shown or recorded safely") {
				t.Errorf("%U in %s: %v", r, field, err)
			} else if strings.ContainsRune(err.Error(), r) {
				t.Errorf("%U in %s: the error holds it raw: %v", r, field, err)
			}
		}
	}
	// Claude Code's format too.
	cc := e.write(filepath.Join(e.cwd, "cc.json"), `{"permissions":{"deny":["Read(//etc/\u202egpj.exe)"]}}`)
	if _, err := e.load(cc); err == nil || !strings.Contains(err.Error(), "U+202E") || !strings.Contains(err.Error(), "bidirectional") {
		t.Errorf("Claude Code's format: %v", err)
	}
	// Other characters are paths like any.
	ok := e.write(filepath.Join(e.cwd, "ok.json"), `{"network":{"allowedDomains":[],"deniedDomains":[]},"filesystem":{"denyRead":["caf\u00e9/\u65e5\u672c"],"allowWrite":[],"denyWrite":[]}}`)
	if _, err := e.load(ok); err != nil {
		t.Errorf("accented and CJK characters: %v", err)
	}
}

func TestDotDotNote(t *testing.T) {
	e := newEnv(t)
	f := e.write(filepath.Join(e.cwd, "dd.json"), `{"network":{"allowedDomains":[],"deniedDomains":[]},"filesystem":{"denyRead":[],"allowWrite":["work/../../../../etc", "a/../b"],"denyWrite":[]}}`)
	p, err := e.load(f)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Clean(e.cwd + "/work/../../../../etc"); !contains(paths(p.FS.AllowWrite), want) || !strings.Contains(strings.Join(p.Notes, ""), want) {
		t.Fatalf("allowWrite %v", paths(p.FS.AllowWrite))
	}
	if len(p.Notes) != 1 {
		t.Fatalf("notes %q", p.Notes)
	}
}

// Claude Code's format makes the working directory writable: never a
// system directory by that implicit rule.
func TestImplicitWorkingDirectory(t *testing.T) {
	e := newEnv(t)
	cc := e.write(filepath.Join(e.home, "cc.json"), `{"permissions":{"allow":[]}}`)
	for _, cwd := range []string{"/", "/etc", "/etc/nginx", "/usr/local", filepath.Dir(e.home)} {
		_, _, err := Load(Options{File: cc, Cwd: cwd, Home: e.home, ManagedFile: e.managed})
		if err == nil || !strings.Contains(err.Error(), "system directory") || !strings.Contains(err.Error(), "allowWrite") {
			t.Errorf("cwd %s: %v", cwd, err)
		}
	}
	// A home directory that is / or a system directory exempts nothing
	// (HOME=/ or HOME=/etc is one variable away).
	for _, home := range []string{"/", "/etc", "/usr/local", "/var"} {
		p, _, err := Load(Options{File: cc, Cwd: home, Home: home, ManagedFile: e.managed})
		if err == nil || !strings.Contains(err.Error(), "system directory") || !strings.Contains(err.Error(), "also the home directory") {
			t.Errorf("cwd and home %s: %v", home, err)
		}
		if p != nil {
			t.Errorf("cwd and home %s: a policy, notes %q", home, p.Notes)
		}
	}
	// root's home is a home.
	if p, _, err := Load(Options{File: cc, Cwd: "/root", Home: "/root", ManagedFile: e.managed}); err != nil || len(p.Notes) == 0 || !strings.Contains(p.Notes[0], "home directory") {
		t.Errorf("root in /root: %v", err)
	}
	if _, _, err := Load(Options{File: cc, Cwd: "/root", Home: e.home, ManagedFile: e.managed}); err == nil {
		t.Errorf("/root, not the home: allowed")
	}
	// For a caller that runs nothing (moat check, moat policy), a note.
	if p, _, err := Load(Options{File: cc, Cwd: "/", Home: e.home, ManagedFile: e.managed, RunsNothing: true}); err != nil || len(p.Notes) != 1 || !strings.HasPrefix(p.Notes[0], RunRefusalNote+"/ is a system directory") {
		t.Errorf("RunsNothing from /: %v", err)
	}
	// Said explicitly, it is the user's choice.
	explicit := e.write(filepath.Join(e.home, "cc2.json"), `{"sandbox":{"filesystem":{"allowWrite":["//etc"]}}}`)
	if _, _, err := Load(Options{File: explicit, Cwd: "/etc", Home: e.home, ManagedFile: e.managed}); err != nil {
		t.Errorf("explicit allowWrite: %v", err)
	}
	// Home: allowed, with a note.
	p, _, err := Load(Options{File: cc, Cwd: e.home, Home: e.home, ManagedFile: e.managed})
	if err != nil || len(p.Notes) == 0 || !strings.Contains(p.Notes[0], "home directory") {
		t.Errorf("home: %v %q", err, p.Notes)
	}
	// A project: nothing to say.
	p, _, err = Load(Options{File: cc, Cwd: e.cwd, Home: e.home, ManagedFile: e.managed})
	if err != nil || len(p.Notes) != 0 {
		t.Errorf("project: %v %q", err, p.Notes)
	}
}

// The system directories of a Debian host (README.md's list): none
// becomes writable by the implicit rule; the folders below the ones that
// hold projects, and /var/tmp, may be working directories.
func TestImplicitWorkingDirectorySystemList(t *testing.T) {
	e := newEnv(t)
	cc := e.write(filepath.Join(e.home, "cc.json"), `{"permissions":{"allow":[]}}`)
	refused := []string{
		"/var/lib", "/var/lib/dpkg", "/var/spool", "/var/spool/cron", "/var/log", "/var/log/apt",
		"/var/cache", "/var/cache/apt", "/var/mail", "/var/backups", "/var/lib/systemd", "/var/opt",
		"/var/opt/x", "/var/local", "/var/local/x", "/var/run", "/var/lock", "/var/crash", "/var/www",
		"/srv", "/opt", "/usr/local", "/usr/local/bin", "/snap", "/snap/core", "/lib", "/lib64",
		"/lib/x86_64-linux-gnu", "/bin", "/sbin", "/sys", "/sys/fs/cgroup", "/dev", "/dev/shm",
		"/mnt", "/media", "/boot", "/boot/efi", "/run", "/run/user", "/proc", "/proc/self",
		"/lost+found", "/nix/store", "/home", "/root", "/var", "/",
		"/private/var/lib", "/private/etc/ssh",
	}
	for _, cwd := range refused {
		if _, _, err := Load(Options{File: cc, Cwd: cwd, Home: e.home, ManagedFile: e.managed}); err == nil || !strings.Contains(err.Error(), "system directory") {
			t.Errorf("cwd %s: %v", cwd, err)
		}
	}
	allowed := []string{"/var/tmp", "/var/tmp/proj", "/var/www/site", "/srv/www", "/opt/app", "/mnt/disk/proj", "/media/usb/proj", "/home/someone/proj", "/tmp/proj"}
	for _, cwd := range allowed {
		if _, _, err := Load(Options{File: cc, Cwd: cwd, Home: e.home, ManagedFile: e.managed}); err != nil {
			t.Errorf("cwd %s: %v", cwd, err)
		}
	}
	// A working directory that is a symbolic link into a system directory
	// is the system directory.
	link := filepath.Join(e.cwd, "etc")
	if err := os.Symlink("/etc", link); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load(Options{File: cc, Cwd: link, Home: e.home, ManagedFile: e.managed}); err == nil || !strings.Contains(err.Error(), "(it is /etc)") {
		t.Errorf("cwd %s -> /etc: %v", link, err)
	}
}

func TestDefaultSecretsOnce(t *testing.T) {
	e := newEnv(t)
	p, _, err := Load(Options{Cwd: e.cwd, Home: "/root", ManagedFile: e.managed, NoDefaults: true})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range p.FS.DenyRead {
		if seen[r.Path] {
			t.Errorf("%s is listed twice", r.Path)
		}
		seen[r.Path] = true
	}
}

// A key is the file's choice too: an unknown field named with terminal
// escapes or a line break is named quoted, never raw (attack pass 82).
func TestControlCharactersInKeys(t *testing.T) {
	e := newEnv(t)
	for _, doc := range []string{
		`{"sandbox":{"\u001b]0;OWNED\u0007\u001b[2J":1}}`,
		`{"sandbox":{"x\nmoat: forged":1}}`,
		`{"moat":{"\u202eevil":1},"sandbox":{}}`,
	} {
		f := e.write(filepath.Join(e.cwd, "k.json"), doc)
		_, err := e.load(f)
		if err == nil || !strings.Contains(err.Error(), "unknown field") {
			t.Errorf("%s: %v", doc, err)
			continue
		}
		if strings.ContainsAny(err.Error(), "\x1b\x07\n\u202e") {
			t.Errorf("%s: the error holds the key raw: %q", doc, err.Error())
		}
	}
}

// A control character in a variable moat finds directories by is one error
// naming the variable (a newline in $HOME was forty, one a default secret,
// none naming it); a relative value is not used, as before.
func TestControlCharactersInEnvironmentPaths(t *testing.T) {
	e := newEnv(t)
	f := e.write(filepath.Join(e.cwd, "s.json"), `{"network":{"allowedDomains":[],"deniedDomains":[]},"filesystem":{"denyRead":[],"allowWrite":[],"denyWrite":[]}}`)
	for _, name := range []string{"HOME", "XDG_RUNTIME_DIR", "XDG_CACHE_HOME"} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, e.home+"\nx")
			_, _, err := Load(Options{File: f, Cwd: e.cwd, ManagedFile: e.managed})
			if err == nil || !strings.HasPrefix(err.Error(), "$"+name+": ") || !strings.Contains(err.Error(), "control character") || strings.Count(err.Error(), "\n") > 0 {
				t.Fatalf("want one line naming $%s, got %v", name, err)
			}
			t.Setenv(name, "relative")
			if _, _, err := Load(Options{File: f, Cwd: e.cwd, ManagedFile: e.managed}); err != nil {
				t.Fatalf("a relative $%s: %v", name, err)
			}
		})
	}
}
