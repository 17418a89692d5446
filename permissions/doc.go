// Package permissions decides whether an agent's shell command may run:
// allow, ask (show the user a prompt) or deny. It reads the permission
// rules of the settings (Bash(git status), Bash(npm run:*),
// Bash(git * --force) in allow, ask and deny lists), the permission mode
// and the working directories, and answers with a policy.Decision plus
// what a host shows with the prompt: warnings for destructive commands, a
// rule to suggest, the read-only flag, the display kind and, for
// "sed -i 's/a/b/' FILE", the edit as data.
//
// # What it owns
//
//   - Rule syntax and matching (rule.go): exact, prefix (":*") and
//     wildcard ('*') rules. Allow rules match narrowly, on the words after
//     safe assignments and safe wrappers are stripped; deny and ask rules
//     match broadly, on every command the line can run (extract.go).
//   - Wrapper stripping (strip.go): a fixed-point loop removing assignments
//     of the safe variables (SafeEnvVar) and timeout, time and nice (not nohup) with strict flag
//     parsing, for allow rules and the read-only tables. Deny and ask rules
//     see through every assignment and every wrapper (env, command, sudo,
//     xargs, stdbuf, ionice, setsid, sh -c, eval, find -exec, ...).
//   - Read-only classification (readonly.go, tables.go, git.go, sed.go):
//     per-command tables of safe flags; an unknown flag, an abbreviated long
//     option or a bundle hiding a write or exec flag is not read-only.
//   - Path constraints (paths.go), sed constraints, destructive-command
//     warnings (warnings.go), rule suggestions (suggest.go) and the
//     classifier hook (classifier.go).
//
// # The order of the decision
//
// Engine.Decide runs these steps; the first that decides wins. The command
// is parsed once, by validators.Analyze, which also runs the validator chain.
//
//  1. Deny rules, on every command of the line (see extract.go): a deny on
//     any part denies the whole line, whatever the mode. The brief lists the
//     mode first; deny rules come before it so that no mode undoes a deny.
//  2. The mode: plan denies what is not read-only; bypassPermissions
//     allows the rest (but asks when a deny rule exists and some command of
//     the line cannot be seen).
//  3. Ask rules, on every command of the line. When deny or ask rules
//     exist and some command cannot be seen (its name is not a literal, a
//     shell reads a script from a pipe, xargs builds it, a limit is
//     reached), ask.
//  4. The security validators (validators.Check's answer): an Ask there
//     asks even when an allow rule matches (strings bash evaluates as
//     arithmetic, test -v 'a[$(id)]', are one such objection, and such a
//     command is never read-only either). Their Allow (a literal git
//     commit message) is "no objection", not a permission. A command that
//     does not parse to simple commands asks.
//  5. Path constraints: reads and writes outside the working directory and
//     the additional directories ask, and so do redirections there,
//     /dev/tcp and /dev/udp, /proc/*/environ and /proc/*/mem, and writes to
//     files that can run code later (.bashrc, .git/hooks, .git/config,
//     .vscode, .claude, ...). Files written through options and operands
//     are writes whether or not the command is read-only, checked under
//     allow rules too: sort -o, git log/show/diff --output, git
//     format-patch/archive -o, find -fprint, tree -o, uniq IN OUT, xxd IN
//     OUT, gawk -d/-o/-p FILE, an awk print > "file", the file sed -i
//     SUFFIX moves the original to, cp --parents' DEST/SRC, and those of
//     network, archive and copy tools (toolwrites.go): curl -o/-O/-D/-c,
//     --trace, --stderr, -w %output{}, -T's file: URLs, wget -O/-o/-P
//     and a URL's file name, ssh -E and -o UserKnownHostsFile, scp's destination, script's
//     typescript and logs, tar's archive on create and -C and members on
//     extract, dd of=, zip's archive, unzip -d, split and csplit -f
//     prefixes (and the protected names a suffix could complete), gpg and
//     openssl -out (-signer, -certsout, cmp's -rspout, ...), install,
//     ln's link, patch -o, rsync's destination (DEST/SRC with -R), cpio
//     -O, yq -i, sdiff -o, sqlite3's database, and git bundle create,
//     --export-marks, checkout-index --prefix, index-pack -o, the
//     pathspecs of checkout and restore, submodule add's path,
//     credential-store --file, bugreport, diagnose and mailsplit -o and
//     the directory of init, clone and worktree add. What such a tool
//     writes that cannot be named asks: sftp, sqlite3 without SQL or with
//     a dot-command that writes or runs (.output, .shell), ATTACH or
//     writefile, curl -K/-J and URL globs with -O (or -T to file:),
//     wget -r/-e/-i, tar options not known or that rename members on
//     extract (-P, --transform), rsync copying a directory's contents (src/) or with
//     -e other than ssh, cpio -i/-p, gpg --use-embedded-filename, git
//     init --template, git apply and am (the patch names the files),
//     and a checkout or restore pathspec that may cover several files
//     (., dir/, a pattern, magic). Protected names (.git, .bashrc,
//     .vscode, ...) are matched case-insensitively
//     (.GIT/config on macOS), ignoring the code points HFS+ ignores. With
//     Options.FollowSymlinks the checks hold for the path symbolic links
//     lead to as well (a ".." after a link is taken from the link's
//     target, as the kernel does), a glob pattern is checked by every
//     path it matches on disk, and a command that follows the links it
//     meets while it walks a tree (grep -R, rg -L, find -L, diff -r) asks;
//     otherwise they are lexical.
//  6. Sed and awk constraints: a sed script that runs commands (e,
//     s///e), reads its script from a file, or cannot be analysed asks; so
//     does an awk program read from a file, or that runs commands
//     (system, pipes, gawk's @name indirect calls), loads code or
//     redirects to a file that is not a literal.
//  7. Allow rules, 8. the read-only tables and 9. (acceptEdits) file edits
//     inside the working directories: the line is allowed when every part
//     is allowed by one of them. A part with a word that is not a literal
//     (an expansion, a substitution, a glob that may expand to an option)
//     is never allowed.
//  10. The classifier, if any: strictly above ConfidenceThreshold (0.9) it
//     decides; otherwise, or on error, ask.
//  11. Otherwise ask, with a suggested rule.
//
// # What it must not import
//
// Pure Go: never linux/, darwin/, bpf/ or golang.org/x/sys/unix
// (deps_test.go keeps it so). It imports runtime/policy for the Decision
// type and validators for the parser and the validator chain.
package permissions
