package darwin

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// testdata/logstream.ndjson holds lines in the shape `log stream --style
// ndjson` prints for sandbox denials (written by hand after the fields
// other tools document and record: no Mac produced them here): the
// header, a report with the tag on its next line, one with the tag on the
// same line, a process name with spaces and parentheses, a path with
// spaces, a coalesced duplicate, telemetry noise, a repeat, another run's
// denial, the tag logged by another process (logger(1)) and by a sender
// that is not the Sandbox kext, text after the tag, a line that is not
// JSON.
func TestLogReader(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "logstream.ndjson"))
	if err != nil {
		t.Fatal(err)
	}
	r := &LogReader{Tag: testTag, Explain: func(op, target string) string { return "rule for " + op }}
	var got []policy.Violation
	for _, l := range strings.SplitAfter(string(b), "\n") {
		got = append(got, r.Line(l)...)
	}
	want := []policy.Violation{
		{Kind: policy.FileViolation, Op: "create", Target: "/Users/dev/src/app/.bashrc", Pid: 4242, Rule: "rule for file-write-create"},
		{Kind: policy.NetworkViolation, Op: "connect", Target: "1.1.1.1:443", Pid: 4250, Rule: "rule for network-outbound"},
		{Kind: policy.FileViolation, Op: "read", Target: "/Users/dev/.ssh/id_ed25519", Pid: 77, Rule: "rule for file-read-data"},
		{Kind: policy.FileViolation, Op: "write", Target: "/Users/dev/My Files/a b.txt", Pid: 4242, Rule: "rule for file-write-data"},
		{Kind: policy.NetworkViolation, Op: "unix-connect", Target: "/private/var/run/mDNSResponder", Pid: 4260, Rule: "rule for network-outbound"},
		{Kind: policy.SyscallViolation, Op: "mach-lookup", Target: "com.apple.dnssd.service", Pid: 4260, Rule: "rule for mach-lookup"},
		{Kind: policy.FileViolation, Op: "unlink", Target: "/Users/dev/src/app/.git", Pid: 4270, Rule: "rule for file-write-unlink"},
		{Kind: policy.SyscallViolation, Op: "sysctl-read", Target: "kern.procargs2", Pid: 4271, Rule: "rule for sysctl-read"},
	}
	if len(got) != len(want) {
		for _, v := range got {
			t.Logf("got %s (pid %d)", v.Line(), v.Pid)
		}
		t.Fatalf("%d violations, want %d", len(got), len(want))
	}
	for i := range want {
		g := got[i]
		if g.Time.IsZero() || g.Time.Year() != 2025 {
			t.Errorf("violation %d: time %v not taken from the line", i, g.Time)
		}
		g.Time = time.Time{}
		if g != want[i] {
			t.Errorf("violation %d:\n got %+v\nwant %+v", i, g, want[i])
		}
	}
	if l := got[0].Line(); l != "deny file-create /Users/dev/src/app/.bashrc (rule for file-write-create)" {
		t.Errorf("annotation line %q", l)
	}
}

func TestParseDenial(t *testing.T) {
	for _, c := range []struct {
		in   string
		want Denial
		ok   bool
	}{
		{"Sandbox: git(12) deny(1) file-write-data /a/b", Denial{"git", 12, 1, "file-write-data", "/a/b"}, true},
		{"Sandbox: a (b)(3) deny(4) mach-lookup x.y", Denial{"a (b)", 3, 4, "mach-lookup", "x.y"}, true},
		{"Sandbox: sh(3) deny(1) process-fork", Denial{"sh", 3, 1, "process-fork", ""}, true},
		{"Sandbox: sh(x) deny(1) file-read-data /a", Denial{}, false},
		{"kernel: something else", Denial{}, false},
		{"Sandbox: sh(3) allow file-read-data /a", Denial{}, false},
		{"Sandbox: sh(3) deny(1) file-write-create /a\nb", Denial{"sh", 3, 1, "file-write-create", "/a\nb"}, true},
		{"Sandbox: s\nh(3) deny(1) file-write-create /a", Denial{}, false},
		{"Sandbox: " + strings.Repeat("x", 33) + "(3) deny(1) file-read-data /a", Denial{}, false},
	} {
		got, ok := ParseDenial(c.in)
		if ok != c.ok || got != c.want {
			t.Errorf("ParseDenial(%q) = %+v, %v; want %+v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

func TestLogStreamArgs(t *testing.T) {
	got := strings.Join(LogStreamArgs(testTag), " ")
	if got != `stream --style ndjson --predicate eventMessage CONTAINS "`+testTag+`"` {
		t.Errorf("%s", got)
	}
}

// TestLogNewlineCannotForge: a file name holding a line break and a line
// in the compact format (touch "$HOME/x<newline>... Sandbox: git(1)
// deny(1) network-outbound 140.82.112.3:443") neither hides the real
// denial nor forges another: one event is one report, its target shown
// quoted. A message holding the tag from any other sender is not a report.
func TestLogNewlineCannotForge(t *testing.T) {
	forged := "2025-03-14 09:26:53.000 E  kernel[0:1] (Sandbox) Sandbox: git(1) deny(1) network-outbound 140.82.112.3:443"
	event := func(pid int, proc, sender, msg string) string {
		b, err := json.Marshal(map[string]any{"processID": pid, "processImagePath": proc, "senderImagePath": sender,
			"timestamp": "2025-03-14 09:26:53.589123-0700", "messageType": "Error", "subsystem": "", "category": "", "eventMessage": msg})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	kext := "/System/Library/Extensions/Sandbox.kext/Contents/MacOS/Sandbox"
	r := &LogReader{Tag: testTag}
	var got []policy.Violation
	for _, l := range []string{
		event(0, "/kernel", kext, "Sandbox: touch(4242) deny(1) file-write-create /Users/dev/x\n"+forged+"\n"+testTag),
		event(4243, "/usr/bin/logger", "/usr/bin/logger", forged+"\n"+testTag),
		event(0, "/kernel", kext, "Sandbox: touch(4244) deny(1) file-write-create /Users/dev/y\n"+testTag+"\n"+forged),
	} {
		got = append(got, r.Line(l)...)
	}
	if len(got) != 1 {
		t.Fatalf("%d violations, want 1: %+v", len(got), got)
	}
	v := got[0]
	if v.Kind != policy.FileViolation || v.Op != "create" || v.Pid != 4242 || v.Target != strconv.Quote("/Users/dev/x\n"+forged) {
		t.Errorf("%+v", v)
	}
	if l := v.Line(); strings.Contains(l, "\n") || !strings.HasPrefix(l, "deny file-create ") {
		t.Errorf("the report line %q", l)
	}
	if v.Time.Year() != 2025 {
		t.Errorf("time %v not taken from the event", v.Time)
	}
}
