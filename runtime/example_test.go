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

// Open one session sandbox and run several commands in it: each is a new
// process tree in the same sandbox (set up once), with its own exit status
// and violations.
func ExampleNewSession() {
	pol, _, err := settings.Load(settings.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	s, err := runtime.NewSession(context.Background(), runtime.SessionRequest{Policy: pol})
	if err != nil { // typed: errors.Is(err, enforce.ErrNoUserNamespace), ...
		fmt.Println(err)
		return
	}
	defer s.Close()
	for _, argv := range [][]string{{"git", "status"}, {"make", "test"}} {
		res, err := s.Run(context.Background(), runtime.Command{Argv: argv, Stdout: os.Stdout, Stderr: os.Stderr})
		if err != nil {
			fmt.Println(err)
			continue
		}
		for _, v := range res.Violations {
			fmt.Println(v.Line())
		}
		fmt.Println(argv[0], "exit status", res.ExitCode)
	}
}

// Change the network lists while the command runs (what --control-fd
// does): every new connection is checked against the latest lists, never
// beyond what managed settings allow.
func ExampleRequest_updates() {
	pol, _, err := settings.Load(settings.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	updates := make(chan policy.Network, 1)
	go func() {
		// Later, the user allows the registry.
		n := pol.Net
		n.AllowedDomains = append(n.AllowedDomains, policy.DomainRule{Pattern: "registry.npmjs.org"})
		updates <- n
	}()
	res, err := runtime.Run(context.Background(), runtime.Request{
		Policy:       pol,
		Argv:         []string{"npm", "install"},
		Updates:      updates,
		UpdateErrors: func(err error) { fmt.Println("update refused:", err) },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("exit status", res.ExitCode)
}
