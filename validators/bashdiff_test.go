package validators

// The differential test: for every command ParseForSecurity calls Simple
// and whose words it can predict, real bash must run exactly the commands,
// with exactly the argv (and the here-document stdin) that the parse says.
//
// The test binary doubles as the stub program: bash runs with a PATH that
// holds only symlinks to it under many names, and an environment variable
// that makes TestMain record its argv and stdin instead of running tests.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"mvdan.cc/sh/v3/syntax"
)

const stubEnv = "MOAT_ARGV_STUB_OUT"

func TestMain(m *testing.M) {
	if out := os.Getenv(stubEnv); out != "" {
		os.Exit(runStub(out))
	}
	code := m.Run()
	if stubs.dir != "" {
		os.RemoveAll(stubs.dir)
	}
	os.Exit(code)
}

// runStub is the stub program. As "cat" it copies stdin to stdout (so that
// $(cat <<'EOF' ...) works) without recording; under any other name it
// appends one record (argv and stdin) to the file named by stubEnv.
func runStub(out string) int {
	name := filepath.Base(os.Args[0])
	if name == "cat" {
		io.Copy(os.Stdout, os.Stdin)
		return 0
	}
	in, _ := io.ReadAll(io.LimitReader(os.Stdin, 1<<20))
	args := append([]string{name}, os.Args[1:]...)
	var rec []byte
	rec = binary.AppendUvarint(rec, uint64(len(args)))
	for _, a := range args {
		rec = binary.AppendUvarint(rec, uint64(len(a)))
		rec = append(rec, a...)
	}
	rec = binary.AppendUvarint(rec, uint64(len(in)))
	rec = append(rec, in...)
	var frame []byte
	frame = binary.AppendUvarint(frame, uint64(len(rec)))
	frame = append(frame, rec...)
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return 99
	}
	defer f.Close()
	if _, err := f.Write(frame); err != nil {
		return 99
	}
	return 0
}

// stubNames are the commands the stub answers to: short names that fuzzing
// finds easily and the programs agents run most.
var stubNames = []string{
	"a", "b", "c", "d", "e", "f", "g", "h", "x", "y", "z",
	"git", "ls", "jq", "npm", "grep", "find", "rm", "curl", "python3", "node",
	"make", "go", "sed", "awk", "head", "tail", "wc", "sort", "xargs", "env",
	"timeout", "nice", "nohup", "sh", "zsh", "ssh", "tee", "mkdir", "cp", "mv",
	"touch", "chmod", "npx", "cargo", "docker", "kubectl", "rg", "diff", "tr",
	"cut", "uniq", "yarn", "pip", "pytest", "EOF", "cat",
}

var stubs struct {
	once     sync.Once
	dir      string // holds bin/ (the PATH) and one work dir per run
	bin      string
	bash     string
	builtins map[string]bool
	err      error
}

// bashStubs sets the stub directory up once, or skips the test.
func bashStubs(t testing.TB) {
	t.Helper()
	if raceEnabled {
		t.Skip("bash differential tests are skipped under -race: each stub start is a race-instrumented binary (they test parsing, not concurrency)")
	}
	stubs.once.Do(func() {
		stubs.bash, stubs.err = exec.LookPath("bash")
		if stubs.err != nil {
			return
		}
		self, err := os.Executable()
		if err != nil {
			stubs.err = err
			return
		}
		stubs.dir, stubs.err = os.MkdirTemp("", "moat-bashdiff-")
		if stubs.err != nil {
			return
		}
		stubs.bin = filepath.Join(stubs.dir, "bin")
		if stubs.err = os.Mkdir(stubs.bin, 0o755); stubs.err != nil {
			return
		}
		for _, n := range stubNames {
			if stubs.err = os.Symlink(self, filepath.Join(stubs.bin, n)); stubs.err != nil {
				return
			}
		}
		out, err := exec.Command(stubs.bash, "-c", "compgen -b; compgen -k").Output()
		if err != nil {
			stubs.err = err
			return
		}
		stubs.builtins = map[string]bool{}
		for _, n := range strings.Fields(string(out)) {
			stubs.builtins[n] = true
		}
	})
	if stubs.err != nil {
		if os.Getenv("MOAT_REQUIRE_BASH") != "" {
			t.Fatalf("bash differential test unavailable: %v", stubs.err)
		}
		t.Skipf("bash differential test unavailable: %v", stubs.err)
	}
}

