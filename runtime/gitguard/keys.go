package gitguard

import "strings"

// Risk says why a config entry written by a sandboxed command must not
// reach the user's git, or "" when it is known to be harmless.
//
// The test is an allow-list: a section moat does not know is a risk, so a
// setting a future git adds that runs a program is refused, not missed.
// Within known sections, the keys that name a program, a file git would
// execute or read as configuration, a proxy, or that weaken a protection
// are risks.
func Risk(e Entry) string {
	sec, sub, key := e.Section(), e.Subsection(), e.Key()
	// sec.key without the subsection, looked up without a string made
	// for it: the audit asks this of every entry of every config of every
	// repository in the trees (attack pass 58: one large config
	// hard-linked into thousands of directories).
	var buf [64]byte
	full := append(append(append(buf[:0], sec...), '.'), key...)
	if r, ok := riskyKeys[string(full)]; ok {
		if string(full) == "core.fsmonitor" && isBool(e) {
			return "" // true/false: git's own daemon, no program named
		}
		return r
	}
	switch sec {
	case "alias":
		if e.HasValue && strings.HasPrefix(e.Value, "!") {
			return "an alias that runs a shell command"
		}
		// Without "!" an alias still passes git any option: -c sets any
		// key (core.fsmonitor), and difftool -x, rebase --exec, fetch
		// --upload-pack, submodule foreach, bisect run, grep -O run
		// programs (found by an outside attack pass: alias.st =
		// "-c core.fsmonitor=... status"). A repository's alias also
		// overrides the user's own of that name.
		return "an alias passes git options that can run programs"
	case "submodule":
		if key == "update" && e.HasValue && strings.HasPrefix(strings.TrimSpace(e.Value), "!") {
			return "submodule.<name>.update runs a command"
		}
	case "diff":
		if sub != "" && (key == "command" || key == "textconv") {
			return "a diff driver runs a program"
		}
	case "merge":
		if sub != "" && key == "driver" {
			return "a merge driver runs a program"
		}
	case "remote":
		switch key {
		case "uploadpack", "receivepack", "vcs":
			return "remote.<name>." + key + " runs a program"
		case "proxy":
			return "a proxy for the user's git traffic"
		case "url", "pushurl", "pushdefault":
			if e.HasValue && strings.Contains(e.Value, "::") {
				return "a remote through a transport helper (git-remote-<name>, a program)"
			}
			if key == "pushurl" {
				// No clone writes one: it sends the user's push elsewhere
				// than the remote's url (url.* is refused for the same
				// reason).
				return "remote.<name>.pushurl sends the user's git push elsewhere"
			}
		}
	case "branch":
		if (key == "remote" || key == "pushremote") && e.HasValue && strings.Contains(e.Value, "::") {
			return "a branch's remote through a transport helper (git-remote-<name>, a program)"
		}
		if key == "mergeoptions" {
			// Options for every git merge and pull of the branch:
			// -Xindex-output=FILE wrote any file, -F FILE made any file
			// the merge's message (found by an attack pass).
			return "branch.<name>.mergeOptions passes options to the user's git merge and pull (-Xindex-output= writes any file, -F reads one)"
		}
	case "pull":
		if (key == "twohead" || key == "octopus") && e.HasValue && !builtinStrategies[strings.TrimSpace(e.Value)] {
			return "pull." + key + " names a merge strategy that is not git's own (git-merge-<name>, a program)"
		}
	case "format":
		switch key {
		case "signaturefile", "outputdirectory", "headers", "cc", "to":
			return "format." + key + " makes the user's git format-patch read a file, write elsewhere, or address the patches"
		}
	case "extensions":
		// git reads a repository's extensions to change how it uses the
		// repository itself; newer git than moat's rules know adds more
		// (2.52's submodulePathConfig lets submodule.<name>.gitdir put a
		// submodule's git directory anywhere, refStorage's URI form reads
		// the refs from another directory). Only those known to change
		// nothing git runs or reads from elsewhere stay: an unknown one the
		// run turned on is taken out (fail closed: git then refuses the
		// repository or ignores what it needed, and runs nothing).
		switch key {
		case "objectformat", "compatobjectformat", "noop", "noop-v1", "partialclone",
			"preciousobjects", "worktreeconfig", "relativeworktrees":
			return ""
		case "submodulepathconfig":
			// submodule.<name>.gitdir is judged instead (gitdirOutsideModules,
			// repo): git clone and git init set the extension themselves
			// under the user's init.defaultSubmodulePathConfig.
			return ""
		case "refstorage":
			if e.HasValue && !strings.Contains(e.Value, "://") {
				return "" // a format name alone: the refs stay in the git directory
			}
			return "extensions.refStorage with a location reads the repository's refs (replace refs included) from another directory"
		}
		return "an extension moat does not know: newer git may read it to use the repository otherwise (where its git directories, refs or objects lie)"
	case "lfs":
		if l := strings.ToLower(sub); strings.HasPrefix(l, "customtransfer.") || strings.HasPrefix(l, "extension.") || key == "standalonetransferagent" {
			return "git-lfs runs a program named here"
		}
		switch key {
		case "storage", "url", "pushurl":
			return "lfs." + key + " moves where git-lfs keeps or sends the repository's large files"
		}
	}
	if !safeSections[sec] {
		if r, ok := riskySections[sec]; ok {
			return r
		}
		return "a setting moat does not know to be harmless"
	}
	return ""
}

