package policy

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"
)

// Policy is what a sandboxed command may do. It is plain data, built
// deterministically from settings (package runtime/settings) and read by every
// enforcer (linux/, darwin/, netproxy/). Paths are absolute and cleaned by the
// time a Policy exists; host-dependent choices (kernel features) are made when
// a platform package applies it, never here.
type Policy struct {
	// Cwd is the working directory the command starts in (absolute).
	Cwd string `json:"cwd"`
	// Home is the home directory paths such as ~/.ssh were resolved against.
	Home string `json:"home"`

	FS     FS      `json:"filesystem"`
	Net    Network `json:"network"`
	Env    Env     `json:"env"`
	Limits Limits  `json:"limits"`
	// ToolCache is the directory that tool caches (Go's build and module
	// caches, npm's, pip's, ...) point to inside the sandbox, writable
	// there; empty: none (moat.toolCache). Never one the host's own tools
	// use, unless the user named it: a cache a sandbox can write is one it
	// can poison.
	ToolCache   string      `json:"toolCache,omitempty"`
	Sandbox     Switches    `json:"sandbox"`
	Permissions Permissions `json:"permissions"`

	// BestEffort runs with what can be enforced and reports what was skipped,
	// instead of refusing to run.
	BestEffort bool `json:"bestEffort"`
	// MinimumTier is the weakest tier moat may fall back to with best
	// effort ("full", "host-proc", "no-namespace"; empty: any). Below it
	// moat refuses to run. Every settings layer can raise it, none lower
	// it (managed settings set the floor).
	MinimumTier string `json:"minimumTier,omitempty"`
	// Violations enables the file-write violation observer (on by default).
	Violations bool `json:"violations"`
	// IgnoreViolations suppresses violation lines: the key "*" applies to
	// every command, any other key to commands containing it; the values
	// are substrings of the lines to drop (srt's ignoreViolations).
	IgnoreViolations map[string][]string `json:"ignoreViolations,omitempty"`

	// Sources lists the settings files the policy was built from, highest
	// precedence first.
	Sources []string `json:"sources"`
	// Protect lists files moat itself depends on (its binary, the settings
	// files it read, its state directory) that must never be writable from
	// inside the sandbox.
	Protect []string `json:"protect,omitempty"`
	// Notes are what the user should know about how the settings were
	// read (a rule that ".." takes outside the folder it names, a whole
	// home directory made writable), shown by moat once per run.
	Notes []string `json:"notes,omitempty"`
}

// PathRule is one filesystem rule.
type PathRule struct {
	// Path is absolute and cleaned. When Glob is set it holds glob
	// metacharacters (*, **, ?, [...]) to be expanded against the disk.
	Path string `json:"path"`
	Glob bool   `json:"glob,omitempty"`
	// Source names where the rule came from: "FILE: field[i]" or "default".
	Source string `json:"source,omitempty"`
}

func (r PathRule) String() string { return r.Path }

// FS holds the filesystem rules. Reads are allowed everywhere except DenyRead
// (AllowRead re-allows inside a denied region, a more specific DenyRead wins
// again). Writes are denied everywhere except AllowWrite, minus DenyWrite and
// the mandatory protections (see MandatoryNames).
type FS struct {
	AllowRead  []PathRule `json:"allowRead"`
	DenyRead   []PathRule `json:"denyRead"`
	AllowWrite []PathRule `json:"allowWrite"`
	DenyWrite  []PathRule `json:"denyWrite"`

	// AllowGitConfig lets the command write .git/config (hooks stay denied).
	AllowGitConfig bool `json:"allowGitConfig"`
	// Disabled turns all filesystem rules off, mandatory protections included
	// (the srt "filesystem.disabled" switch).
	Disabled bool `json:"disabled,omitempty"`
	// MandatoryDenySearchDepth bounds the search for git repositories and
	// dangerous files under the writable paths (1..10, default 3).
	MandatoryDenySearchDepth int `json:"mandatoryDenySearchDepth"`
	// WeakerNested allows the weaker nested mode (host /proc instead of a new
	// one) where a new procfs cannot be mounted (unprivileged containers).
	WeakerNested bool `json:"enableWeakerNestedSandbox,omitempty"`
}

