package jsonl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/moat-sandbox/moat/runtime/policy"
	"github.com/moat-sandbox/moat/shell"
)

// schema is the part of JSON Schema (2020-12) docs/session.schema.json
// uses, checked by a small validator: $ref to #/$defs, oneOf, type, const,
// enum, required, properties, additionalProperties, items, minimum,
// minLength, maxLength.
type schema struct {
	root map[string]any
}

func loadSchema(t testing.TB) *schema {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "session.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&root); err != nil {
		t.Fatalf("session.schema.json: %v", err)
	}
	return &schema{root: root}
}

// validate checks a JSON document against the definition def ("" for the
// whole schema).
func (s *schema) validate(doc []byte, def string) error {
	var v any
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return err
	}
	node := s.root
	if def != "" {
		node = s.root["$defs"].(map[string]any)[def].(map[string]any)
	}
	return s.check(node, v, "")
}

func (s *schema) check(node map[string]any, v any, at string) error {
	if ref, ok := node["$ref"].(string); ok {
		name, ok := strings.CutPrefix(ref, "#/$defs/")
		def, found := s.root["$defs"].(map[string]any)[name].(map[string]any)
		if !ok || !found {
			return fmt.Errorf("%s: unknown $ref %q", at, ref)
		}
		return s.check(def, v, at)
	}
	if alts, ok := node["oneOf"].([]any); ok {
		var errs []string
		n := 0
		for _, a := range alts {
			if err := s.check(a.(map[string]any), v, at); err != nil {
				errs = append(errs, err.Error())
			} else {
				n++
			}
		}
		if n != 1 {
			return fmt.Errorf("%s: matches %d of oneOf, want 1 (%s)", at, n, strings.Join(errs, "; "))
		}
	}
	if ty, ok := node["type"]; ok {
		var types []string
		switch ty := ty.(type) {
		case string:
			types = []string{ty}
		case []any:
			for _, x := range ty {
				types = append(types, x.(string))
			}
		}
		match := false
		for _, want := range types {
			match = match || typeOf(v, want)
		}
		if !match {
			return fmt.Errorf("%s: %v is not %v", at, v, types)
		}
	}
	if c, ok := node["const"]; ok && !equal(c, v) {
		return fmt.Errorf("%s: %v is not %v", at, v, c)
	}
	if e, ok := node["enum"].([]any); ok {
		found := false
		for _, x := range e {
			found = found || equal(x, v)
		}
		if !found {
			return fmt.Errorf("%s: %v is not one of %v", at, v, e)
		}
	}
	if str, ok := v.(string); ok {
		if m, ok := node["minLength"].(json.Number); ok {
			if n, _ := m.Int64(); int64(utf8.RuneCountInString(str)) < n {
				return fmt.Errorf("%s: shorter than %d", at, n)
			}
		}
		if m, ok := node["maxLength"].(json.Number); ok {
			if n, _ := m.Int64(); int64(utf8.RuneCountInString(str)) > n {
				return fmt.Errorf("%s: longer than %d", at, n)
			}
		}
	}
	if num, ok := v.(json.Number); ok {
		if m, ok := node["minimum"].(json.Number); ok {
			a, _ := num.Float64()
			b, _ := m.Float64()
			if a < b {
				return fmt.Errorf("%s: %v is below %v", at, num, m)
			}
		}
	}
	if obj, ok := v.(map[string]any); ok {
		props, _ := node["properties"].(map[string]any)
		for _, r := range asList(node["required"]) {
			if _, ok := obj[r.(string)]; !ok {
				return fmt.Errorf("%s: %q is required", at, r)
			}
		}
		for k, x := range obj {
			if p, ok := props[k]; ok {
				if err := s.check(p.(map[string]any), x, at+"."+k); err != nil {
					return err
				}
				continue
			}
			switch ap := node["additionalProperties"].(type) {
			case bool:
				if !ap {
					return fmt.Errorf("%s: %q is not allowed", at, k)
				}
			case map[string]any:
				if err := s.check(ap, x, at+"."+k); err != nil {
					return err
				}
			}
		}
	}
	if arr, ok := v.([]any); ok {
		if items, ok := node["items"].(map[string]any); ok {
			for i, x := range arr {
				if err := s.check(items, x, fmt.Sprintf("%s[%d]", at, i)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func typeOf(v any, want string) bool {
	switch want {
	case "null":
		return v == nil
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		_, err := n.Int64()
		return err == nil
	}
	return false
}

func equal(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// TestSchemaValidator checks the validator itself on a few documents.
func TestSchemaValidator(t *testing.T) {
	s := loadSchema(t)
	tests := []struct {
		doc, def string
		ok       bool
	}{
		{`{"id":"1","op":"run","command":"pwd"}`, "request", true},
		{`{"id":7,"op":"run","command":"pwd","timeout_ms":100}`, "request", true},
		{`{"id":"1","op":"run"}`, "request", false},
		{`{"id":"1","op":"run","command":""}`, "request", false},
		{`{"id":1.5,"op":"run","command":"x"}`, "request", false},
		{`{"id":"1","op":"run","command":"x","cmd":"y"}`, "request", false},
		{`{"id":"1","op":"background","target":"2"}`, "request", true},
		{`{"id":"1","op":"background","target":"2","command":"x"}`, "request", false},
		{`{"id":"1","op":"fly"}`, "request", false},
		{`{"id":"1","event":"closed"}`, "event", true},
		{`{"id":null,"event":"error","field":"id","error":"x"}`, "event", true},
		{`{"id":"1","event":"finished"}`, "event", false},
		{`{"id":"1","op":"close"}`, "", true},
	}
	for _, tc := range tests {
		err := s.validate([]byte(tc.doc), tc.def)
		if (err == nil) != tc.ok {
			t.Errorf("%s as %q: %v, want ok=%v", tc.doc, tc.def, err, tc.ok)
		}
	}
}

// TestDocExamples validates every line of the ```jsonl blocks of
// docs/SESSION.md: a line with "event" is an event, any other a request. A
// request followed by an "error" event is an example of a bad request: it
// must not validate, and the server must answer it with that very event.
func TestDocExamples(t *testing.T) {
	s := loadSchema(t)
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "SESSION.md"))
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```jsonl\n(.*?)```").FindAllSubmatch(b, -1)
	if len(blocks) < 5 {
		t.Fatalf("only %d jsonl blocks in SESSION.md", len(blocks))
	}
	type badReq struct{ req, answer string }
	var bad []badReq
	n := 0
	for _, bl := range blocks {
		lines := strings.Split(strings.TrimSpace(string(bl[1])), "\n")
		for i, line := range lines {
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Errorf("not JSON: %s: %v", line, err)
				continue
			}
			n++
			if _, ok := m["event"]; ok {
				if err := s.validate([]byte(line), "event"); err != nil {
					t.Errorf("%s: %v", line, err)
				}
				continue
			}
			if i+1 < len(lines) {
				var next map[string]any
				json.Unmarshal([]byte(lines[i+1]), &next)
				if next["event"] == "error" && equal(next["id"], m["id"]) {
					if err := s.validate([]byte(line), "request"); err == nil {
						t.Errorf("%s: a bad request in the doc validates", line)
					}
					bad = append(bad, badReq{line, lines[i+1]})
					continue
				}
			}
			if err := s.validate([]byte(line), "request"); err != nil {
				t.Errorf("%s: %v", line, err)
			}
		}
	}
	if len(bad) == 0 {
		t.Error("no bad request examples")
	}
	for _, br := range bad {
		h := newHarness(t, nil)
		h.send(br.req)
		got := h.wait(is("*", "error"))
		var want event
		json.Unmarshal([]byte(br.answer), &want)
		if !equal(map[string]any(got), map[string]any(want)) {
			t.Errorf("%s: the server answers %v, the doc says %s", br.req, got, br.answer)
		}
		h.finish()
	}
	t.Logf("%d example lines validated", n)
}

// A finished event whose violations the report grouped (policy.Summarize:
// four or more refused paths under one directory are one entry with a
// count, "deny file-write /etc/... (6 paths)") is an event of the schema.
// The schema's violation had no "count" and refused extra fields, so a
// session command that touched six files in /etc wrote an event the
// schema rejected (found by pass 77 against moat session --jsonl).
func TestSchemaGroupedViolation(t *testing.T) {
	s := loadSchema(t)
	vs := policy.Summarize([]policy.Violation{
		{Kind: policy.FileViolation, Op: "write", Target: "/etc/a1", Rule: "not in allowWrite", Pid: 7},
		{Kind: policy.FileViolation, Op: "write", Target: "/etc/a2", Rule: "not in allowWrite", Pid: 7},
		{Kind: policy.FileViolation, Op: "write", Target: "/etc/a3", Rule: "not in allowWrite", Pid: 7},
		{Kind: policy.FileViolation, Op: "write", Target: "/etc/a4", Rule: "not in allowWrite", Pid: 7},
	}, true)
	if len(vs) != 1 || vs[0].Count != 4 {
		t.Fatalf("Summarize did not group the four refusals: %+v", vs)
	}
	ev := FinishedEvent("1", shell.Result{ID: "1", Command: "touch /etc/a{1,2,3,4}", Cwd: "/", Violations: vs}, nil, "/")
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"count":4`) {
		t.Fatalf("the event does not carry the count: %s", b)
	}
	if err := s.validate(b, "event"); err != nil {
		t.Errorf("a finished event with a grouped violation: %v\n%s", err, b)
	}
}
