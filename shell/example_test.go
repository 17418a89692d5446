package shell_test

import (
	"context"
	"fmt"
	"log"

	"github.com/moat-sandbox/moat/shell"
)

// sandbox stands for the session sandbox's Runner: the processes it starts
// run inside one long-lived sandbox.
var sandbox shell.Runner

func ExampleSession() {
	s, err := shell.New(shell.Config{
		Runner: sandbox,
		Dir:    "/work/project",                // where the session starts, inside the sandbox
		Env:    []string{"PATH=/usr/bin:/bin"}, // already filtered of credentials
	})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()

	// The working directory and exported variables carry over.
	s.Run(ctx, shell.Request{Command: "cd src && export GOFLAGS=-mod=mod"})
	res, err := s.Run(ctx, shell.Request{Command: "grep -rn TODO ."})
	if err != nil {
		log.Fatal(err)
	}
	// grep found nothing: exit status 1, not an error.
	fmt.Println(res.ExitCode, res.IsError, res.Message, res.Cwd, res.Kind)

	// A long command, in the background.
	bg, _ := s.Run(ctx, shell.Request{Command: "go test ./...", Background: true})
	final, _ := s.Wait(ctx, bg.BackgroundID)
	fmt.Println(final.OutputFile != "", final.IsError)
}
