package permissions

import (
	"strings"

	"github.com/moat-sandbox/moat/internal/lazyre"
)

// Destructive-command warnings are notes shown with the permission prompt.
// They never change the decision. They are computed on every command the
// line can run (the same candidates deny rules see), so a destructive
// command inside sh -c or behind sudo still gets its note.

const (
	warnDiscard   = "Note: may discard uncommitted changes"
	warnForcePush = "Note: may overwrite remote history"
	warnClean     = "Note: may permanently delete untracked files"
	warnBranch    = "Note: may delete a branch whose commits are not merged"
	warnStash     = "Note: may permanently delete stashed changes"
	warnHistory   = "Note: may rewrite repository history"
	warnRm        = "Note: may recursively force-remove files"
	warnFindDel   = "Note: may delete the files find matches"
	warnSQL       = "Note: may drop or truncate database objects"
	warnKube      = "Note: may delete Kubernetes resources"
	warnTerraform = "Note: may destroy Terraform infrastructure"
	warnDisk      = "Note: may overwrite a disk or format a filesystem"
	warnDocker    = "Note: may delete Docker containers, images or volumes"
	warnCloud     = "Note: may delete cloud storage"
	warnShred     = "Note: may destroy file contents beyond recovery"
)

var sqlDropRe = lazyre.New(`(?i)\b(DROP|TRUNCATE)\s+(TABLE|DATABASE|SCHEMA)\b`)

// warnings returns the notes for a command line (never nil).
func warnings(cands [][]string, src string) []string {
	out := []string{}
	add := func(w string) {
		for _, x := range out {
			if x == w {
				return
			}
		}
		out = append(out, w)
	}
	for _, c := range cands {
		if w := destructive(c); w != "" {
			add(w)
		}
	}
	if len(src) < MaxAnalysedBytes && containsDropOrTruncate(src) && sqlDropRe.MatchString(src) {
		add(warnSQL)
	}
	return out
}

// containsDropOrTruncate is containsFold(s, "drop") ||
// containsFold(s, "truncate") in one pass.
func containsDropOrTruncate(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] | 0x20 {
		case 'd':
			if i+4 <= len(s) && s[i+1]|0x20 == 'r' && s[i+2]|0x20 == 'o' && s[i+3]|0x20 == 'p' {
				return true
			}
		case 't':
			if i+8 <= len(s) && containsFold(s[i:i+8], "truncate") {
				return true
			}
		}
	}
	return false
}

// containsFold reports whether s contains the lower-case ASCII word w in
// any case, without allocating.
func containsFold(s, w string) bool {
	for i := 0; i+len(w) <= len(s); i++ {
		if s[i]|0x20 != w[0] {
			continue
		}
		j := 1
		for j < len(w) && s[i+j]|0x20 == w[j] {
			j++
		}
		if j == len(w) {
			return true
		}
	}
	return false
}

// hasShort reports whether args hold the short flag c, alone or bundled.
func hasShort(args []string, c byte) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		if len(a) > 1 && a[0] == '-' && a[1] != '-' && strings.IndexByte(a[1:], c) >= 0 {
			return true
		}
	}
	return false
}

func hasWord(args []string, ws ...string) bool {
	for _, a := range args {
		for _, w := range ws {
			if a == w || strings.HasPrefix(a, w+"=") {
				return true
			}
		}
	}
	return false
}

// destructive returns the note for one argument vector, or "".
func destructive(argv []string) string {
	if len(argv) == 0 {
		return ""
	}
	name, args := argv[0], argv[1:]
	switch {
	case name == "git":
		sub := gitStripGlobals(argv)
		if sub == nil {
			sub = argv
		}
		if len(sub) < 2 {
			return ""
		}
		verb, rest := sub[1], sub[2:]
		switch verb {
		case "reset":
			if hasWord(rest, "--hard", "--merge", "--keep") {
				return warnDiscard
			}
		case "push":
			if hasWord(rest, "--force", "--force-with-lease", "--force-if-includes", "--mirror", "--delete", "--prune") || hasShort(rest, 'f') || hasShort(rest, 'd') {
				return warnForcePush
			}
			for _, r := range rest {
				if strings.HasPrefix(r, "+") || strings.HasPrefix(r, ":") {
					return warnForcePush
				}
			}
		case "clean":
			if (hasShort(rest, 'f') || hasWord(rest, "--force")) && !hasShort(rest, 'n') && !hasWord(rest, "--dry-run") {
				return warnClean
			}
		case "checkout":
			if hasWord(rest, "--", ".", "-f", "--force", "--ours", "--theirs") {
				return warnDiscard
			}
		case "restore":
			if !hasWord(rest, "--staged", "-S") || hasWord(rest, "--worktree", "-W") {
				return warnDiscard
			}
		case "switch":
			if hasWord(rest, "--discard-changes", "-f", "--force") {
				return warnDiscard
			}
		case "branch":
			if hasShort(rest, 'D') || (hasWord(rest, "--delete") && hasWord(rest, "--force")) {
				return warnBranch
			}
		case "stash":
			if len(rest) > 0 && (rest[0] == "drop" || rest[0] == "clear") {
				return warnStash
			}
		case "filter-branch", "filter-repo":
			return warnHistory
		case "rebase":
			if hasWord(rest, "--root") {
				return warnHistory
			}
		}
	case name == "rm":
		if (hasShort(args, 'r') || hasShort(args, 'R') || hasWord(args, "--recursive")) &&
			(hasShort(args, 'f') || hasWord(args, "--force")) {
			return warnRm
		}
	case name == "find":
		if hasWord(args, "-delete") {
			return warnFindDel
		}
		for i, a := range args {
			if (a == "-exec" || a == "-execdir") && i+1 < len(args) && (args[i+1] == "rm" || args[i+1] == "shred") {
				return warnFindDel
			}
		}
	case name == "kubectl" || name == "oc":
		if hasWord(args, "delete", "drain") {
			return warnKube
		}
	case name == "helm":
		if hasWord(args, "uninstall", "delete") {
			return warnKube
		}
	case name == "terraform" || name == "tofu" || name == "terragrunt":
		if hasWord(args, "destroy") || (hasWord(args, "apply") && hasWord(args, "-destroy")) {
			return warnTerraform
		}
	case name == "dd":
		for _, a := range args {
			if strings.HasPrefix(a, "of=/dev/") {
				return warnDisk
			}
		}
	case strings.HasPrefix(name, "mkfs") || name == "wipefs" || name == "fdisk" || name == "sfdisk" || name == "parted":
		return warnDisk
	case name == "docker" || name == "podman":
		if hasWord(args, "prune") || (hasWord(args, "rm", "rmi") && (hasShort(args, 'f') || hasWord(args, "--force"))) ||
			(hasWord(args, "volume") && hasWord(args, "rm")) {
			return warnDocker
		}
	case name == "aws":
		if hasWord(args, "s3") && (hasWord(args, "rb") || (hasWord(args, "rm") && hasWord(args, "--recursive"))) {
			return warnCloud
		}
	case name == "gsutil":
		if hasWord(args, "rm", "rb") {
			return warnCloud
		}
	case name == "shred":
		return warnShred
	}
	return ""
}
