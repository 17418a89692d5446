package permissions

// Summary is the JSON shape of a decision that moat check --json prints
// and the local API's /v1/decide answers: one definition, so the two agree.
type Summary struct {
	Decision   string   `json:"decision"`
	Reason     string   `json:"reason"`
	Rule       *string  `json:"rule"`
	ReadOnly   bool     `json:"readonly"`
	Warnings   []string `json:"warnings"`
	Suggestion *string  `json:"suggestion"`
	SedEdit    *SedEdit `json:"sed_edit"`
	Kind       string   `json:"kind"`
	// Sandbox: whether the command would run in the sandbox (present when
	// the decision had the settings' sandbox switches).
	Sandbox *SandboxInfo `json:"sandbox,omitempty"`
}

// Summarize returns r's Summary: the final verdict and its reason, the
// rule that decided (null if none), warnings as a list (never null).
func Summarize(r Result) Summary {
	final := r.Decision.Final()
	s := Summary{
		Decision: final.Verdict.String(),
		Reason:   final.Reason,
		ReadOnly: r.ReadOnly,
		Warnings: r.Warnings,
		SedEdit:  r.SedEdit,
		Kind:     r.Kind,
		Sandbox:  r.Sandbox,
	}
	if s.Warnings == nil {
		s.Warnings = []string{}
	}
	if r.Decision.Rule != "" {
		rule := r.Decision.Rule
		s.Rule = &rule
	}
	if r.Suggestion != "" {
		sug := r.Suggestion
		s.Suggestion = &sug
	}
	return s
}
