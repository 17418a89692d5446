package sandbox_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/moat-sandbox/moat/runtime/settings"
	"github.com/moat-sandbox/moat/shell"
	"github.com/moat-sandbox/moat/shell/sandbox"
)

// An agent host's shell in one call: the user's settings, moat's decision
// in front of each command (GateStrict runs only what the rules allow), the
// shell layer, the session sandbox under it. Decide asks without running.
//
// The example reads no settings file (a host passes settings.Options{} for
// the user's chain) and works under /var/tmp: the host's /tmp is private
// inside the sandbox.
func ExampleOpen() {
	dir, err := os.MkdirTemp("/var/tmp", "moat-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	work := filepath.Join(dir, "work")
	os.Mkdir(work, 0o755)
	pol, _, err := settings.Load(settings.Options{Cwd: work, Home: dir, NoDefaults: true, ManagedFile: "-"})
	if err != nil {
		fmt.Println(err)
		return
	}
	sh, err := sandbox.Open(context.Background(), sandbox.Config{
		Policy:   pol,
		Gate:     sandbox.GateStrict,
		Env:      []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=" + dir, "LANG=C"}, // nil: this process's
		StateDir: filepath.Join(dir, "state"),                                            // "": runtime.DefaultStateDir()
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer sh.Close()
	ctx := context.Background()
	d := sh.Decide(ctx, "git push --force", "")
	fmt.Println(d.Decision.Final().Verdict, d.Warnings)
	for _, command := range []string{"echo hello", "grep -rn TODO .", "sh -c 'exit 3'"} {
		res, err := sh.Session.Run(ctx, shell.Request{Command: command})
		if err != nil {
			fmt.Println(err)
			return
		}
		if res.Refused != nil { // ask or deny: the host asks its user, showing res.Refused.Reason
			fmt.Printf("%s: refused (%s)\n", command, res.Refused.Verdict)
			continue
		}
		// Exit codes are interpreted: grep's 1 is no error.
		fmt.Printf("%s: exit %d, error %v %q, output %q\n", command, res.ExitCode, res.IsError, res.Message, res.Output)
	}
	// Output:
	// ask [Note: may overwrite remote history]
	// echo hello: exit 0, error false "", output "hello\n"
	// grep -rn TODO .: exit 1, error false "No matches found", output ""
	// sh -c 'exit 3': refused (ask)
}
