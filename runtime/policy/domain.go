package policy

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// DomainPattern is one parsed allowedDomains or deniedDomains entry (the srt
// syntax): an exact host name, "*.example.com" (strict subdomains only), an
// IPv4 literal, a bracketed IPv6 literal, or (deny lists only) the bare "*";
// each with an optional ":port".
//
// The zero DomainPattern matches nothing.
type DomainPattern struct {
	// Raw is the entry as written.
	Raw string
	// Host is canonical (see CanonicalHost): the name, the suffix of a
	// wildcard (without "*."), or the IP literal without brackets. It is
	// empty for the bare "*".
	Host string
	// Wildcard marks "*.Host": names with at least one more label than Host.
	Wildcard bool
	// Any marks the bare "*": every host, names and IP literals alike.
	Any bool
	// Addr is set when the entry is an IP literal (never for a wildcard).
	Addr netip.Addr
	// Port restricts the entry to one port; 0 means any port.
	Port int
}

// IsIP reports whether the pattern is an IP literal.
func (p DomainPattern) IsIP() bool { return p.Addr.IsValid() }

// String returns the entry in canonical form ("*.example.com:443",
// "[::1]:8080", "*").
func (p DomainPattern) String() string {
	var h string
	switch {
	case p.Any:
		h = "*"
	case p.Wildcard:
		h = "*." + p.Host
	case p.Addr.Is6():
		h = "[" + p.Host + "]"
	default:
		h = p.Host
	}
	if p.Port != 0 {
		h += ":" + strconv.Itoa(p.Port)
	}
	return h
}

// Match reports whether the pattern covers host:port. host must already be
// canonical (CanonicalHost); a port of 0 matches only patterns without a
// port. A wildcard never matches an IP literal, and an IP pattern matches
// only the same address (an IPv4-mapped IPv6 address counts as IPv4).
func (p DomainPattern) Match(host string, port int) bool {
	if p.Port != 0 && p.Port != port {
		return false
	}
	switch {
	case p.Any:
		return true
	case p.Addr.IsValid():
		a, err := netip.ParseAddr(host)
		return err == nil && a.Unmap() == p.Addr
	case p.Wildcard:
		n := len(host) - len(p.Host)
		return n > 1 && host[n-1] == '.' && host[n:] == p.Host && !looksLikeIP(host)
	default:
		return p.Host != "" && host == p.Host
	}
}

// looksLikeIP reports whether a canonical host is an IP literal: IPv6 has a
// colon, and a name whose last label is numeric is an IPv4 spelling.
func looksLikeIP(host string) bool {
	if strings.IndexByte(host, ':') >= 0 {
		return true
	}
	return numericLabel(host[strings.LastIndexByte(host, '.')+1:])
}

// ErrDomainPattern is wrapped by every ParseDomainPattern and CanonicalHost
// error.
var ErrDomainPattern = errors.New("invalid domain pattern")

func patternErr(s, format string, a ...any) error {
	return fmt.Errorf("%w %q: %s", ErrDomainPattern, s, fmt.Sprintf(format, a...))
}

