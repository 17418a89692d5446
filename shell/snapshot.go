package shell

import (
	"path"
	"strings"
)

// SnapshotSpec says where a snapshot script writes the snapshot.
//
// The snapshot is the user's interactive shell environment, captured once
// per session (the seeds' ShellSnapshot): the rc file is sourced in a login
// shell, then its aliases, functions (completion functions, whose names
// start with "_", left out), shell options and PATH are written to a file
// that every command sources before its own text is evaluated. The script
// runs inside the sandbox, and the file lives there: the host never opens
// it. The script reports the file's path, or why it failed, on descriptor
// 3.
type SnapshotSpec struct {
	// Dir is the directory inside the sandbox that holds the snapshot; it
	// is created (mode 0700) when missing and must be owned by the
	// sandbox's user. If empty, "${TMPDIR:-/tmp}/moat-shell-" + Tag, as the
	// sandbox sees it.
	Dir string
	// Tag names the default directory. Required when Dir is empty.
	Tag string
	// Name is the snapshot file's name in Dir. Required.
	Name string
	// Ripgrep, if set, is an rg binary inside the sandbox: when the user's
	// shell has no rg, the snapshot defines an rg function that runs it.
	Ripgrep string
}

// dirAssign is the script's first line: where the snapshot goes.
func (s SnapshotSpec) dirAssign() string {
	if s.Dir != "" {
		return "__moat_dir=" + quoteWord(s.Dir)
	}
	return "__moat_dir=${TMPDIR:-/tmp}/moat-shell-" + quoteWord(s.Tag)
}

// snapshotPrologue creates the directory and checks it belongs to us (a
// shared /tmp could hold someone else's directory or link of that name).
const snapshotPrologue = `__moat_snap=$__moat_dir/@NAME@
if ! builtin test -d "$__moat_dir"; then (builtin umask 077 && command mkdir -p -- "$__moat_dir") >/dev/null 2>&1; fi
if ! builtin test -d "$__moat_dir" || builtin test -L "$__moat_dir" || ! builtin test -O "$__moat_dir" || ! builtin test -w "$__moat_dir"; then
  builtin printf '\0snapshot-error=cannot create the snapshot directory %s\0' "$__moat_dir" >&3
  builtin exit 1
fi
`

// snapshotEpilogue reports the result.
const snapshotEpilogue = `if ! builtin test -s "$__moat_snap"; then
  builtin printf '\0snapshot-error=cannot write %s\0' "$__moat_snap" >&3
  builtin exit 1
fi
builtin printf '\0snapshot-path=%s\0' "$__moat_snap" >&3
`

const bashSnapshotBody = `{
builtin printf '# moat shell snapshot (bash)\n'
builtin printf 'builtin unalias -a 2>/dev/null || true\n'
builtin printf '# functions\n'
while builtin read -r _ _ __moat_f; do
  case $__moat_f in _*|'') builtin continue;; esac
  builtin printf 'builtin eval %q >/dev/null 2>&1\n' "$(builtin declare -f -- "$__moat_f")"
done <<__MOAT_EOF__
$(builtin declare -F)
__MOAT_EOF__
builtin printf '# shell options\n'
while builtin read -r __moat_o; do
  case $__moat_o in *' login_shell'|*' restricted_shell'|'') ;; *) builtin printf '%s 2>/dev/null\n' "$__moat_o";; esac
done <<__MOAT_EOF__
$(builtin shopt -p)
__MOAT_EOF__
while builtin read -r __moat_o; do
  case $__moat_o in
    'set -o '*)
      case ${__moat_o#set -o } in
        errexit|nounset|xtrace|verbose|noexec|onecmd|monitor|history|posix|privileged|restricted|emacs|vi|interactive-comments) ;;
        *) builtin printf 'builtin %s 2>/dev/null\n' "$__moat_o";;
      esac;;
  esac
done <<__MOAT_EOF__
$(builtin set +o)
__MOAT_EOF__
builtin printf 'builtin shopt -s expand_aliases\n'
builtin printf '# aliases\n'
builtin alias -p
builtin printf '# PATH\n'
builtin printf 'builtin export PATH=%q\n' "$PATH"
@RG@} >| "$__moat_snap" 2>/dev/null
`

