//go:build linux

package linux

import (
	"os"
	"path/filepath"
	"sort"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// The no-namespace tier. Where this user cannot create a user namespace
// (Docker's default seccomp profile refuses CLONE_NEWUSER, Ubuntu's AppArmor
// restriction, a sysctl), moat refuses to run, unless best effort is on.
// Then it runs the command with what needs no namespace: Landlock (writes
// only in the writable trees and the run's own temporary directory; reads of
// denyRead refused by granting reads on everything else; TCP only to moat's
// proxy, ABI 4), seccomp, no_new_privs, no capabilities, and an init that
// is a subreaper and kills every descendant at the end. What that cannot
// give is reported as skipped.

// noNSSkipped says what the no-namespace tier does not enforce.
func noNSSkipped(pol *policy.Policy, abi int, ebpf bool, protected []string) []enforce.Skip {
	out := []enforce.Skip{
		{Protection: enforce.ProtectionNamespaces, Reason: "this system refuses user namespaces: the command shares the host's mount, pid, network, ipc and uts namespaces"},
		{Protection: enforce.ProtectionPrivateTmp, Reason: "the command gets a directory of its own in the host's /tmp (TMPDIR)"},
		{Protection: enforce.ProtectionProcessIsolation, Reason: "the command sees the host's processes in /proc (ptrace and process_vm are still refused by seccomp)"},
	}
	if len(protected) > 0 {
		sort.Strings(protected)
		out = append(out, enforce.Skip{Protection: enforce.ProtectionMandatory, Reason: "mandatory protections and denyWrite inside writable paths (Landlock cannot carve them out; the git audit still runs after the command): " + strings.Join(protected, ", ")})
	}
	if len(pol.FS.DenyRead) > 0 && abi > 0 {
		out = append(out, enforce.Skip{Protection: enforce.ProtectionHiddenListing, Reason: "hidden directories can still be listed (their files cannot be read); files created later next to a hidden path cannot be read"})
	}
	switch {
	case ebpf:
		// The cgroup's eBPF programs confine every protocol, as usual.
	case abi < 4:
		out = append(out, enforce.Skip{Protection: enforce.ProtectionNetwork, Reason: "network confinement (Landlock ABI < 4): the command reaches the network directly"})
	default:
		out = append(out, enforce.Skip{Protection: enforce.ProtectionNetworkUDP, Reason: "UDP and non-TCP protocols (Landlock confines TCP only): DNS and UDP reach the network directly; TCP reaches any host on the proxy's two ports (Landlock confines TCP by port, not by address)"})
	}

	if abi < 6 {
		out = append(out, enforce.Skip{Protection: enforce.ProtectionLandlockScoping, Reason: "signals and abstract unix sockets of host processes (Landlock ABI < 6)"})
	}
	return out
}

// nonsDevs are the nodes of the host's /dev a command reads in the
// no-namespace tier (the rest of /dev is hidden: see landlock).
var nonsDevs = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}

// nonsReadView is v with the host's /dev hidden but for nonsDevs.
func nonsReadView(v *view) *view {
	c := *v
	c.denyRead = append(append([]rule(nil), v.denyRead...), rule{path: "/dev", source: "the host's /dev (no mount namespace)"})
	c.allowRead = append([]rule(nil), v.allowRead...)
	for _, d := range nonsDevs {
		c.allowRead = append(c.allowRead, rule{path: d, source: "a harmless device"})
	}
	return &c
}

// sameAsKept reports whether dir's entry name is, under another spelling,
// one of the entries kept from the grants (hidden, or on the way to a
// hidden path): in a case-folding directory (ext4's +F) a rule for
// "Secrets" names the entry listed as "secrets", and the grant on that
// entry, by its inode, read the hidden path under both names (attack pass
// 84; the kernel here has no case folding, a hard link stands in for the
// second name in TestReadRulesOtherSpelling). Only names equal but for
// case are looked at (Unicode's simple folding: ext4 also normalizes,
// and folds "ß" as "ss", which are not), and the two must be one file.
func sameAsKept(dir, name string, kept []string) bool {
	for _, k := range kept {
		if k == name || !strings.EqualFold(k, name) {
			continue
		}
		var a, b unix.Stat_t
		if unix.Lstat(filepath.Join(dir, name), &a) == nil && unix.Lstat(filepath.Join(dir, k), &b) == nil &&
			a.Dev == b.Dev && a.Ino == b.Ino {
			return true
		}
	}
	return false
}

// readRules computes Landlock read rules that hide denyRead without a mount
// namespace: Landlock only grants, so every entry along the way to a hidden
// path is granted except the hidden one. Ancestors get READ_DIR (they can be
// listed), siblings READ_FILE|READ_DIR; allowRead paths inside hidden
// regions are granted again.
func readRules(v *view) (dirs []string, trees []string) {
	var hidden []string
	for _, r := range v.denyRead {
		if ok, _ := v.readable(r.path); ok {
			continue // re-allowed
		}
		if lstatKind(r.path) == 0 {
			continue
		}
		hidden = append(hidden, r.path)
	}
	if len(hidden) == 0 {
		return nil, nil
	}
	onPath := map[string]bool{} // ancestors of hidden paths
	isHidden := map[string]bool{}
	kept := map[string][]string{} // a directory's entries hidden or on the way to one
	for _, h := range hidden {
		isHidden[h] = true
		kept[filepath.Dir(h)] = append(kept[filepath.Dir(h)], filepath.Base(h))
		for d := filepath.Dir(h); ; d = filepath.Dir(d) {
			if !onPath[d] && d != "/" {
				kept[filepath.Dir(d)] = append(kept[filepath.Dir(d)], filepath.Base(d))
			}
			onPath[d] = true
			if d == "/" {
				break
			}
		}
	}
	seen := map[string]bool{}
	for a := range onPath {
		dirs = append(dirs, a)
		es, err := os.ReadDir(a)
		if err != nil {
			continue
		}
		for _, e := range es {
			p := filepath.Join(a, e.Name())
			if onPath[p] || isHidden[p] || seen[p] || sameAsKept(a, e.Name(), kept[a]) {
				continue
			}
			if r, ok := closest(p, v.denyRead); ok && len(r.path) >= 1 && within(p, r.path) {
				if ok, _ := v.readable(p); !ok {
					continue
				}
			}
			seen[p] = true
			trees = append(trees, p)
		}
	}
	for _, r := range v.allowRead {
		if lstatKind(r.path) != 0 && !seen[r.path] {
			for _, h := range hidden {
				if within(r.path, h) {
					trees = append(trees, r.path)
					seen[r.path] = true
					break
				}
			}
		}
	}
	sort.Strings(dirs)
	sort.Strings(trees)
	return dirs, trees
}
