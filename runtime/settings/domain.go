package settings

import "github.com/moat-sandbox/moat/runtime/policy"

// validateDomain checks one allowedDomains/deniedDomains entry with the
// same parser the proxy matches with.
func validateDomain(d string, deny bool) error {
	_, err := policy.ParseDomainPattern(d, deny)
	return err
}
