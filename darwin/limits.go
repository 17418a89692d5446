package darwin

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// Resource limits on macOS. There are no cgroups, and RLIMIT_NPROC counts
// every process of the user on the host, so nothing holds the memory, the
// process count or the CPU rate of a process tree. What an rlimit holds
// per process, macOS has: RLIMIT_FSIZE (moat.limits.fileSize) and
// RLIMIT_CPU (moat.limits.cpuTime), set by moat's own binary just before it
// becomes sandbox-exec (Reexec), and inherited by everything the command
// starts.
//
// A limit the policy sets and macOS cannot hold is refused (an
// *enforce.UnsupportedFeatureError) unless best effort, which runs without
// it and reports it. A default limit (the laptop defaults of
// runtime/policy, which the user did not ask for) that macOS cannot hold
// is reported on every run, never refused; setting it to -1 (unlimited)
// says the user accepts that, and silences the report.

// unheldLimit is one limit macOS cannot hold.
type unheldLimit struct {
	setting string             // moat.limits.memory
	skip    enforce.Protection // what the Skip names
	value   int64              // the policy's value: 0 default, -1 unlimited, >0 set
	why     string
}

func unheldLimits(l policy.Limits) []unheldLimit {
	return []unheldLimit{
		{"moat.limits.memory", enforce.ProtectionLimitMemory, l.Memory, "macOS has no cgroups, and RLIMIT_DATA does not bound what malloc maps"},
		{"moat.limits.pids", enforce.ProtectionLimitPids, l.Pids, "macOS has no cgroups, and RLIMIT_NPROC would count every process of this user on the host"},
		{"moat.limits.cpu", enforce.ProtectionLimitCPU, l.CPU, "only a cgroup throttles a CPU rate, and macOS has none"},
	}
}

// Unenforced returns what the policy asks for that macOS does not give,
// beyond the platform's standing limits (Limits): an error for what the
// policy sets explicitly, unless best effort, and a Skip for the rest.
// Start calls it first; a run reports the Skips in Result.Skipped.
func Unenforced(pol *policy.Policy) ([]enforce.Skip, error) {
	var out []enforce.Skip
	var defaults []string
	for _, u := range unheldLimits(pol.Limits) {
		switch {
		case u.value == policy.Unlimited:
		case u.value == 0:
			if u.setting != "moat.limits.cpu" { // the CPU rate has no default
				defaults = append(defaults, u.setting)
			}
		case !pol.BestEffort:
			return nil, &enforce.UnsupportedFeatureError{
				Feature: u.setting + " on macOS",
				Need:    u.why + ": drop it (or set it to -1), or run with best effort to run without it",
			}
		default:
			out = append(out, enforce.Skip{Protection: u.skip, Reason: u.setting + " (" + u.why + ")"})
		}
	}
	if len(defaults) > 0 {
		out = append(out, enforce.Skip{
			Protection: enforce.ProtectionLimitsDefault,
			Reason:     "the default " + strings.Join(defaults, " and ") + ": macOS has no cgroups to hold a process tree's memory or process count; set them to -1 (unlimited) to accept that",
		})
	}
	if pol.Net.AllowLocalBinding && pol.Net.LocalBindingByProject {
		return nil, fmt.Errorf("allowLocalBinding comes from the project's settings, and on macOS the sandbox shares the host's network: a repository's server would listen on the host's ports; set it in your own settings (~/.claude/settings.json) or pass --settings")
	}
	if pol.Net.AllowLocalBinding && pol.BestEffort {
		out = append(out, enforce.Skip{Protection: enforce.ProtectionNetworkLoopback, Reason: "allowLocalBinding opens every loopback port of the host to the command, not only its own servers"})
	}
	return out, nil
}

// rlimits are the per-process limits a run sets on macOS: the file size
// and the CPU time, resolved as on Linux (the default file size when the
// policy names none; 0 for none).
type rlimits struct {
	FileSize int64 // bytes (RLIMIT_FSIZE)
	CPUSecs  int64 // seconds (RLIMIT_CPU soft; the hard limit is one more)
}

func runRlimits(l policy.Limits) rlimits {
	eff := l.Effective(0) // the memory default does not matter here
	r := rlimits{FileSize: eff.FileSize}
	if eff.CPUTime > 0 {
		r.CPUSecs = int64((eff.CPUTime + time.Second - 1) / time.Second)
	}
	return r
}

// limitMechanisms says what holds each limit on macOS, for Describe.
func limitMechanisms(pol *policy.Policy) []enforce.Mechanism {
	var out []enforce.Mechanism
	add := func(part string, ok bool, by, note string) {
		out = append(out, enforce.Mechanism{Part: part, Enforced: ok, By: by, Note: note})
	}
	if d := pol.Limits.Timeout; d > 0 {
		add("limit: timeout", true, "moat kills the session's process group, then the run's marked processes", d.String())
	}
	for _, u := range unheldLimits(pol.Limits) {
		switch {
		case u.value == policy.Unlimited || (u.value == 0 && u.setting == "moat.limits.cpu"):
			add("limit: "+strings.TrimPrefix(u.setting, "moat.limits."), false, "-", "none asked")
		case u.value == 0:
			add("limit: "+strings.TrimPrefix(u.setting, "moat.limits."), false, "-", "the default is not held: "+u.why)
		case pol.BestEffort:
			add("limit: "+strings.TrimPrefix(u.setting, "moat.limits."), false, "-", "best effort: runs without it ("+u.why+")")
		default:
			add("limit: "+strings.TrimPrefix(u.setting, "moat.limits."), false, "-", "moat refuses to run: "+u.why+" (best effort runs without it)")
		}
	}
	r := runRlimits(pol.Limits)
	if r.FileSize > 0 {
		add("limit: fileSize", true, "RLIMIT_FSIZE (per process, inherited)", strconv.FormatInt(r.FileSize, 10)+" bytes per file; a writer past it gets SIGXFSZ (not reported)")
	}
	if r.CPUSecs > 0 {
		add("limit: cpuTime", true, "RLIMIT_CPU (per process, inherited)", fmt.Sprintf("%ds; the process gets SIGXCPU (not reported)", r.CPUSecs))
	}
	return out
}
