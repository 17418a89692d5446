package permissions

import (
	"slices"
	"strings"
)

// git's read-only subcommands and their safe flags. A git command is
// read-only when its global options, its subcommand and every flag are in
// these tables. Never read-only: -c and --config-env (a configuration can
// name programs: core.pager, core.fsmonitor, diff.external), -C, --git-dir,
// --work-tree, --exec-path and --bare (they point git at another
// repository, whose configuration runs programs), -p/--paginate (runs the
// pager), --output (writes a file), --ext-diff, --textconv and cat-file
// --filters (run configured programs, as the seed says), grep's
// -O/--open-files-in-pager, and every subcommand or flag that writes.
// Signature verification runs gpg.program (git log --show-signature, a %G
// placeholder in --format, %(signature) in a ref format, verify-commit);
// git describe --dirty and --broken refresh the index; --remerge-diff
// writes objects into a temporary directory; merge-tree --write-tree
// writes objects.

var gitGlobalSafe = lazy[map[string]bool]{make: func() map[string]bool {
	return map[string]bool{
		"--no-pager": true, "-P": true, "--no-optional-locks": true, "--literal-pathspecs": true,
		"--glob-pathspecs": true, "--noglob-pathspecs": true, "--icase-pathspecs": true,
		"--no-replace-objects": true, "--no-advice": true,
	}
}}

// gitLogFlags are the formatting and selection flags shared by log, show,
// diff, whatchanged, shortlog, reflog, rev-list, cherry, stash show and the
// diff-* plumbing commands.
var gitLogFlags = flags("--oneline -n= --max-count= --skip= --since= --after= --until= --before= --author= --committer= " +
	"--grep= --all-match --invert-grep -i --regexp-ignore-case -E --extended-regexp -F --fixed-strings -P --perl-regexp " +
	"--basic-regexp --merges --no-merges --min-parents= --max-parents= --no-min-parents --no-max-parents --first-parent " +
	"--exclude-first-parent-only --not --all --branches? --tags? --remotes? --glob= --exclude= --reflog --alternate-refs " +
	"--single-worktree --ignore-missing --cherry-mark --cherry-pick --left-only --right-only --cherry --walk-reflogs -g " +
	"--merge --boundary --simplify-by-decoration --full-history --dense --sparse --simplify-merges --ancestry-path? " +
	"--show-pulls --date-order --author-date-order --topo-order --reverse --no-walk? --do-walk --pretty? --format= " +
	"--abbrev-commit --no-abbrev-commit --encoding= --expand-tabs? --no-expand-tabs --notes? --no-notes --show-notes? " +
	"--no-show-signature --relative-date --date= --parents --children --left-right --graph --show-linear-break? " +
	"--decorate? --no-decorate --decorate-refs= --decorate-refs-exclude= --clear-decorations --source --use-mailmap " +
	"--mailmap --no-mailmap --full-diff --log-size --follow --no-follow -L= --stat? --numstat --shortstat --dirstat? " +
	"--cumulative --dirstat-by-file? --summary --name-only --name-status --patch -p -u -U= --unified= --raw " +
	"--patch-with-raw --patch-with-stat -s --no-patch --color? --no-color --word-diff? --word-diff-regex= --color-words? " +
	"--color-moved? --no-color-moved --color-moved-ws= --no-color-moved-ws --ignore-space-change -b -w --ignore-all-space " +
	"--ignore-blank-lines --ignore-space-at-eol --ignore-cr-at-eol --ignore-matching-lines= -I= --diff-filter= " +
	"--find-renames? -M? --find-copies? -C? --find-copies-harder -B? --break-rewrites? -D --irreversible-delete -l= " +
	"--relative? --no-relative -S= -G= --find-object= --pickaxe-all --pickaxe-regex -O@ --skip-to= --rotate-to= " +
	"--abbrev? --no-abbrev --binary --full-index --src-prefix= --dst-prefix= --no-prefix --default-prefix --line-prefix= " +
	"--ita-invisible-in-index --ita-visible-in-index -R --text -a --minimal --patience --histogram --diff-algorithm= " +
	"--anchored= --indent-heuristic --no-indent-heuristic --inter-hunk-context= --function-context -W --exit-code " +
	"--quiet --check --ws-error-highlight= --compact-summary --stat-width= --stat-name-width= --stat-graph-width= " +
	"--stat-count= --cc -c -m --diff-merges= --no-diff-merges --combined-all-paths --no-renames " +
	"--rename-empty --no-rename-empty --submodule? --no-textconv --no-ext-diff --ignore-submodules? -z " +
	"--since-as-filter= --show-origin --count --objects --objects-edge --no-object-names --timestamp --header " +
	"--cached --staged --merge-base --no-index -0 -1 -2 -3 --base --ours --theirs -t -r --root --no-commit-id " +
	"--always --stdin --all-match --name-rev= -v --verbose -e --email --committer-email -q")

