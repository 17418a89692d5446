package shell

import (
	"bytes"
	"errors"
	"path"
	"strings"
)

// SnapshotSpec configures a snapshot script.
//
// The snapshot is the user's interactive shell environment, captured once
// per session (the seeds' ShellSnapshot): the rc file is sourced in a login
// shell, then its aliases, functions (completion functions, whose names
// start with "_", left out), shell options and PATH are written out as a
// script that every command sources before its own text is evaluated. The
// snapshot script runs inside the sandbox (it sources the user's rc file)
// and writes that text on descriptor 3, framed: "snapshot=" TEXT NUL
// "snapshot-end=" NUL. The host keeps the text and hands it to each
// command on its standard input, a descriptor nothing can write
// (Proc.Stdin): it is never a file in the sandbox, where a command, or
// another sandbox sharing /tmp, rewrote it so that the next command ran
// something else than what was judged (found by an attack pass).
type SnapshotSpec struct {
	// Ripgrep, if set, is an rg binary inside the sandbox: when the user's
	// shell has no rg, the snapshot defines an rg function that runs it.
	Ripgrep string
}

// snapshotPrologue starts the framed text on descriptor 3.
const snapshotPrologue = "builtin printf '" + recSnapshotText + "=' >&3\n"

// snapshotEpilogue ends it: only a script that got this far wrote it all.
const snapshotEpilogue = "builtin printf '\\0" + recSnapshotEnd + "=\\0' >&3\n"

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
@RG@} >&3 2>/dev/null
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
@RG@} >&3 2>/dev/null
`

const zshRgShim = `if ! builtin whence rg >/dev/null 2>&1; then
  builtin print -r -- '# ripgrep shim'
  builtin print -r -- "rg() { ${(q)__moat_rg} \"\$@\"; }"
fi
`

// SnapshotScript implements Provider: source ~/.bashrc, then write the
// snapshot on descriptor 3.
func (b bashShell) SnapshotScript(s SnapshotSpec) string {
	rg := ""
	if s.Ripgrep != "" {
		rg = strings.ReplaceAll(bashRgShim, "@RGPATH@", quoteWord(s.Ripgrep))
	}
	return `if builtin test -f ~/.bashrc; then builtin source ~/.bashrc </dev/null >/dev/null 2>&1 3>&-; fi` + "\n" +
		snapshotPrologue +
		strings.ReplaceAll(bashSnapshotBody, "@RG@", rg) +
		snapshotEpilogue
}

// SnapshotScript implements Provider: source ~/.zshrc (or $ZDOTDIR's),
// then write the snapshot on descriptor 3.
func (z zshShell) SnapshotScript(s SnapshotSpec) string {
	rg := ""
	pre := ""
	if s.Ripgrep != "" {
		pre = "__moat_rg=" + quoteWord(s.Ripgrep) + "\n"
		rg = zshRgShim
	}
	return pre +
		`if builtin test -f "${ZDOTDIR:-$HOME}/.zshrc"; then builtin source "${ZDOTDIR:-$HOME}/.zshrc" </dev/null >/dev/null 2>&1 3>&-; fi` + "\n" +
		snapshotPrologue +
		strings.ReplaceAll(zshSnapshotBody, "@RG@", rg) +
		snapshotEpilogue
}

// parseSnapshot checks what the snapshot script wrote on descriptor 3 and
// returns the snapshot's text: exactly one framed text, complete, with no
// NUL in it (a shell's text holds none) and nothing around it.
func parseSnapshot(b []byte) ([]byte, error) {
	head, tail := recSnapshotText+"=", "\x00"+recSnapshotEnd+"=\x00"
	if !bytes.HasPrefix(b, []byte(head)) || !bytes.HasSuffix(b, []byte(tail)) || len(b) < len(head)+len(tail) {
		return nil, errors.New("the snapshot script did not write a whole snapshot")
	}
	text := b[len(head) : len(b)-len(tail)]
	if bytes.IndexByte(text, 0) >= 0 {
		return nil, errors.New("the snapshot holds a NUL byte")
	}
	return text, nil
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
