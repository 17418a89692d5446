package darwin

// A small reader of Seatbelt profiles, written for the tests and sharing
// no code with the generator: it parses a profile as s-expressions and
// answers what the profile decides for one operation on one object. It
// understands exactly the forms moat writes and refuses anything else, so
// a profile it accepts means what it says here.
//
// Seatbelt's precedence is documented nowhere. The npm sandbox runtime
// relies on "the last matching rule wins", and also found that a deny for
// one operation (file-write-unlink) is not undone by a later allow of a
// wildcard (file-write*). The reader therefore decides every question
// twice: by the last matching rule (lastMatch), and with rules that name
// the operation itself taking precedence over wildcard ones (specificFirst).
// A profile whose meaning depends on which is right is an error.

import (
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// sx is a parsed s-expression.
type sx struct {
	atom  string
	isStr bool
	list  []sx
	isLst bool
}

func (e sx) String() string {
	switch {
	case e.isLst:
		var parts []string
		for _, x := range e.list {
			parts = append(parts, x.String())
		}
		return "(" + strings.Join(parts, " ") + ")"
	case e.isStr:
		return strconv.Quote(e.atom)
	}
	return e.atom
}

// parseSBPL reads every top-level expression of src.
func parseSBPL(src string) ([]sx, error) {
	p := &sxParser{s: src}
	var out []sx
	for {
		p.space()
		if p.i >= len(p.s) {
			return out, nil
		}
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		out = append(out, e)
	}
}

type sxParser struct {
	s string
	i int
}

func (p *sxParser) errorf(format string, a ...any) error {
	line := 1 + strings.Count(p.s[:p.i], "\n")
	return fmt.Errorf("line %d: %s", line, fmt.Sprintf(format, a...))
}

// space skips blanks and ; comments.
func (p *sxParser) space() {
	for p.i < len(p.s) {
		switch c := p.s[p.i]; {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			p.i++
		case c == ';':
			for p.i < len(p.s) && p.s[p.i] != '\n' {
				p.i++
			}
		default:
			return
		}
	}
}

func (p *sxParser) expr() (sx, error) {
	p.space()
	if p.i >= len(p.s) {
		return sx{}, p.errorf("unexpected end")
	}
	switch c := p.s[p.i]; {
	case c == '(':
		p.i++
		e := sx{isLst: true, list: []sx{}}
		for {
			p.space()
			if p.i >= len(p.s) {
				return sx{}, p.errorf("unclosed list")
			}
			if p.s[p.i] == ')' {
				p.i++
				return e, nil
			}
			x, err := p.expr()
			if err != nil {
				return sx{}, err
			}
			e.list = append(e.list, x)
		}
	case c == ')':
		return sx{}, p.errorf("unexpected )")
	case c == '"':
		return p.str()
	case c == '#' && strings.HasPrefix(p.s[p.i:], `#"`):
		p.i += 2
		j := strings.IndexByte(p.s[p.i:], '"')
		if j < 0 {
			return sx{}, p.errorf("unterminated raw string")
		}
		v := p.s[p.i : p.i+j]
		p.i += j + 1
		return sx{atom: v, isStr: true}, nil
	default:
		j := p.i
		for j < len(p.s) && !strings.ContainsRune(" \t\r\n();\"", rune(p.s[j])) {
			j++
		}
		v := p.s[p.i:j]
		p.i = j
		return sx{atom: v}, nil
	}
}

// str reads a "..." literal: \\ and \" are the only escapes moat writes;
// the reader accepts \n and \t as TinyScheme does and refuses the rest.
func (p *sxParser) str() (sx, error) {
	p.i++
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			if b.Len() > maxLiteral {
				return sx{}, p.errorf("string literal of %d bytes: sandbox-exec refuses it", b.Len())
			}
			return sx{atom: b.String(), isStr: true}, nil
		case c == '\\':
			if p.i+1 >= len(p.s) {
				return sx{}, p.errorf("unterminated string")
			}
			switch e := p.s[p.i+1]; e {
			case '\\', '"':
				b.WriteByte(e)
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				return sx{}, p.errorf("unknown escape \\%c", e)
			}
			p.i += 2
		default:
			b.WriteByte(c)
			p.i++
		}
	}
	return sx{}, p.errorf("unterminated string")
}