// DefaultSearchDepth is the default depth of the mandatory-deny search.
const DefaultSearchDepth = 3

// DomainRule is one network allow or deny entry, validated but uncanonicalised.
type DomainRule struct {
	Pattern string `json:"pattern"`
	Source  string `json:"source,omitempty"`
	// Reason is shown to the command (403 body, violation line) for denials.
	Reason string `json:"reason,omitempty"`
	// Managed marks entries from managed (administrator) settings.
	Managed bool `json:"managed,omitempty"`
}

// Network holds the network rules. An empty AllowedDomains means no network.
type Network struct {
	AllowedDomains []DomainRule `json:"allowedDomains"`
	DeniedDomains  []DomainRule `json:"deniedDomains"`
	// StrictAllowlist never asks about hosts on neither list.
	StrictAllowlist bool `json:"strictAllowlist,omitempty"`
	// DeniedResolvedAddresses are CIDRs an allowed name must not resolve to.
	DeniedResolvedAddresses []string `json:"deniedResolvedAddresses,omitempty"`
	// AllowUnixSockets lists unix socket paths the command may connect to.
	AllowUnixSockets []PathRule `json:"allowUnixSockets,omitempty"`
	// AllowAllUnixSockets lifts the AF_UNIX block entirely.
	AllowAllUnixSockets bool `json:"allowAllUnixSockets,omitempty"`
	// AllowLocalBinding lets servers inside the sandbox listen on loopback.
	AllowLocalBinding bool `json:"allowLocalBinding,omitempty"`
	// LocalBindingByProject: AllowLocalBinding came from a project's
	// settings file. Harmless in the sandbox's own network namespace, it
	// would let a repository's servers listen on the host's ports where
	// the host's network is shared (the no-namespace tier, shareNetwork,
	// macOS), and is refused there.
	LocalBindingByProject bool `json:"localBindingByProject,omitempty"`
	// HTTPProxyPort and SOCKSProxyPort name an external filtering proxy.
	HTTPProxyPort  int `json:"httpProxyPort,omitempty"`
	SOCKSProxyPort int `json:"socksProxyPort,omitempty"`
	// ParentProxy is an upstream proxy for moat's own outbound traffic.
	ParentProxy *ParentProxy `json:"parentProxy,omitempty"`
	// AllowManagedDomainsOnly: only managed AllowedDomains count.
	AllowManagedDomainsOnly bool `json:"allowManagedDomainsOnly,omitempty"`
	// Shared runs the command in the host's network namespace (moat's own
	// setting, for hosts where a network namespace cannot be used): root
	// only, enforced by eBPF, with a per-run credential on the proxy.
	Shared bool `json:"shared,omitempty"`
}

// ParentProxy is an upstream proxy.
type ParentProxy struct {
	HTTP    string   `json:"http,omitempty"`
	HTTPS   string   `json:"https,omitempty"`
	NoProxy []string `json:"noProxy,omitempty"`
}

// Restricted reports whether the network is limited to a list (always true
// for moat: there is no "unrestricted" network mode).
func (n Network) Restricted() bool { return true }

// WantsNetwork reports whether the policy allows any destination at all.
func (n Network) WantsNetwork() bool {
	return len(n.AllowedDomains) > 0 || n.HTTPProxyPort != 0 || n.SOCKSProxyPort != 0
}

// Env controls the command's environment.
type Env struct {
	// Allow names credential-looking variables that may pass through.
	Allow []string `json:"allow,omitempty"`
	// Set adds or replaces variables.
	Set map[string]string `json:"set,omitempty"`
	// GitSafeDirectories are passed to git as safe.directory entries.
	GitSafeDirectories []string `json:"gitSafeDirectories,omitempty"`
}

