package validators

import (
	"github.com/moat-sandbox/moat/runtime/policy"
)

// Result is the detailed outcome of Analyze.
type Result struct {
	Parse ParseResult
	Views Views
	// Decision is what Check returns.
	Decision policy.Decision
	// Validator names what decided: a validator's Name, "parse" when the
	// parse was not Simple, or "" when nothing objected (Passthrough).
	Validator string
	// Overridable is set when the objection is about what the command
	// visibly does (a redirection to a file, a jq file argument), so an
	// explicit allow rule may answer it. It is false for objections about
	// how the command is read (a parser differential, hidden commands,
	// obfuscation): no rule should override those.
	Overridable bool
}

// Context is what a validator sees: the command, its parse and its views,
// all computed once.
type Context struct {
	Command string
	Parse   ParseResult
	Views   Views

	p *parsed
	// depth counts nested analyses (bash -c '...', eval ...).
	depth int
	// recurse is analyze; a field so that the chain, which calls it for
	// nested scripts, does not refer to itself at initialisation.
	recurse func(cmd string, depth int) Result
}

// Validator is one check of the chain.
type Validator struct {
	// Name is the validator's stable name; Decision.Rule is
	// "validator:" + Name.
	Name string
	// Seed is the seed's number and name for the check, e.g.
	// "11 IFS_INJECTION".
	Seed string
	// Overridable: see Result.Overridable.
	Overridable bool
	// Fn returns Passthrough, Ask (with a reason) or, for the early-allow
	// validators only, Allow.
	Fn func(*Context) policy.Decision
}

// Chain returns the validators in the order Check runs them: the seed's
// order, 1 to 23. The first one that returns something other than
// Passthrough decides. The returned slice is a copy.
func Chain() []Validator {
	out := make([]Validator, len(chain))
	copy(out, chain[:])
	return out
}

// maxNestedDepth bounds the analysis of scripts handed to a nested shell
// (bash -c '...', eval): beyond it, the nested script is an objection.
const maxNestedDepth = 2

// Check runs ParseForSecurity and the whole chain on cmd. The result is
// Allow only for the explicit early-allow validators (a safe git commit -m),
// Ask with a reason when any validator objects or the parse is not Simple,
// and Passthrough (no objection) otherwise. It never returns Deny.
func Check(cmd string) policy.Decision {
	return Analyze(cmd).Decision
}

// Analyze is the detailed form of Check: the parse, the views, and which
// validator decided.
func Analyze(cmd string) Result {
	return analyze(cmd, 0)
}

// CheckParse is Analyze for callers that need only the parse and the
// decision (the permission engine): it does not compute the views, which
// no validator but the Original needs.
func CheckParse(cmd string) (ParseResult, policy.Decision) {
	p := parse(cmd)
	res := p.analyze(0, false)
	p.release()
	return res.Parse, res.Decision
}

func analyze(cmd string, depth int) Result {
	p := parse(cmd)
	res := p.analyze(depth, true)
	// Nothing of p's scratch state is in res: the commands, the views
	// and the reasons are allocated for it.
	p.release()
	return res
}

// analyzeNested analyses a script handed to a nested shell: only its
// parse and decision are read (Context.nested), so without the views.
func analyzeNested(cmd string, depth int) Result {
	p := parse(cmd)
	res := p.analyze(depth, false)
	p.release()
	return res
}

// analyze runs the chain on p. Without views, Result.Views and
// Context.Views hold only the Original.
func (p *parsed) analyze(depth int, views bool) Result {
	cmd := p.src
	ctx := &p.ctx // every field is set here (release leaves the last one)
	ctx.Command, ctx.Parse, ctx.p, ctx.depth, ctx.recurse = cmd, p.result, p, depth, analyzeNested
	if views {
		ctx.Views = computeViews(p)
	} else {
		ctx.Views = Views{Original: cmd}
	}
	res := Result{Parse: p.result, Views: ctx.Views}
	if p.result.Kind != Simple {
		res.Decision = policy.Decision{
			Verdict: policy.Ask,
			Reason:  "cannot analyse the command (" + p.result.Kind.String() + "): " + p.result.Reason,
			Rule:    "validator:parse",
		}
		res.Validator = "parse"
		return res
	}
	for i := range chain {
		v := &chain[i]
		d := v.Fn(ctx)
		if d.Verdict == policy.Passthrough {
			continue
		}
		if d.Verdict != policy.Allow {
			// Validators only ask; never let one deny or invent a verdict.
			d.Verdict = policy.Ask
			res.Overridable = v.Overridable
		}
		d.Rule = "validator:" + v.Name
		res.Decision = d
		res.Validator = v.Name
		return res
	}
	return res
}

func ask(reason string) policy.Decision {
	return policy.Decision{Verdict: policy.Ask, Reason: reason}
}

func allow(reason string) policy.Decision {
	return policy.Decision{Verdict: policy.Allow, Reason: reason}
}

// pass is the Passthrough decision: no objection.
func pass() policy.Decision { return policy.Decision{} }