// ParseDomainPattern validates one allowedDomains (inDenyList false) or
// deniedDomains (inDenyList true) entry and returns it in canonical form.
//
// Accepted: "example.com", "*.example.com", "localhost", "1.2.3.4",
// "[::1]", each optionally followed by ":PORT" (1..65535). Deny lists also
// accept the bare "*" ("*:22": every host on port 22) and wildcards over a
// single label ("*.com"), since denying broadly is safe.
//
// Rejected: empty entries, control characters and spaces, schemes, paths,
// queries, userinfo, unbracketed IPv6, bad ports, "*" anywhere but as a
// whole leading label, "*." alone, a wildcard over an IP address, and in
// allow lists the bare "*" and wildcards over a single label ("*.com").
func ParseDomainPattern(s string, inDenyList bool) (DomainPattern, error) {
	if s == "" {
		return DomainPattern{}, patternErr(s, "empty entry")
	}
	if err := checkChars(s); err != nil {
		return DomainPattern{}, patternErr(s, "%v", err)
	}
	switch {
	case strings.Contains(s, "://"):
		return DomainPattern{}, patternErr(s, "a domain pattern is a host name, not a URL (drop the scheme)")
	case strings.ContainsAny(s, "/?#"):
		return DomainPattern{}, patternErr(s, "a domain pattern cannot hold a path, query or fragment")
	case strings.ContainsRune(s, '@'):
		return DomainPattern{}, patternErr(s, "a domain pattern cannot hold user information")
	}

	host, portStr, hasPort, err := splitPatternHostPort(s)
	if err != nil {
		return DomainPattern{}, patternErr(s, "%v", err)
	}
	p := DomainPattern{Raw: s}
	if hasPort {
		if p.Port, err = parsePort(portStr); err != nil {
			return DomainPattern{}, patternErr(s, "%v", err)
		}
	}

	switch {
	case host == "*":
		if !inDenyList {
			return DomainPattern{}, patternErr(s, "a bare * is allowed only in deniedDomains")
		}
		p.Any = true
		return p, nil
	case strings.HasPrefix(host, "*."):
		suffix := host[2:]
		if suffix == "" {
			return DomainPattern{}, patternErr(s, "*. names no domain")
		}
		if strings.ContainsRune(suffix, '*') {
			return DomainPattern{}, patternErr(s, "* is allowed only as the whole first label (*.example.com)")
		}
		c, err := CanonicalHost(suffix)
		if err != nil {
			return DomainPattern{}, patternErr(s, "%v", unwrapPattern(err))
		}
		if looksLikeIP(c) {
			return DomainPattern{}, patternErr(s, "a wildcard cannot apply to an IP address")
		}
		if !inDenyList && !strings.ContainsRune(c, '.') {
			return DomainPattern{}, patternErr(s, "too broad: a wildcard must name at least two labels (*.example.com, not *.com)")
		}
		p.Host, p.Wildcard = c, true
		return p, nil
	case strings.ContainsRune(host, '*'):
		return DomainPattern{}, patternErr(s, "* is allowed only as the whole first label (*.example.com)")
	}

	c, err := CanonicalHost(host)
	if err != nil {
		return DomainPattern{}, patternErr(s, "%v", unwrapPattern(err))
	}
	p.Host = c
	if a, err := netip.ParseAddr(c); err == nil {
		p.Addr = a
	}
	return p, nil
}

// unwrapPattern strips the ErrDomainPattern prefix from a nested error so
// that messages do not repeat it.
func unwrapPattern(err error) string {
	s := err.Error()
	if i := strings.Index(s, ": "); i >= 0 && errors.Is(err, ErrDomainPattern) {
		return s[i+2:]
	}
	return s
}

// splitPatternHostPort splits "host", "host:port", "[v6]" and "[v6]:port".
func splitPatternHostPort(s string) (host, port string, hasPort bool, err error) {
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", "", false, errors.New("unclosed [")
		}
		host, rest := s[:end+1], s[end+1:]
		switch {
		case rest == "":
			return host, "", false, nil
		case strings.HasPrefix(rest, ":"):
			return host, rest[1:], true, nil
		}
		return "", "", false, fmt.Errorf("unexpected %q after ]", rest)
	}
	switch strings.Count(s, ":") {
	case 0:
		return s, "", false, nil
	case 1:
		i := strings.IndexByte(s, ':')
		return s[:i], s[i+1:], true, nil
	}
	return "", "", false, errors.New("IPv6 addresses must be bracketed, e.g. [::1] or [::1]:443")
}