// record is one stub invocation.
type record struct {
	argv  []string
	stdin string
	// anyStdin: the model cannot predict stdin; do not compare it.
	anyStdin bool
}

func (r record) key() string { return strings.Join(r.argv, "\x00") }

func (r record) String() string {
	if r.anyStdin {
		return fmt.Sprintf("%q", r.argv)
	}
	return fmt.Sprintf("%q <%q", r.argv, r.stdin)
}

// runBash runs cmd with bash -c under the stubs and returns the records.
func runBash(t testing.TB, cmd string) ([]record, string) {
	t.Helper()
	work, err := os.MkdirTemp(stubs.dir, "run-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(work)
	out := filepath.Join(work, ".records")
	if err := os.WriteFile(out, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, stubs.bash, "-c", "--", cmd)
	c.Dir = work
	c.Env = []string{"PATH=" + stubs.bin, stubEnv + "=" + out, "HOME=" + work, "LC_ALL=C.UTF-8"}
	var stderr bytes.Buffer
	c.Stderr = &stderr
	// Every process bash starts inherits the pipe's write end as fd 3; the
	// read end reaches EOF when the last of them (background jobs too) exits.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	c.ExtraFiles = []*os.File{pw}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	done := make(chan struct{})
	go func() { io.Copy(io.Discard, pr); close(done) }()
	c.Wait()
	select {
	case <-done:
	case <-ctx.Done():
	}
	pr.Close()
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := decodeRecords(data)
	if err != nil {
		t.Fatalf("decoding stub records: %v", err)
	}
	return recs, stderr.String()
}

func decodeRecords(data []byte) ([]record, error) {
	var recs []record
	next := func() (uint64, error) {
		v, n := binary.Uvarint(data)
		if n <= 0 {
			return 0, errors.New("bad varint")
		}
		data = data[n:]
		return v, nil
	}
	bytesN := func(n uint64) ([]byte, error) {
		if uint64(len(data)) < n {
			return nil, errors.New("short record")
		}
		b := data[:n]
		data = data[n:]
		return b, nil
	}
	for len(data) > 0 {
		size, err := next()
		if err != nil {
			return nil, err
		}
		rest, err := bytesN(size)
		if err != nil {
			return nil, err
		}
		saved := data
		data = rest
		n, err := next()
		if err != nil {
			return nil, err
		}
		var r record
		for i := uint64(0); i < n; i++ {
			l, err := next()
			if err != nil {
				return nil, err
			}
			b, err := bytesN(l)
			if err != nil {
				return nil, err
			}
			r.argv = append(r.argv, string(b))
		}
		l, err := next()
		if err != nil {
			return nil, err
		}
		b, err := bytesN(l)
		if err != nil {
			return nil, err
		}
		r.stdin = string(b)
		recs = append(recs, r)
		data = saved
	}
	return recs, nil
}

// prediction is what the parse says bash will run.
type prediction struct {
	records []record
}

var safeRedirTarget = regexp.MustCompile(`^[A-Za-z0-9._][A-Za-z0-9._-]*$`)

// predict computes, from the parse alone, the stub records bash should
// produce, or reports why the command is outside what the model covers.
func predict(p *parsed) (prediction, string) {
	cmds := p.result.Commands
	type run struct {
		argv     []string
		stub     bool // recorded
		status   int
		stdin    string
		known    bool // stdin predicted
		out      string
		outKnown bool
	}
	assigned := map[string]bool{}
	for _, a := range p.facts.assigns {
		if a.Name != nil {
			assigned[a.Name.Value] = true
		}
	}
	runs := make([]run, len(cmds))
	for i, sc := range cmds {
		ast := p.calls[i]
		var argv []string
		for j, w := range ast.args {
			if w == nil {
				return prediction{}, "declaration builtin"
			}
			vals, ok := predictWord(p, w, sc.Args[j], assigned)
			if !ok {
				return prediction{}, "unpredictable word " + sc.Args[j].Raw
			}
			argv = append(argv, vals...)
		}
		for _, a := range sc.Assigns {
			if !isLowerName(a.Name) || !a.Value.Static {
				return prediction{}, "assignment " + a.Name
			}
		}
		r := run{argv: argv, known: true}
		for _, rd := range sc.Redirects {
			switch {
			case isHeredocOp(rd.Op) && (rd.Fd == "" || rd.Fd == "0"):
				body, ok := predictBody(p, ast.redirs, rd, assigned)
				if !ok {
					return prediction{}, "dynamic heredoc"
				}
				r.stdin = body
			case rd.Op == ">" || rd.Op == ">>" || rd.Op == ">|" || rd.Op == "&>" || rd.Op == "&>>":
				if rd.Fd != "" && rd.Fd != "1" && rd.Fd != "2" {
					return prediction{}, "redirect fd " + rd.Fd
				}
				if !rd.Target.Static || (!safeRedirTarget.MatchString(rd.Target.Value) && rd.Target.Value != "/dev/null") {
					return prediction{}, "redirect target " + rd.Target.Raw
				}
			case rd.Op == ">&":
				if (rd.Fd != "" && rd.Fd != "1" && rd.Fd != "2") || (rd.Target.Value != "1" && rd.Target.Value != "2") {
					return prediction{}, "fd duplication"
				}
			default:
				return prediction{}, "redirect " + rd.Op
			}
		}
		switch {
		case len(argv) == 0:
			r.status = 0
		case strings.Contains(argv[0], "/") || argv[0] == "":
			return prediction{}, "argv[0] with a slash or empty"
		case stubs.builtins[argv[0]]:
			return prediction{}, "builtin " + argv[0]
		case slices.Contains(stubNames, argv[0]):
			r.stub = argv[0] != "cat"
		default:
			r.status = 127
		}
		runs[i] = r
	}
	// Pipelines: stdin from the previous command's output.
	for i := 1; i < len(cmds); i++ {
		op := cmds[i-1].Op
		if op != "|" && op != "|&" {
			continue
		}
		prev := runs[i-1]
		hasHeredoc := false
		for _, rd := range cmds[i].Redirects {
			if isHeredocOp(rd.Op) && (rd.Fd == "" || rd.Fd == "0") {
				hasHeredoc = true
			}
		}
		if hasHeredoc {
			continue
		}
		redirOut := false
		for _, rd := range cmds[i-1].Redirects {
			if !isHeredocOp(rd.Op) {
				redirOut = true
			}
		}
		switch {
		case redirOut || op == "|&" || len(prev.argv) == 0:
			runs[i].known = false
		case prev.status == 127:
			runs[i].stdin = ""
		case prev.argv[0] == "cat":
			runs[i].stdin, runs[i].known = prev.stdin, prev.known
		default:
			runs[i].stdin = ""
		}
	}
	// Control flow: pipelines joined by && and ||, lists by ; and &.
	var pred prediction
	status := 0
	skipping := false
	for i := 0; i < len(cmds); {
		// The pipeline starting at i.
		j := i
		for j < len(cmds)-1 && (cmds[j].Op == "|" || cmds[j].Op == "|&") {
			j++
		}
		if !skipping {
			for k := i; k <= j; k++ {
				if runs[k].stub {
					pred.records = append(pred.records, record{argv: runs[k].argv, stdin: runs[k].stdin, anyStdin: !runs[k].known})
				}
			}
			status = runs[j].status
			if cmds[i].Negated { // "!" negates the whole pipeline
				if status == 0 {
					status = 1
				} else {
					status = 0
				}
			}
			if cmds[j].Op == "&" {
				status = 0
			}
		}
		switch cmds[j].Op {
		case "&&":
			skipping = status != 0
		case "||":
			skipping = status == 0
		default:
			skipping = false
		}
		i = j + 1
	}
	return pred, ""
}

func isLowerName(s string) bool {
	if !isName(s) {
		return false
	}
	return strings.ToLower(s) == s
}

// predictWord evaluates a word with every variable unset: the static
// value, or the value with plain $name expansions of unset lowercase
// variables removed.
func predictWord(p *parsed, w *syntax.Word, val Word, assigned map[string]bool) ([]string, bool) {
	if val.Static {
		return []string{val.Value}, true
	}
	clone := &syntax.Word{}
	quoted := false
	for _, part := range w.Parts {
		switch x := part.(type) {
		case *syntax.ParamExp:
			if !plainUnset(x, assigned) {
				return nil, false
			}
			clone.Parts = append(clone.Parts, &syntax.Lit{})
		case *syntax.DblQuoted:
			quoted = true
			dq := &syntax.DblQuoted{Dollar: x.Dollar}
			for _, q := range x.Parts {
				if pe, ok := q.(*syntax.ParamExp); ok {
					if !plainUnset(pe, assigned) {
						return nil, false
					}
					dq.Parts = append(dq.Parts, &syntax.Lit{})
					continue
				}
				dq.Parts = append(dq.Parts, q)
			}
			clone.Parts = append(clone.Parts, dq)
		case *syntax.SglQuoted:
			quoted = true
			clone.Parts = append(clone.Parts, x)
		default:
			clone.Parts = append(clone.Parts, x)
		}
	}
	v := p.word(clone)
	if !v.Static {
		return nil, false
	}
	if v.Value == "" && !quoted {
		return nil, true // the word disappears
	}
	return []string{v.Value}, true
}

// predictBody is a here-document body with plain expansions of unset
// lowercase variables removed.
func predictBody(p *parsed, redirs []*syntax.Redirect, rd Redirect, assigned map[string]bool) (string, bool) {
	if rd.Body.Static {
		return rd.Body.Value, true
	}
	if rd.Op == "<<<" {
		return "", false
	}
	var r *syntax.Redirect
	for _, x := range redirs {
		if x.Hdoc != nil && p.text(x.Hdoc) == rd.Body.Raw && x.Op.String() == rd.Op {
			r = x
		}
	}
	if r == nil {
		return "", false
	}
	var b strings.Builder
	for _, part := range r.Hdoc.Parts {
		switch x := part.(type) {
		case *syntax.Lit:
			b.WriteString(unescapeHeredoc(x.Value))
		case *syntax.ParamExp:
			if !plainUnset(x, assigned) {
				return "", false
			}
		default:
			return "", false
		}
	}
	v := b.String()
	if rd.Op == "<<-" {
		v = stripTabs(v)
	}
	return v, true
}

func plainUnset(pe *syntax.ParamExp, assigned map[string]bool) bool {
	if pe.Param == nil || pe.Excl || pe.Length || pe.Index != nil || pe.Slice != nil ||
		pe.Repl != nil || pe.Exp != nil || pe.Names != 0 || pe.Flags != nil || pe.NestedParam != nil {
		return false
	}
	n := pe.Param.Value
	return isLowerName(n) && !assigned[n]
}

// agree checks one command: if the parse is Simple and predictable, bash
// must produce the predicted records. It reports whether bash was run.
func agree(t testing.TB, cmd string) bool {
	t.Helper()
	p := parse(cmd)
	if p.result.Kind != Simple {
		return false
	}
	pred, why := predict(p)
	if why != "" {
		return false
	}
	got, stderr := runBash(t, cmd)
	if !sameRecords(pred.records, got) {
		t.Errorf("bash and ParseForSecurity disagree on %q\nparse:  %s\nbash:   %s\nstderr: %s",
			cmd, fmtRecords(pred.records), fmtRecords(got), stderr)
	}
	return true
}

func sameRecords(want, got []record) bool {
	if len(want) != len(got) {
		return false
	}
	w := slices.Clone(want)
	g := slices.Clone(got)
	cmp := func(a, b record) int {
		if c := strings.Compare(a.key(), b.key()); c != 0 {
			return c
		}
		return strings.Compare(a.stdin, b.stdin)
	}
	slices.SortFunc(w, cmp)
	slices.SortFunc(g, cmp)
	used := make([]bool, len(g))
	// Exact records first, then those whose stdin is not predicted, so a
	// wildcard never takes the record an exact one needs.
	for _, wild := range []bool{false, true} {
	outer:
		for _, a := range w {
			if a.anyStdin != wild {
				continue
			}
			for i, b := range g {
				if used[i] || a.key() != b.key() || (!a.anyStdin && a.stdin != b.stdin) {
					continue
				}
				used[i] = true
				continue outer
			}
			return false
		}
	}
	return true
}

func fmtRecords(rs []record) string {
	var parts []string
	for _, r := range rs {
		parts = append(parts, r.String())
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
