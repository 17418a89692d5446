package shell

import "strings"

// singleQuote wraps s in single quotes for eval, as the seeds do: each ' in
// s becomes '"'"' (close, a double-quoted quote, reopen). bash and zsh read
// the result back as s exactly, whatever bytes s holds (NUL aside).
func singleQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}

// quoteWord quotes s as one shell word, leaving words made only of safe
// characters bare so that scripts stay readable.
func quoteWord(s string) string {
	if s == "" {
		return "''"
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("_/.,:=+@%-", c) >= 0:
		default:
			return singleQuote(s)
		}
	}
	if s[0] == '-' || s[0] == '=' {
		return singleQuote(s)
	}
	return s
}

// validName reports whether s is a portable environment variable name.
func validName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return false
	}
	return true
}