// sbProfile is a parsed profile.
type sbProfile struct {
	rules   []sbRule
	deflt   bool // (allow default) / (deny default)
	message string
	params  map[string]string
	usedPar map[string]bool
}

type sbRule struct {
	allow   bool
	ops     []string
	filters []sx // any of them (none: everything)
	message string
	src     string
}

// readProfile parses src with parameter values params.
func readProfile(src string, params map[string]string) (*sbProfile, error) {
	es, err := parseSBPL(src)
	if err != nil {
		return nil, err
	}
	p := &sbProfile{params: params, usedPar: map[string]bool{}}
	if len(es) == 0 || es[0].String() != "(version 1)" {
		return nil, errors.New("the profile does not start with (version 1)")
	}
	sawDefault := false
	for _, e := range es[1:] {
		if !e.isLst || len(e.list) < 2 || (e.list[0].atom != "allow" && e.list[0].atom != "deny") {
			return nil, fmt.Errorf("not a rule: %s", e)
		}
		r := sbRule{allow: e.list[0].atom == "allow", src: e.String()}
		for _, x := range e.list[1:] {
			switch {
			case !x.isLst && !x.isStr:
				r.ops = append(r.ops, x.atom)
			case x.isLst && len(x.list) > 0 && x.list[0].atom == "with":
				if len(x.list) != 3 || x.list[1].atom != "message" {
					return nil, fmt.Errorf("unknown modifier %s", x)
				}
				s, err := p.str(x.list[2])
				if err != nil {
					return nil, err
				}
				r.message = s
			case x.isLst:
				if err := p.checkFilter(x); err != nil {
					return nil, fmt.Errorf("%s: %w", e, err)
				}
				r.filters = append(r.filters, x)
			default:
				return nil, fmt.Errorf("a bare string in %s", e)
			}
		}
		if len(r.ops) == 0 {
			return nil, fmt.Errorf("no operation in %s", e)
		}
		for _, op := range r.ops {
			if !knownOps[op] {
				return nil, fmt.Errorf("unknown operation %q", op)
			}
		}
		if len(r.ops) == 1 && r.ops[0] == "default" {
			if sawDefault || len(r.filters) > 0 {
				return nil, errors.New("a second or filtered default rule")
			}
			sawDefault, p.deflt, p.message = true, r.allow, r.message
			continue
		}
		p.rules = append(p.rules, r)
	}
	if !sawDefault {
		return nil, errors.New("no default rule")
	}
	for name := range params {
		if !p.usedPar[name] {
			return nil, fmt.Errorf("parameter %s is defined but never used", name)
		}
	}
	return p, nil
}

// knownOps are the operations moat may name.
var knownOps = map[string]bool{
	"default": true, "file-read*": true, "file-read-data": true, "file-read-metadata": true,
	"file-map-executable": true, "file-write*": true, "file-write-create": true, "file-write-unlink": true,
	"file-write-data": true, "file-write-flags": true, "file-write-setugid": true, "file-ioctl": true, "process-exec": true, "process-fork": true,
	"process-info*": true, "signal": true, "sysctl-read": true, "sysctl-write": true, "mach-lookup": true,
	"ipc-posix-sem": true, "ipc-posix-shm": true, "user-preference-read": true, "system-socket": true,
	"network-outbound": true, "network-inbound": true, "network-bind": true, "network*": true,
}

