package darwin

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/moat-sandbox/moat/internal/lazyre"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// The sandbox reports each denial to the unified log, from the kernel, as
// "Sandbox: PROCESS(PID) deny(N) OPERATION TARGET", followed by the
// rule's message, which moat sets to the run's tag, on a line of its own.
// The runner reads them with
//
//	log stream --style ndjson --predicate 'eventMessage CONTAINS "TAG"'
//
// which prints one JSON object per event on one line: a line break in the
// message (a file name may hold one) is escaped inside it, so no text of
// the command's can start an event of its own. (The compact style printed
// the message's lines as they were: `touch "$HOME/x<newline><a line in the
// compact format>"` hid the real denial and forged another.) LogReader
// turns those lines into violations; it is plain text processing, tested
// with fixture lines on every platform.

// LogStreamArgs are the arguments of /usr/bin/log that stream a run's
// denials.
func LogStreamArgs(tag string) []string {
	return []string{"stream", "--style", "ndjson", "--predicate", `eventMessage CONTAINS "` + tag + `"`}
}

// Denial is one parsed sandbox report.
type Denial struct {
	Process string
	Pid     int
	Count   int    // deny(N): how many times, when the kernel coalesced them
	Op      string // the Seatbelt operation: "file-write-create", "network-outbound", ...
	Target  string // the path, address or name
}

// denialRE reads a report. The process name is at most 32 bytes (the
// kernel's p_name) on one line; the operation is a Seatbelt operation's
// name; the target is the rest, line breaks included (a file name may
// hold them).
var denialRE = lazyre.New(`^Sandbox: (.{1,32})\((\d+)\) deny\((\d+)\) ([a-z][a-z0-9*-]*)(?: ((?s:.*)))?$`)

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
	if strings.ContainsAny(d.Target, "\r\n") {
		// A name with a line break: shown quoted, so that no part of it
		// reads as a report of its own.
		v.Target = strconv.Quote(d.Target)
	}
	return v
}

// noise are denials every program provokes and nobody needs to read:
// telemetry moat does not let out.
var noise = []struct{ op, target string }{
	{"mach-lookup", "com.apple.diagnosticd"},
	{"mach-lookup", "com.apple.analyticsd"},
}

// LogReader turns `log stream --style ndjson` lines into violations.
type LogReader struct {
	// Tag is the run's tag: events without it are not the run's.
	Tag string
	// Explain names the rule behind a denial (Profile.Explain). If nil,
	// violations carry no rule.
	Explain func(op, target string) string

	seen map[string]bool
}

// logEvent are the fields of a `log stream --style ndjson` event the
// reader uses.
type logEvent struct {
	EventMessage     string `json:"eventMessage"`
	ProcessID        *int64 `json:"processID"`
	ProcessImagePath string `json:"processImagePath"`
	SenderImagePath  string `json:"senderImagePath"`
	Timestamp        string `json:"timestamp"`
}

// sandboxSender is where the kernel's sandbox reports come from.
const sandboxSender = "/Sandbox.kext/Contents/MacOS/Sandbox"

// Line reads one line of output (one event) and returns its violation, if
// it is one of the run's denials: a report of the kernel's sandbox (the
// kernel's process, pid 0, the Sandbox kext as the sender: nothing a
// process can log as), whose message is a report ending with the run's
// tag on its last line. Anything else (the stream's header, another
// process's message holding the tag, a coalesced "duplicate report", a
// message with text after the tag) is not.
func (r *LogReader) Line(line string) []policy.Violation {
	line = strings.TrimSpace(line)
	if r.Tag == "" || !strings.HasPrefix(line, "{") {
		return nil
	}
	var e logEvent
	if json.Unmarshal([]byte(line), &e) != nil {
		return nil
	}
	if e.ProcessID == nil || *e.ProcessID != 0 || e.ProcessImagePath != "/kernel" || !strings.HasSuffix(e.SenderImagePath, sandboxSender) {
		return nil
	}
	msg := strings.TrimRight(e.EventMessage, " \t\r\n")
	body, ok := strings.CutSuffix(msg, r.Tag)
	if !ok || body == "" || (!strings.HasSuffix(body, "\n") && !strings.HasSuffix(body, " ")) {
		return nil // the tag is not the message's last line
	}
	body = strings.TrimPrefix(body, "(Sandbox) ")
	if !strings.HasPrefix(body, "Sandbox: ") {
		return nil // "N duplicate reports for Sandbox: ...", or not a report
	}
	d, ok := ParseDenial(body)
	if !ok {
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
	v.Time = time.Now()
	if t, err := time.Parse("2006-01-02 15:04:05.999999999-0700", e.Timestamp); err == nil {
		v.Time = t
	}
	return []policy.Violation{v}
}
