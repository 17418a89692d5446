package gitguard

import (
	"path/filepath"
	"slices"
	"strings"
)

// What git reads that its newer versions, or the user's own configuration,
// make mean another place than the value says.

// urlRewrite is one url.<base>.insteadOf (or pushInsteadOf) of a git
// config: a URL that starts with prefix is base and the rest for git.
type urlRewrite struct {
	base, prefix string
	push         bool // pushInsteadOf: for a push to a remote with no pushurl
}

// urlRewriteOf is e as a rewrite, if it is one (git ignores one with no
// base, or no value).
func urlRewriteOf(e Entry) (urlRewrite, bool) {
	if e.Section() != "url" || !e.HasValue {
		return urlRewrite{}, false
	}
	base := e.Subsection()
	switch e.Key() {
	case "insteadof":
		return urlRewrite{base: base, prefix: e.Value}, base != ""
	case "pushinsteadof":
		return urlRewrite{base: base, prefix: e.Value, push: true}, base != ""
	}
	return urlRewrite{}, false
}

// rewrittenURLs are the URLs git may take u for under the rewrites rws:
// u itself, and what each rewrite whose prefix u starts with makes of it
// (pushInsteadOf ones only when push). git's alias_url takes the longest
// prefix of the rewrites in force; which are in force depends on the
// includeIf conditions of the user's files, which the audit takes as all
// met, so every match is a place the user's git may go (the longest one is
// where it goes when all are met).
//
// The user's own rewrites were not applied: remote.origin.url =
// https://mirror.example/../proj/sub/.git/stash/evil.git is a network URL
// to the audit, and a local path for the user's git under the user's
// url."/var/tmp/w/mirrors/".insteadOf = https://mirror.example/, and the
// user's git push ran the hidden repository's pre-receive (attack pass 61,
// TestAuditRemoteURLUsersInsteadOf).
func rewrittenURLs(u string, push bool, rws []urlRewrite) []string {
	out := []string{u}
	for _, r := range rws {
		if r.push && !push || !strings.HasPrefix(u, r.prefix) {
			continue
		}
		if v := r.base + u[len(r.prefix):]; !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

// remoteURLs are the remote locations of a repository's config entries
// es as the user's git takes them, rewritten by the rewrites of the user's
// configuration (global) and of es: git rewrites a remote's url with
// insteadOf for a fetch, with pushInsteadOf for a push where the remote has
// no pushurl, and a pushurl with insteadOf (remote.c alias_all_urls); a
// branch's remote or remote.pushdefault that is a URL, not a name, is one
// remote's url.
func remoteURLs(es []Entry, global []urlRewrite) []string {
	rws := append(append([]urlRewrite(nil), global...), remoteRewrites(es)...)
	pushurl := map[string]bool{}
	for _, e := range es {
		if e.Section() == "remote" && e.Key() == "pushurl" && e.HasValue {
			pushurl[e.Subsection()] = true
		}
	}
	var out []string
	for _, e := range es {
		if !e.HasValue {
			continue
		}
		push := true
		switch sec, key := e.Section(), e.Key(); {
		case sec == "remote" && key == "pushurl":
			push = false
		case sec == "remote" && key == "url":
			push = !pushurl[e.Subsection()]
		case sec == "remote" && key == "pushdefault", sec == "branch" && (key == "pushremote" || key == "remote"):
		default:
			continue
		}
		out = append(out, rewrittenURLs(e.Value, push, rws)...)
	}
	return out
}

// remoteRewrites are the URL rewrites among a repository's config
// entries es.
func remoteRewrites(es []Entry) []urlRewrite {
	var rws []urlRewrite
	for _, e := range es {
		if r, ok := urlRewriteOf(e); ok {
			rws = append(rws, r)
		}
	}
	return rws
}

// submoduleGitdir is the path submodule.<name>.gitdir in config p names
// (with extensions.submodulePathConfig, git 2.52 and later, a submodule's
// git directory is wherever it says), or "" for another entry. git takes
// the value as written (no ~), relative to the directory it runs in: the
// work tree's top for a repository whose git directory is .git, the git
// directory otherwise.
func submoduleGitdir(p string, e Entry) string {
	if e.Section() != "submodule" || e.Key() != "gitdir" || e.Subsection() == "" || !e.HasValue || e.Value == "" {
		return ""
	}
	if filepath.IsAbs(e.Value) {
		return e.Value
	}
	base := filepath.Dir(p)
	if filepath.Base(base) == ".git" {
		base = filepath.Dir(base)
	}
	return base + "/" + e.Value // ".." after a symlink, as the kernel takes it
}

// gitdirOutsideModules says why e, a submodule.<name>.gitdir in config p
// that the run wrote, is taken out, or "": one that names a directory
// under the repository's own modules/ stays (git sets such a value itself,
// and every git directory there is judged: modules), anything else goes.
// With the extension on, git submodule update takes the directory it names
// for the submodule's git directory, runs its post-checkout hook and reads
// its config; the audit never looked there (a repository hidden in .git
// named so ran its hook: attack pass 61,
// TestAuditSubmoduleGitdirConfig, with git 2.52+).
func (a *auditor) gitdirOutsideModules(p string, e Entry) string {
	g := submoduleGitdir(p, e)
	if g == "" {
		return ""
	}
	mod := physical(filepath.Join(filepath.Dir(p), "modules")) + "/"
	if !slices.Contains(strings.Split(e.Value, "/"), "..") && strings.HasPrefix(physical(g)+"/", mod) && len(physical(g)+"/") > len(mod) {
		return ""
	}
	return "submodule.<name>.gitdir names a git directory outside the repository's modules/ (" + quoteName(e.Value) + "): git 2.52+ (extensions.submodulePathConfig) uses it for the submodule, hooks and config included"
}

// hiddenGitdir judges, whole, the git directory a submodule.<name>.gitdir
// that stayed (the user's own, or one under modules/) names, when it lies
// in the trees where the walk does not go (inside a git directory, a bare
// repository's objects); under modules/ it is the modules walk's.
func (a *auditor) hiddenGitdir(p string, e Entry) {
	g := submoduleGitdir(p, e)
	if g == "" {
		return
	}
	real, err := evalSymlinks(g)
	if err != nil || !a.inRoots(real) {
		return
	}
	if mod := physical(filepath.Join(filepath.Dir(p), "modules")) + "/"; strings.HasPrefix(real+"/", mod) {
		return
	}
	if walked := !insideGitAdmin(filepath.Dir(real)) && !inSkippedObjects(filepath.Dir(real)); walked && (!insideGitAdmin(real) && !inSkippedObjects(real) || strings.EqualFold(filepath.Base(real), ".git")) {
		return // the walk's, like any repository in the trees (as hiddenRemote)
	}
	if _, err := lstat(filepath.Join(real, "HEAD")); err != nil {
		return
	}
	a.fresh[real] = true
	a.repo(real, "", nil)
}
