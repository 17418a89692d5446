//go:build !linux

package main

import (
	"context"
	"io"
	"os"
	"path/filepath"

	"github.com/moat-sandbox/moat/runtime/policy"
)

type runResult struct {
	Skipped    []string
	Warnings   []string
	ExitCode   int
	TimedOut   bool
	Violations []policy.Violation
}

func settingsCheck() func(string) error { return nil }

func sandboxRun(context.Context, *policy.Policy, []string, bool, io.Writer, *os.File) (*runResult, error) {
	return nil, errNoSandbox
}

func runError(err error) error { return &exitError{code: exitMoatError, err: err} }

func cleanPath(p string) string { return filepath.Clean(p) }

func describe(*policy.Policy) (any, error) { return nil, errNoSandbox }

func printDescription(io.Writer, any) {}

func controlFile(int) (*os.File, error) { return nil, errNoSandbox }
