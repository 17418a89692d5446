package darwin

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// ShownHTTPPort and ShownSOCKSPort stand for the proxy's ports in a profile
// shown without a run (moat policy --seatbelt): a run listens on ports the
// host gives it.
const (
	ShownHTTPPort  = 3128
	ShownSOCKSPort = 1080
)

// Limits are the protections moat has on Linux that macOS cannot give,
// with what is done instead. Names are enforce.Skip's (moat doctor and
// moat policy list them). A run does not repeat these standing limits: it
// reports what its policy asked for and did not get (Unenforced).
func Limits(pol *policy.Policy) []enforce.Skip {
	out := []enforce.Skip{
		{Protection: enforce.ProtectionNamespaces, Reason: "macOS has no namespaces: the command runs in the host's process, mount and network spaces, confined by the Seatbelt profile alone"},
		{Protection: enforce.ProtectionProcessIsolation, Reason: "no pid namespace: the command can learn that other processes exist (kern.proc.pid), though Seatbelt lets it signal or inspect only the sandbox's own"},
		{Protection: enforce.ProtectionPrivateTmp, Reason: "no mount namespace: the command gets a private TMPDIR (mode 0700, removed afterwards) instead of a private /tmp; the host's /tmp is not writable unless allowWrite names it"},
		{Protection: enforce.ProtectionNetwork, Reason: "no network namespace: the command shares the host's network stack; Seatbelt refuses every connection but to moat's proxy on the host's loopback, which any local process can reach too (the proxy asks for a per-run credential)"},
		{Protection: enforce.ProtectionSyscallFilter, Reason: "no seccomp: Seatbelt's operations (files, network, IPC, sysctl, Mach services, signals) are the only filter"},
		{Protection: enforce.ProtectionProcessTree, Reason: "no cgroup or pid namespace to end everything the command started: moat kills its session's process group, then every process of the user that carries the run's marker in its environment; a process that left the group and cleared its environment outlives the run (still inside the sandbox)"},
		{Protection: enforce.ProtectionResourceLimits, Reason: "no cgroups: only the timeout is enforced, no memory or process-count limit"},
		{Protection: enforce.ProtectionSandboxExec, Reason: "sandbox-exec is deprecated by Apple (still shipped, and what every peer uses); a future macOS may drop it"},
	}
	if pol != nil && pol.Net.AllowLocalBinding {
		out = append(out, enforce.Skip{Protection: enforce.ProtectionNetworkLoopback, Reason: "allowLocalBinding opens every loopback port of the host to the command, not only its own servers (needs best effort)"})
	}
	return out
}

