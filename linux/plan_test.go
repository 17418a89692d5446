//go:build linux

package linux

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/moat-sandbox/moat/linux/nsinit"
	"github.com/moat-sandbox/moat/runtime/policy"
)

func mkTree(t *testing.T, root string, paths ...string) {
	t.Helper()
	for _, p := range paths {
		full := filepath.Join(root, p)
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func canon(t *testing.T, p string) string {
	t.Helper()
	c, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestGlob(t *testing.T) {
	root := canon(t, t.TempDir())
	mkTree(t, root, "a/.env", "a/b/.env", "a/b/c/.env", "a/b/c/d/e/.env", "a/node_modules/x/.env", "a/x.pem", "a/y.pem", "a/b/z.txt", "lit[1]/f")
	cases := []struct {
		pattern string
		want    []string
	}{
		{"a/*.pem", []string{"a/x.pem", "a/y.pem"}},
		{"a/**/.env", []string{"a/.env", "a/b/.env", "a/b/c/.env"}}, // depth 3: not d/e, not node_modules
		{"*/b/*.txt", []string{"a/b/z.txt"}},
		{"a/?.pem", []string{"a/x.pem", "a/y.pem"}},
		{"a/[x].pem", []string{"a/x.pem"}},
		{"lit[1]/f", nil}, // [1] is a set: glob alone does not match the literal name (expand adds it)
		{"a/*.nothing", nil},
	}
	for _, tc := range cases {
		t.Run(tc.pattern, func(t *testing.T) {
			got, err := glob(filepath.Join(root, tc.pattern), &globBudget{entries: DefaultGlobBudget, depth: 3})
			if err != nil {
				t.Fatal(err)
			}
			var rel []string
			for _, g := range got {
				r, _ := filepath.Rel(root, g)
				rel = append(rel, r)
			}
			slices.Sort(rel)
			if !slices.Equal(rel, tc.want) {
				t.Errorf("got %v, want %v", rel, tc.want)
			}
		})
	}
	// For deny rules ** goes all the way down, node_modules included.
	deny := &globBudget{entries: DefaultGlobBudget, depth: 3}
	restore := deny.forDeny()
	got, err := glob(filepath.Join(root, "a/**/.env"), deny)
	restore()
	if err != nil || len(got) != 5 {
		t.Errorf("deny a/**/.env: %v %v, want all 5", got, err)
	}
	if _, err := glob(filepath.Join(root, "**/*"), &globBudget{entries: 3, depth: 3}); err != errGlobBudget {
		t.Errorf("budget: %v", err)
	}
}

// The cache is used while nothing changes and dropped when a new match can
// exist.
func TestGlobCache(t *testing.T) {
	root := canon(t, t.TempDir())
	cache := t.TempDir()
	mkTree(t, root, "p/one/.env", "p/two/")
	pattern := filepath.Join(root, "p/**/.env")
	b := &globBudget{entries: DefaultGlobBudget, depth: 3}
	first, err := globCached(pattern, b, cacheIO{dir: cache})
	if err != nil || len(first) != 1 {
		t.Fatalf("%v %v", first, err)
	}
	if _, ok := readGlobCache(cacheIO{dir: cache}, filepath.Join(cache, mustOne(t, cache, "glob-")), pattern, 3); !ok {
		t.Fatal("the cache was not written or not valid")
	}
	// A new match in a directory the pattern read.
	mkTree(t, root, "p/two/.env")
	second, err := globCached(pattern, &globBudget{entries: DefaultGlobBudget, depth: 3}, cacheIO{dir: cache})
	if err != nil || len(second) != 2 {
		t.Fatalf("a new match was missed (stale cache): %v %v", second, err)
	}
	// A literal segment that appears later.
	lit := filepath.Join(root, "q/*/secret")
	mkTree(t, root, "q/d/")
	if got, _ := globCached(lit, &globBudget{entries: DefaultGlobBudget, depth: 3}, cacheIO{dir: cache}); len(got) != 0 {
		t.Fatalf("%v", got)
	}
	mkTree(t, root, "q/d/secret")
	if got, _ := globCached(lit, &globBudget{entries: DefaultGlobBudget, depth: 3}, cacheIO{dir: cache}); len(got) != 1 {
		t.Fatalf("a new literal match was missed (stale cache): %v", got)
	}
}

func mustOne(t *testing.T, dir, prefix string) string {
	es, _ := os.ReadDir(dir)
	for _, e := range es {
		if strings.HasPrefix(e.Name(), prefix) {
			return e.Name()
		}
	}
	t.Fatalf("no %s* in %s", prefix, dir)
	return ""
}

func TestScan(t *testing.T) {
	root := canon(t, t.TempDir())
	mkTree(t, root, "repo/.git/hooks/", "repo/.git/config", "repo/sub/.vscode/", "repo/a/b/c/deep/.git/config",
		"node_modules/pkg/.git/config", "bare/HEAD", "bare/objects/", "bare/refs/", "wt/.bashrc")
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "main/.git/worktrees/w"), 0o755))
	must(os.WriteFile(filepath.Join(root, "wt/.git"), []byte("gitdir: ../main/.git/worktrees/w\n"), 0o644))
	must(os.WriteFile(filepath.Join(root, "main/.git/worktrees/w/commondir"), []byte("../..\n"), 0o644))
	cache := t.TempDir()
	r, err := scanCache(root, 3, cacheIO{dir: cache})
	if err != nil {
		t.Fatal(err)
	}
	has := func(list []string, p string) bool { return slices.Contains(list, filepath.Join(root, p)) }
	for _, g := range []string{"repo/.git", "bare", "main/.git/worktrees/w", "main/.git"} {
		if !has(r.gitDirs, g) {
			t.Errorf("git dir %s not found: %v", g, r.gitDirs)
		}
	}
	if has(r.gitDirs, "repo/a/b/c/deep/.git") {
		t.Errorf("depth 3 must not reach depth 4")
	}
	if has(r.gitDirs, "node_modules/pkg/.git") {
		t.Errorf("node_modules must be skipped")
	}
	if !has(r.gitFiles, "wt/.git") || !has(r.named, "repo/sub/.vscode") || !has(r.named, "wt/.bashrc") {
		t.Errorf("files %v named %v", r.gitFiles, r.named)
	}
	// Warm: same answer; a new repository invalidates it.
	r2, _ := scanCache(root, 3, cacheIO{dir: cache})
	if !slices.Equal(r.gitDirs, r2.gitDirs) {
		t.Errorf("warm scan differs")
	}
	mkTree(t, root, "repo/new/.git/config")
	r3, _ := scanCache(root, 3, cacheIO{dir: cache})
	if !slices.Contains(r3.gitDirs, filepath.Join(root, "repo/new/.git")) {
		t.Errorf("a new repository was missed (stale cache): %v", r3.gitDirs)
	}
}

