package shell

import (
	"bytes"
	"strings"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// Hint is one <claude-code-hint .../> tag a program printed: the seeds'
// hints protocol, by which a CLI that sees CLAUDECODE=1 recommends
// something (a plugin to install) without spending the agent's tokens.
// The tag is removed from the output the agent sees and returned as data.
type Hint struct {
	// Attrs are the tag's attributes, such as "plugin-name",
	// "install-command" and "reason". Values are sanitised to one line.
	Attrs map[string]string `json:"attrs"`
}

// HintTag is the tag name of the hints protocol.
const HintTag = "claude-code-hint"

// Limits of the hints protocol: a hint line is at most maxHintLine bytes,
// with at most maxHintAttrs attributes; at most maxHints hints are kept
// per command (further hint lines are still removed).
const (
	maxHintLine  = 4096
	maxHintAttrs = 16
	maxHints     = 16
)

// hintFilter removes hint lines from a stream. A hint is a line that holds
// only the tag (blanks around it allowed); a tag inside other text is left
// alone. A partial line is held back only while it could still become a
// hint line, so other output flows through at once.
type hintFilter struct {
	off     bool   // pass everything through
	hints   []Hint // hints found, up to maxHints
	carry   []byte // the start of a line that may be a hint
	midLine bool   // the last byte passed on was not a newline
}

// write filters p and returns what to pass on.
func (h *hintFilter) write(p []byte) []byte {
	if h.off {
		return p
	}
	var out []byte
	data := p
	if len(h.carry) > 0 {
		data = append(h.carry, p...)
		h.carry = nil
	}
	for len(data) > 0 {
		if h.midLine {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				out = append(out, data...)
				return out
			}
			out = append(out, data[:i+1]...)
			data = data[i+1:]
			h.midLine = false
			continue
		}
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			if mayBeHint(data) && len(data) < maxHintLine {
				h.carry = append([]byte(nil), data...)
				return out
			}
			out = append(out, data...)
			h.midLine = true
			return out
		}
		line := data[:i+1]
		data = data[i+1:]
		if hint, ok := parseHintLine(line); ok {
			if len(h.hints) < maxHints {
				h.hints = append(h.hints, hint)
			}
			continue
		}
		out = append(out, line...)
	}
	return out
}

// flush ends the stream: a last line without a newline can be a hint too.
func (h *hintFilter) flush() []byte {
	c := h.carry
	h.carry = nil
	if len(c) == 0 {
		return nil
	}
	if hint, ok := parseHintLine(c); ok {
		if len(h.hints) < maxHints {
			h.hints = append(h.hints, hint)
		}
		return nil
	}
	return c
}

// mayBeHint reports whether a partial line could still become a hint line.
func mayBeHint(b []byte) bool {
	b = bytes.TrimLeft(b, " \t")
	tag := "<" + HintTag
	if len(b) <= len(tag) {
		return strings.HasPrefix(tag, string(b))
	}
	return bytes.HasPrefix(b, []byte(tag))
}

// parseHintLine reads a line that is exactly one hint tag:
// <claude-code-hint name="value" name='value' ... />.
func parseHintLine(line []byte) (Hint, bool) {
	if len(line) > maxHintLine {
		return Hint{}, false
	}
	s := strings.TrimRight(string(line), "\r\n")
	s = strings.Trim(s, " \t")
	if !strings.HasPrefix(s, "<"+HintTag) || !strings.HasSuffix(s, "/>") {
		return Hint{}, false
	}
	s = strings.TrimSuffix(s[len(HintTag)+1:], "/>")
	if s != "" && s[0] != ' ' && s[0] != '\t' {
		return Hint{}, false // <claude-code-hintx ...
	}
	attrs := map[string]string{}
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			break
		}
		eq := strings.IndexByte(s, '=')
		if eq <= 0 {
			return Hint{}, false
		}
		name := s[:eq]
		if !attrName(name) {
			return Hint{}, false
		}
		s = s[eq+1:]
		if s == "" || (s[0] != '"' && s[0] != '\'') {
			return Hint{}, false
		}
		q := s[0]
		end := strings.IndexByte(s[1:], q)
		if end < 0 {
			return Hint{}, false
		}
		val := s[1 : 1+end]
		s = s[end+2:]
		if s != "" && s[0] != ' ' && s[0] != '\t' {
			return Hint{}, false
		}
		if len(attrs) >= maxHintAttrs {
			return Hint{}, false
		}
		attrs[name] = policy.Sanitize(unescapeXML(val))
	}
	return Hint{Attrs: attrs}, true
}

func attrName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == ':' || i > 0 && (c == '-' || c == '.' || c >= '0' && c <= '9') {
			continue
		}
		return false
	}
	return s != ""
}

func unescapeXML(s string) string {
	if !strings.Contains(s, "&") {
		return s
	}
	return strings.NewReplacer("&quot;", `"`, "&apos;", "'", "&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(s)
}
