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
	"strings"

	"github.com/moat-sandbox/moat/linux"
	"github.com/moat-sandbox/moat/runtime/policy"
)

func sandboxRun(ctx context.Context, pol *policy.Policy, argv []string, debug bool, stderr io.Writer) (*linux.Result, error) {
	var log *slog.Logger
	if debug {
		log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return linux.Run(ctx, linux.Spec{
		Policy: pol,
		Argv:   argv,
		Stdin:  os.Stdin,
		Stdout: os.Stdout,
		Stderr: os.Stderr,
		Logger: log,
	})
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
