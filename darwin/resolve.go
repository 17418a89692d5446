package darwin

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
)

// Seatbelt compares rules with real paths: the kernel resolves symlinks
// before it asks the sandbox. On macOS /tmp, /var and /etc are symlinks to
// /private/tmp, /private/var and /private/etc, so a rule for /tmp/x must
// name /private/tmp/x or it never matches.

// macRootLinks are macOS's symlinks at the root of the file system.
var macRootLinks = []string{"/tmp", "/var", "/etc"}

// MacRoot rewrites p as macOS would resolve its root symlinks
// (/tmp/x -> /private/tmp/x). It is how a profile generated on another
// system reads as the Mac's would; on a Mac, Canonical has done it already.
func MacRoot(p string) string {
	for _, l := range macRootLinks {
		if p == l || strings.HasPrefix(p, l+"/") {
			return "/private" + p
		}
	}
	return p
}

// Canonical is the default Options.Resolve: the symlinks of p's longest
// existing prefix resolved on this machine (the rest of the path, which may
// appear later, appended as written), then MacRoot.
func Canonical(p string) (string, error) {
	r, err := evalExisting(filepath.Clean(p))
	if err != nil {
		return "", err
	}
	return MacRoot(r), nil
}

func evalExisting(p string) (string, error) {
	r, err := filepath.EvalSymlinks(p)
	switch {
	case err == nil:
		return r, nil
	case errors.Is(err, fs.ErrPermission):
		// This user cannot look there, nor can the sandbox: keep it.
		return p, nil
	case !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR):
		return "", err
	}
	dir, base := filepath.Split(p)
	dir = filepath.Clean(dir)
	if dir == p || base == "" {
		return p, nil
	}
	d, err := evalExisting(dir)
	if err != nil {
		return "", err
	}
	return filepath.Join(d, base), nil
}