// Describe resolves a policy as a run would (Survey, then Generate with
// the ports shown as ShownHTTPPort and ShownSOCKSPort), without running
// anything, and says what macOS enforces of it.
func Describe(pol *policy.Policy) (*enforce.Description, error) {
	p, err := ShowProfile(pol)
	if err != nil {
		return nil, err
	}
	d := &enforce.Description{Tier: "seatbelt (sandbox-exec)", Notes: p.Notes}
	for _, pr := range p.Protected {
		d.Protected = append(d.Protected, pr.Path)
	}
	add := func(part string, ok bool, by, note string) {
		d.Mechanisms = append(d.Mechanisms, enforce.Mechanism{Part: part, Enforced: ok, By: by, Note: note})
	}
	add("filesystem: reads everywhere but denyRead", true, "Seatbelt file-read* rules, the most specific deciding", strconv.Itoa(len(pol.FS.DenyRead))+" denyRead, "+strconv.Itoa(len(pol.FS.AllowRead))+" allowRead")
	add("filesystem: writes only in writable trees", true, "Seatbelt file-write* rules", strconv.Itoa(len(pol.FS.AllowWrite))+" allowWrite, a private TMPDIR")
	add("filesystem: mandatory protections", true, "Seatbelt deny rules, no placeholder files", strconv.Itoa(len(p.Protected))+" paths")
	add("filesystem: renaming what holds a protected path", true, "Seatbelt file-write-unlink and file-write-create on its ancestors", "")
	add("private /tmp", false, "a private TMPDIR instead", "no mount namespace on macOS")
	netNote := "no destination allowed: the proxy refuses every request (and reports it)"
	if pol.Net.WantsNetwork() {
		netNote = fmt.Sprintf("%d allowed, %d denied entries, decided by the proxy", len(pol.Net.AllowedDomains), len(pol.Net.DeniedDomains))
	}
	if pol.Net.HTTPProxyPort != 0 || pol.Net.SOCKSProxyPort != 0 {
		netNote = "the external proxy on the host's loopback (httpProxyPort/socksProxyPort) is the route: that proxy filters"
	}
	add("network: only through the proxy", true, "Seatbelt network-outbound to the proxy's loopback ports only; no DNS resolver reachable", netNote)
	add("network namespace", false, "Seatbelt's per-connection filter instead", "the command shares the host's network stack")
	unixNote := "connect and bind refused"
	switch {
	case pol.Net.AllowAllUnixSockets:
		unixNote = "all allowed (allowAllUnixSockets)"
	case len(pol.Net.AllowUnixSockets) > 0:
		unixNote = strconv.Itoa(len(pol.Net.AllowUnixSockets)) + " paths may be connected to"
	}
	add("unix sockets", true, "Seatbelt network-outbound/bind by path", unixNote)
	bindNote := "refused"
	if pol.Net.AllowLocalBinding {
		bindNote = "loopback only; the host's other loopback services become reachable too"
	}
	add("listening (allowLocalBinding)", true, "Seatbelt network-bind/inbound", bindNote)
	add("processes: signals and inspection", true, "Seatbelt (target same-sandbox)", "")
	add("process isolation (pid namespace)", false, "-", "other processes' existence is visible")
	add("process tree ended with the command", false, "session process group kill + marker sweep", "best effort: see moat doctor")
	add("syscall filter (seccomp)", false, "Seatbelt operations only", "")
	d.Mechanisms = append(d.Mechanisms, limitMechanisms(pol)...)
	viol := "the sandbox's log, read with log stream by the run's tag"
	add("violations", pol.Violations, viol, "file and network denials; a second of delay; needs permission to read the log")
	for _, s := range Limits(pol) {
		if s.Protection == enforce.ProtectionSandboxExec {
			d.Notes = append(d.Notes, s.Reason)
		}
	}
	d.Notes = append(d.Notes, "the macOS runner has never run on a Mac: the profile is checked by tests on Linux only (docs/MACOS.md)")
	return d, nil
}

// ShowProfile generates the profile moat policy --seatbelt shows: the disk
// surveyed here, the proxy's ports shown as ShownHTTPPort and
// ShownSOCKSPort, a fixed tag, paths resolved with Canonical (on a system
// other than macOS, as the Mac's root symlinks would resolve them).
func ShowProfile(pol *policy.Policy) (*Profile, error) {
	if pol == nil {
		return nil, fmt.Errorf("darwin: nil policy")
	}
	prot, err := Survey(pol, SurveyOptions{})
	if err != nil {
		return nil, err
	}
	if exe, err := os.Executable(); err == nil {
		prot = append(prot, Protection{Path: exe, Why: "moat: its own binary is never writable"})
	}
	http, socks := ShownHTTPPort, ShownSOCKSPort
	if pol.Net.HTTPProxyPort != 0 || pol.Net.SOCKSProxyPort != 0 {
		http, socks = 0, 0
	}
	return Generate(pol, Options{Tag: "moat_policy_shown_sbx", HTTPProxyPort: http, SOCKSProxyPort: socks, Protect: prot})
}

// Document is the profile for a reader: the text, then the sandbox-exec
// arguments that define its parameters (each value quoted).
func (p *Profile) Document() string {
	var b strings.Builder
	b.WriteString(p.Text)
	b.WriteString("\n;; sandbox-exec arguments after the profile:\n")
	for _, pa := range p.Params {
		b.WriteString(";;   -D " + strconv.Quote(pa.Arg()) + "\n")
	}
	return b.String()
}
