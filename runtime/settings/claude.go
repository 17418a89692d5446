package settings

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/moat-sandbox/moat/internal/lazyre"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// decodeClaude reads the keys moat uses from Claude Code's settings.json:
// permissions, sandbox and moat. Other top-level keys (env, hooks, model,
// ...) belong to the agent CLI and are ignored; unknown keys inside the
// sections moat reads are errors.
func decodeClaude(o *object, r resolver) (*layer, error) {
	l := &layer{}
	if err := misspelledTop(o); err != nil {
		return nil, err
	}
	var err error
	if l.managedRulesOnly, err = o.boolean("allowManagedPermissionRulesOnly"); err != nil {
		return nil, err
	}
	if p, ok, err := o.obj("permissions"); err != nil {
		return nil, err
	} else if ok {
		if err := decodePermissions(p, r, l); err != nil {
			return nil, err
		}
	}
	if s, ok, err := o.obj("sandbox"); err != nil {
		return nil, err
	} else if ok {
		if err := decodeSandbox(s, r, l); err != nil {
			return nil, err
		}
	}
	if err := decodeMoat(o, l); err != nil {
		return nil, err
	}
	return l, nil
}

// misspelledTop refuses, in a Claude Code file, what Claude Code would
// ignore but its writer meant as policy: the npm sandbox runtime's
// top-level "filesystem" and "network" (a file in the other format), and
// "Sandbox", "Permissions" or "MOAT" spelt with other capitals. Claude
// Code's other top-level keys (env, hooks, model, ...) are not moat's.
func misspelledTop(o *object) error {
	for _, k := range slices.Sorted(maps.Keys(o.m)) {
		switch {
		case k == "filesystem" || k == "network":
			return o.errf(k, "the npm sandbox runtime's key in a Claude Code settings file: Claude Code's is sandbox.%s (moat would ignore it, as Claude Code does)", k)
		case k != "sandbox" && k != "permissions" && k != "moat" &&
			(strings.EqualFold(k, "sandbox") || strings.EqualFold(k, "permissions") || strings.EqualFold(k, "moat")):
			return o.errf(k, "unknown key %q: did you mean %q? (keys are case-sensitive; this one would be ignored)", k, strings.ToLower(k))
		}
	}
	return nil
}

// knownTools are the tool names whose rules moat reads; a rule naming one
// with other capitals (bash(rm:*), read(~/x)) is refused rather than
// ignored.
var knownTools = []string{"Bash", "Read", "Edit", "Write", "MultiEdit", "NotebookEdit", "WebFetch"}

// ruleRe splits "Tool(content)" and "Tool". Tool names are identifiers,
// optionally MCP-style (mcp__server__tool).
var ruleRe = lazyre.New(`^([A-Za-z][A-Za-z0-9_-]*)(?:\((.*)\))?$`)

// ParseRule splits a permission rule string into tool and content. has is
// false for a bare tool name ("Bash").
func ParseRule(s string) (tool, content string, has bool, err error) {
	if strings.TrimSpace(s) != s || s == "" {
		return "", "", false, fmt.Errorf("rule %q: empty or surrounded by spaces", s)
	}
	m := ruleRe.FindStringSubmatch(s)
	if m == nil {
		return "", "", false, fmt.Errorf("rule %q: want Tool or Tool(content), e.g. Bash(npm run:*)", s)
	}
	has = strings.HasSuffix(s, ")")
	if has && m[2] == "" {
		return "", "", false, fmt.Errorf("rule %q: empty parentheses", s)
	}
	return m[1], m[2], has, nil
}

func decodePermissions(o *object, r resolver, l *layer) error {
	for _, kind := range []string{"allow", "ask", "deny"} {
		rules, _, err := o.strs(kind)
		if err != nil {
			return err
		}
		for i, s := range rules {
			field := o.field(fmt.Sprintf("%s[%d]", kind, i))
			tool, content, has, err := ParseRule(s)
			if err != nil {
				return &Error{File: r.file, Field: field, Reason: err.Error(), Err: err}
			}
			for _, k := range knownTools {
				if tool != k && strings.EqualFold(tool, k) {
					return &Error{File: r.file, Field: field, Reason: fmt.Sprintf("rule %q: the tool is %s (tool names are case-sensitive; this rule would match nothing)", s, k)}
				}
			}
			rule := policy.Rule{Rule: s, Source: r.file + ": " + field, Dir: r.dir}
			switch kind {
			case "allow":
				l.allow = append(l.allow, rule)
			case "ask":
				l.ask = append(l.ask, rule)
			case "deny":
				l.deny = append(l.deny, rule)
			}
			if !has || kind == "ask" {
				continue
			}
			if err := sandboxRule(tool, content, kind, field, r, l); err != nil {
				return err
			}
		}
	}
	dirs, _, err := o.strs("additionalDirectories")
	if err != nil {
		return err
	}
	for i, d := range dirs {
		pr, err := r.claude(o.field(fmt.Sprintf("additionalDirectories[%d]", i)), d, plainPath)
		if err != nil {
			return err
		}
		l.addDirs = append(l.addDirs, pr)
	}
	if l.defaultMode, err = o.str("defaultMode"); err != nil {
		return err
	}
	if l.defaultMode != nil && !policy.ValidMode(*l.defaultMode) {
		return o.errf("defaultMode", "unknown mode %q (want one of %s)", *l.defaultMode, strings.Join(policy.Modes, ", "))
	}
	if s, err := o.str("disableBypassPermissionsMode"); err != nil {
		return err
	} else if s != nil && *s != "disable" {
		return o.errf("disableBypassPermissionsMode", "the only value is \"disable\", got %q", *s)
	} else if s != nil {
		l.disableBypass = true
	}
	return o.unknown("disableAutoMode")
}

