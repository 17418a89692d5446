package settings

import (
	"fmt"
	"net"
	"strings"

	"github.com/moat-sandbox/moat/runtime/policy"
)

// notSupported is the reason given for srt features moat does not implement:
// they are protections (or protection-changing features) the user asked for,
// so ignoring them silently would be a downgrade.
const notSupported = "not supported by moat yet; remove it, or use srt for this feature"

// decodeSRT reads the npm sandbox runtime's settings format.
func decodeSRT(o *object, r resolver) (*layer, error) {
	l := &layer{}
	if err := o.require("network", "object"); err != nil {
		return nil, err
	}
	if err := o.require("filesystem", "object"); err != nil {
		return nil, err
	}
	net, _, err := o.obj("network")
	if err != nil {
		return nil, err
	}
	if net == nil {
		return nil, o.errf("network", "want an object, got null")
	}
	if err := decodeSRTNetwork(net, r, l); err != nil {
		return nil, err
	}
	fs, _, err := o.obj("filesystem")
	if err != nil {
		return nil, err
	}
	if fs == nil {
		return nil, o.errf("filesystem", "want an object, got null")
	}
	if err := decodeSRTFilesystem(fs, r, l); err != nil {
		return nil, err
	}
	if o.has("credentials") {
		return nil, o.errf("credentials", notSupported)
	}
	if l.ignoreViolations, err = o.stringListMap("ignoreViolations"); err != nil {
		return nil, err
	}
	if l.weakerNested, err = o.boolean("enableWeakerNestedSandbox"); err != nil {
		return nil, err
	}
	if l.searchDepth, err = o.integer("mandatoryDenySearchDepth", 1, 10); err != nil {
		return nil, err
	}
	// macOS-only switches: they loosen the macOS profile; on Linux there is
	// nothing to loosen. Type-checked, then not used here.
	for _, k := range []string{"enableWeakerNetworkIsolation", "allowAppleEvents", "allowPty"} {
		if _, err := o.boolean(k); err != nil {
			return nil, err
		}
	}
	if g, ok, err := o.obj("git"); err != nil {
		return nil, err
	} else if ok {
		if l.safeDirs, _, err = g.strs("safeDirectories"); err != nil {
			return nil, err
		}
		if err := g.unknown(); err != nil {
			return nil, err
		}
	}
	if err := decodeMoat(o, l); err != nil {
		return nil, err
	}
	// Implementation details of srt itself (its helper binaries, its
	// ripgrep, Windows), meaningless to moat.
	return l, o.unknown("ripgrep", "seccomp", "bwrapPath", "socatPath", "javaAgentJarPath", "windows")
}

func decodeSRTNetwork(o *object, r resolver, l *layer) error {
	for _, k := range []string{"allowedDomains", "deniedDomains"} {
		if err := o.require(k, "array"); err != nil {
			return err
		}
	}
	allowed, _, err := o.strs("allowedDomains")
	if err != nil {
		return err
	}
	if l.allowedDomains, err = domains(o, "allowedDomains", allowed, false); err != nil {
		return err
	}
	denied, _, err := o.strs("deniedDomains")
	if err != nil {
		return err
	}
	if l.deniedDomains, err = domains(o, "deniedDomains", denied, true); err != nil {
		return err
	}
	if l.deniedReasons, err = o.stringMap("deniedDomainReasons"); err != nil {
		return err
	}
	for k := range l.deniedReasons {
		found := false
		for _, d := range denied {
			found = found || d == k
		}
		if !found {
			return o.errf("deniedDomainReasons."+k, "names no entry of deniedDomains")
		}
	}
	if l.strict, err = o.boolean("strictAllowlist"); err != nil {
		return err
	}
	cidrs, _, err := o.strs("deniedResolvedAddresses")
	if err != nil {
		return err
	}
	for i, c := range cidrs {
		if _, _, err := net.ParseCIDR(c); err != nil {
			if net.ParseIP(c) == nil {
				return o.errf(fmt.Sprintf("deniedResolvedAddresses[%d]", i), "%q is not an address or CIDR", c)
			}
		}
	}
	l.deniedResolved = cidrs
	if err := decodeSockets(o, r, l, r.srt); err != nil {
		return err
	}
	if _, _, err := o.strs("allowMachLookup"); err != nil { // macOS only
		return err
	}
	if p, ok, err := o.obj("parentProxy"); err != nil {
		return err
	} else if ok {
		pp := &policy.ParentProxy{}
		for _, k := range []string{"http", "https"} {
			s, err := p.str(k)
			if err != nil {
				return err
			}
			if s == nil {
				continue
			}
			if !strings.HasPrefix(*s, "http://") && !strings.HasPrefix(*s, "https://") {
				return p.errf(k, "%q: want an http:// or https:// proxy URL", *s)
			}
			if k == "http" {
				pp.HTTP = *s
			} else {
				pp.HTTPS = *s
			}
		}
		if pp.NoProxy, _, err = p.strs("noProxy"); err != nil {
			return err
		}
		if err := p.unknown(); err != nil {
			return err
		}
		l.parent = pp
	}
	for _, k := range []string{"mitmProxy", "tlsTerminate", "filterRequest"} {
		if o.has(k) {
			return o.errf(k, notSupported)
		}
	}
	return o.unknown()
}