// parsePort accepts 1..65535 written in decimal digits.
func parsePort(s string) (int, error) {
	if s == "" {
		return 0, errors.New("empty port")
	}
	if len(s) > 5 {
		return 0, fmt.Errorf("port %q is out of range 1..65535", s)
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("port %q is not a number", s)
		}
		n = n*10 + int(s[i]-'0')
	}
	if n < 1 || n > 65535 {
		return 0, fmt.Errorf("port %q is out of range 1..65535", s)
	}
	return n, nil
}

// checkChars rejects NUL, control characters, spaces and invalid UTF-8.
func checkChars(s string) error {
	for i, r := range s {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(s[i:], "\uFFFD"):
			return errors.New("invalid UTF-8")
		case r == 0:
			return errors.New("contains a NUL byte")
		case r < 0x20 || r == 0x7f || unicode.IsControl(r):
			return fmt.Errorf("contains the control character %U", r)
		case unicode.IsSpace(r):
			return errors.New("contains white space")
		case r == '\\' || r == '%':
			return fmt.Errorf("contains %q", r)
		}
	}
	return nil
}

// maxHostLen bounds the work CanonicalHost does on hostile input; real
// names are at most 253 bytes (more before IDNA conversion).
const maxHostLen = 1024

// idnaProfile maps like a lookup (UTS #46, non-transitional: "ß" stays
// "ß") and validates labels, but leaves ASCII rules to canonicalName so
// that underscores, which appear in real host names, are accepted.
var idnaProfile = idna.New(
	idna.MapForLookup(),
	idna.Transitional(false),
	idna.BidiRule(),
	idna.ValidateLabels(true),
	idna.StrictDomainName(false),
)

// CanonicalHost returns the one spelling of host that policy matching
// uses:
//
//   - names: lower case, one trailing dot removed, internationalised names
//     converted to punycode (IDNA, UTS #46);
//   - IPv4 in any inet_aton spelling ("127.1", "2130706433", "0x7f.1",
//     "0177.0.0.1") as a dotted quad;
//   - IPv6, with or without brackets, compressed (RFC 5952) and without
//     brackets; IPv4-mapped IPv6 ("::ffff:127.0.0.1") as the IPv4 address.
//
// It rejects empty or over-long hosts, control characters, spaces, zones,
// ports, and any name whose last label is numeric but that is no valid IPv4
// spelling ("1.2.3.256", "1.2.3.4.5").
func CanonicalHost(host string) (string, error) {
	if host == "" {
		return "", patternErr(host, "empty host")
	}
	if len(host) > maxHostLen {
		return "", patternErr(host[:32]+"...", "host is longer than %d bytes", maxHostLen)
	}
	if err := checkChars(host); err != nil {
		return "", patternErr(host, "%v", err)
	}
	if host[0] == '[' {
		if host[len(host)-1] != ']' {
			return "", patternErr(host, "unclosed [")
		}
		a, err := netip.ParseAddr(host[1 : len(host)-1])
		if err != nil || !a.Is6() || a.Zone() != "" {
			return "", patternErr(host, "not an IPv6 address")
		}
		return canonicalAddr(a), nil
	}
	if strings.IndexByte(host, ':') >= 0 {
		a, err := netip.ParseAddr(host)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return "", patternErr(host, "not a host name or IP address (a port does not belong here)")
		}
		return canonicalAddr(a), nil
	}
	h := host
	if !isASCII(h) || hasACELabel(h) {
		var err error
		if h, err = idnaProfile.ToASCII(h); err != nil {
			return "", patternErr(host, "%v", err)
		}
	}
	h = strings.ToLower(h)
	h = strings.TrimSuffix(h, ".")
	if h == "" {
		return "", patternErr(host, "empty host")
	}
	if numericLabel(h[strings.LastIndexByte(h, '.')+1:]) {
		a, ok := parseIPv4Loose(h)
		if !ok {
			return "", patternErr(host, "not a valid IPv4 address")
		}
		return a.String(), nil
	}
	if err := checkName(h); err != nil {
		return "", patternErr(host, "%v", err)
	}
	return h, nil
}