func TestViewPrecedence(t *testing.T) {
	v := &view{
		denyRead:   []rule{{path: "/h"}, {path: "/h/a/b/secret"}},
		allowRead:  []rule{{path: "/h/a"}},
		allowWrite: []rule{{path: "/w"}, {path: "/w/ro/rw"}},
		denyWrite:  []rule{{path: "/w/ro"}},
		protect:    []rule{{path: "/w/.git/config", source: "git"}},
		privateTmp: true,
		exposed:    []rule{{path: "/tmp/cwd"}},
	}
	cases := []struct {
		p    string
		want access
	}{
		{"/etc/passwd", accRO},
		{"/h/x", accMask},
		{"/h/a/x", accRO},          // allowRead is more specific than denyRead
		{"/h/a/b/secret", accMask}, // a more specific denyRead wins again
		{"/w/x", accRW},
		{"/w/ro/x", accRO},    // denyWrite beats allowWrite
		{"/w/ro/rw/x", accRO}, // ...also a more specific allowWrite
		{"/w/.git/config", accRO},
		{"/tmp/x", accRW},     // the private /tmp
		{"/tmp/cwd/x", accRO}, // a host path shown read-only in it
	}
	for _, tc := range cases {
		if got := v.access(tc.p); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.p, got, tc.want)
		}
	}
}

