// Package lazyre is a regular expression compiled on first use. A package
// variable holding regexp.MustCompile(...) is compiled before main by every
// moat process, moat run among them, whether it needs it or not.
package lazyre

import (
	"regexp"
	"sync"
)

// RE is a regular expression compiled on first use; safe for concurrent use.
type RE struct {
	once sync.Once
	expr string
	re   *regexp.Regexp
}

// New returns expr, to be compiled (it must compile) when first used.
func New(expr string) *RE { return &RE{expr: expr} }

// Regexp is the compiled expression.
func (r *RE) Regexp() *regexp.Regexp {
	r.once.Do(func() { r.re = regexp.MustCompile(r.expr) })
	return r.re
}

// MatchString is regexp.Regexp.MatchString.
func (r *RE) MatchString(s string) bool { return r.Regexp().MatchString(s) }

// FindStringSubmatch is regexp.Regexp.FindStringSubmatch.
func (r *RE) FindStringSubmatch(s string) []string { return r.Regexp().FindStringSubmatch(s) }
