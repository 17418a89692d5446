package runtime_test

import (
	"context"
	"fmt"
	"os"

	"github.com/moat-sandbox/moat/runtime"
	"github.com/moat-sandbox/moat/runtime/policy"
	"github.com/moat-sandbox/moat/runtime/settings"
)

// Run one command in a sandbox, with the policy the user's settings files
// give (as `moat run` does). A program that calls runtime.Run handles
// runtime.Reexec first thing in main.
func ExampleRun() {
	if code, ok := runtime.Reexec(os.Args); ok {
		os.Exit(code)
	}
	pol, _, err := settings.Load(settings.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := runtime.Run(context.Background(), runtime.Request{
		Policy: pol,
		Argv:   []string{"make", "test"},
		Stdout: os.Stdout,
		Stderr: os.Stderr,
		OnViolation: func(v policy.Violation) {
			fmt.Fprintln(os.Stderr, v.Line())
		},
	})
	if err != nil { // nothing ran
		fmt.Println(err)
		return
	}
	fmt.Println("exit status", res.ExitCode)
}