// str evaluates a string expression: a literal or (param "NAME").
func (p *sbProfile) str(e sx) (string, error) {
	switch {
	case e.isStr:
		return e.atom, nil
	case e.isLst && len(e.list) == 2 && e.list[0].atom == "param" && e.list[1].isStr:
		v, ok := p.params[e.list[1].atom]
		if !ok {
			return "", fmt.Errorf("undefined parameter %q", e.list[1].atom)
		}
		p.usedPar[e.list[1].atom] = true
		return v, nil
	}
	return "", fmt.Errorf("not a string expression: %s", e)
}

// checkFilter validates a filter once, so that matching cannot fail later.
func (p *sbProfile) checkFilter(f sx) error {
	if !f.isLst || len(f.list) == 0 {
		return fmt.Errorf("not a filter: %s", f)
	}
	head, args := f.list[0].atom, f.list[1:]
	one := func() (string, error) {
		if len(args) != 1 {
			return "", fmt.Errorf("%s wants one argument", head)
		}
		return p.str(args[0])
	}
	switch head {
	case "literal", "subpath", "path-literal":
		s, err := one()
		if err != nil {
			return err
		}
		if !strings.HasPrefix(s, "/") {
			return fmt.Errorf("%s %q is not absolute", head, s)
		}
	case "regex", "path-regex":
		s, err := one()
		if err != nil {
			return err
		}
		if _, err := compileSBRegex(s); err != nil {
			return err
		}
	case "global-name", "sysctl-name", "sysctl-name-prefix":
		if _, err := one(); err != nil {
			return err
		}
	case "require-all", "require-any":
		if len(args) == 0 {
			return fmt.Errorf("empty %s", head)
		}
		for _, a := range args {
			if err := p.checkFilter(a); err != nil {
				return err
			}
		}
	case "require-not":
		if len(args) != 1 {
			return errors.New("require-not wants one filter")
		}
		return p.checkFilter(args[0])
	case "vnode-type":
		if len(args) != 1 || args[0].atom != "DIRECTORY" {
			return fmt.Errorf("unknown %s", f)
		}
	case "target":
		if len(args) != 1 || args[0].atom != "same-sandbox" {
			return fmt.Errorf("unknown %s", f)
		}
	case "socket-domain":
		if len(args) != 1 || args[0].atom != "AF_UNIX" {
			return fmt.Errorf("unknown %s", f)
		}
	case "remote", "local":
		if len(args) != 2 {
			return fmt.Errorf("bad %s", f)
		}
		switch args[0].atom {
		case "ip", "ip4", "ip6", "tcp", "tcp4", "tcp6", "udp", "udp4", "udp6":
			s, err := p.str(args[1])
			if err != nil {
				return err
			}
			if _, _, err := splitHostPort(s); err != nil {
				return err
			}
		case "unix-socket":
			return p.checkFilter(args[1])
		default:
			return fmt.Errorf("unknown %s", f)
		}
	default:
		return fmt.Errorf("unknown filter %s", head)
	}
	return nil
}

func splitHostPort(s string) (string, string, error) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return "", "", fmt.Errorf("ip %q has no port", s)
	}
	host, port := s[:i], s[i+1:]
	if host != "localhost" && host != "*" {
		return "", "", fmt.Errorf("ip host %q: moat only names localhost or *", host)
	}
	if port != "*" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return "", "", fmt.Errorf("ip port %q", port)
		}
	}
	return host, port, nil
}

// sbRegexEscape is what may follow a backslash in moat's regexes: the
// metacharacters, and nothing else (no \d, \w, \b...).
const sbRegexEscape = `.[]\()*+?{}|^$`

// sbRegexes caches compileSBRegex (the reader asks every regex of a
// profile on every question).
var sbRegexes sync.Map

// compileSBRegex checks that a regex keeps to the dialect moat writes,
// then compiles it with Go's regexp, which reads that dialect the same way.
func compileSBRegex(s string) (*regexp.Regexp, error) {
	if re, ok := sbRegexes.Load(s); ok {
		return re.(*regexp.Regexp), nil
	}
	re, err := checkSBRegex(s)
	if err == nil {
		sbRegexes.Store(s, re)
	}
	return re, err
}

