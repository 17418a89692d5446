package darwin

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/moat-sandbox/moat/internal/lazyre"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// The sandbox reports each denial to the unified log, from the kernel, as
// "Sandbox: PROCESS(PID) deny(N) OPERATION TARGET", followed by the
// rule's message, which moat sets to the run's tag. The runner reads them
// with
//
//	log stream --style compact --predicate 'eventMessage CONTAINS "TAG"'
//
// which prints one line per event, "DATE TIME TYPE PROCESS[PID:TID] MESSAGE",
// a message of several lines continuing on lines of their own. LogReader
// turns those lines into violations; it is plain text processing, tested
// with fixture lines on every platform.

// LogStreamArgs are the arguments of /usr/bin/log that stream a run's
// denials.
func LogStreamArgs(tag string) []string {
	return []string{"stream", "--style", "compact", "--predicate", `eventMessage CONTAINS "` + tag + `"`}
}

// Denial is one parsed sandbox report.
type Denial struct {
	Process string
	Pid     int
	Count   int    // deny(N): how many times, when the kernel coalesced them
	Op      string // the Seatbelt operation: "file-write-create", "network-outbound", ...
	Target  string // the path, address or name
}

var denialRE = lazyre.New(`^Sandbox: (.+)\((\d+)\) deny\((\d+)\) (\S+)(?: (.*))?$`)

// ParseDenial reads one report's text (the tag already removed).
func ParseDenial(msg string) (Denial, bool) {
	i := strings.Index(msg, "Sandbox: ")
	if i < 0 {
		return Denial{}, false
	}
	m := denialRE.FindStringSubmatch(strings.TrimRight(msg[i:], " \t\r\n"))
	if m == nil {
		return Denial{}, false
	}
	pid, err1 := strconv.Atoi(m[2])
	n, err2 := strconv.Atoi(m[3])
	if err1 != nil || err2 != nil {
		return Denial{}, false
	}
	return Denial{Process: m[1], Pid: pid, Count: n, Op: m[4], Target: m[5]}, true
}

// Violation is the denial in moat's terms; explain (may be nil) names the
// rule that refused it.
func (d Denial) Violation(explain func(op, target string) string) policy.Violation {
	v := policy.Violation{Kind: policy.SyscallViolation, Op: d.Op, Target: d.Target, Pid: d.Pid}
	switch {
	case strings.HasPrefix(d.Op, "file-read"):
		v.Kind, v.Op = policy.FileViolation, "read"
	case d.Op == "file-write-create":
		v.Kind, v.Op = policy.FileViolation, "create"
	case d.Op == "file-write-unlink":
		v.Kind, v.Op = policy.FileViolation, "unlink"
	case strings.HasPrefix(d.Op, "file-write"):
		v.Kind, v.Op = policy.FileViolation, "write"
	case d.Op == "file-ioctl":
		v.Kind, v.Op = policy.FileViolation, "ioctl"
	case d.Op == "network-outbound" && strings.HasPrefix(d.Target, "/"):
		v.Kind, v.Op = policy.NetworkViolation, "unix-connect"
	case d.Op == "network-outbound":
		v.Kind, v.Op = policy.NetworkViolation, "connect"
	case d.Op == "network-bind":
		v.Kind, v.Op = policy.NetworkViolation, "bind"
	case d.Op == "network-inbound":
		v.Kind, v.Op = policy.NetworkViolation, "accept"
	case d.Op == "system-socket":
		v.Kind, v.Op = policy.NetworkViolation, "socket"
	}
	if explain != nil {
		v.Rule = explain(d.Op, d.Target)
	}
	return v
}

// noise are denials every program provokes and nobody needs to read:
// telemetry moat does not let out.
var noise = []struct{ op, target string }{
	{"mach-lookup", "com.apple.diagnosticd"},
	{"mach-lookup", "com.apple.analyticsd"},
}

// LogReader turns `log stream --style compact` lines into violations.
type LogReader struct {
	// Tag is the run's tag: events without it are not the run's.
	Tag string
	// Explain names the rule behind a denial (Profile.Explain). If nil,
	// violations carry no rule.
	Explain func(op, target string) string

	cur  *logEvent
	seen map[string]bool
}

type logEvent struct {
	t   time.Time
	msg strings.Builder
}

// timeRE matches the start of an event line: "2024-06-01 10:20:30.123456".
var timeRE = lazyre.New(`^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?)\S* `)

// Line reads one line of output and returns the violations it completed
// (an event is complete when the next one starts, or at Flush).
func (r *LogReader) Line(line string) []policy.Violation {
	line = strings.TrimRight(line, "\r\n")
	m := timeRE.FindStringSubmatch(line)
	if m == nil {
		if r.cur != nil { // a message's next line
			r.cur.msg.WriteByte('\n')
			r.cur.msg.WriteString(line)
		}
		return nil // or a header: "Filtering the log data using ...", "Timestamp ..."
	}
	out := r.Flush()
	t, err := time.ParseInLocation("2006-01-02 15:04:05.999999999", m[1], time.Local)
	if err != nil {
		t = time.Now()
	}
	r.cur = &logEvent{t: t}
	r.cur.msg.WriteString(line[len(m[0]):])
	return out
}

// Flush returns the violation of the event read so far, if it is one.
func (r *LogReader) Flush() []policy.Violation {
	e := r.cur
	r.cur = nil
	if e == nil || r.Tag == "" {
		return nil
	}
	msg := e.msg.String()
	i := strings.LastIndex(msg, r.Tag)
	if i < 0 {
		return nil
	}
	msg = msg[:i]
	d, ok := ParseDenial(firstSandboxLine(msg))
	if !ok || strings.Contains(msg, "duplicate report") {
		return nil
	}
	for _, n := range noise {
		if d.Op == n.op && d.Target == n.target {
			return nil
		}
	}
	// The kernel repeats a denial it has reported; one line is enough.
	key := fmt.Sprint(d.Pid, d.Op, d.Target)
	if r.seen == nil {
		r.seen = map[string]bool{}
	}
	if r.seen[key] {
		return nil
	}
	r.seen[key] = true
	v := d.Violation(r.Explain)
	v.Time = e.t
	return []policy.Violation{v}
}

// firstSandboxLine is the report's own line of a message: from "Sandbox: "
// to the end of that line.
func firstSandboxLine(msg string) string {
	i := strings.Index(msg, "Sandbox: ")
	if i < 0 {
		return ""
	}
	msg = msg[i:]
	if j := strings.IndexByte(msg, '\n'); j >= 0 {
		msg = msg[:j]
	}
	return msg
}
