// Command moat runs shell commands inside a kernel-enforced sandbox and
// decides, before that, whether an agent's command may run at all.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/moat-sandbox/moat/runtime"
)

// Exit codes of moat's own (as docker run uses them).
const (
	exitMoatError     = 125 // moat itself failed: bad usage, bad settings, setup failure
	exitNotExecutable = 126
	exitNotFound      = 127
)

// exitError carries an exit status out of a command.
type exitError struct {
	code int
	err  error // nil: exit silently with code
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageError marks a command-line mistake (exit 125).
func usageError(format string, a ...any) error {
	return &exitError{code: exitMoatError, err: fmt.Errorf(format, a...)}
}

// mainStarted is when main began (MOAT_TRACE's "main" phase).
var mainStarted time.Time

func main() {
	mainStarted = time.Now()
	processExits = true
	// A sandbox's init re-executes moat to clean up after a killed moat.
	if code, ok := runtime.Reexec(os.Args); ok {
		os.Exit(code)
	}
	os.Exit(run(srtArgs(os.Args[0], os.Args[1:]), os.Stdin, os.Stdout, os.Stderr))
}

// run executes the command line and returns the process exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runContext(context.Background(), args, stdin, stdout, stderr)
}

// runContext is run with a context: one that carries an invocation runs
// moat run for another process (moat serve, POST /v1/cli/run).
func runContext(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := newRootCmd(stdin, stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(stderr, "moat: %v\n", ee.err)
		}
		return ee.code
	}
	fmt.Fprintf(stderr, "moat: %v\n", err)
	return exitMoatError
}

func newRootCmd(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "moat",
		Short:         "A kernel-level sandbox for the shell commands AI agents run",
		SilenceUsage:  true,
		SilenceErrors: true,
		// --version: the module version and the VCS revision the build
		// recorded.
		Version: runtime.Version().String(),
	}
	root.SetVersionTemplate("{{.Version}}\n")
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return usageError("%v", err)
	})
	root.PersistentPreRun = func(cmd *cobra.Command, _ []string) {
		if runsSandboxes[cmd.Name()] {
			auditKilledRuns(stderr)
		}
	}
	for _, add := range subcommands {
		root.AddCommand(add())
	}
	return root
}

// subcommands are registered by the files that implement them (run.go,
// check.go, policy.go, ...), each in its own init function.
var subcommands []func() *cobra.Command
