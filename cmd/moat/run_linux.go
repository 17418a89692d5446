//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/linux"
	"github.com/moat-sandbox/moat/linux/journal"
	"github.com/moat-sandbox/moat/runtime/policy"
)

func sandboxRun(ctx context.Context, pol *policy.Policy, argv []string, debug bool, stderr io.Writer, control *os.File) (*linux.Result, error) {
	var log *slog.Logger
	if debug {
		log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	spec := linux.Spec{
		Policy: pol,
		Argv:   argv,
		Stdin:  os.Stdin,
		Stdout: os.Stdout,
		Stderr: os.Stderr,
		Logger: log,
	}
	if control != nil {
		spec.Control = control
		spec.ControlName = "control fd " + strconv.Itoa(int(control.Fd()))
	}
	return linux.Run(ctx, spec)
}

// settingsCheck refuses a default settings file that a live sandbox could
// have written since it started: a sandboxed command must never widen a
// later run (when that run ends, its audit takes such a file out).
func settingsCheck() func(string) error {
	dir := filepath.Join(linux.DefaultStateDir(), "journal")
	return func(file string) error {
		ws := journal.LiveWriters(dir)
		if len(ws) == 0 {
			return nil
		}
		real := file
		if r, err := filepath.EvalSymlinks(file); err == nil {
			real = r
		}
		changed := func(w journal.Writer) bool {
			for _, p := range []string{file, filepath.Dir(file), real} {
				var st unix.Stat_t
				if unix.Lstat(p, &st) == nil && st.Ctim.Nano() >= w.Since.UnixNano() {
					return true
				}
			}
			return false
		}
		for _, w := range ws {
			if (w.Writes(file) || w.Writes(real)) && changed(w) {
				return fmt.Errorf("changed while a sandboxed command that can write it is running (moat run %s, started %s): moat does not load settings a sandbox could have written; when that run ends its audit takes the file out if it did", w.ID, w.Since.Format("15:04:05"))
			}
		}
		return nil
	}
}

// runError maps a launch failure to moat's exit codes.
func runError(err error) error {
	var xe *linux.ExecError
	if errors.As(err, &xe) {
		return &exitError{code: xe.ExitCode(), err: err}
	}
	return &exitError{code: exitMoatError, err: err}
}

func cleanPath(p string) string { return filepath.Clean(p) }

func describe(pol *policy.Policy) (*linux.Description, error) { return linux.Describe(pol, "") }

func printDescription(w io.Writer, d *linux.Description) {
	fmt.Fprintf(w, "\nenforcement on this machine (tier: %s):\n", d.Tier)
	for _, m := range d.Mechanisms {
		mark := "yes"
		if !m.Enforced {
			mark = "NO "
		}
		note := ""
		if m.Note != "" {
			note = " (" + m.Note + ")"
		}
		fmt.Fprintf(w, "  [%s] %s: %s%s\n", mark, m.Part, m.By, note)
	}
	if len(d.Protected) > 0 {
		fmt.Fprintf(w, "protected inside writable paths:\n")
		for _, p := range d.Protected {
			fmt.Fprintf(w, "  %s\n", p)
		}
	}
	if len(d.Placeholders) > 0 {
		fmt.Fprintf(w, "mount points a run creates (and removes): %s\n", strings.Join(d.Placeholders, ", "))
	}
	for _, n := range d.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

// controlFile checks --control-fd: a descriptor (3 or more) open for reading.
func controlFile(fd int) (*os.File, error) {
	if fd < 3 {
		return nil, usageError("--control-fd must be 3 or more (0-2 are the command's stdio), got %d", fd)
	}
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return nil, usageError("--control-fd %d is not an open descriptor: %v", fd, err)
	}
	if fl&unix.O_ACCMODE == unix.O_WRONLY {
		return nil, usageError("--control-fd %d is not open for reading", fd)
	}
	unix.CloseOnExec(fd)
	return os.NewFile(uintptr(fd), "control fd "+strconv.Itoa(fd)), nil
}
