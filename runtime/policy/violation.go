package policy

import (
	"strings"
	"time"
)

// ViolationKind says which layer refused something.
type ViolationKind string

const (
	FileViolation     ViolationKind = "file"
	NetworkViolation  ViolationKind = "network"
	ResourceViolation ViolationKind = "resource"
	SyscallViolation  ViolationKind = "syscall"
)

// Violation is one thing the sandbox refused.
type Violation struct {
	Kind ViolationKind `json:"kind"`
	// Op is what was attempted: "write", "create", "connect", "ptrace", ...
	Op string `json:"op"`
	// Target is the path, host:port or other object of the attempt.
	Target string `json:"target"`
	// Rule names the rule or protection that refused it.
	Rule string    `json:"rule,omitempty"`
	Time time.Time `json:"time"`
	// Pid is the process that made the attempt (host view), 0 if unknown.
	Pid int `json:"pid,omitempty"`
}

// Line renders the violation as one line for the <sandbox_violations>
// block: "deny file-write /etc/passwd (read-only: not in allowWrite)".
// Control, bidi and zero-width characters become spaces and angle brackets
// are dropped, so a hostile path cannot forge or close the block.
func (v Violation) Line() string {
	var b strings.Builder
	b.WriteString("deny ")
	b.WriteString(string(v.Kind))
	if v.Op != "" {
		b.WriteByte('-')
		b.WriteString(v.Op)
	}
	if v.Target != "" {
		b.WriteByte(' ')
		b.WriteString(v.Target)
	}
	if v.Rule != "" {
		b.WriteString(" (")
		b.WriteString(v.Rule)
		b.WriteByte(')')
	}
	return Sanitize(b.String())
}

// Sanitize makes s safe to print on one line of an annotation block.
func Sanitize(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '<' || r == '>':
			continue
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			b.WriteByte(' ')
		case r == 0x200b || r == 0x200c || r == 0x200d || r == 0x2060 || r == 0xfeff,
			r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e || r == 0x200f,
			r == 0xfffd:
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Annotate renders violations as the block appended to a command's stderr.
// It returns "" when there are none.
func Annotate(vs []Violation) string {
	if len(vs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("<sandbox_violations>\n")
	for _, v := range vs {
		b.WriteString(v.Line())
		b.WriteByte('\n')
	}
	b.WriteString("</sandbox_violations>\n")
	return b.String()
}