// gitSub describes one read-only subcommand.
type gitSub struct {
	flags flagTable
	// subs: the only operand words allowed first ("list", "show"); nil: any.
	subs []string
	// posWith: positionals only with one of these flags (branch -l PATTERN).
	posWith []string
	// maxPos bounds the positionals (config KEY; 0: no bound; -1: none).
	maxPos int
}

var gitSubs = lazy[map[string]gitSub]{make: func() map[string]gitSub {
	return map[string]gitSub{
		"status": {flags: flags("-s --short -b --branch --show-stash --porcelain? --long -v --verbose -u? --untracked-files? " +
			"--ignore-submodules? --ignored? -z --column? --no-column --ahead-behind --no-ahead-behind --renames " +
			"--no-renames --find-renames?")},
		"log":         {flags: gitLogFlags},
		"show":        {flags: gitLogFlags},
		"diff":        {flags: gitLogFlags},
		"whatchanged": {flags: gitLogFlags},
		"shortlog":    {flags: merge(gitLogFlags, flags("-n --numbered -s --summary --email --committer -w? --group="))},
		"rev-list":    {flags: gitLogFlags},
		"cherry":      {flags: gitLogFlags},
		"diff-tree":   {flags: gitLogFlags},
		"diff-files":  {flags: gitLogFlags},
		"diff-index":  {flags: gitLogFlags},
		"reflog":      {flags: gitLogFlags, subs: []string{"show", "list", "exists"}},
		"stash":       {flags: gitLogFlags, subs: []string{"list", "show"}},
		"branch": {flags: flags("-a --all -r --remotes -v -vv --verbose -l --list --show-current --contains? --no-contains? " +
			"--merged? --no-merged? --points-at= --sort= --format= --column? --no-column --color? --no-color -i --ignore-case " +
			"--abbrev? --no-abbrev --omit-empty"), posWith: []string{"-l", "--list", "--contains", "--no-contains", "--merged", "--no-merged"}},
		"tag": {flags: flags("-l --list -n? --sort= --format= --contains? --no-contains? --merged? --no-merged? --points-at= " +
			"--column? --no-column -i --ignore-case --color? --omit-empty"), posWith: []string{"-l", "--list", "--contains", "--no-contains", "--merged", "--no-merged"}},
		"remote": {flags: flags("-v --verbose --push --all"), subs: []string{"get-url"}},
		"config": {flags: flags("--get --get-all --get-regexp --get-urlmatch -l --list --show-origin --show-scope --name-only " +
			"-z --null --global --system --local --worktree --file@ -f@ --blob= --type= --bool --int --bool-or-int --path " +
			"--expiry-date --default= --includes --no-includes"), subs: []string{"get", "list"}, maxPos: 2},
		"rev-parse": {flags: flags("--abbrev-ref? --symbolic-full-name --symbolic --short? --verify -q --quiet --git-dir " +
			"--git-common-dir --show-toplevel --show-prefix --show-cdup --is-inside-work-tree --is-inside-git-dir " +
			"--is-bare-repository --is-shallow-repository --absolute-git-dir --local-env-vars --all --branches? --tags? " +
			"--remotes? --glob= --exclude= --default= --sq --sq-quote --not --since= --until= --after= --before= --git-path= " +
			"--show-object-format? --show-ref-format --shared-index-path --prefix= --revs-only --no-revs --flags --no-flags " +
			"--show-superproject-working-tree --disambiguate= --path-format=")},
		"ls-files": {flags: flags("-c -d -m -o -i -s -u -k -z -t -v -f --cached --deleted --modified --others --ignored --stage " +
			"--unmerged --killed --directory --no-empty-directory --eol --exclude= -x= --exclude-from@ -X@ " +
			"--exclude-per-directory= --exclude-standard --error-unmatch --full-name --recurse-submodules --abbrev? --debug " +
			"--deduplicate --format= --sparse --with-tree=")},
		"ls-tree": {flags: flags("-d -r -t -l -z --long --name-only --name-status --object-only --full-name --full-tree --abbrev? --format=")},
		"cat-file": {flags: flags("-t -s -e -p --batch? --batch-check? --batch-all-objects --buffer " +
			"--unordered --follow-symlinks --allow-unknown-type -Z --use-mailmap --no-use-mailmap --path=")},
		"blame": {flags: flags("-b --root --show-stats -L= -l -t -S@ --reverse= --first-parent -p --porcelain --line-porcelain " +
			"--incremental --encoding= --contents@ --date= --progress --no-progress -M? -C? --ignore-rev= --ignore-revs-file@ " +
			"-c --score-debug -f --show-name -n --show-number -s -e --show-email -w --abbrev= --color-lines --color-by-age --minimal")},
		"annotate": {flags: flags("-b --root --show-stats -L= -l -t -S@ --reverse= -p --porcelain --incremental --encoding= " +
			"--contents@ --date= -M? -C? -c -f -n -s -e -w")},
		"describe": {flags: flags("--all --tags --contains --abbrev= --candidates= --exact-match --debug --long --match= " +
			"--exclude= --always --first-parent")},
		"grep": {flags: flags("-a --text --no-textconv -i --ignore-case -I --max-depth= -r --recursive --no-recursive " +
			"-w --word-regexp -v --invert-match -h -H --full-name -E -G -F -P --extended-regexp --basic-regexp " +
			"--fixed-strings --perl-regexp -n --line-number --column -l --files-with-matches --name-only -L " +
			"--files-without-match -z --null -o --only-matching -c --count --color? --no-color --break --heading -p " +
			"--show-function -A= -B= -C= --after-context= --before-context= --context= -W --function-context --threads= " +
			"-f@ -e= --and --or --not --all-match -q --quiet --cached --untracked --no-index --exclude-standard " +
			"--no-exclude-standard --recurse-submodules -m= --max-count=")},
		"merge-base":    {flags: flags("-a --all --octopus --independent --is-ancestor --fork-point")},
		"name-rev":      {flags: flags("--tags --refs= --exclude= --all --name-only --no-undefined --always --annotate-stdin")},
		"show-ref":      {flags: flags("--head --heads --branches --tags -d --dereference -s --hash? --verify --abbrev? -q --quiet --exists")},
		"for-each-ref":  {flags: flags("--count= --sort= --format= --color? --points-at= --merged? --no-merged? --contains? --no-contains? --ignore-case --omit-empty --exclude= --shell --perl --python --tcl --stdin")},
		"count-objects": {flags: flags("-v --verbose -H --human-readable"), maxPos: -1},
		"check-ignore":  {flags: flags("-q --quiet -v --verbose --stdin -z -n --non-matching --no-index")},
		"check-attr":    {flags: flags("-a --all --cached --stdin -z --source=")},
		"var":           {flags: flags("-l"), maxPos: 1},
		"version":       {flags: flags("--build-options"), maxPos: -1},
		"help":          {flags: flags("-a --all -g --guides -c --config --no-verbose --no-external-commands --no-aliases"), maxPos: 1},
		"worktree":      {flags: flags("--porcelain -v --verbose --expire= -z"), subs: []string{"list"}},
		// merge-tree only in its deprecated trivial form (three trees):
		// the default --write-tree form writes the merged objects.
		"merge-tree": {flags: flags("--trivial-merge"), maxPos: 3},
	}
}}

