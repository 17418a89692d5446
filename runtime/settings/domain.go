package settings

import (
	"errors"
	"strings"
)

// validateDomain checks one allowedDomains/deniedDomains entry.
// TODO(lead): delegate to policy.ParseDomainPattern once netproxy lands it.
func validateDomain(d string, deny bool) error {
	switch {
	case d == "":
		return errors.New("empty entry")
	case strings.ContainsAny(d, " \t\r\n\x00/@"):
		return errors.New("a domain entry is a host name or address with an optional :port, not a URL or path")
	case strings.Contains(d, "://"):
		return errors.New("no protocol: write the host name only")
	case !deny && (d == "*" || strings.HasPrefix(d, "*:")):
		return errors.New("a bare * is only allowed in deniedDomains")
	}
	return nil
}
