//go:build linux

package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"

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
