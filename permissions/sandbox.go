package permissions

import (
	"fmt"
	"strings"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// SandboxInfo says whether a command would run in the sandbox, as the
// seeds' shouldUseSandbox decides it from Claude Code's sandbox switches:
// sandbox.enabled, a dangerouslyDisableSandbox request that
// sandbox.allowUnsandboxedCommands permits, sandbox.excludedCommands.
//
// moat itself runs every command in its sandbox (moat run, sessions, the
// API, MCP): Sandboxed false tells the host the settings would let the
// command run outside, which moat never does, and takes away the
// autoAllowBashIfSandboxed allowance (the sandbox is its reason).
type SandboxInfo struct {
	Sandboxed bool   `json:"sandboxed"`
	Reason    string `json:"reason,omitempty"`
}

// compileExcluded turns sandbox.excludedCommands into rules: an entry is a
// command prefix ("bazel", "npm run": Bash(npm run:*)), or a rule pattern
// when it has one (":*" or "*").
func compileExcluded(entries []string) ([]*Rule, error) {
	var out []*Rule
	for i, e := range entries {
		e = strings.TrimSpace(e)
		if e == "" {
			return nil, fmt.Errorf("sandbox.excludedCommands[%d]: empty", i)
		}
		text := "Bash(" + e + ":*)"
		if strings.Contains(e, "*") {
			text = "Bash(" + e + ")"
		}
		r, err := ParseRule(text)
		if err != nil {
			return nil, fmt.Errorf("sandbox.excludedCommands[%d] %q: %w", i, e, err)
		}
		r.Source = "sandbox.excludedCommands"
		out = append(out, r)
	}
	return out, nil
}

// sandboxInfo decides whether the command of this step runs in the
// sandbox. Without switches (Options.Sandbox nil) it is not asked.
func (s *step) sandboxInfo() *SandboxInfo {
	sw := s.e.opts.Sandbox
	if sw == nil {
		return nil
	}
	switch {
	case sw.Enabled != nil && !*sw.Enabled:
		return &SandboxInfo{Reason: "sandbox.enabled is false"}
	case s.req.DangerouslyDisableSandbox && (sw.AllowUnsandboxedCommands == nil || *sw.AllowUnsandboxedCommands):
		return &SandboxInfo{Reason: "the request asks to run outside the sandbox (dangerouslyDisableSandbox), and sandbox.allowUnsandboxedCommands permits it"}
	}
	if len(s.e.excluded) > 0 {
		if s.x.incomplete != "" {
			return &SandboxInfo{Reason: "sandbox.excludedCommands cannot be checked: " + s.x.incomplete}
		}
		if d, ok := s.matchRules(s.e.excluded, policy.Deny); ok {
			return &SandboxInfo{Reason: "excluded by sandbox.excludedCommands (" + strings.TrimSuffix(strings.TrimPrefix(d.Rule, "Bash("), ")") + ")"}
		}
	}
	info := &SandboxInfo{Sandboxed: true}
	if s.req.DangerouslyDisableSandbox {
		info.Reason = "dangerouslyDisableSandbox is not honoured: sandbox.allowUnsandboxedCommands is false"
	}
	return info
}

// autoAllowed is the autoAllowBashIfSandboxed allowance: a command that
// runs in the sandbox and that no deny or ask rule matched is allowed (the
// sandbox, not the validators, is the boundary then).
func (s *step) autoAllowed() (policy.Decision, bool) {
	sw := s.e.opts.Sandbox
	if sw == nil || !sw.AutoAllowBashIfSandboxed {
		return policy.Decision{}, false
	}
	if info := s.sandbox(); info == nil || !info.Sandboxed {
		return policy.Decision{}, false
	}
	return policy.Decision{Verdict: policy.Allow, Reason: "autoAllowBashIfSandboxed: the command runs in the sandbox and no rule denies or asks it"}, true
}

// sandbox is sandboxInfo, computed once per step.
func (s *step) sandbox() *SandboxInfo {
	if !s.sbDone {
		s.sb, s.sbDone = s.sandboxInfo(), true
	}
	return s.sb
}
