package main

import (
	"fmt"
	"io"

	"github.com/moat-sandbox/moat/runtime"
)

// runsSandboxes are the commands that start sandboxes as this user.
var runsSandboxes = map[string]bool{"run": true, "session": true, "shell": true, "srt": true, "serve": true, "mcp": true}

// auditKilledRuns makes the git audit that runs killed before their own
// (moat SIGKILLed) never made, before this command loads any settings, and
// says what it took out.
func auditKilledRuns(stderr io.Writer) {
	vs, warns := runtime.AuditDeadRuns("")
	for _, v := range vs {
		fmt.Fprintf(stderr, "moat: deny file-%s %s (%s)\n", v.Op, v.Target, v.Rule)
	}
	for _, w := range warns {
		fmt.Fprintf(stderr, "moat: warning: %s\n", w)
	}
}
