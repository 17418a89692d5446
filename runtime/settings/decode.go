package settings

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// Error is a settings error: the file, the field and the reason.
type Error struct {
	File   string
	Field  string
	Reason string
	// Err is the underlying failure, if any (a read error, a JSON syntax
	// error): errors.Is and errors.As reach it.
	Err error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("settings")
	if e.File != "" {
		b.WriteString(" ")
		b.WriteString(shown(e.File))
	}
	if e.Field != "" {
		b.WriteString(": ")
		b.WriteString(shown(e.Field))
	}
	b.WriteString(": ")
	b.WriteString(e.Reason)
	return b.String()
}

// shown is s as an error may print it: quoted, with escapes, when it holds
// a character that must not reach a reader as it is (policy.Invisible). A
// field is a key the file chose: a repository's .claude/settings.json
// with a key of terminal escapes ({"sandbox":{"\u001b]0;...":1}}) had
// moat's "unknown field" error print them raw (attack pass 82,
// TestControlCharactersInKeys).
func shown(s string) string {
	if strings.IndexFunc(s, policy.Invisible) >= 0 {
		return strconv.Quote(s)
	}
	return s
}

// ErrInvalid is wrapped by every *Error.
var ErrInvalid = errors.New("invalid settings")

func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrInvalid}
	}
	return []error{ErrInvalid, e.Err}
}

// object is a JSON object being decoded field by field, so that every error
// names its field and unknown fields can be refused.
type object struct {
	file string
	path string // dotted path of this object, "" for the top level
	m    map[string]json.RawMessage
	used map[string]bool
}

func parseObject(file string, data []byte) (*object, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, &Error{File: file, Reason: "the file is empty"}
	}
	if data[0] != '{' {
		return nil, &Error{File: file, Reason: "the top level must be a JSON object"}
	}
	var m map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&m); err != nil {
		return nil, &Error{File: file, Reason: "not valid JSON: " + jsonErr(err), Err: err}
	}
	if dec.More() {
		return nil, &Error{File: file, Reason: "not valid JSON: trailing data after the top-level object"}
	}
	return &object{file: file, m: m, used: map[string]bool{}}, nil
}

func jsonErr(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%v (at byte %d)", se, se.Offset)
	}
	return err.Error()
}

func (o *object) field(key string) string {
	if o.path == "" {
		return key
	}
	return o.path + "." + key
}

func (o *object) errf(key, format string, a ...any) error {
	return &Error{File: o.file, Field: o.field(key), Reason: fmt.Sprintf(format, a...)}
}

func (o *object) has(key string) bool {
	_, ok := o.m[key]
	return ok
}

func (o *object) raw(key string) (json.RawMessage, bool) {
	r, ok := o.m[key]
	if ok {
		o.used[key] = true
	}
	if ok && string(bytes.TrimSpace(r)) == "null" {
		return nil, false
	}
	return r, ok
}