func checkSBRegex(s string) (*regexp.Regexp, error) {
	if !strings.HasPrefix(s, "^") || !strings.HasSuffix(s, "$") || strings.HasSuffix(s, `\$`) {
		return nil, fmt.Errorf("regex %q is not anchored at both ends", s)
	}
	inClass := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			if inClass {
				return nil, fmt.Errorf("regex %q: a backslash inside brackets", s)
			}
			if i+1 >= len(s) || !strings.ContainsRune(sbRegexEscape, rune(s[i+1])) {
				return nil, fmt.Errorf("regex %q: escape outside the dialect", s)
			}
			i++
		case inClass && c == ']':
			inClass = false
		case inClass && c == '[':
			return nil, fmt.Errorf("regex %q: [ inside brackets", s)
		case c == '[':
			inClass = true
		case c == '{':
			return nil, fmt.Errorf("regex %q: intervals are outside the dialect", s)
		case c == '(' && i+1 < len(s) && s[i+1] == '?':
			return nil, fmt.Errorf("regex %q: (? is outside the dialect", s)
		}
	}
	return regexp.Compile(s)
}

// sbQuery is one question: an operation on an object.
type sbQuery struct {
	op     string
	path   string // file operations, unix sockets
	isDir  bool
	host   string // network: an address or "localhost"
	port   int
	proto  string // network: "tcp" (also when "") or "udp"
	local  bool   // network-bind / network-inbound: the local address
	unix   bool
	name   string // mach-lookup, sysctl
	domain string // system-socket
	same   bool   // the target is in the same sandbox
}

func (p *sbProfile) matches(f sx, q sbQuery) bool {
	head, args := f.list[0].atom, f.list[1:]
	arg := func() string { s, _ := p.str(args[0]); return s }
	switch head {
	case "literal", "path-literal":
		return q.path != "" && q.path == arg()
	case "subpath":
		a := arg()
		return q.path != "" && (a == "/" || q.path == a || strings.HasPrefix(q.path, a+"/"))
	case "regex", "path-regex":
		re, _ := compileSBRegex(arg())
		return q.path != "" && re.MatchString(q.path)
	case "global-name":
		return q.op == "mach-lookup" && q.name == arg()
	case "sysctl-name":
		return strings.HasPrefix(q.op, "sysctl") && q.name == arg()
	case "sysctl-name-prefix":
		return strings.HasPrefix(q.op, "sysctl") && strings.HasPrefix(q.name, arg())
	case "require-all":
		for _, a := range args {
			if !p.matches(a, q) {
				return false
			}
		}
		return true
	case "require-any":
		for _, a := range args {
			if p.matches(a, q) {
				return true
			}
		}
		return false
	case "require-not":
		return !p.matches(args[0], q)
	case "vnode-type":
		return q.isDir
	case "target":
		return q.same
	case "socket-domain":
		return q.domain == args[0].atom
	case "remote", "local":
		if (head == "local") != q.local {
			return false
		}
		if args[0].atom == "unix-socket" {
			return q.unix && p.matches(args[1], q)
		}
		if q.unix || q.host == "" {
			return false
		}
		if !transportMatches(args[0].atom, q) {
			return false
		}
		host, port, _ := splitHostPort(arg2(p, args[1]))
		if host == "localhost" && !isLoopback(q.host) {
			return false
		}
		return port == "*" || port == strconv.Itoa(q.port)
	}
	panic("unchecked filter " + head)
}

func arg2(p *sbProfile, e sx) string { s, _ := p.str(e); return s }

// transportMatches reads a network filter's kind: ip (any protocol), tcp
// or udp, each with 4 or 6 for one address family. A v4-mapped IPv6
// address counts as IPv4: it reaches the IPv4 listener (whether Seatbelt
// sees it so is for the checklist in docs/MACOS.md).
func transportMatches(kind string, q sbQuery) bool {
	proto := q.proto
	if proto == "" {
		proto = "tcp"
	}
	family := ""
	if kind != "ip" && kind != "tcp" && kind != "udp" {
		family = kind[len(kind)-1:]
		kind = kind[:len(kind)-1]
	}
	if kind != "ip" && kind != proto {
		return false
	}
	if family == "" || q.host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(q.host)
	if err != nil {
		return false
	}
	if a.Unmap().Is4() {
		return family == "4"
	}
	return family == "6"
}