// Limits bound the command's resources (each command of a session on its
// own). For Memory, Pids, CPU and FileSize, 0 means the default and
// Unlimited (-1) no limit; Effective resolves them.
type Limits struct {
	// Timeout ends the whole process tree when it runs out.
	Timeout time.Duration `json:"timeout,omitempty"`
	// Memory caps the memory of the process tree, in bytes (a cgroup's
	// memory.max, swap included; without a cgroup, each process's data
	// segment: RLIMIT_DATA).
	Memory int64 `json:"memory,omitempty"`
	// Pids caps the number of processes and threads of the tree (a cgroup's
	// pids.max; without one, RLIMIT_NPROC in the sandbox's user namespace).
	Pids int64 `json:"pids,omitempty"`
	// CPU caps the tree's CPU rate, in thousandths of a CPU (1500: one and a
	// half CPUs); only a cgroup can throttle a rate.
	CPU int64 `json:"cpu,omitempty"`
	// FileSize caps the size of any file a process writes, in bytes
	// (RLIMIT_FSIZE: a write past it fails and the process gets SIGXFSZ).
	FileSize int64 `json:"fileSize,omitempty"`
	// CPUTime caps the CPU time each process may use (RLIMIT_CPU: SIGXCPU
	// at the limit, SIGKILL a second later); 0: none. It needs no cgroup.
	CPUTime time.Duration `json:"cpuTime,omitempty"`
}

// Unlimited is the value of a limit the settings turned off.
const Unlimited = -1

// Default limits, for a laptop: the memory of half the machine (at most
// 16 GiB), 4096 processes, files up to 16 GiB, no CPU cap.
const (
	DefaultPids     = 4096
	DefaultFileSize = 16 << 30
	MaxDefaultMem   = 16 << 30
)

// Effective resolves the defaults for a machine with totalMemory bytes of
// RAM: each limit is then a positive value, or 0 for none.
func (l Limits) Effective(totalMemory int64) Limits {
	pick := func(v, def int64) int64 {
		switch {
		case v == Unlimited:
			return 0
		case v == 0:
			return def
		}
		return v
	}
	mem := totalMemory / 2 &^ (1<<20 - 1) // whole MiB
	if mem > MaxDefaultMem || mem <= 0 {
		mem = MaxDefaultMem
	}
	l.Memory = pick(l.Memory, mem)
	l.Pids = pick(l.Pids, DefaultPids)
	l.CPU = pick(l.CPU, 0)
	l.FileSize = pick(l.FileSize, DefaultFileSize)
	return l
}

// Switches are the agent host's sandbox switches (Claude Code's sandbox.*).
type Switches struct {
	// Enabled is nil when no settings file says.
	Enabled                   *bool    `json:"enabled,omitempty"`
	AutoAllowBashIfSandboxed  bool     `json:"autoAllowBashIfSandboxed,omitempty"`
	ExcludedCommands          []string `json:"excludedCommands,omitempty"`
	AllowUnsandboxedCommands  *bool    `json:"allowUnsandboxedCommands,omitempty"`
	FailIfUnavailable         *bool    `json:"failIfUnavailable,omitempty"`
	AllowManagedReadPathsOnly bool     `json:"allowManagedReadPathsOnly,omitempty"`
}

// Rule is one permission rule string in the settings syntax, e.g.
// "Bash(npm run:*)", with where it came from.
type Rule struct {
	Rule   string `json:"rule"`
	Source string `json:"source,omitempty"`
	// Dir is the directory of the settings file that holds the rule (for
	// path forms such as Read(/x) that are relative to it).
	Dir string `json:"-"`
}

