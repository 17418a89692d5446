//go:build linux

package main

import (
	"strings"
	"testing"
)

// A credential whose variable's name does not show it (a URL's password,
// Bundler's per-server login) does not reach the command either (attack
// pass 96: PIP_INDEX_URL's token and BUNDLE_GITHUB__COM's did).
func TestRunEnvironmentCredentialValues(t *testing.T) {
	tr := newTree(t)
	env := tr.env("PIP_INDEX_URL=https://__token__:pypi-s3cret@pypi.example/simple", "BUNDLE_GITHUB__COM=x-access-token:s3cret", "GIT_URL=ssh://git@github.com/o/r")
	r := tr.moat(t, "", env, "run", "--settings", tr.settings, "--", "env")
	if strings.Contains(r.stdout, "s3cret") {
		t.Errorf("a credential reached the command:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "GIT_URL=ssh://git@github.com/o/r") {
		t.Errorf("a URL with a user name alone was removed:\n%s", r.stdout)
	}
}