// analyzeGit classifies a git command.
func analyzeGit(a *analysis, args []string) {
	a.git = true
	i := 0
	for ; i < len(args); i++ {
		w := args[i]
		if !strings.HasPrefix(w, "-") {
			break
		}
		if w == "--help" && i+1 < len(args) {
			// git --help CMD runs man (and a pager on a terminal).
			a.notReadOnly("git --help " + args[i+1] + " runs man and a pager")
			return
		}
		if w == "--version" || w == "--help" || w == "-h" {
			return
		}
		if !gitGlobalSafe.get()[w] {
			a.notReadOnly("git " + w + " can point git at other code or repositories")
			return
		}
	}
	if i >= len(args) {
		a.notReadOnly("git without a subcommand")
		return
	}
	subName := args[i]
	sub, ok := gitSubs.get()[subName]
	if !ok {
		a.notReadOnly2("git "+subName, " is not a read-only git command")
		return
	}
	rest := args[i+1:]
	if slices.Contains(rest, "--help") || (subName == "help" && !slices.ContainsFunc(rest, func(w string) bool {
		return w == "-a" || w == "--all" || w == "-g" || w == "--guides" || w == "-c" || w == "--config"
	}) && len(rest) > 0) {
		// git CMD --help and git help CMD run man (and a pager on a
		// terminal, which can run commands).
		a.notReadOnly("git help runs man and a pager")
		return
	}
	if sub.subs != nil && subName != "config" && len(rest) > 0 && strings.HasPrefix(rest[0], "-") {
		// Flags before the subcommand's own subcommand: its first operand
		// still has to be one of the read-only ones (git reflog -n1
		// delete, git worktree -v add).
		if pa, _, ok := parseFlags(rest, sub.flags, flagOpts{numeric: true}); ok && len(pa.pos) > 0 {
			if w := rest[pa.pos[0]]; !slices.Contains(sub.subs, w) {
				a.notReadOnly("git " + subName + " " + w + " is not read-only")
				return
			}
		}
	}
	if sub.subs != nil && len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		found := false
		for _, s := range sub.subs {
			if rest[0] == s {
				found = true
			}
		}
		if !found && subName != "config" {
			a.notReadOnly("git " + subName + " " + rest[0] + " is not read-only")
			return
		}
		if found && !strings.HasPrefix(rest[0], "-") {
			rest = rest[1:]
		}
	}
	pa, bad, ok := parseFlags(rest, sub.flags, flagOpts{numeric: subName == "log" || subName == "shortlog" || subName == "whatchanged" || subName == "rev-list"})
	if !ok {
		a.notReadOnly("git " + subName + ": flag " + quoteWord(bad) + " is not known to be read-only")
		// Under an allow rule (Bash(git diff:*)) the path checks still
		// hold: git diff --no-index with a flag not in the table read
		// outside the working directory (attack pass 62).
		a.reads = append(a.reads, guessReads(rest)...)
		return
	}
	if sub.maxPos < 0 && len(pa.pos) > 0 || sub.maxPos > 0 && len(pa.pos) > sub.maxPos {
		a.notReadOnly("git " + subName + ": too many operands")
		return
	}
	if sub.posWith != nil && len(pa.pos) > 0 && !pa.has(sub.posWith...) {
		a.notReadOnly("git " + subName + " with an operand creates or changes it")
		return
	}
	for _, f := range pa.flags {
		if why := gitFlagValue(subName, f); why != "" {
			a.notReadOnly("git " + subName + " " + f.name + "=" + f.value + " " + why)
			return
		}
	}
	switch subName {
	case "merge-tree":
		if len(pa.pos) != 3 {
			// Two commits (git 2.38 and later): --write-tree.
			a.notReadOnly("git merge-tree without a merge base writes the merged objects (--write-tree)")
			return
		}
	case "config":
		first := ""
		if len(args) > i+1 {
			first = args[i+1]
		}
		getForm := pa.has("--get", "--get-all", "--get-regexp", "--get-urlmatch", "-l", "--list")
		switch {
		case first == "list":
			if len(pa.pos) > 0 {
				a.notReadOnly("git config list takes no operand")
				return
			}
		case first == "get":
			if len(pa.pos) != 1 {
				a.notReadOnly("git config get takes one key")
				return
			}
		case getForm:
		default:
			// git config KEY reads; KEY VALUE writes; other words are
			// subcommands (set, unset, edit, rename-section, ...).
			if len(pa.pos) != 1 || !strings.Contains(rest[pa.pos[0]], ".") {
				a.notReadOnly("git config without --get or --list may write the configuration")
				return
			}
		}
	case "remote":
		if len(pa.pos) > 0 && (len(args) <= i+1 || args[i+1] != "get-url") {
			a.notReadOnly("git remote with an operand is not read-only")
			return
		}
	case "stash", "worktree":
		if len(args) <= i+1 || strings.HasPrefix(args[i+1], "-") {
			if subName == "stash" {
				a.notReadOnly("git stash without list or show stashes changes")
				return
			}
		}
	}
	for _, f := range pa.flags {
		if f.kind == argPath {
			a.reads = append(a.reads, f.value)
		}
	}
	// Operands are revisions or paths; a path that leaves the working
	// directory is checked like any other read.
	dashdash := false
	for _, w := range rest {
		if w == "--" {
			dashdash = true
			break
		}
	}
	for _, idx := range pa.pos {
		w := rest[idx]
		afterDashDash := dashdash && idx > indexOf(rest, "--")
		if afterDashDash || gitLooksLikePath(w) || (subName == "diff" && pa.has("--no-index")) {
			a.reads = append(a.reads, gitPathPart(w))
		}
	}
}

