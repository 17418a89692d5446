package permissions

import (
	"strings"
	"sync"
)

// argKind says what a flag takes.
type argKind uint8

const (
	argNone     argKind = iota
	argValue            // any value: -n 5, -n5, --lines=5, --lines 5
	argPath             // a value that is a file the command reads
	argWrite            // a value that is a file the command writes
	argOptional         // an optional value, attached only: --color, --color=auto
	argTwo              // two values: jq --arg NAME VALUE
)

// flagTable maps a flag as written ("-n", "--lines") to what it takes. A
// table is parsed from its description on first use: the package holds
// about 110 of them, and every moat process (moat run among them) would
// otherwise build them all before main.
type flagTable = *lazyFlags

type lazyFlags struct {
	once  sync.Once
	desc  string
	parts []flagTable
	m     map[string]argKind
}

// flags builds a table from a compact description: space-separated flags,
// each optionally followed by '=' (takes a value), '@' (takes a path read),
// '>' (takes a path written), '?' (optional attached value) or '%' (takes
// two values).
func flags(desc string) flagTable { return &lazyFlags{desc: desc} }

// merge returns a table holding the flags of all the tables.
func merge(ts ...flagTable) flagTable { return &lazyFlags{parts: ts} }

// table is the parsed table (nil for a nil table).
func (t *lazyFlags) table() map[string]argKind {
	if t == nil {
		return nil
	}
	t.once.Do(func() {
		m := map[string]argKind{}
		for _, p := range t.parts {
			for k, v := range p.table() {
				m[k] = v
			}
		}
		for _, f := range strings.Fields(t.desc) {
			k := argNone
			switch f[len(f)-1] {
			case '=':
				k = argValue
			case '@':
				k = argPath
			case '>':
				k = argWrite
			case '?':
				k = argOptional
			case '%':
				k = argTwo
			}
			if k != argNone {
				f = f[:len(f)-1]
			}
			m[f] = k
		}
		t.m = m
	})
	return t.m
}

// parsedArgs is a command's arguments sorted into flags and positionals.
type parsedArgs struct {
	flags []flagUse
	pos   []int // indexes into the argument list
}

type flagUse struct {
	name  string // as in the table: "-n", "--lines"
	value string
	kind  argKind
}

func (p *parsedArgs) has(names ...string) bool {
	for _, f := range p.flags {
		for _, n := range names {
			if f.name == n {
				return true
			}
		}
	}
	return false
}

func (p *parsedArgs) value(names ...string) (string, bool) {
	for _, f := range p.flags {
		for _, n := range names {
			if f.name == n {
				return f.value, true
			}
		}
	}
	return "", false
}

// flagOpts tune parseFlags for one command.
type flagOpts struct {
	numeric      bool // -5 means a count (head, tail, git log)
	noDoubleDash bool // "--" is an ordinary argument
	// valuesFollow: a short flag's value is never attached; each flag of
	// a bundle that takes one takes the next word in turn (tree -Lo 3
	// FILE is -L 3 -o FILE).
	valuesFollow bool
}

// parseFlags sorts args into flags and positionals with the strict rules of
// the read-only tables: a flag must be in the table exactly (abbreviated
// long options are refused), a bundle of short flags is read letter by
// letter and every letter must be known, and a letter that takes a value
// ends the bundle (the rest of the word, or the next word, is its value).
// It returns the offending word when a flag is not in the table.
func parseFlags(args []string, ft flagTable, o flagOpts) (parsedArgs, string, bool) {
	t := ft.table()
	var p parsedArgs
	for i := 0; i < len(args); i++ {
		w := args[i]
		switch {
		case w == "--" && !o.noDoubleDash:
			if p.pos == nil && i+1 < len(args) {
				p.pos = make([]int, 0, len(args)-i-1)
			}
			for j := i + 1; j < len(args); j++ {
				p.pos = append(p.pos, j)
			}
			return p, "", true
		case len(w) < 2 || w[0] != '-':
			if p.pos == nil {
				// One allocation for all the positionals to come.
				p.pos = make([]int, 0, len(args)-i)
			}
			p.pos = append(p.pos, i)
		case strings.HasPrefix(w, "--"):
			name, val, hasVal := strings.Cut(w, "=")
			k, ok := t[name]
			if !ok {
				return p, w, false
			}
			switch k {
			case argNone:
				if hasVal {
					return p, w, false
				}
			case argOptional:
			case argTwo:
				if hasVal || i+2 >= len(args) {
					return p, w, false
				}
				val = args[i+1] + "=" + args[i+2]
				i += 2
			default:
				if !hasVal {
					if i+1 >= len(args) {
						return p, w, false
					}
					i++
					val = args[i]
				}
			}
			p.flags = append(p.flags, flagUse{name: name, value: val, kind: k})
		case o.numeric && isDigits(w[1:]):
			p.flags = append(p.flags, flagUse{name: "-#", value: w[1:]})
		default:
			// a short flag or a bundle of them
			if k, ok := t[w]; ok && len(w) > 2 {
				// a long option with one dash (find -name, xxd -ps)
				if k == argNone || k == argOptional {
					p.flags = append(p.flags, flagUse{name: w, kind: k})
					continue
				}
				if i+1 >= len(args) {
					return p, w, false
				}
				i++
				p.flags = append(p.flags, flagUse{name: w, value: args[i], kind: k})
				continue
			}
			names := shortFlagNames.get()
			for j := 1; j < len(w); j++ {
				name := names[w[j]] // "-" + w[j:j+1]
				k, ok := t[name]
				if !ok {
					return p, w, false
				}
				if k == argNone {
					p.flags = append(p.flags, flagUse{name: name, kind: k})
					continue
				}
				if k == argOptional { // the rest of the word is its value (sed -i.bak)
					p.flags = append(p.flags, flagUse{name: name, value: w[j+1:], kind: k})
					break
				}
				if k == argTwo {
					return p, w, false
				}
				if o.valuesFollow {
					if i+1 >= len(args) {
						return p, w, false
					}
					i++
					p.flags = append(p.flags, flagUse{name: name, value: args[i], kind: k})
					continue
				}
				val := w[j+1:]
				if val == "" {
					if i+1 >= len(args) {
						return p, w, false
					}
					i++
					val = args[i]
				}
				p.flags = append(p.flags, flagUse{name: name, value: val, kind: k})
				break
			}
		}
	}
	return p, "", true
}

// shortFlagNames[c] is "-" followed by the byte c.
var shortFlagNames = lazy[*[256]string]{make: func() *[256]string {
	var t [256]string
	for c := range t {
		t[c] = "-" + string([]byte{byte(c)})
	}
	return &t
}}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