// Permissions are the permission rules (Claude Code's permissions.*).
type Permissions struct {
	Allow       []Rule `json:"allow,omitempty"`
	Ask         []Rule `json:"ask,omitempty"`
	Deny        []Rule `json:"deny,omitempty"`
	DefaultMode string `json:"defaultMode,omitempty"`
	// DisableBypass is permissions.disableBypassPermissionsMode: "disable"
	// in any settings file: bypassPermissions may not be asked for (a
	// request for it is an error) nor be the default.
	DisableBypass         bool       `json:"disableBypassPermissionsMode,omitempty"`
	AdditionalDirectories []PathRule `json:"additionalDirectories,omitempty"`
}

// Modes are the permission modes.
var Modes = []string{"default", "acceptEdits", "plan", "bypassPermissions"}

// CheckMode is the error for a permission mode a request asks for, nil
// when perms let it be used: m is "" (the default) or names a mode, and is
// not bypassPermissions where permissions.disableBypassPermissionsMode
// forbids it.
func (perms Permissions) CheckMode(m string) error {
	switch {
	case m == "":
		return nil
	case !ValidMode(m):
		return fmt.Errorf("unknown mode %q (want one of %s)", m, strings.Join(Modes, ", "))
	case m == "bypassPermissions" && perms.DisableBypass:
		return errors.New("bypassPermissions mode is disabled by the settings (permissions.disableBypassPermissionsMode: \"disable\")")
	}
	return nil
}

// ValidMode reports whether m names a permission mode.
func ValidMode(m string) bool {
	for _, x := range Modes {
		if x == m {
			return true
		}
	}
	return false
}

// ErrInvalid is wrapped by every validation error.
var ErrInvalid = errors.New("invalid policy")

// FieldError is a validation error for one field.
type FieldError struct {
	Field  string
	Reason string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Reason }
func (e *FieldError) Unwrap() error { return ErrInvalid }

// Validate checks the invariants every enforcer relies on.
func (p *Policy) Validate() error {
	var errs []error
	bad := func(field, format string, a ...any) {
		errs = append(errs, &FieldError{Field: field, Reason: fmt.Sprintf(format, a...)})
	}
	if !filepath.IsAbs(p.Cwd) {
		bad("cwd", "%q is not absolute", p.Cwd)
	}
	if p.MinimumTier != "" && TierRank(p.MinimumTier) < 0 {
		bad("moat.minimumTier", "unknown tier %q (want %s)", p.MinimumTier, strings.Join(Tiers, ", "))
	} else if p.FS.WeakerNested && TierRank(p.MinimumTier) > TierRank("host-proc") {
		bad("moat.minimumTier", "enableWeakerNestedSandbox shows the host's /proc (tier host-proc), below the minimum tier %q", p.MinimumTier)
	}
	if p.ToolCache != "" {
		if err := CheckPath(p.ToolCache); err != nil {
			bad("moat.toolCache", "%v", err)
		} else if p.ToolCache == "/" {
			bad("moat.toolCache", "the root directory cannot be a cache")
		}
	}
	check := func(name string, rs []PathRule) {
		for i, r := range rs {
			f := fmt.Sprintf("%s[%d]", name, i)
			if r.Source != "" {
				f = r.Source
			}
			if err := CheckPath(r.Path); err != nil {
				bad(f, "%v", err)
			}
		}
	}
	check("filesystem.allowRead", p.FS.AllowRead)
	check("filesystem.denyRead", p.FS.DenyRead)
	check("filesystem.allowWrite", p.FS.AllowWrite)
	check("filesystem.denyWrite", p.FS.DenyWrite)
	check("network.allowUnixSockets", p.Net.AllowUnixSockets)
	check("permissions.additionalDirectories", p.Permissions.AdditionalDirectories)
	if d := p.FS.MandatoryDenySearchDepth; d < 1 || d > 10 {
		bad("mandatoryDenySearchDepth", "%d is outside 1..10", d)
	}
	if p.Limits.Timeout < 0 {
		bad("moat.timeout", "negative duration %v", p.Limits.Timeout)
	}
	if c := p.Limits.CPUTime; c < 0 || (c > 0 && c < time.Second) {
		bad("moat.limits.cpuTime", "%v: the CPU time limit counts whole seconds (at least 1s)", c)
	}
	for _, l := range []struct {
		name string
		v    int64
		min  int64
	}{{"moat.limits.memory", p.Limits.Memory, 8 << 20}, {"moat.limits.pids", p.Limits.Pids, 8}, {"moat.limits.cpu", p.Limits.CPU, 10}, {"moat.limits.fileSize", p.Limits.FileSize, 4096}} {
		if l.v < Unlimited || (l.v > 0 && l.v < l.min) {
			bad(l.name, "%d is below the smallest limit moat accepts (%d): no command could run", l.v, l.min)
		}
	}
	if m := p.Permissions.DefaultMode; m != "" {
		if err := p.Permissions.CheckMode(m); err != nil {
			bad("permissions.defaultMode", "%v", err)
		}
	}
	return errors.Join(errs...)
}

