package policy

import "testing"

func TestHomeOwn(t *testing.T) {
	for _, c := range []struct {
		p, home string
		want    bool
	}{
		{"/home/u/.gitconfig", "/home/u", true},
		{"/home/u/.config/git", "/home/u", true},
		{"/home/u/.config/git/config", "/home/u", true},
		{"/home/u/.config/other", "/home/u", false},
		{"/home/u/work/.gitconfig", "/home/u", false},
		{"/home/u", "/home/u", false},
		{"/home/user2/.bashrc", "/home/u", false},
		{"/.bashrc", "/", true},
		{"/etc/passwd", "/", false},
		{"/home/u/.bashrc", "", false},
	} {
		if got := HomeOwn(c.p, c.home); got != c.want {
			t.Errorf("HomeOwn(%q, %q) = %v, want %v", c.p, c.home, got, c.want)
		}
	}
}
