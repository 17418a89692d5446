package validators

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// cmdRef is one flattened command with its syntax nodes.
type cmdRef struct {
	sc  *SimpleCommand
	ast *callAST
	// exec is execArgs(sc.Args), computed once for the validators that
	// look for the program that finally runs.
	exec []Word
}

// commands returns the flattened commands (only for a Simple parse). The
// slice is built once per parse and shared: callers must not change it.
func (ctx *Context) commands() []cmdRef {
	p := ctx.p
	cmds := p.result.Commands
	if len(p.refs) != len(cmds) {
		p.refs = p.refs[:0]
		for i := range cmds {
			p.refs = append(p.refs, cmdRef{&cmds[i], &p.calls[i], execArgs(cmds[i].Args)})
		}
	}
	return p.refs
}

func baseName(s string) string {
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// wrapper describes a command that runs another command given as its
// arguments: which of its options take a value, and how many positional
// arguments come before the command.
type wrapper struct {
	valueOpts  string // space-separated options that take a separate value
	positional int    // positional arguments before the command (timeout's duration)
	assigns    bool   // NAME=value arguments may come first (env)
}

var wrappers = map[string]wrapper{
	"env":       {valueOpts: "-u --unset -C --chdir -S --split-string", assigns: true},
	"timeout":   {valueOpts: "-k --kill-after -s --signal", positional: 1},
	"nice":      {valueOpts: "-n --adjustment"},
	"nohup":     {},
	"time":      {valueOpts: "-o --output -f --format"},
	"stdbuf":    {valueOpts: "-i -o -e --input --output --error"},
	"sudo":      {valueOpts: "-u --user -g --group -C --close-from -D --chdir -h --host -p --prompt -r --role -t --type -T --command-timeout -U --other-user", assigns: true},
	"doas":      {valueOpts: "-u -C"},
	"command":   {},
	"builtin":   {},
	"exec":      {valueOpts: "-a"},
	"xargs":     {valueOpts: "-a --arg-file -d --delimiter -E -e -I -i -L -l -n --max-args -P --max-procs -s --max-chars"},
	"ionice":    {valueOpts: "-c --class -n --classdata -p --pid -P --pgid -u --uid"},
	"nocorrect": {},
	"noglob":    {},
	"chronic":   {},
	"unbuffer":  {},
}

var wrapperKeys = newKeyFilter(wrappers)

// execArgs strips wrappers (env, timeout, nice, nohup, sudo, xargs, ...)
// and returns the words of the command that finally runs. It is a best
// effort used to find the real program (jq, a shell); it never hides a
// word from the checks that look at every word.
func execArgs(args []Word) []Word {
	var buf [8]int
	starts := appendProgramStarts(buf[:0], args)
	last := starts[len(starts)-1]
	if last >= len(args) {
		return nil
	}
	return args[last:]
}

// appendProgramStarts appends to starts the index of every program along
// a chain of wrappers: 0, then what each wrapper runs. The last index may
// be len(args) when a wrapper has no command.
func appendProgramStarts(starts []int, args []Word) []int {
	starts = append(starts, 0)
	pos := 0
	for pos < len(args) {
		name := baseName(args[pos].Value)
		if !wrapperKeys.mayHave(name) {
			break
		}
		w, ok := wrappers[name]
		if !ok {
			break
		}
		i := pos + 1
		for i < len(args) {
			a := args[i].Value
			if a == "--" {
				i++
				break
			}
			if len(a) < 2 || a[0] != '-' {
				break
			}
			if !strings.Contains(a, "=") && containsField(w.valueOpts, a) {
				i += 2
			} else {
				i++
			}
		}
		if w.assigns {
			for i < len(args) && isAssignWord(args[i].Value) {
				i++
			}
		}
		i += w.positional
		if i > len(args) {
			i = len(args)
		}
		pos = i
		starts = append(starts, pos)
	}
	return starts
}

// containsField reports whether the space-separated list holds s.
func containsField(list, s string) bool {
	for len(list) > 0 {
		f := list
		if i := strings.IndexByte(list, ' '); i >= 0 {
			f, list = list[:i], list[i+1:]
		} else {
			list = ""
		}
		if f == s {
			return true
		}
	}
	return false
}

// keyFilter quickly rejects most strings that are not keys of a set of
// names: a key has one of the set's lengths and first bytes. It never
// rejects a key, so "f.mayHave(s) && m[s]" is m[s] without the map lookup
// for most words (paths, flags, values).
type keyFilter struct {
	lens  uint64 // bit n: a key of length n (n < 64)
	long  bool   // a key of 64 bytes or more
	empty bool   // the empty key
	first [256]bool
	last  [256]bool
}

func newKeyFilter[V any](m map[string]V) *keyFilter {
	f := &keyFilter{}
	for k := range m {
		switch {
		case k == "":
			f.empty = true
			continue
		case len(k) >= 64:
			f.long = true
		default:
			f.lens |= 1 << len(k)
		}
		f.first[k[0]] = true
		f.last[k[len(k)-1]] = true
	}
	return f
}

// mayHaveBase is mayHave(baseName(s)), rejecting most strings on their
// last byte (which is the base name's) before looking for a '/'.
func (f *keyFilter) mayHaveBase(s string) bool {
	if f.empty || f.long {
		return f.mayHave(baseName(s))
	}
	n := len(s)
	if n == 0 || !f.last[s[n-1]] {
		return false // no key ends so (nor is empty)
	}
	// Keys are shorter than 64 bytes: the base name is only worth finding
	// among the last 64 bytes (a long commit message is not scanned).
	start := max(0, n-64)
	base := s[start:]
	if i := strings.LastIndexByte(base, '/'); i >= 0 {
		base = base[i+1:]
	} else if start > 0 {
		return false // a base name of 64 bytes or more
	}
	return f.mayHave(base)
}

func (f *keyFilter) mayHave(s string) bool {
	switch {
	case s == "":
		return f.empty
	case len(s) >= 64:
		return f.long && f.first[s[0]]
	}
	return f.lens&(1<<len(s)) != 0 && f.first[s[0]]
}

// isShellBase is shellNames[baseName(s)].
func isShellBase(s string) bool { return shellNameKeys.mayHaveBase(s) && shellNames[baseName(s)] }

var shellNameKeys = newKeyFilter(shellNames)

// shellNames are programs that run their argument as shell code.
var shellNames = map[string]bool{
	"sh": true, "bash": true, "zsh": true, "dash": true, "ksh": true, "mksh": true,
	"ash": true, "fish": true, "csh": true, "tcsh": true, "yash": true, "busybox": true,
}

// litParts calls fn for each unquoted literal part of w, with the offset of
// the part within the word's source (0 for the first part).
func litParts(w *syntax.Word, fn func(l *syntax.Lit, first bool)) {
	for i, part := range w.Parts {
		if l, ok := part.(*syntax.Lit); ok {
			fn(l, i == 0)
		}
	}
}
