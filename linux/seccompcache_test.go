//go:build linux

package linux

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/linux/seccomp"
)

// TestSeccompCacheHelper is the process of TestSeccompCacheAcrossUpgrade:
// it compiles (or reads) the filter as a moat would, after replacing its own
// binary at its path when asked to (an upgrade under a running moatd), and
// prints a digest of what it got.
func TestSeccompCacheHelper(t *testing.T) {
	cache := os.Getenv("MOAT_TEST_SECCOMP_CACHE")
	if cache == "" {
		t.Skip("run by TestSeccompCacheAcrossUpgrade")
	}
	if next := os.Getenv("MOAT_TEST_SECCOMP_UPGRADE"); next != "" {
		exe, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(next, exe); err != nil {
			t.Fatal(err)
		}
	}
	prog, err := seccompProgram(cache, seccomp.Options{})
	if err != nil {
		t.Skipf("no filter here: %v", err)
	}
	sum := sha256.Sum256(prog)
	os.Stdout.WriteString("\nPROG=" + hex.EncodeToString(sum[:]) + "\n")
}

// TestSeccompCacheAcrossUpgrade: a filter compiled by a moat whose binary
// was replaced while it ran (moatd running while a new release is
// installed) is the old code's filter; it must not be cached under the new
// binary's name. It was (the key named the binary by its path's inode, size
// and mtime, which are then the new file's): after the restart, the new
// moatd loaded the old release's filter (an old release that let keyctl
// through still let it through after the upgrade that refuses it; attack
// pass 87).
func TestSeccompCacheAcrossUpgrade(t *testing.T) {
	if _, err := seccomp.Build(seccomp.Options{}); err != nil {
		t.Skipf("no filter in this build: %v", err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin, next, cache := filepath.Join(dir, "moat"), filepath.Join(dir, "moat.next"), filepath.Join(dir, "cache")
	copyExe(t, self, bin)
	copyExe(t, self, next)
	run := func(upgrade string) string {
		cmd := exec.Command(bin, "-test.run=^TestSeccompCacheHelper$", "-test.count=1")
		cmd.Env = append(os.Environ(), "MOAT_TEST_SECCOMP_CACHE="+cache, "MOAT_TEST_SECCOMP_UPGRADE="+upgrade)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		for _, l := range strings.Split(string(out), "\n") {
			if v, ok := strings.CutPrefix(l, "PROG="); ok {
				return v
			}
		}
		t.Fatalf("no filter in the helper's output: %s", out)
		return ""
	}
	// A program no moat compiles: what a cached entry read back gives.
	stale := []byte{0x06, 0, 0, 0, 0, 0, 0xff, 0x7f} // return ALLOW
	staleSum := sha256.Sum256(stale)
	plant := func() {
		t.Helper()
		ents, _ := os.ReadDir(cache)
		n := 0
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "seccomp-") {
				if err := os.WriteFile(filepath.Join(cache, e.Name()), stale, 0o600); err != nil {
					t.Fatal(err)
				}
				n++
			}
		}
		if n == 0 {
			t.Fatal("nothing cached")
		}
	}
	// The old binary, replaced at its path while it runs, compiles and
	// caches; its entry stands for the old release's filter.
	run(next)
	plant()
	if got := run(""); got == hex.EncodeToString(staleSum[:]) {
		t.Fatal("the new binary loaded the filter its predecessor compiled after the upgrade")
	}
	// The cache still serves a binary its own filter.
	plant()
	if got := run(""); got != hex.EncodeToString(staleSum[:]) {
		t.Fatal("the same binary did not read its own cached filter")
	}
}

func copyExe(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
