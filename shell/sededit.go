package shell

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/moat-sandbox/moat/permissions"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// MaxEditBytes is the largest file PreviewEdit reads.
const MaxEditBytes = 1 << 20

// ErrEditTooLarge is returned by PreviewEdit for a file larger than
// MaxEditBytes.
var ErrEditTooLarge = errors.New("shell: the file is too large to preview")

// FileEdit is "sed -i 's/old/new/flags' FILE" read as a file edit (the
// seeds show it as one, with a diff, in the permission dialog).
type FileEdit struct {
	// Edit is the substitution as permissions parsed it.
	Edit permissions.SedEdit `json:"edit"`
	// Path is the file inside the sandbox, made absolute with the
	// session's working directory.
	Path string `json:"path"`
	// Old and New are the file before and after the edit.
	Old string `json:"old"`
	New string `json:"new"`
	// Diff is the unified diff from Old to New ("" when nothing changes).
	Diff string `json:"diff"`
}

// PreviewEdit recognises "sed -i 's/old/new/' FILE" with the permissions
// parser and computes the edit it would make, without making it: the file
// is read, and the same substitution run without -i, inside the sandbox
// through the Runner (the host never opens the file: it could be a link to
// a secret). It returns nil and no error when the command is not such an
// edit. Running the command (Run) then makes the edit.
func (s *Session) PreviewEdit(ctx context.Context, command string) (*FileEdit, error) {
	cwd := s.Cwd()
	dec := s.engine.DecideContext(ctx, permissions.Request{Command: command, Cwd: cwd})
	if dec.SedEdit == nil {
		return nil, nil
	}
	e := *dec.SedEdit
	script, ok := sedScriptFor(e)
	if !ok {
		return nil, fmt.Errorf("shell: cannot rebuild the sed script of %q", command)
	}
	fe := &FileEdit{Edit: e, Path: e.File}
	if !path.IsAbs(fe.Path) {
		fe.Path = path.Join(cwd, fe.Path)
	}
	// The preview shows the file: only one the rules let a command read
	// without asking (a preview of a file outside the working directory
	// showed what "cat" of it was asked for: found by an attack pass).
	if rd := s.engine.DecideContext(ctx, permissions.Request{Command: "cat -- " + shellQuote(e.File), Cwd: cwd}); rd.Decision.Final().Verdict != policy.Allow {
		return nil, fmt.Errorf("shell: the preview would read %s, which the rules do not let a command read without asking", e.File)
	}
	// A preview is quick, and of a regular file: a FIFO or /dev/zero held
	// the session's request loop (found by the same pass).
	ctx, cancel := context.WithTimeout(ctx, previewTimeout)
	defer cancel()
	old, err := s.helper(ctx, cwd, `[ -f "$1" ] || { echo "not a regular file" >&2; exit 3; }; command cat -- "$1"`, e.File)
	if err != nil {
		return nil, err
	}
	flags := ""
	if e.Extended {
		flags = "-E "
	}
	new, err := s.helper(ctx, cwd, `command sed `+flags+`-e "$2" -- "$1"`, e.File, script)
	if err != nil {
		return nil, err
	}
	fe.Old, fe.New = old, new
	fe.Diff = UnifiedDiff(e.File, old, new)
	return fe, nil
}

// previewTimeout bounds the two helpers of a preview.
const previewTimeout = 10 * time.Second

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// sedScriptFor writes the substitution back as a sed script, with a
// delimiter that appears in neither the pattern nor the replacement (the
// parser has removed the escapes of the original one).
func sedScriptFor(e permissions.SedEdit) (string, bool) {
	for _, d := range "/|#,:@%!~^+=;_" {
		if !strings.ContainsRune(e.Pattern, d) && !strings.ContainsRune(e.Replacement, d) {
			ds := string(d)
			return "s" + ds + e.Pattern + ds + e.Replacement + ds + e.Flags, true
		}
	}
	return "", false
}

// helper runs a small script (not an agent's command) in the sandbox, in
// dir, with args as its positional parameters, and returns its output,
// which must be at most MaxEditBytes.
func (s *Session) helper(ctx context.Context, dir, script string, args ...string) (string, error) {
	out := &capBuffer{max: MaxEditBytes}
	argv := append([]string{s.shell.Path(), "-c", script, "moat-preview"}, args...)
	p, err := s.cfg.Runner.Start(ctx, Proc{Argv: argv, Env: s.procEnv(), Dir: dir, Output: out, Report: &capBuffer{}})
	if err != nil {
		return "", fmt.Errorf("shell: start: %w", err)
	}
	done := make(chan struct{})
	var ex Exit
	go func() { ex, err = p.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		p.Kill()
		<-done
		return "", ctx.Err()
	}
	if err != nil {
		return "", err
	}
	b, over := out.bytes()
	if over {
		return "", ErrEditTooLarge
	}
	if ex.Code != 0 {
		return "", fmt.Errorf("shell: preview failed (exit status %d): %s", ex.Code, strings.TrimSpace(string(b)))
	}
	return string(b), nil
}