// CheckPath validates one resolved rule path.
func CheckPath(p string) error {
	switch {
	case p == "":
		return errors.New("empty path")
	case strings.ContainsRune(p, 0):
		return errors.New("path contains a NUL byte")
	case strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return fmt.Errorf("path %q contains a control character (a newline, a tab, ...)", p)
	case UnsafeChar(p) >= 0:
		i := UnsafeChar(p)
		return fmt.Errorf("path %q contains %s: a path with one cannot be shown or recorded safely", p, UnsafeCharName(p, i))
	case !filepath.IsAbs(p):
		return fmt.Errorf("path %q is not absolute", p)
	case filepath.Clean(p) != p:
		return fmt.Errorf("path %q is not clean", p)
	}
	return nil
}

// UnsafeChar is the byte offset of the first character of s that a path
// may not hold, or -1: a control character (C0, DEL, C1: U+0085 is a line
// break), a Unicode line or paragraph separator (U+2028, U+2029: a new line
// to many terminals and editors, and to JavaScript), or a bidirectional
// control (U+202A-U+202E, U+2066-U+2069, and the marks U+200E, U+200F,
// U+061C), which reorders what is shown after it (a path printed as
// /home/u/txt.exe may be another). moat prints and records paths: such a
// path cannot be shown or recorded safely.
func UnsafeChar(s string) int {
	return strings.IndexFunc(s, unsafeRune)
}

func unsafeRune(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r == 0x2028, r == 0x2029:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f, r == 0x061c:
		return true
	}
	return false
}

// UnsafeCharName names the character at byte i of s (UnsafeChar's).
func UnsafeCharName(s string, i int) string {
	r, _ := utf8.DecodeRuneInString(s[i:])
	switch {
	case r < 0x20 || r >= 0x7f && r <= 0x9f:
		return fmt.Sprintf("a control character (%U at byte %d)", r, i)
	case r == 0x2028:
		return fmt.Sprintf("the Unicode line separator (U+2028 at byte %d)", i)
	case r == 0x2029:
		return fmt.Sprintf("the Unicode paragraph separator (U+2029 at byte %d)", i)
	}
	return fmt.Sprintf("a bidirectional text control (%U at byte %d)", r, i)
}

// HasGlob reports whether s holds glob metacharacters.
func HasGlob(s string) bool { return strings.ContainsAny(s, "*?[") }

// Tiers are the sandbox's tiers from the weakest: no namespaces at all
// (Landlock, seccomp), the host's /proc shown (enableWeakerNestedSandbox,
// or a container that refuses a new procfs), every layer. They are the
// names of enforce.Mode.
var Tiers = []string{"no-namespace", "host-proc", "full"}

// TierRank orders tiers (higher is stronger); -1 for an unknown name, 0 for
// "" (no minimum).
func TierRank(tier string) int {
	if tier == "" {
		return 0
	}
	for i, t := range Tiers {
		if t == tier {
			return i
		}
	}
	return -1
}