func kindOf(r json.RawMessage) string {
	r = bytes.TrimSpace(r)
	if len(r) == 0 {
		return "nothing"
	}
	switch r[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

// obj decodes a nested object; ok is false when the key is absent or null.
func (o *object) obj(key string) (*object, bool, error) {
	r, ok := o.raw(key)
	if !ok {
		return nil, false, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(r, &m); err != nil {
		return nil, false, o.errf(key, "want an object, got %s", kindOf(r))
	}
	return &object{file: o.file, path: o.field(key), m: m, used: map[string]bool{}}, true, nil
}

// strs decodes an array of strings.
func (o *object) strs(key string) ([]string, bool, error) {
	r, ok := o.raw(key)
	if !ok {
		return nil, false, nil
	}
	var items []json.RawMessage
	if err := json.Unmarshal(r, &items); err != nil {
		return nil, false, o.errf(key, "want an array of strings, got %s", kindOf(r))
	}
	out := make([]string, len(items))
	for i, it := range items {
		if err := json.Unmarshal(it, &out[i]); err != nil {
			return nil, false, o.errf(fmt.Sprintf("%s[%d]", key, i), "want a string, got %s", kindOf(it))
		}
		if strings.ContainsRune(out[i], 0) {
			return nil, false, o.errf(fmt.Sprintf("%s[%d]", key, i), "contains a NUL byte")
		}
	}
	return out, true, nil
}

func (o *object) boolean(key string) (*bool, error) {
	r, ok := o.raw(key)
	if !ok {
		return nil, nil
	}
	var b bool
	if err := json.Unmarshal(r, &b); err != nil {
		return nil, o.errf(key, "want a boolean, got %s", kindOf(r))
	}
	return &b, nil
}

func (o *object) str(key string) (*string, error) {
	r, ok := o.raw(key)
	if !ok {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(r, &s); err != nil {
		return nil, o.errf(key, "want a string, got %s", kindOf(r))
	}
	if strings.ContainsRune(s, 0) {
		return nil, o.errf(key, "contains a NUL byte")
	}
	return &s, nil
}

func (o *object) integer(key string, lo, hi int) (*int, error) {
	r, ok := o.raw(key)
	if !ok {
		return nil, nil
	}
	var f float64
	if err := json.Unmarshal(r, &f); err != nil {
		return nil, o.errf(key, "want an integer, got %s", kindOf(r))
	}
	if f != math.Trunc(f) {
		return nil, o.errf(key, "want an integer, got %v", f)
	}
	if f < float64(lo) || f > float64(hi) {
		return nil, o.errf(key, "%v is outside %d..%d", f, lo, hi)
	}
	n := int(f)
	return &n, nil
}

func (o *object) duration(key string) (*time.Duration, error) {
	r, ok := o.raw(key)
	if !ok {
		return nil, nil
	}
	var s string
	if err := json.Unmarshal(r, &s); err != nil {
		var secs float64
		if err2 := json.Unmarshal(r, &secs); err2 != nil {
			return nil, o.errf(key, "want a duration such as \"30s\" or a number of seconds, got %s", kindOf(r))
		}
		if secs < 0 || secs > 1e9 {
			return nil, o.errf(key, "%v seconds is out of range", secs)
		}
		d := time.Duration(secs * float64(time.Second))
		if secs > 0 && d == 0 {
			return nil, o.errf(key, "%v seconds is below a nanosecond (0 would mean no limit)", secs)
		}
		return &d, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return nil, o.errf(key, "%v", err)
	}
	if d < 0 {
		return nil, o.errf(key, "negative duration %q", s)
	}
	if d == 0 && strings.ContainsAny(s, "123456789") {
		return nil, o.errf(key, "%q is below a nanosecond (0 would mean no limit)", s)
	}
	return &d, nil
}

// stringMap decodes an object whose values are strings.
func (o *object) stringMap(key string) (map[string]string, error) {
	r, ok := o.raw(key)
	if !ok {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(r, &m); err != nil {
		return nil, o.errf(key, "want an object of strings, got %s", kindOf(r))
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, o.errf(key+"."+k, "want a string, got %s", kindOf(v))
		}
		out[k] = s
	}
	return out, nil
}

// stringListMap decodes an object whose values are arrays of strings.
func (o *object) stringListMap(key string) (map[string][]string, error) {
	r, ok := o.raw(key)
	if !ok {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(r, &m); err != nil {
		return nil, o.errf(key, "want an object of string arrays, got %s", kindOf(r))
	}
	out := make(map[string][]string, len(m))
	for k, v := range m {
		var s []string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, o.errf(key+"."+k, "want an array of strings, got %s", kindOf(v))
		}
		out[k] = s
	}
	return out, nil
}

// unknown refuses the keys that were not read (after the caller read every
// key it knows). ignored keys are accepted without being read.
func (o *object) unknown(ignored ...string) error {
	var bad []string
	for k := range o.m {
		if o.used[k] {
			continue
		}
		skip := false
		for _, i := range ignored {
			if i == k {
				skip = true
				break
			}
		}
		if !skip {
			bad = append(bad, k)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	return o.errf(bad[0], "unknown field (moat reads this section and refuses what it does not know; check the spelling)")
}

// require refuses a missing required field.
func (o *object) require(key, what string) error {
	if _, ok := o.m[key]; !ok {
		return o.errf(key, "required %s is missing", what)
	}
	return nil
}

// size reads a byte size: a number of bytes, or a string with a unit
// ("512MiB", "2GiB", "1.5G", "unlimited" or 0 for none).
func (o *object) size(key string) (*int64, error) {
	r, ok := o.raw(key)
	if !ok {
		return nil, nil
	}
	var n int64
	var str string
	if err := json.Unmarshal(r, &n); err == nil {
		if n < 0 {
			return nil, o.errf(key, "%d is negative", n)
		}
		if n == 0 {
			n = policy.Unlimited
		}
		return &n, nil
	}
	if err := json.Unmarshal(r, &str); err != nil {
		return nil, o.errf(key, "want a size (\"512MiB\", \"2GiB\", a number of bytes, or \"unlimited\"), got %s", kindOf(r))
	}
	v, err := parseSize(str)
	if err != nil {
		return nil, o.errf(key, "%v", err)
	}
	if v == 0 {
		v = policy.Unlimited
	}
	return &v, nil
}

// parseSize reads "512MiB", "2GiB", "1.5G", "100k", "unlimited".
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(strings.ToLower(s))
	if t == "unlimited" || t == "none" || t == "0" {
		return 0, nil
	}
	units := []struct {
		suffix string
		mult   float64
	}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40}, {"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
		{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"t", 1 << 40}, {"b", 1}, {"", 1}}
	for _, u := range units {
		num, ok := strings.CutSuffix(t, u.suffix)
		if !ok {
			continue
		}
		var f float64
		if _, err := fmt.Sscanf(strings.TrimSpace(num), "%g", &f); err != nil || strings.TrimSpace(num) == "" {
			break
		}
		if f < 0 || f*u.mult > math.MaxInt64/2 {
			return 0, fmt.Errorf("%q is out of range", s)
		}
		if f > 0 && int64(f*u.mult) == 0 {
			return 0, fmt.Errorf("%q is less than a byte (0 would mean no limit)", s)
		}
		return int64(f * u.mult), nil
	}
	return 0, fmt.Errorf("%q is not a size (\"512MiB\", \"2GiB\", a number of bytes, or \"unlimited\")", s)
}

// count reads a positive count, or 0 / "unlimited" for none.
func (o *object) count(key string) (*int64, error) {
	r, ok := o.raw(key)
	if !ok {
		return nil, nil
	}
	var n int64
	if err := json.Unmarshal(r, &n); err == nil && n >= 0 {
		if n == 0 {
			n = policy.Unlimited
		}
		return &n, nil
	}
	var str string
	if err := json.Unmarshal(r, &str); err == nil && (str == "unlimited" || str == "none") {
		z := int64(policy.Unlimited)
		return &z, nil
	}
	return nil, o.errf(key, "want a number of processes (or \"unlimited\"), got %s", string(r))
}

// cpus reads a CPU cap as a number of CPUs (1.5) or a string ("150%",
// "1.5"), stored in thousandths.
func (o *object) cpus(key string) (*int64, error) {
	r, ok := o.raw(key)
	if !ok {
		return nil, nil
	}
	milli := func(f float64) *int64 {
		v := int64(f * 1000)
		if v == 0 {
			v = policy.Unlimited
		}
		return &v
	}
	tooSmall := func(f float64) error {
		if f > 0 && int64(f*1000) == 0 {
			return o.errf(key, "%s is less than a thousandth of a CPU (0 would mean no limit)", string(r))
		}
		return nil
	}
	var f float64
	if err := json.Unmarshal(r, &f); err == nil && f >= 0 {
		if err := tooSmall(f); err != nil {
			return nil, err
		}
		return milli(f), nil
	}
	var str string
	if err := json.Unmarshal(r, &str); err == nil {
		t := strings.TrimSpace(str)
		if t == "unlimited" || t == "none" {
			return milli(0), nil
		}
		pct := strings.HasSuffix(t, "%")
		if _, err := fmt.Sscanf(strings.TrimSuffix(t, "%"), "%g", &f); err == nil && f >= 0 {
			if pct {
				f /= 100
			}
			if err := tooSmall(f); err != nil {
				return nil, err
			}
			return milli(f), nil
		}
	}
	return nil, o.errf(key, "want a number of CPUs (1.5) or a percentage (\"150%%\"), got %s", string(r))
}