// sandboxRule feeds a Read/Edit/WebFetch rule to the sandbox policy, in
// l.fromRules until Load knows whether the file's permission rules count
// (allowManagedPermissionRulesOnly).
func sandboxRule(tool, content, kind, field string, r resolver, l *layer) error {
	switch tool {
	case "Read", "Edit", "Write", "MultiEdit", "NotebookEdit":
		k := readPath
		if kind == "deny" {
			k = denyPath
		}
		pr, err := r.claude(field, content, k)
		if err != nil {
			return err
		}
		d := &l.fromRules
		switch {
		case tool == "Read" && kind == "deny":
			d.denyRead = append(d.denyRead, pr)
		case tool == "Read":
			d.allowRead = append(d.allowRead, pr)
		case kind == "deny":
			d.denyWrite = append(d.denyWrite, pr)
		default:
			d.allowWrite = append(d.allowWrite, pr)
		}
	case "WebFetch":
		d, ok := strings.CutPrefix(content, "domain:")
		if !ok {
			return nil // URL rules are the fetch tool's business, not the sandbox's
		}
		if err := validateDomain(d, kind == "deny"); err != nil {
			return &Error{File: r.file, Field: field, Reason: err.Error(), Err: err}
		}
		dr := policy.DomainRule{Pattern: d, Source: r.file + ": " + field}
		if kind == "deny" {
			l.fromRules.deniedDomains = append(l.fromRules.deniedDomains, dr)
		} else {
			l.fromRules.allowedDomains = append(l.fromRules.allowedDomains, dr)
		}
	}
	return nil
}

func decodeSandbox(o *object, r resolver, l *layer) error {
	var err error
	for _, b := range []struct {
		key string
		dst **bool
	}{
		{"enabled", &l.enabled},
		{"autoAllowBashIfSandboxed", &l.autoAllow},
		{"allowUnsandboxedCommands", &l.allowUnsandboxed},
		{"failIfUnavailable", &l.failIfUnavailable},
		{"enableWeakerNestedSandbox", &l.weakerNested},
	} {
		if *b.dst, err = o.boolean(b.key); err != nil {
			return err
		}
	}
	if l.excluded, _, err = o.strs("excludedCommands"); err != nil {
		return err
	}
	if l.ignoreViolations, err = o.stringListMap("ignoreViolations"); err != nil {
		return err
	}
	for _, k := range []string{"enableWeakerNetworkIsolation", "allowAppleEvents"} { // macOS only
		if _, err := o.boolean(k); err != nil {
			return err
		}
	}
	if n, ok, err := o.obj("network"); err != nil {
		return err
	} else if ok {
		for _, k := range []string{"allowedDomains", "deniedDomains"} {
			list, _, err := n.strs(k)
			if err != nil {
				return err
			}
			ds, err := domains(n, k, list, k == "deniedDomains")
			if err != nil {
				return err
			}
			if k == "allowedDomains" {
				l.allowedDomains = append(l.allowedDomains, ds...)
			} else {
				l.deniedDomains = append(l.deniedDomains, ds...)
			}
		}
		if l.managedDomainsOnly, err = n.boolean("allowManagedDomainsOnly"); err != nil {
			return err
		}
		if l.strict, err = n.boolean("strictAllowlist"); err != nil {
			return err
		}
		if err := decodeSockets(n, r, l, r.claude); err != nil {
			return err
		}
		for _, k := range []string{"tlsTerminate", "mitmProxy"} {
			if n.has(k) {
				return n.errf(k, notSupported)
			}
		}
		if err := n.unknown(); err != nil {
			return err
		}
	}
	if f, ok, err := o.obj("filesystem"); err != nil {
		return err
	} else if ok {
		lists := []struct {
			key  string
			kind pathKind
			dst  *[]policy.PathRule
		}{
			{"allowWrite", writePath, &l.allowWrite},
			{"denyWrite", denyPath, &l.denyWrite},
			{"denyRead", denyPath, &l.denyRead},
			{"allowRead", readPath, &l.allowRead},
		}
		for _, li := range lists {
			ps, _, err := f.strs(li.key)
			if err != nil {
				return err
			}
			for i, p := range ps {
				pr, err := r.claude(f.field(fmt.Sprintf("%s[%d]", li.key, i)), p, li.kind)
				if err != nil {
					return err
				}
				*li.dst = append(*li.dst, pr)
			}
		}
		if l.managedReadOnly, err = f.boolean("allowManagedReadPathsOnly"); err != nil {
			return err
		}
		if l.fsDisabled, err = f.boolean("disabled"); err != nil {
			return err
		}
		if err := f.unknown(); err != nil {
			return err
		}
	}
	if o.has("credentials") {
		return o.errf("credentials", notSupported)
	}
	// Paths of the peer's helper binaries and platforms list: not moat's.
	return o.unknown("bwrapPath", "socatPath", "ripgrep", "enabledPlatforms")
}