func isLoopback(h string) bool {
	if h == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(h)
	return err == nil && a.Unmap().IsLoopback()
}

// opMatches reports whether a rule operation covers op, and whether it
// names it (rather than through a wildcard).
func opMatches(ruleOp, op string) (match, specific bool) {
	if ruleOp == op {
		return true, true
	}
	if strings.HasSuffix(ruleOp, "*") && strings.HasPrefix(op, strings.TrimSuffix(ruleOp, "*")) {
		return true, false
	}
	return false, false
}

// decide answers q under both readings of precedence; they must agree.
func (p *sbProfile) decide(q sbQuery) (bool, error) {
	last, lastSpecific, lastWild := -1, -1, -1
	for i, r := range p.rules {
		m, spec := false, false
		for _, op := range r.ops {
			if ok, s := opMatches(op, q.op); ok {
				m, spec = true, spec || s
			}
		}
		if !m {
			continue
		}
		hit := len(r.filters) == 0
		for _, f := range r.filters {
			if p.matches(f, q) {
				hit = true
				break
			}
		}
		if !hit {
			continue
		}
		last = i
		if spec {
			lastSpecific = i
		} else {
			lastWild = i
		}
	}
	verdict := func(i int) bool {
		if i < 0 {
			return p.deflt
		}
		return p.rules[i].allow
	}
	a := verdict(last)
	b := verdict(lastWild)
	if lastSpecific >= 0 {
		b = verdict(lastSpecific)
	}
	if a != b {
		return false, fmt.Errorf("%s %s: the last matching rule says %v, the most specific operation says %v: the profile depends on Seatbelt's precedence", q.op, q.path, a, b)
	}
	return a, nil
}

// Questions a test asks.

func (p *sbProfile) readable(path string) (bool, error) {
	return p.decide(sbQuery{op: "file-read-data", path: path})
}

// writeOps are what "writable" means: every one allowed; "not writable":
// none allowed. The operations no path allows (neverOps) are not among
// them: forbidden checks them on every profile.
var writeOps = []string{"file-write-data", "file-write-create", "file-write-unlink", "file-write-mode",
	"file-write-xattr", "file-write-times", "file-write-owner"}

// neverOps are write operations no moat profile allows on any path.
var neverOps = []string{"file-write-flags", "file-write-setugid"}

// writable is true when every write operation is allowed at path, false
// when none is; a mix is an error unless mixed is allowed.
func (p *sbProfile) writable(path string) (bool, error) {
	n := 0
	for _, op := range writeOps {
		ok, err := p.decide(sbQuery{op: op, path: path})
		if err != nil {
			return false, err
		}
		if ok {
			n++
		}
	}
	switch n {
	case 0:
		return false, nil
	case len(writeOps):
		return true, nil
	}
	return false, fmt.Errorf("%s: %d of %d write operations allowed", path, n, len(writeOps))
}

// movable reports whether path can be renamed away or removed.
func (p *sbProfile) movable(path string) (bool, error) {
	return p.decide(sbQuery{op: "file-write-unlink", path: path})
}

// reachable reports whether the command may connect to host:port.
func (p *sbProfile) reachable(host string, port int) (bool, error) {
	return p.decide(sbQuery{op: "network-outbound", host: host, port: port})
}

func (p *sbProfile) unixConnect(path string) (bool, error) {
	return p.decide(sbQuery{op: "network-outbound", unix: true, path: path})
}

func (p *sbProfile) bind(host string, port int) (bool, error) {
	return p.decide(sbQuery{op: "network-bind", local: true, host: host, port: port})
}
