package shell

import (
	"reflect"
	"strings"
	"testing"
)

func TestDetect(t *testing.T) {
	exists := func(paths ...string) func(string) bool {
		return func(p string) bool {
			for _, q := range paths {
				if p == q {
					return true
				}
			}
			return false
		}
	}
	tests := []struct {
		name     string
		d        Detector
		want     string // "name path", or "" for an error
		errMatch string
	}{
		{"user bash", Detector{Getenv: env("SHELL", "/usr/local/bin/bash"), Executable: exists("/usr/local/bin/bash", "/bin/zsh")}, "bash /usr/local/bin/bash", ""},
		{"user zsh", Detector{Getenv: env("SHELL", "/opt/homebrew/bin/zsh"), Executable: exists("/opt/homebrew/bin/zsh", "/bin/bash")}, "zsh /opt/homebrew/bin/zsh", ""},
		{"user fish: bash first", Detector{Getenv: env("SHELL", "/usr/bin/fish"), Executable: exists("/usr/bin/bash", "/bin/zsh")}, "bash /usr/bin/bash", ""},
		{"user zsh missing: another zsh first", Detector{Getenv: env("SHELL", "/nix/zsh"), Executable: exists("/bin/bash", "/usr/bin/zsh")}, "zsh /usr/bin/zsh", ""},
		{"no SHELL", Detector{Getenv: env(), Executable: exists("/bin/zsh")}, "zsh /bin/zsh", ""},
		{"relative SHELL ignored", Detector{Getenv: env("SHELL", "bash"), Executable: exists("bash", "/bin/bash")}, "bash /bin/bash", ""},
		{"explicit", Detector{Shell: "/x/zsh", Getenv: env("SHELL", "/bin/bash"), Executable: exists("/x/zsh", "/bin/bash")}, "zsh /x/zsh", ""},
		{"explicit not a shell we know", Detector{Shell: "/bin/fish", Executable: exists("/bin/fish")}, "", "not bash or zsh"},
		{"explicit missing", Detector{Shell: "/x/bash", Executable: exists()}, "", "not an executable"},
		{"none", Detector{Getenv: env(), Executable: exists()}, "", "no suitable shell"},
		{"custom dirs", Detector{Getenv: env(), Executable: exists("/alt/bash"), Dirs: []string{"/alt"}}, "bash /alt/bash", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := tc.d.Detect()
			if tc.want == "" {
				if err == nil || !strings.Contains(err.Error(), tc.errMatch) {
					t.Fatalf("error %v, want one containing %q", err, tc.errMatch)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := p.Name() + " " + p.Path(); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func env(kv ...string) func(string) string {
	return func(k string) string {
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i] == k {
				return kv[i+1]
			}
		}
		return ""
	}
}

func TestProviderArgv(t *testing.T) {
	tests := []struct {
		p     Provider
		login bool
		want  []string
	}{
		{Bash("/bin/bash"), false, []string{"/bin/bash", "-c", "S"}},
		{Bash("/bin/bash"), true, []string{"/bin/bash", "-l", "-c", "S"}},
		{Zsh("/bin/zsh"), false, []string{"/bin/zsh", "-c", "S"}},
		{Zsh("/bin/zsh"), true, []string{"/bin/zsh", "-l", "-c", "S"}},
	}
	for _, tc := range tests {
		if got := tc.p.Argv("S", tc.login); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s Argv(login=%v) = %q, want %q", tc.p.Name(), tc.login, got, tc.want)
		}
	}
	if Bash("").DisableExtglob() == Zsh("").DisableExtglob() {
		t.Error("bash and zsh turn extended globs off the same way")
	}
}
