package runtime

import (
	"context"
	"errors"

	"github.com/moat-sandbox/moat/darwin"
	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// SeatbeltProfile is the macOS sandbox profile of a policy as a run on a
// Mac would make it from this machine's disk: what `moat policy --seatbelt`
// prints on any platform, so that a reviewer reads exactly what a Mac
// would enforce. The proxy's ports stand as darwin.ShownHTTPPort and
// darwin.ShownSOCKSPort (a run listens on ports the host gives it) and the
// run's tag is fixed.
type SeatbeltProfile struct {
	// Profile is the SBPL text; every string taken from the policy is a
	// parameter, (param "Pn"), defined by Params.
	Profile string `json:"profile"`
	// Params are sandbox-exec's -D definitions, in order.
	Params []SeatbeltParam `json:"params"`
	// Description is what macOS enforces of the policy and what it cannot.
	Description *enforce.Description `json:"description"`
	// Document is Profile followed by the -D arguments (as comments), for
	// reading; Inline is the profile with each parameter written in place
	// as an escaped string, self-contained for sandbox-exec -p.
	Document string `json:"-"`
	Inline   string `json:"-"`
}

// SeatbeltParam is one -D NAME=VALUE of sandbox-exec.
type SeatbeltParam struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Seatbelt generates the macOS profile of a validated policy, on any
// platform. A policy that Seatbelt cannot express (allowLocalBinding
// without best effort, an unsupported glob) is an error, as it would be
// when running it on a Mac.
func Seatbelt(pol *policy.Policy) (*SeatbeltProfile, error) {
	if pol == nil {
		return nil, errors.New("runtime: no policy")
	}
	if err := pol.Validate(); err != nil {
		return nil, err
	}
	p, err := darwin.ShowProfile(pol)
	if err != nil {
		return nil, err
	}
	desc, err := darwin.Describe(pol)
	if err != nil {
		return nil, err
	}
	out := &SeatbeltProfile{Profile: p.Text, Params: []SeatbeltParam{}, Description: desc, Document: p.Document(), Inline: p.Inline()}
	for _, pa := range p.Params {
		out.Params = append(out.Params, SeatbeltParam{Name: pa.Name, Value: pa.Value})
	}
	return out, nil
}

// seatbelt is the macOS enforcer: package darwin behind enforce.Enforcer.
// The runtime keeps what it owns on Linux too (the proxy and its live
// updates and ask callbacks, the timeout, signals, the terminal relay, the
// git audit); darwin makes the proxy's loopback listeners, the profile,
// the private TMPDIR and the log reader, and runs sandbox-exec. It builds
// on every platform (darwin.Start says "needs macOS" elsewhere), so that
// the adaptation is tested on Linux; platform() returns it on macOS only.
type seatbelt struct{}

var (
	_ enforce.Enforcer        = seatbelt{}
	_ enforce.SessionEnforcer = seatbelt{}
)

// Start runs the command under Seatbelt. macOS has one tier: the Launch's
// Mode (a Linux notion: /proc, namespaces) changes nothing here.
func (seatbelt) Start(ctx context.Context, l *enforce.Launch) (enforce.Process, error) {
	if l.As != nil {
		return nil, &enforce.UnsupportedFeatureError{Feature: "a sandbox for another user (enforce.Launch.As) on macOS", Need: "moatd is Linux-only"}
	}
	p, err := darwin.Start(ctx, seatbeltSpec(l))
	if err != nil {
		return nil, err
	}
	if l.Trace != nil {
		l.Trace("sandbox-exec started")
	}
	// A darwin.Process is an enforce.Process: its Wait gives the Exit (the
	// violations already went to Launch.Report as the log reader read
	// them), its Close does nothing (Wait removed what the run made).
	return p, nil
}

// Describe is darwin.Describe: the state directory holds nothing it needs.
func (seatbelt) Describe(pol *policy.Policy, _ string) (*enforce.Description, error) {
	return darwin.Describe(pol)
}

// ErrSeatbeltSession is wrapped by the error NewSession returns on macOS.
var ErrSeatbeltSession = errors.New("a session sandbox needs one sandbox for many commands, and moat's Seatbelt runner confines one command per sandbox-exec")

// StartSession refuses: a session's commands share a /tmp, a proxy and a
// sandbox that outlive each command, which sandbox-exec (one process tree
// per profile) does not give as such. Running each command as a new
// sandbox-exec under the same policy would be possible, but it is not
// built: say so rather than pretend.
func (seatbelt) StartSession(context.Context, *enforce.Launch) (enforce.Session, error) {
	return nil, &enforce.UnsupportedFeatureError{
		Feature: "session sandboxes on macOS",
		Need:    "run each command with moat run (one Seatbelt sandbox per command); sessions are Linux-only for now",
		Err:     ErrSeatbeltSession,
	}
}

// seatbeltSpec is the Launch in darwin's terms, field by field.
func seatbeltSpec(l *enforce.Launch) darwin.Spec {
	return darwin.Spec{
		Policy:     l.Policy,
		Argv:       l.Argv,
		Env:        l.Env,
		Stdio:      l.Stdio,
		Terminal:   l.Terminal,
		OnTerminal: l.OnTerminal,
		Proxy:      l.Proxy,
		Report:     l.Report,
		Planned:    l.Planned,
		StateDir:   l.StateDir,
		Log:        l.Log,
		// Signals and the timeout are the runtime's: darwin has neither.
	}
}
