//go:build linux

package linux

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The resolver's shortcuts (a path's canonical form from its parent's,
// remembered lstats and results during planning) give what a full walk of
// every component gives (the nil resolver), through symlinked parents,
// symlinks as the last name, missing names and missing parents.
func TestResolverMatchesWalk(t *testing.T) {
	root := canon(t, t.TempDir())
	mkTree(t, root, "real/dir/file", "real/dir/sub/", "other/f")
	for _, l := range [][2]string{
		{"real", root + "/link"},              // a symlinked directory
		{"dir/file", root + "/real/filelink"}, // relative, to a file
		{root + "/other", root + "/real/dir/sub/abs"},
		{"nowhere", root + "/dangling"},
		{"loop2", root + "/loop1"}, {"loop1", root + "/loop2"},
	} {
		if err := os.Symlink(l[0], l[1]); err != nil {
			t.Fatal(err)
		}
	}
	paths := []string{
		root, root + "/real/dir/file", root + "/link/dir/file", root + "/link/dir", root + "/link",
		root + "/real/filelink", root + "/link/filelink", root + "/link/dir/sub/abs/f", root + "/link/dir/sub/abs",
		root + "/link/missing", root + "/link/missing/deeper/still", root + "/real/missing/x",
		root + "/dangling", root + "/dangling/x", root + "/loop1", root + "/loop1/x",
		root + "/real/dir/file/under-a-file", root + "/link/dir/sub/abs/missing/x", "/", "/nonexistent-moat-test/a/b",
	}
	rs := newResolver()
	rs.beginStats()
	defer rs.endStats()
	for round := 0; round < 2; round++ { // the second round is served from memory
		for _, p := range paths {
			want, wantOK, wantErr := canonical(p)
			got, gotOK, gotErr := rs.canonical(p)
			if got != want || gotOK != wantOK || (gotErr == nil) != (wantErr == nil) {
				t.Errorf("round %d: %s: resolver (%q, %v, %v), walk (%q, %v, %v)", round, p, got, gotOK, gotErr, want, wantOK, wantErr)
			}
			if k := rs.kind(p); k != lstatKind(p) {
				t.Errorf("round %d: %s: kind %q, lstat %q", round, p, k, lstatKind(p))
			}
		}
	}
	// Outside a planning pass nothing is remembered: a name made since is
	// seen (the mount step makes placeholders after the pass).
	later := root + "/link/made-later"
	if _, ok, _ := rs.canonical(later); ok {
		t.Fatalf("%s exists before it is made", later)
	}
	if err := os.WriteFile(filepath.Join(root, "real/made-later"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := rs.canonical(later); ok {
		t.Errorf("inside the pass, the first answer is remembered")
	}
	rs.endStats()
	if c, ok, _ := rs.canonical(later); !ok || c != root+"/real/made-later" || rs.kind(later) != 'f' {
		t.Errorf("a file made during the pass is not seen after it: %q %v", c, ok)
	}
}

// The launch's resolver remembers directories for as long as the sandbox
// lives (a whole session), and the violation observer resolves the parent
// of every path the command opens for writing with it. A command chooses
// those paths: through a few symlinks to "." it names as many distinct
// directories as it likes, each up to 4 KB long, and remembering them all
// grew the supervisor (moatd, for every user) without bound, to the OOM
// killer (attack pass 58). What it remembers is bounded, and a directory
// past the bound is still resolved right.
func TestResolverMemoryBounded(t *testing.T) {
	root := canon(t, t.TempDir())
	names := make([]string, 10)
	for i := range names {
		names[i] = fmt.Sprintf("L%d%s", i, strings.Repeat("a", 37))
		if err := os.Symlink(".", filepath.Join(root, names[i])); err != nil {
			t.Fatal(err)
		}
	}
	rs := newResolver()
	rng := rand.New(rand.NewPCG(1, 58))
	var long int64
	for range 3000 {
		var b strings.Builder
		b.WriteString(root)
		for b.Len() < 3900 {
			b.WriteString("/" + names[rng.IntN(len(names))])
		}
		d := b.String()
		long += int64(len(d))
		got, err := rs.evalDir(d)
		if err != nil || got != root {
			t.Fatalf("evalDir(%.60s...) = %q, %v; want %q", d, got, err, root)
		}
	}
	var held int64
	rs.dirs.Range(func(k, v any) bool {
		held += int64(len(k.(string)) + len(v.(canonDir).path))
		return true
	})
	// A few megabytes (maxResolverBytes), never what the command named.
	if most := int64(8 << 20); held > most {
		t.Fatalf("the resolver holds %d bytes of directories (%d named), more than %d", held, long, most)
	}
	// What it remembers still answers.
	if got, err := rs.evalDir(root); err != nil || got != root {
		t.Fatalf("evalDir(root) = %q, %v", got, err)
	}
}

// The violation observer names a refused write by where it goes: the
// parent's symlinks resolved. It remembered each directory it resolved
// for as long as the sandbox lived, so a command that wrote in a
// directory, then put a symlink to a read-only one in its place, had its
// refused writes through the symlink reported by the old path, which is
// writable: not reported at all, in the later commands of a session too
// (attack pass 58).
func TestObserverResolvesSwappedDirectory(t *testing.T) {
	// Not under /tmp: the sandbox's own, whose paths are not resolved.
	tmp, err := os.MkdirTemp("/var/tmp", "moat-observer-")
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	root := canon(t, tmp)
	mkTree(t, root, "w/d/", "ro/")
	o := &observer{dirs: newResolver()}
	// This process stands for the sandbox's: a symlink followed must lead
	// where it leads in that process's tree too (TestObserverHiddenSymlinkNotRead).
	me := os.Getpid()
	d := filepath.Join(root, "w", "d")
	if got := o.resolve(me, unix.AT_FDCWD, filepath.Join(d, "x")); got != filepath.Join(d, "x") {
		t.Fatalf("resolve = %q", got)
	}
	if err := os.Remove(d); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(root, "ro"), d); err != nil {
		t.Fatal(err)
	}
	if got, want := o.resolve(me, unix.AT_FDCWD, filepath.Join(d, "x")), filepath.Join(root, "ro", "x"); got != want {
		t.Errorf("after the directory became a symlink, a write through it is reported as %q, not %q", got, want)
	}
	// And back: a symlink remembered, then a directory in its place.
	if err := os.Remove(d); err != nil {
		t.Fatal(err)
	}
	mkTree(t, root, "w/d/")
	if got, want := o.resolve(me, unix.AT_FDCWD, filepath.Join(d, "y")), filepath.Join(d, "y"); got != want {
		t.Errorf("after the symlink became a directory, a write in it is reported as %q, not %q", got, want)
	}
}

// The observer resolves the parent of every path the command writes, on
// the supervisor's CPU, outside the command's cgroup: filepath.EvalSymlinks
// lstats every prefix, the square of the depth, and 3,000 opens of a file
// 1,900 directories deep cost the command 2 s of CPU and its supervisor
// 523 s (attack pass 58). Once the resolver's memory is full, each look is
// one walk, as the command's own call is.
func TestObserverResolutionLinear(t *testing.T) {
	tmp, err := os.MkdirTemp("/var/tmp", "moat-observer-")
	if err != nil {
		t.Skip(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	root := canon(t, tmp)
	d := root
	for len(d) < 3000 {
		d += "/a"
	}
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	o := &observer{dirs: newResolver()}
	o.dirs.dirBytes.Store(maxResolverBytes) // full: nothing more is remembered
	p := filepath.Join(d, "f")
	start := time.Now()
	const n = 20
	for range n {
		if got := o.resolve(0, unix.AT_FDCWD, p); got != p {
			t.Fatalf("resolve = %.80q...", got)
		}
	}
	if each := time.Since(start) / n; each > 10*time.Millisecond {
		t.Errorf("resolving the parent of a path %d directories deep took %v (a walk takes well under a millisecond)", strings.Count(d, "/"), each)
	}
}
