package permissions_test

import (
	"fmt"

	"github.com/moat-sandbox/moat/permissions"
	"github.com/moat-sandbox/moat/runtime/policy"
)

func ExampleEngine_Decide() {
	e, err := permissions.New(policy.Permissions{
		Allow: []policy.Rule{{Rule: "Bash(npm run:*)"}},
		Deny:  []policy.Rule{{Rule: "Bash(git push:*)"}},
	}, permissions.Options{})
	if err != nil {
		panic(err)
	}
	for _, cmd := range []string{
		"npm run build && git status",
		"npm run build && rm -rf /",
		"FOO=1 timeout 5 git push --force",
		"cat README.md | grep -n install",
	} {
		r := e.Decide(permissions.Request{Command: cmd, Cwd: "/home/me/proj"})
		fmt.Printf("%-34s %s %q\n", cmd, r.Decision.Verdict, r.Warnings)
	}
	// Output:
	// npm run build && git status        allow []
	// npm run build && rm -rf /          ask ["Note: may recursively force-remove files"]
	// FOO=1 timeout 5 git push --force   deny ["Note: may overwrite remote history"]
	// cat README.md | grep -n install    allow []
}
