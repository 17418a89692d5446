package shell

import (
	"fmt"
	"path"

	"mvdan.cc/sh/v3/syntax"
)

// Interpretation is what an exit status means for a command.
type Interpretation struct {
	// IsError is the verdict: did the command fail?
	IsError bool
	// Message is a note for the agent ("No matches found"), or "".
	Message string
}

// The seeds' notes for the exit statuses that are not errors.
const (
	MsgNoMatches   = "No matches found"
	MsgFilesDiffer = "Files differ"
	MsgFindPartial = "Some directories were inaccessible"
	MsgFalse       = "Condition is false"
)

// Interpret reads an exit status the way the seeds' commandSemantics
// does, by the last command of the pipeline or list (whose status is the
// line's): grep and rg 1 = no matches, diff 1 = the files differ, find 1 =
// some directories were inaccessible, test, [ and [[ 1 = false; for those,
// 2 and above are errors. Any other command fails with any non-zero
// status.
func Interpret(command string, code int, v syntax.LangVariant) Interpretation {
	if code == 0 {
		return Interpretation{}
	}
	fail := Interpretation{IsError: true, Message: fmt.Sprintf("Command failed with exit code %d", code)}
	if code != 1 {
		return fail
	}
	switch LastCommand(command, v) {
	case "grep", "rg":
		return Interpretation{Message: MsgNoMatches}
	case "diff":
		return Interpretation{Message: MsgFilesDiffer}
	case "find":
		return Interpretation{Message: MsgFindPartial}
	case "test", "[", "[[":
		return Interpretation{Message: MsgFalse}
	}
	return fail
}

// LastCommand returns the name of the command whose exit status is the
// line's: the last command of the last pipeline or list, through
// subshells, blocks and "time", and past "command", "builtin" and "exec".
// It returns "" when that is not a plain command with a literal name (a
// negated pipeline, a loop, a background job, a line that does not
// parse).
func LastCommand(command string, v syntax.LangVariant) string {
	f, err := parseCommand(command, v)
	if err != nil || len(f.Stmts) == 0 {
		return ""
	}
	return lastOf(f.Stmts[len(f.Stmts)-1], 0)
}

func lastOf(st *syntax.Stmt, depth int) string {
	if st == nil || st.Negated || st.Background || st.Coprocess || depth > 64 {
		return ""
	}
	switch c := st.Cmd.(type) {
	case *syntax.BinaryCmd:
		return lastOf(c.Y, depth+1)
	case *syntax.Subshell:
		if len(c.Stmts) > 0 {
			return lastOf(c.Stmts[len(c.Stmts)-1], depth+1)
		}
	case *syntax.Block:
		if len(c.Stmts) > 0 {
			return lastOf(c.Stmts[len(c.Stmts)-1], depth+1)
		}
	case *syntax.TimeClause:
		return lastOf(c.Stmt, depth+1)
	case *syntax.TestClause:
		return "[["
	case *syntax.CallExpr:
		args := c.Args
		for len(args) > 0 {
			name := literal(args[0])
			switch name {
			case "command", "builtin", "exec":
				args = args[1:]
				if len(args) > 0 && literal(args[0]) == "--" {
					args = args[1:]
				}
				continue
			case "":
				return ""
			}
			if name == "[" {
				return name
			}
			return path.Base(name)
		}
	}
	return ""
}

// literal returns the word's text when it has no expansion, else "".
func literal(w *syntax.Word) string {
	s, _ := wordValue(w)
	return s
}