// The plan protects what must be protected inside the writable tree, and
// reserves missing names there (placeholders), without touching the disk.
func TestPlanProtections(t *testing.T) {
	root := canon(t, t.TempDir())
	work := filepath.Join(root, "work")
	mkTree(t, root, "work/.git/hooks/", "work/.git/config", "work/.git/HEAD", "work/.git/objects/", "work/.git/refs/",
		"work/src/.idea/", "outside/.bashrc")
	pol := &policy.Policy{Cwd: work, Home: filepath.Join(root, "home")}
	pol.FS.AllowWrite = []policy.PathRule{{Path: work}}
	pol.FS.MandatoryDenySearchDepth = 3
	fp, err := makeFSPlan(planInput{pol: pol, exposeRO: []string{work}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{".git/hooks", ".git/config", ".git/commondir", ".git/modules", ".claude", ".vscode", ".mcp.json", "src/.idea"} {
		if !slices.Contains(fp.protected, filepath.Join(work, p)) {
			t.Errorf("%s is not protected: %v", p, fp.protected)
		}
	}
	if slices.Contains(fp.protected, filepath.Join(root, "outside/.bashrc")) {
		t.Errorf("a path outside the writable tree needs no protection")
	}
	var phs []string
	for _, ph := range fp.placeholders {
		rel, _ := filepath.Rel(work, ph.path)
		phs = append(phs, rel)
	}
	slices.Sort(phs)
	// The seeds' names in the working directory, HEAD (no bare repository
	// planted there), the git entries of its repository.
	want := []string{".bash_profile", ".bashrc", ".claude", ".git/commondir", ".git/modules", ".gitconfig", ".gitmodules",
		".idea", ".mcp.json", ".profile", ".ripgreprc", ".vscode", ".zprofile", ".zshrc", "HEAD"}
	if !slices.Equal(phs, want) {
		t.Errorf("placeholders %v, want %v", phs, want)
	}
	for _, p := range want {
		if _, err := os.Lstat(filepath.Join(work, p)); err == nil {
			t.Errorf("planning created %s on disk", p)
		}
	}
	// allowGitConfig lifts config only.
	pol.FS.AllowGitConfig = true
	fp, _ = makeFSPlan(planInput{pol: pol, exposeRO: []string{work}})
	if slices.Contains(fp.protected, filepath.Join(work, ".git/config")) || !slices.Contains(fp.protected, filepath.Join(work, ".git/hooks")) {
		t.Errorf("allowGitConfig: %v", fp.protected)
	}
}

func TestExpandLiteralBrackets(t *testing.T) {
	root := canon(t, t.TempDir())
	mkTree(t, root, "lit[1]/f")
	p := filepath.Join(root, "lit[1]/f")
	rs, err := newResolver().expand(policy.PathRule{Path: p, Glob: true}, &globBudget{entries: DefaultGlobBudget, depth: 3}, cacheIO{})
	if err != nil || len(rs) != 1 || rs[0].path != p {
		t.Fatalf("%v %v", rs, err)
	}
}

// A hidden path's mask is skipped in stage 2 when the path was removed on
// the host after the plan (MV_OPTIONAL: "mask" records), except a mask
// over moat's own state, which the runtime does not watch, and one over a
// reserved name in a writable tree, which also keeps the command from
// making it (TestStateDirVanishesDuringSetup runs the first end to end).
func TestPlanMasksMayVanish(t *testing.T) {
	dir, err := os.MkdirTemp("/var/tmp", "moat-plan-") // outside the private /tmp
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	root := canon(t, dir)
	work := filepath.Join(root, "work")
	mkTree(t, root, "work/.vscode/tasks.json", "work/.mcp.json", "work/.env", "secrets/", "state/", "home/")
	secrets, state := filepath.Join(root, "secrets"), filepath.Join(root, "state")
	vscode, mcp, env := filepath.Join(work, ".vscode"), filepath.Join(work, ".mcp.json"), filepath.Join(work, ".env")
	pol := &policy.Policy{Cwd: work, Home: filepath.Join(root, "home")}
	pol.FS.AllowWrite = []policy.PathRule{{Path: work}}
	pol.FS.DenyRead = []policy.PathRule{{Path: secrets, Source: "test"}, {Path: state, Source: ownStateSource},
		{Path: vscode, Source: "test"}, {Path: mcp, Source: "test"}, {Path: env, Source: "test"}}
	fp, err := makeFSPlan(planInput{pol: pol, exposeRO: []string{work}})
	if err != nil {
		t.Fatal(err)
	}
	p := nsinit.New()
	fp.build(p)
	if !slices.Contains(p.Desc, "mask "+secrets) || slices.Contains(p.Desc, "tmpfs on "+secrets) {
		t.Errorf("the mask over a hidden directory is not optional: %q", p.Desc)
	}
	if !slices.Contains(p.Desc, "tmpfs on "+state) || slices.Contains(p.Desc, "mask "+state) {
		t.Errorf("the mask over moat's own state is optional: %q", p.Desc)
	}
	// A reserved name in a writable tree: its mask also keeps the command
	// from making it.
	if !slices.Contains(p.Desc, "tmpfs on "+vscode) || slices.Contains(p.Desc, "mask "+vscode) {
		t.Errorf("the mask over a reserved directory in a writable tree is optional: %q", p.Desc)
	}
	if !slices.Contains(p.Desc, "mount over "+mcp) || slices.Contains(p.Desc, "mask "+mcp) {
		t.Errorf("the mask over a reserved file in a writable tree is optional: %q", p.Desc)
	}
	if !slices.Contains(p.Desc, "mask "+env) {
		t.Errorf("the mask over a hidden file is not optional: %q", p.Desc)
	}
}
