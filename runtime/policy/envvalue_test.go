package policy

import (
	"strings"
	"testing"
)

// Credentials a variable's name does not show: a URL's password and
// Bundler's per-server logins (attack pass 96: both reached the command).
func TestFilterEnvCredentialValues(t *testing.T) {
	env := []string{
		"PIP_INDEX_URL=https://__token__:pypi-AgEIcHlwaS5vcmc@pypi.example/simple",
		"PIP_EXTRA_INDEX_URL=https://pypi.org/simple https://u:p4ss@extra.example/simple",
		"POSTGRES_URL=postgres://app:hunter2@db:5432/app",
		"BUNDLE_GEMS__CONTRIBSYS__COM=user:s3cret",
		"BUNDLE_RUBYGEMS__PKG__GITHUB__COM=x-access-token:ghp_abc",
		// not credentials
		"GIT_REMOTE=ssh://git@github.com/o/r.git",
		"HOMEPAGE=https://example.com/a:b@c",
		"MAILTO=mailto:user@example.com",
		"BUNDLE_PATH=vendor/bundle",
		"BUNDLE_BUILD__NOKOGIRI=--use-system-libraries",
		"BUNDLE_MIRROR__HTTPS://RUBYGEMS__ORG/=https://mirror.example",
		"BUNDLE_GEM__TEST=rspec",
		"GOPROXY=file:///home/u/go/pkg/mod/cache/download,https://proxy.golang.org,direct",
	}
	out, removed := FilterEnv(env, []string{"POSTGRES_URL"}, nil)
	want := "BUNDLE_GEMS__CONTRIBSYS__COM,BUNDLE_RUBYGEMS__PKG__GITHUB__COM,PIP_EXTRA_INDEX_URL,PIP_INDEX_URL"
	if got := strings.Join(removed, ","); got != want {
		t.Errorf("removed %s, want %s", got, want)
	}
	if n := len(out); n != len(env)-4 {
		t.Errorf("kept %d variables, want %d: %q", n, len(env)-4, out)
	}
}
