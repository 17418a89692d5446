package runtime

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// DefaultStateDir is $XDG_STATE_HOME/moat, or ~/.local/state/moat, or,
// when there is no usable home (none, one this user cannot write, or one
// that another user controls or can write: root with a user's HOME, as
// sudo may keep it; a home of mode 0777, where moat's state could be
// swapped: checkAncestors) and no ~/.local/state/moat in a home of this
// user's, fallbackStateDir. Whichever it is, it is checked before use
// (prepareStateDir).
func DefaultStateDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(resolved(d), "moat")
	}
	return homeStateDir()
}

// homeStateDir is DefaultStateDir without $XDG_STATE_HOME: the state
// directory every run of this user can name, whatever its own is, where
// they all list their state directories and announce their sandboxes
// (userstate.go).
func homeStateDir() string {
	if h, err := os.UserHomeDir(); err == nil && filepath.IsAbs(h) {
		h = resolved(h)
		// One that is there, in a home of this user's, stays the state
		// directory whatever became of the home: a sandbox that could
		// write the home made it fail the checks below (chmod 0555 ~,
		// chmod 0777 ~/.local/state), and the user's next run kept its
		// state in the fallback, where it neither saw that live sandbox's
		// announcement (it loaded the settings file the sandbox had just
		// written and ran widened) nor hid ~/.local/state/moat (attack
		// pass 107, TestHomeStateDirModeChanged). prepareStateDir refuses
		// it now, naming what is wrong.
		if d := filepath.Join(h, ".local", "state", "moat"); ownedByMe(h) && !missing(d) {
			return d
		}
		if fi, err := os.Stat(h); err == nil && fi.IsDir() && writableDir(h) {
			if d := filepath.Join(h, ".local", "state", "moat"); heldSafely(d) {
				return d
			}
		}
	}
	return fallbackStateDir()
}

// resolved is p with its symlinks resolved where it exists, p otherwise.
// The state directory is opened without following a symlink anywhere on
// its way (a planted one would lead moat's files elsewhere), so a home
// that is a symlink (/home/u to /data/u) made every run fail ("too many
// levels of symbolic links", attack pass 98); the user's own home and
// $XDG_STATE_HOME are the user's to point, and checkAncestors judges the
// resolved path as well.
func resolved(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// fallbackStateDir is the state directory of a user without a usable
// home: root's /var/lib/moat, which no other user can make first; another
// user's /var/tmp/moat-UID; /tmp/moat-UID where neither can be made. Not
// /tmp first: what moat keeps there must outlive a reboot (the journal of
// a run the reboot ended, whose placeholders and plants the next run
// takes out, and the quarantine, with the originals of the files the
// audit rewrote), and /tmp is emptied at boot.
func fallbackStateDir() string {
	uid := os.Geteuid()
	var cands []string
	if uid == 0 {
		cands = append(cands, "/var/lib/moat")
	}
	cands = append(cands, fmt.Sprintf("/var/tmp/moat-%d", uid))
	for _, d := range cands {
		if fi, err := os.Lstat(d); err == nil {
			if fi.IsDir() || fi.Mode()&os.ModeSymlink != 0 {
				return d // checked as it is (prepareStateDir): another user's is refused, saying so
			}
			continue
		}
		if writableDir(filepath.Dir(d)) && heldSafely(d) {
			return d
		}
	}
	return fmt.Sprintf("/tmp/moat-%d", uid)
}

// Reexec handles this program being re-executed by a sandbox (to clean up
// after a supervisor that died). A program that calls Run calls it first
// thing in main:
//
//	if code, ok := runtime.Reexec(os.Args); ok {
//		os.Exit(code)
//	}
func Reexec(args []string) (code int, handled bool) {
	handled, err := platformReexec(args)
	if !handled {
		return 0, false
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "moat: %v\n", err)
		return 1, true
	}
	return 0, true
}

// Describe resolves a policy as Run would, without running anything, and
// says what this host enforces of it.
func Describe(pol *policy.Policy, stateDir string) (*enforce.Description, error) {
	if stateDir == "" {
		stateDir = DefaultStateDir()
	}
	enf := platform()
	if enf == nil {
		return &enforce.Description{Tier: "unavailable", Notes: []string{"moat has no sandbox on " + goos() + " in this build"}}, nil
	}
	return enf.Describe(pol.WithToolCache(), stateDir)
}

// DescribeAs is Describe for another user (moatd's client, as): where the
// platform can, every look its plan takes is taken with that user's
// credentials, as that user's runs are planned.
func DescribeAs(pol *policy.Policy, stateDir string, as *enforce.Identity) (*enforce.Description, error) {
	if as == nil {
		return Describe(pol, stateDir)
	}
	if stateDir == "" {
		stateDir = DefaultStateDir()
	}
	if cd, ok := platform().(enforce.ClientDescriber); ok {
		return cd.DescribeAs(pol.WithToolCache(), stateDir, as)
	}
	return nil, fmt.Errorf("moat cannot describe a policy for another user on %s", goos())
}

func goos() string { return runtime.GOOS }

// Sweep removes what the runs of a supervisor that died (killed with
// SIGKILL, say) left in stateDir: the mount points it made on the host for
// its sandboxes. A run sweeps its own journal as it starts; a root daemon
// serving many users (moatd) calls Sweep when it starts, for every user's.
func Sweep(stateDir string) error { return platformSweep(stateDir) }