func indexOf(a []string, s string) int {
	for i, x := range a {
		if x == s {
			return i
		}
	}
	return -1
}

// gitLooksLikePath reports whether a git operand may name a path outside
// the working directory: absolute, home-relative or climbing with "..".
func gitLooksLikePath(w string) bool {
	if strings.HasPrefix(w, "/") || strings.HasPrefix(w, "~") {
		return true
	}
	for _, c := range strings.Split(w, "/") {
		if c == ".." {
			return true
		}
	}
	return false
}

// gitPathPart strips pathspec magic (":(top)x", ":/x") and rev:path forms.
func gitPathPart(w string) string {
	if strings.HasPrefix(w, ":(") {
		if j := strings.IndexByte(w, ')'); j > 0 {
			return w[j+1:]
		}
	}
	return w
}

// gitFlagValue reports why a flag's value makes a git command not
// read-only: a format that verifies signatures (git runs gpg.program, which
// writes ~/.gnupg and temporary files), a format named by the
// configuration, or a way of showing merges that merges again.
func gitFlagValue(sub string, f flagUse) string {
	switch f.name {
	case "--format", "--pretty":
		switch sub {
		case "branch", "tag", "for-each-ref":
			// ref-filter: %(signature...) (git 2.43) verifies.
			if strings.Contains(f.value, "%(signature") || strings.Contains(f.value, "%(*signature") {
				return "verifies signatures (it runs gpg)"
			}
		case "ls-files", "ls-tree":
		default:
			return gitPrettyWhy(f.value)
		}
	case "--diff-merges":
		switch f.value {
		case "off", "none", "1", "first-parent", "separate", "c", "combined", "cc", "dense-combined", "m", "on":
			return ""
		}
		// remerge (r) merges again, writing objects into a temporary
		// directory of .git/objects.
		return "is not known to be read-only"
	}
	return ""
}