// decodeSockets reads the unix-socket and proxy-port fields shared by both
// formats.
func decodeSockets(o *object, r resolver, l *layer, resolve func(string, string, pathKind) (policy.PathRule, error)) error {
	socks, _, err := o.strs("allowUnixSockets")
	if err != nil {
		return err
	}
	for i, s := range socks {
		pr, err := resolve(o.field(fmt.Sprintf("allowUnixSockets[%d]", i)), s, plainPath)
		if err != nil {
			return err
		}
		l.unixSockets = append(l.unixSockets, pr)
	}
	if l.allUnix, err = o.boolean("allowAllUnixSockets"); err != nil {
		return err
	}
	if l.localBinding, err = o.boolean("allowLocalBinding"); err != nil {
		return err
	}
	if l.httpPort, err = o.integer("httpProxyPort", 1, 65535); err != nil {
		return err
	}
	if l.socksPort, err = o.integer("socksProxyPort", 1, 65535); err != nil {
		return err
	}
	return nil
}

func decodeSRTFilesystem(o *object, r resolver, l *layer) error {
	for _, k := range []string{"denyRead", "allowWrite", "denyWrite"} {
		if err := o.require(k, "array"); err != nil {
			return err
		}
	}
	lists := []struct {
		key  string
		kind pathKind
		dst  *[]policy.PathRule
	}{
		{"denyRead", denyPath, &l.denyRead},
		{"allowRead", readPath, &l.allowRead},
		{"allowWrite", writePath, &l.allowWrite},
		{"denyWrite", denyPath, &l.denyWrite},
	}
	for _, li := range lists {
		ps, _, err := o.strs(li.key)
		if err != nil {
			return err
		}
		for i, p := range ps {
			pr, err := r.srt(o.field(fmt.Sprintf("%s[%d]", li.key, i)), p, li.kind)
			if err != nil {
				return err
			}
			*li.dst = append(*li.dst, pr)
		}
	}
	var err error
	if l.allowGitConfig, err = o.boolean("allowGitConfig"); err != nil {
		return err
	}
	if l.fsDisabled, err = o.boolean("disabled"); err != nil {
		return err
	}
	return o.unknown()
}

// domains validates a list of network entries.
func domains(o *object, key string, list []string, deny bool) ([]policy.DomainRule, error) {
	var out []policy.DomainRule
	for i, d := range list {
		f := fmt.Sprintf("%s[%d]", key, i)
		if err := validateDomain(d, deny); err != nil {
			return nil, &Error{File: o.file, Field: o.field(f), Reason: err.Error(), Err: err}
		}
		out = append(out, policy.DomainRule{Pattern: d, Source: fmt.Sprintf("%s: %s", o.file, o.field(f))})
	}
	return out, nil
}

// ParseNetworkUpdate reads one network-list update (a complete settings
// document in the srt format, as srt's --control-fd takes) and returns its
// network section. name says where it came from, for errors.
func ParseNetworkUpdate(name string, data []byte, cwd, home string) (policy.Network, error) {
	o, err := parseObject(name, data)
	if err != nil {
		return policy.Network{}, err
	}
	l, err := decodeSRT(o, resolver{cwd: cwd, home: home, dir: cwd, file: name})
	if err != nil {
		return policy.Network{}, err
	}
	n := policy.Network{
		AllowedDomains:          l.allowedDomains,
		DeniedDomains:           l.deniedDomains,
		DeniedResolvedAddresses: l.deniedResolved,
	}
	for i, d := range n.DeniedDomains {
		if r, ok := l.deniedReasons[d.Pattern]; ok {
			n.DeniedDomains[i].Reason = r
		}
	}
	if l.strict != nil {
		n.StrictAllowlist = *l.strict
	}
	return n, nil
}
