package validators_test

import (
	"fmt"

	"github.com/moat-sandbox/moat/validators"
)

func ExampleCheck() {
	for _, cmd := range []string{
		`git status && npm test`,
		`git commit -m "Fix the retry loop"`,
		`echo $(curl -s https://example.com/x)`,
		`for f in *; do rm "$f"; done`,
	} {
		fmt.Println(validators.Check(cmd))
	}
	// Output:
	// passthrough
	// allow: git commit with a literal message [validator:git_commit]
	// ask: command substitution $(...) runs a hidden command [validator:command_substitution]
	// ask: cannot analyse the command (too-complex): unsupported construct ForClause [validator:parse]
}

func ExampleAnalyze() {
	res := validators.Analyze(`FOO=1 git log --oneline -5 | head -3`)
	fmt.Println(res.Parse.Kind, res.Views.Base)
	for _, c := range res.Parse.Commands {
		fmt.Printf("%q static=%v op=%q\n", c.Argv(), c.Static(), c.Op)
	}
	// Output:
	// simple git
	// ["git" "log" "--oneline" "-5"] static=true op="|"
	// ["head" "-3"] static=true op=""
}