// gitPrettyWhy reports why a --format or --pretty value is not read-only:
// a %G placeholder verifies the commit's signature, and a name that is not
// git's own is a pretty.<name> alias of the configuration, unseen here.
func gitPrettyWhy(v string) string {
	if v == "" {
		return ""
	}
	if f, ok := strings.CutPrefix(v, "format:"); ok {
		v = f
	} else if f, ok := strings.CutPrefix(v, "tformat:"); ok {
		v = f
	} else if !strings.Contains(v, "%") {
		switch v {
		case "oneline", "short", "medium", "full", "fuller", "reference", "email", "mboxrd", "raw":
			return ""
		}
		return "is not one of git's formats (an alias of the configuration may verify signatures)"
	}
	if prettyVerifies(v) {
		return "verifies signatures (%G placeholders run gpg)"
	}
	return ""
}

// prettyVerifies reports whether a pretty format has a %G placeholder
// (%G?, %GS, %GK...: git checks the signature for any of them), with or
// without a %+, %- or "% " modifier. %% is a literal percent sign. A %G
// inside another placeholder's parentheses counts too.
func prettyVerifies(f string) bool {
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			continue
		}
		if i+1 < len(f) && f[i+1] == '%' {
			i++
			continue
		}
		j := i + 1
		if j < len(f) && (f[j] == '+' || f[j] == '-' || f[j] == ' ') {
			j++
		}
		if j < len(f) && f[j] == 'G' {
			return true
		}
	}
	return false
}