// isBool: git reads e as a boolean (core.fsmonitor is then its own
// daemon, no program).
func isBool(e Entry) bool {
	if !e.HasValue {
		return true
	}
	_, ok := ParseBool(e.Value)
	return ok
}

// riskyKeys are section.key pairs (subsection ignored) that run a program,
// make git read other files as configuration or hooks, or weaken git's own
// protections.
var riskyKeys = map[string]string{
	"core.fsmonitor":             "core.fsmonitor runs a program on every git status",
	"core.hookspath":             "core.hooksPath points git at other hooks",
	"core.sshcommand":            "core.sshCommand runs a program",
	"core.pager":                 "core.pager runs a program",
	"core.editor":                "core.editor runs a program",
	"core.askpass":               "core.askPass runs a program",
	"core.gitproxy":              "core.gitProxy runs a program",
	"core.alternaterefscommand":  "core.alternateRefsCommand runs a program",
	"core.attributesfile":        "core.attributesFile makes git read other attributes",
	"core.protecthfs":            "core.protectHFS turns off a protection against hostile trees",
	"core.protectntfs":           "core.protectNTFS turns off a protection against hostile trees",
	"sequence.editor":            "sequence.editor runs a program",
	"diff.external":              "diff.external runs a program",
	"diff.tool":                  "diff.tool chooses a program to run",
	"diff.guitool":               "diff.guitool chooses a program to run",
	"merge.tool":                 "merge.tool chooses a program to run",
	"merge.guitool":              "merge.guitool chooses a program to run",
	"commit.template":            "commit.template makes git read another file",
	"init.templatedir":           "init.templateDir copies hooks into new repositories",
	"interactive.difffilter":     "interactive.diffFilter runs a program",
	"uploadpack.packobjectshook": "uploadpack.packObjectsHook runs a program",
	"gc.recentobjectshook":       "gc.recentObjectsHook runs a program when git gc (automatic after commit, fetch) prunes",
	"gc.repackfilterto":          "gc.repackFilterTo makes git gc write the objects it filters out to another directory",
	"core.worktree":              "core.worktree moves the work tree anywhere: git's checkout, reset and clean then write and delete there",
	"core.sharedrepository":      "core.sharedRepository makes the repository writable by other users, who could plant hooks",
}

// riskySections name why a whole section is a risk.
var riskySections = map[string]string{
	"include":    "include makes git read another file as configuration",
	"includeif":  "includeIf makes git read another file as configuration",
	"filter":     "a filter driver runs a program",
	"credential": "a credential helper runs a program",
	"gpg":        "gpg.* names the signing program",
	"hook":       "hook.* runs a program",
	"pager":      "pager.* runs a program",
	"difftool":   "difftool.* runs a program",
	"mergetool":  "mergetool.* runs a program",
	"sendemail":  "sendemail.* can run programs",
	"web":        "web.browser runs a program",
	"browser":    "browser.* runs a program",
	"man":        "man.* runs a program",
	"instaweb":   "instaweb.* runs a program",
	"guitool":    "guitool.* runs a program",
	"tar":        "tar.<format>.command runs a program",
	"trace2":     "trace2.* writes to files or sockets",
	"protocol":   "protocol.* can enable protocols that run programs",
	"url":        "url.* rewrites where the user's git connects",
	"http":       "http.* changes how the user's git connects (proxy, TLS checks)",
	"https":      "https.* changes how the user's git connects",
	"safe":       "safe.* changes git's ownership checks",
}

// safeSections are sections whose keys are data, not programs (the
// exceptions within them are in riskyKeys and Risk's switch).
var safeSections = map[string]bool{
	"add": true, "advice": true, "alias": true, "am": true, "apply": true,
	"blame": true, "branch": true, "bundle": true, "checkout": true,
	"clean": true, "clone": true, "color": true, "column": true,
	"commit": true, "commitgraph": true, "core": true, "diff": true,
	"extensions": true, "fastimport": true, "feature": true, "fetch": true,
	"format": true, "fsck": true, "fsmonitor": true, "gc": true, "grep": true,
	"i18n": true, "index": true, "init": true,
	"interactive": true, "lfs": true, "log": true, "mailmap": true,
	"maintenance": true, "merge": true, "notes": true, "pack": true,
	"pull": true, "push": true, "rebase": true, "receive": true,
	"remote": true, "repack": true, "rerere": true, "reset": true,
	"revert": true, "sequence": true, "showbranch": true, "sparse": true,
	"splitindex": true, "ssh": true, "stash": true, "status": true,
	"submodule": true, "tag": true, "transfer": true, "uploadarchive": true,
	"uploadpack": true, "user": true, "versionsort": true, "worktree": true,
	"pretty": true,
}
