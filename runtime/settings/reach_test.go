package settings

import "testing"

// ancestorOrSelf decides the checks of guard.go: whether a path the first
// pattern names can be one the second names, or an ancestor of one.
func TestAncestorOrSelf(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"/", "/etc/shadow", true},
		{"/home/u", "/home/u/.ssh", true},
		{"/home/u/.ssh", "/home/u/.ssh", true},
		{"/home/u/.ssh/id_rsa", "/home/u/.ssh", false},
		{"/home/u/.sshx", "/home/u/.ssh", false},
		{"/home/u/.s*", "/home/u/.ssh", true},
		{"/home/u/.s*", "/home/u/.ssh/id_rsa", true},
		{"/home/u/*.key", "/home/u/.ssh", false},
		{"/w/**/.env", "/w/src/.env", true},
		{"/w/**/.env", "/w/.env", true},
		{"/w/**/.env", "/w/src", false},
		{"/w/src", "/w/**/.env", true},      // /w/src/.env
		{"/w/src/*.go", "/w/**/.env", true}, // /w/src/x.go/.env: x.go may be a directory
		{"/w/**/.env", "/w/src/*.go", false},
		{"/w/**", "/w", true},
		{"/w/a/**/b", "/w/a/x/y/b/c", true},
		{"/w/a/**/b", "/w/a/x/y/c", false},
		{"/w/[ab]", "/w/b/c", true},
		{"/w/a[1", "/w/a[1/c", true}, // a literal "[" with no "]"
		{"/w/a[1", "/w/a1", false},
	} {
		if got := ancestorOrSelf(splitPath(tc.a), splitPath(tc.b)); got != tc.want {
			t.Errorf("ancestorOrSelf(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