const bashRgShim = `if ! builtin command -v rg >/dev/null 2>&1; then
  builtin printf '# ripgrep shim\n'
  builtin printf 'rg() { %q "$@"; }\n' @RGPATH@
fi
`

const zshSnapshotBody = `{
builtin print -r -- '# moat shell snapshot (zsh)'
builtin print -r -- 'builtin unalias -a 2>/dev/null || true'
builtin print -r -- '# functions'
for __moat_f in ${(ok)functions}; do
  [[ $__moat_f == _* ]] && builtin continue
  builtin print -r -- "builtin eval ${(q)$(builtin functions -- $__moat_f)} >/dev/null 2>&1"
done
builtin print -r -- '# shell options'
for __moat_o in $(builtin setopt); do
  case $__moat_o in
    (login|interactive|shinstdin|zle|monitor|privileged|restricted|singlecommand|errexit|xtrace|verbose|noexec|norcs|noglobalrcs) ;;
    (*) builtin print -r -- "builtin setopt $__moat_o 2>/dev/null";;
  esac
done
builtin print -r -- 'builtin setopt aliases 2>/dev/null'
builtin print -r -- '# aliases'
builtin alias -L
builtin print -r -- '# PATH'
builtin print -r -- "builtin export PATH=${(q)PATH}"
@RG@} >| "$__moat_snap" 2>/dev/null
`

const zshRgShim = `if ! builtin whence rg >/dev/null 2>&1; then
  builtin print -r -- '# ripgrep shim'
  builtin print -r -- "rg() { ${(q)__moat_rg} \"\$@\"; }"
fi
`

// SnapshotScript implements Provider: source ~/.bashrc, then write the
// snapshot.
func (b bashShell) SnapshotScript(s SnapshotSpec) string {
	rg := ""
	if s.Ripgrep != "" {
		rg = strings.ReplaceAll(bashRgShim, "@RGPATH@", quoteWord(s.Ripgrep))
	}
	return s.dirAssign() + "\n" +
		`if builtin test -f ~/.bashrc; then builtin source ~/.bashrc </dev/null >/dev/null 2>&1; fi` + "\n" +
		strings.ReplaceAll(snapshotPrologue, "@NAME@", quoteWord(s.Name)) +
		strings.ReplaceAll(bashSnapshotBody, "@RG@", rg) +
		snapshotEpilogue
}

// SnapshotScript implements Provider: source ~/.zshrc (or $ZDOTDIR's),
// then write the snapshot.
func (z zshShell) SnapshotScript(s SnapshotSpec) string {
	rg := ""
	pre := ""
	if s.Ripgrep != "" {
		pre = "__moat_rg=" + quoteWord(s.Ripgrep) + "\n"
		rg = zshRgShim
	}
	return s.dirAssign() + "\n" + pre +
		`if builtin test -f "${ZDOTDIR:-$HOME}/.zshrc"; then builtin source "${ZDOTDIR:-$HOME}/.zshrc" </dev/null >/dev/null 2>&1; fi` + "\n" +
		strings.ReplaceAll(snapshotPrologue, "@NAME@", quoteWord(s.Name)) +
		strings.ReplaceAll(zshSnapshotBody, "@RG@", rg) +
		snapshotEpilogue
}

// validSandboxPath checks a path the sandbox reported before the session
// uses it (only ever inside later scripts, quoted, never on the host): an
// absolute, clean path of printable characters, of reasonable length.
func validSandboxPath(p string) bool {
	if len(p) == 0 || len(p) > 4096 || !path.IsAbs(p) || path.Clean(p) != p {
		return false
	}
	for _, r := range p {
		if r < 0x20 || r == 0x7f || r == 0xfffd {
			return false
		}
	}
	return true
}
