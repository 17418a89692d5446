package sandbox_test

import (
	"context"
	"fmt"

	"github.com/moat-sandbox/moat/runtime/settings"
	"github.com/moat-sandbox/moat/shell"
	"github.com/moat-sandbox/moat/shell/sandbox"
)

// An agent host's shell in one call: the user's settings, moat's decision
// in front of each command (GateStrict runs only what the rules allow), the
// shell layer, the session sandbox under it. Decide asks without running.
func ExampleOpen() {
	pol, _, err := settings.Load(settings.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	sh, err := sandbox.Open(context.Background(), sandbox.Config{Policy: pol, Gate: sandbox.GateStrict})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sh.Close()
	ctx := context.Background()
	d := sh.Decide(ctx, "git push --force", "")
	fmt.Println(d.Decision.Final().Verdict, d.Warnings)
	res, err := sh.Session.Run(ctx, shell.Request{Command: "cd src && go test ./..."})
	if err != nil {
		fmt.Println(err)
		return
	}
	if res.Refused != nil { // ask or deny: the host asks its user
		fmt.Println("refused:", res.Refused.Reason)
		return
	}
	fmt.Println(res.ExitCode, res.Message, res.Cwd, len(res.Violations))
}