// CanonicalAddr returns the canonical spelling of an address: IPv4-mapped
// IPv6 as IPv4, IPv6 compressed, no zone.
func canonicalAddr(a netip.Addr) string {
	return a.Unmap().WithZone("").String()
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// hasACELabel reports whether some label starts with "xn--" (any case), so
// that ASCII punycode is validated too.
func hasACELabel(s string) bool {
	for _, l := range strings.Split(s, ".") {
		if len(l) >= 4 && strings.EqualFold(l[:4], "xn--") {
			return true
		}
	}
	return false
}

// checkName validates a lower-case ASCII host name: at most 253 bytes,
// labels of 1..63 letters, digits, '-' or '_', no leading or trailing '-'.
func checkName(h string) error {
	if len(h) > 253 {
		return errors.New("name is longer than 253 bytes")
	}
	for _, l := range strings.Split(h, ".") {
		switch {
		case l == "":
			return errors.New("empty label")
		case len(l) > 63:
			return errors.New("label is longer than 63 bytes")
		case l[0] == '-' || l[len(l)-1] == '-':
			return fmt.Errorf("label %q starts or ends with '-'", l)
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return fmt.Errorf("label %q holds %q", l, c)
			}
		}
	}
	return nil
}

// numericLabel reports whether a label is a number in the inet_aton sense
// (decimal digits, or 0x followed by hex digits): a host ending in such a
// label is an IPv4 spelling or invalid, never a name (as browsers decide).
func numericLabel(l string) bool {
	if l == "" {
		return false
	}
	if len(l) >= 2 && l[0] == '0' && (l[1] == 'x' || l[1] == 'X') {
		for i := 2; i < len(l); i++ {
			if !isHex(l[i]) {
				return false
			}
		}
		return true
	}
	for i := 0; i < len(l); i++ {
		if l[i] < '0' || l[i] > '9' {
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// parseIPv4Loose parses the inet_aton spellings: one to four parts, each
// decimal, octal (leading 0) or hex (0x); the last part fills the remaining
// bytes ("127.1" is 127.0.0.1, "2130706433" is 127.0.0.1).
func parseIPv4Loose(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var vals [4]uint64
	for i, p := range parts {
		v, ok := parseAtonPart(p)
		if !ok {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	n := len(parts)
	for i := 0; i < n-1; i++ {
		if vals[i] > 255 {
			return netip.Addr{}, false
		}
	}
	if vals[n-1] >= 1<<(8*(5-n)) {
		return netip.Addr{}, false
	}
	var u uint32
	for i := 0; i < n-1; i++ {
		u |= uint32(vals[i]) << (24 - 8*i)
	}
	u |= uint32(vals[n-1])
	return netip.AddrFrom4([4]byte{byte(u >> 24), byte(u >> 16), byte(u >> 8), byte(u)}), true
}

// parseAtonPart parses one part; values above 2^32 fail.
func parseAtonPart(p string) (uint64, bool) {
	if p == "" {
		return 0, false
	}
	base, digits := uint64(10), p
	switch {
	case len(p) >= 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X'):
		base, digits = 16, p[2:]
		if digits == "" {
			return 0, true // "0x" is 0, as inet_aton and browsers read it
		}
	case len(p) >= 2 && p[0] == '0':
		base, digits = 8, p[1:]
	}
	var v uint64
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		var d uint64
		switch {
		case c >= '0' && c <= '9':
			d = uint64(c - '0')
		case c >= 'a' && c <= 'f':
			d = uint64(c-'a') + 10
		case c >= 'A' && c <= 'F':
			d = uint64(c-'A') + 10
		default:
			return 0, false
		}
		if d >= base {
			return 0, false
		}
		v = v*base + d
		if v > 0xffffffff {
			return 0, false
		}
	}
	return v, true
}
