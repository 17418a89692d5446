package policy

import "fmt"

// Verdict is the one answer type of the decision pipeline. The zero value is
// Passthrough ("no opinion"); it is never Allow. A pipeline that ends with no
// opinion asks.
type Verdict uint8

const (
	Passthrough Verdict = iota // no opinion: the next check decides
	Allow                      // run it
	Ask                        // show the user a permission prompt
	Deny                       // refuse
)

var verdictNames = [...]string{"passthrough", "allow", "ask", "deny"}

func (v Verdict) String() string {
	if int(v) < len(verdictNames) {
		return verdictNames[v]
	}
	return fmt.Sprintf("Verdict(%d)", uint8(v))
}

// ParseVerdict is the inverse of String.
func ParseVerdict(s string) (Verdict, error) {
	for i, n := range verdictNames {
		if n == s {
			return Verdict(i), nil
		}
	}
	return Passthrough, fmt.Errorf("unknown verdict %q (want passthrough, allow, ask or deny)", s)
}

// MarshalText makes a Verdict a JSON string.
func (v Verdict) MarshalText() ([]byte, error) { return []byte(v.String()), nil }

// UnmarshalText accepts what MarshalText produces.
func (v *Verdict) UnmarshalText(b []byte) error {
	p, err := ParseVerdict(string(b))
	if err != nil {
		return err
	}
	*v = p
	return nil
}

// Stricter reports whether v is stricter than w: Deny > Ask > Allow > Passthrough.
func (v Verdict) Stricter(w Verdict) bool { return v > w }

// Decision is a verdict with the reason and the rule that produced it.
type Decision struct {
	Verdict Verdict `json:"decision"`
	Reason  string  `json:"reason,omitempty"`
	Rule    string  `json:"rule,omitempty"`
}

// Strictest returns the strictest of the decisions (the first one on ties).
// With no decisions it returns the zero Decision (Passthrough).
func Strictest(ds ...Decision) Decision {
	var out Decision
	for i, d := range ds {
		if i == 0 || d.Verdict.Stricter(out.Verdict) {
			out = d
		}
	}
	return out
}

// Final turns a pipeline result into an answer: no opinion means Ask.
func (d Decision) Final() Decision {
	if d.Verdict == Passthrough {
		return Decision{Verdict: Ask, Reason: "no rule or check allows this command", Rule: d.Rule}
	}
	return d
}

func (d Decision) String() string {
	s := d.Verdict.String()
	if d.Reason != "" {
		s += ": " + d.Reason
	}
	if d.Rule != "" {
		s += " [" + d.Rule + "]"
	}
	return s
}
