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

// Since macOS 10.15 the system is a read-only volume and the user's data
// another, mounted at /System/Volumes/Data; firmlinks join them
// (/usr/share/firmlinks): /Users is /System/Volumes/Data/Users, /private
// is /System/Volumes/Data/private, and so on. A file under one of those
// roots has both spellings, and which one Seatbelt compares a rule with,
// when a command opens it by the Data volume's, is not known without a
// Mac. So every deny names both (firmlinkSpelling).

// dataVolume is where the data volume is mounted.
const dataVolume = "/System/Volumes/Data"

// firmlinks are the roots /usr/share/firmlinks joins to the data volume
// (each is dataVolume+root there).
var firmlinks = []string{
	"/AppleInternal", "/Applications", "/Library", "/Users", "/Volumes", "/cores", "/opt", "/private",
	"/usr/local", "/usr/libexec/cups", "/usr/share/snmp",
	"/System/Library/Caches", "/System/Library/Assets", "/System/Library/PreinstalledAssets",
	"/System/Library/AssetsV2", "/System/Library/PreinstalledAssetsV2", "/System/Library/Speech",
	"/System/Library/CoreServices/CoreTypes.bundle/Contents/Library",
}

// firmlinkSpelling is p's other spelling across a firmlink: the data
// volume's for a path under a firmlinked root (/Users/a ->
// /System/Volumes/Data/Users/a), the root's for the data volume's.
func firmlinkSpelling(p string) (string, bool) {
	if rest, ok := strings.CutPrefix(p, dataVolume); ok && strings.HasPrefix(rest, "/") {
		for _, f := range firmlinks {
			if rest == f || strings.HasPrefix(rest, f+"/") {
				return rest, true
			}
		}
		return "", false
	}
	for _, f := range firmlinks {
		if p == f || strings.HasPrefix(p, f+"/") {
			return dataVolume + p, true
		}
	}
	return "", false
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
