package shell

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Provider is one shell: where it is, how to start it, and the few things
// that are said differently in bash and zsh. Everything else in the
// command string is common to both.
type Provider interface {
	// Name is "bash" or "zsh".
	Name() string
	// Path is the shell's absolute path inside the sandbox.
	Path() string
	// Argv runs script with the shell; login makes it a login shell (the
	// fallback when the session has no snapshot).
	Argv(script string, login bool) []string
	// SnapshotScript is the script that writes the snapshot (see
	// SnapshotSpec). It runs in a login shell.
	SnapshotScript(s SnapshotSpec) string
	// DisableExtglob turns extended glob patterns off.
	DisableExtglob() string
	// Variant is the language the command is parsed as.
	Variant() syntax.LangVariant
}

// Bash returns the provider for the bash at path.
func Bash(path string) Provider { return bashShell{path} }

// Zsh returns the provider for the zsh at path.
func Zsh(path string) Provider { return zshShell{path} }

// ErrNoShell is returned by Detect when neither bash nor zsh is found.
var ErrNoShell = errors.New("no suitable shell found (bash or zsh)")

// Detector finds the shell commands run in. The zero value looks at the
// host's $SHELL and the usual directories.
type Detector struct {
	// Shell, if set, is the shell to use (a path to bash or zsh); it is an
	// error if it is neither or is not executable.
	Shell string
	// Getenv reads the environment ($SHELL). If nil, os.Getenv.
	Getenv func(string) string
	// Executable reports whether path is an executable file. If nil, a
	// stat on the host: the sandbox sees the host's system directories.
	Executable func(path string) bool
	// Dirs are searched for bash and zsh when $SHELL is neither. If nil,
	// /bin, /usr/bin, /usr/local/bin, /opt/homebrew/bin.
	Dirs []string
}

// Detect picks the shell: Shell if set; else the user's $SHELL when it is
// bash or zsh; else the first bash or zsh found in Dirs, preferring the
// kind $SHELL names.
func (d Detector) Detect() (Provider, error) {
	getenv := d.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	exe := d.Executable
	if exe == nil {
		exe = isExecutable
	}
	if d.Shell != "" {
		p, ok := providerFor(d.Shell)
		if !ok {
			return nil, fmt.Errorf("shell %q is not bash or zsh", d.Shell)
		}
		if !filepath.IsAbs(d.Shell) || !exe(d.Shell) {
			return nil, fmt.Errorf("shell %q is not an executable absolute path", d.Shell)
		}
		return p, nil
	}
	user := getenv("SHELL")
	if p, ok := providerFor(user); ok && filepath.IsAbs(user) && exe(user) {
		return p, nil
	}
	order := []string{"bash", "zsh"}
	if strings.Contains(filepath.Base(user), "zsh") {
		order = []string{"zsh", "bash"}
	}
	dirs := d.Dirs
	if dirs == nil {
		dirs = []string{"/bin", "/usr/bin", "/usr/local/bin", "/opt/homebrew/bin"}
	}
	for _, name := range order {
		for _, dir := range dirs {
			path := filepath.Join(dir, name)
			if exe(path) {
				p, _ := providerFor(path)
				return p, nil
			}
		}
	}
	return nil, ErrNoShell
}

// providerFor maps a path to its provider by its base name.
func providerFor(path string) (Provider, bool) {
	switch filepath.Base(path) {
	case "bash":
		return Bash(path), true
	case "zsh":
		return Zsh(path), true
	}
	return nil, false
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

type bashShell struct{ path string }

func (b bashShell) Name() string                { return "bash" }
func (b bashShell) Path() string                { return b.path }
func (b bashShell) Variant() syntax.LangVariant { return syntax.LangBash }
func (b bashShell) DisableExtglob() string      { return "builtin shopt -u extglob 2>/dev/null || true" }
func (b bashShell) Argv(script string, login bool) []string {
	if login {
		return []string{b.path, "-l", "-c", script}
	}
	return []string{b.path, "-c", script}
}

type zshShell struct{ path string }

func (z zshShell) Name() string                { return "zsh" }
func (z zshShell) Path() string                { return z.path }
func (z zshShell) Variant() syntax.LangVariant { return syntax.LangZsh }
func (z zshShell) DisableExtglob() string {
	return "builtin setopt NO_EXTENDED_GLOB 2>/dev/null || true"
}
func (z zshShell) Argv(script string, login bool) []string {
	if login {
		return []string{z.path, "-l", "-c", script}
	}
	return []string{z.path, "-c", script}
}