// gitCommands are git's own commands (git --list-cmds=main of git 2.39,
// with newer ones and the common external commands); any other name after
// git may be an alias, which runs what its name does not show.
var gitCommands = lazy[map[string]bool]{make: func() map[string]bool {
	return set("add", "am", "annotate", "apply", "archive", "bisect", "blame", "branch", "bugreport", "bundle", "cat-file", "check-attr", "check-ignore", "check-mailmap", "check-ref-format", "checkout", "checkout-index", "cherry", "cherry-pick", "clean", "clone", "column", "commit", "commit-graph", "commit-tree", "config", "count-objects", "credential", "credential-cache", "credential-store", "daemon", "describe", "diagnose", "diff", "diff-files", "diff-index", "diff-tree", "difftool", "fast-export", "fast-import", "fetch", "fetch-pack", "filter-branch", "fmt-merge-msg", "for-each-ref", "for-each-repo", "format-patch", "fsck", "fsck-objects", "gc", "get-tar-commit-id", "grep", "hash-object", "help", "hook", "http-backend", "http-fetch", "http-push", "imap-send", "index-pack", "init", "init-db", "instaweb", "interpret-trailers", "log", "ls-files", "ls-remote", "ls-tree", "mailinfo", "mailsplit", "maintenance", "merge", "merge-base", "merge-file", "merge-index", "merge-octopus", "merge-one-file", "merge-ours", "merge-recursive", "merge-recursive-ours", "merge-recursive-theirs", "merge-resolve", "merge-subtree", "merge-tree", "mergetool", "mktag", "mktree", "multi-pack-index", "mv", "name-rev", "notes", "pack-objects", "pack-redundant", "pack-refs", "patch-id", "pickaxe", "prune", "prune-packed", "pull", "push", "quiltimport", "range-diff", "read-tree", "rebase", "receive-pack", "reflog", "remote", "remote-ext", "remote-fd", "remote-ftp", "remote-ftps", "remote-http", "remote-https", "repack", "replace", "request-pull", "rerere", "reset", "restore", "rev-list", "rev-parse", "revert", "rm", "send-pack", "shell", "shortlog", "show", "show-branch", "show-index", "show-ref", "sparse-checkout", "stage", "stash", "status", "stripspace", "submodule", "subtree", "switch", "symbolic-ref", "tag", "unpack-file", "unpack-objects", "update-index", "update-ref", "update-server-info", "upload-archive", "upload-pack", "var", "verify-commit", "verify-pack", "verify-tag", "version", "whatchanged", "worktree", "write-tree",
		"backfill", "last-modified", "repo", "replay", "refs", "show-index", "survey",
		"lfs", "gui", "citool", "gitk", "send-email", "svn", "p4", "cvsimport", "cvsexportcommit", "cvsserver",
		"archimport", "filter-repo", "absorb", "annex", "credential-osxkeychain", "credential-libsecret",
		"credential-manager", "credential-netrc", "web--browse", "instaweb", "help")
}}
