//go:build unix

package runtime

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/ascred"
	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/live"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// The runs of one user may keep different state directories
// ($XDG_STATE_HOME set for an agent host's runs and not for the user's
// own; moatd's, root's, for the user's runs through it). Each directory's
// register of live sandboxes was read by the runs of that directory alone,
// and each sandbox hid its own state directory alone. So a run of one
// loaded a .claude/settings.json that a live sandbox of another had just
// written and ran with the widened policy, and a command read the session
// output a run of the other had saved (attack pass 106).
//
// Every user has one state directory that all of its runs can name, the
// home one (homeStateDir: DefaultStateDir without $XDG_STATE_HOME). A run
// of another state directory, before its sandbox is planned, makes the
// home one, lists its own state directory there (live.RecordStateDir), and
// then announces its sandbox in both registers; every run reads both.
// Every sandbox hides and protects the home state directory and every one
// listed there. The home one is made before the plan: made during the run
// (pass 106's first fix), a writable home showed it to the command, which
// could have written moat's register.

// userState is what a run knows of its user's other state directories.
type userState struct {
	// home is the home state directory when this run announces in it
	// too (another state directory's run, or moatd's run of a client):
	// "" when it is the run's own or there is none to use.
	home string
	// as is the client moatd runs for (the copy in its home register is
	// made as the client), nil otherwise.
	as *enforce.Identity
	// hide are the user's other state directories that exist: the home
	// one and those it lists.
	hide []string
}

// prepareUserState makes the home state directory and lists stateDir in
// it, before the sandbox is planned (see above), and says what the
// sandbox must hide. moatd's run of a client works in the client's home
// state directory with the client's credentials.
func prepareUserState(stateDir string, as *enforce.Identity) (userState, error) {
	var us userState
	stateDir = filepath.Clean(stateDir)
	if as != nil && as.Uid != os.Geteuid() {
		if as.Home == "" {
			return us, nil
		}
		home := filepath.Join(as.Home, ".local", "state", "moat")
		err := ascred.Do(as.Uid, as.Gid, as.Groups, func() error {
			if err := os.MkdirAll(filepath.Join(home, "journal"), 0o700); err != nil {
				return err
			}
			us.hide = otherStateDirs(home, stateDir)
			return nil
		})
		if err == nil {
			us.home, us.as = home, as
		}
		// (A client whose home cannot hold it gets no copy: its own runs
		// then keep their state elsewhere, and moatd's register is root's.)
		return us, nil
	}
	home := filepath.Clean(homeStateDir())
	if home == stateDir {
		us.hide = otherStateDirs(home, stateDir)
		return us, nil
	}
	if err := prepareStateDir(home); err != nil {
		return us, fmt.Errorf("moat lists every run's state directory and live sandbox in the user's home state directory %s, which every run of this user reads, and cannot use it: %w", home, err)
	}
	if err := prepareStateDir(filepath.Join(home, "journal")); err != nil {
		return us, fmt.Errorf("moat announces live sandboxes in %s, which every run of this user reads, and cannot use it: %w", filepath.Join(home, "journal"), err)
	}
	// A sandbox that can write the state directory (one planned before
	// it existed, which does not protect it) could leave there what moat
	// acts on (records of placeholders to remove) or trusts (the compiled
	// seccomp filters): no run uses it meanwhile.
	for _, w := range registeredWriters(stateDir) {
		for _, d := range []string{stateDir, home} {
			if w.Writes(d) {
				state := "a live sandbox"
				if w.Dead {
					state = "a sandbox killed before its audit"
				}
				return us, fmt.Errorf("the state directory %s is writable by %s (moat run %s, started %s), which could have planted what moat acts on there: moat does not use it until that run is gone and audited; keep $XDG_STATE_HOME out of the trees sandboxes write", d, state, w.ID, w.Since.Format("15:04:05"))
			}
		}
	}
	if err := live.RecordStateDir(home, stateDir, func() error { return distrust(stateDir) }); err != nil {
		return us, fmt.Errorf("moat lists this run's state directory %s in %s, which every run of this user reads, and cannot: %w", stateDir, home, err)
	}
	us.home = home
	us.hide = otherStateDirs(home, stateDir)
	return us, nil
}

// otherStateDirs are the home state directory and those it lists, other
// than own, that are directories now (there is nothing to read in a
// missing one; one made later is made by a run that lists it first).
func otherStateDirs(home, own string) []string {
	var out []string
	for _, d := range append([]string{home}, live.StateDirs(home)...) {
		if d == own || slices.Contains(out, d) {
			continue
		}
		if fi, err := os.Lstat(d); err == nil && fi.IsDir() {
			out = append(out, d)
		}
	}
	return out
}

// hiding is pol with the user's other state directories (us.hide) hidden
// from the command and never writable, as the run's own state directory
// is.
func (us userState) hiding(pol *policy.Policy) *policy.Policy {
	if len(us.hide) == 0 {
		return pol
	}
	q := *pol
	q.Protect = append(slices.Clone(pol.Protect), us.hide...)
	q.FS.DenyRead = slices.Clone(pol.FS.DenyRead)
	for _, d := range us.hide {
		q.FS.DenyRead = append(q.FS.DenyRead, policy.PathRule{Path: d, Source: "moat: the user's other state"})
	}
	return &q
}

// homeRegister is the register of the user's home state directory when a
// run of stateDir must read it as well ("" when it is stateDir's own or
// not this user's alone).
func homeRegister(stateDir string) string {
	home := filepath.Clean(homeStateDir())
	if stateDir == "" {
		stateDir = DefaultStateDir()
	}
	if home == filepath.Clean(stateDir) || checkStateDir(home) != nil {
		return ""
	}
	return filepath.Join(home, "journal")
}

// registeredWriters lists the announcements in stateDir's register and in
// the home register (homeRegister). A run announced in both is listed
// twice, once from each.
func registeredWriters(stateDir string) []live.Writer {
	if stateDir == "" {
		stateDir = DefaultStateDir()
	}
	ws := live.Writers(filepath.Join(stateDir, "journal"))
	if h := homeRegister(stateDir); h != "" {
		ws = append(ws, live.Writers(h)...)
	}
	return ws
}

// copies maps an announcement to its copy in the home register.
var copies sync.Map // *os.File -> *os.File

// announce is live.Announce of w in stateDir's register and, when us says
// so, in the home register: withdraw ends both. The copy is best effort,
// as the announcement itself is (a register that cannot be written).
func announce(stateDir string, us userState, w live.Writer) (*os.File, error) {
	id := randomID()
	f, err := live.Announce(filepath.Join(stateDir, "journal"), id, w)
	if err != nil || us.home == "" {
		return f, err
	}
	dir := filepath.Join(us.home, "journal")
	var c *os.File
	if us.as != nil {
		err = ascred.Do(us.as.Uid, us.as.Gid, us.as.Groups, func() (err error) {
			c, err = live.AnnounceOwned(dir, id, w, us.as.Uid)
			return err
		})
	} else {
		c, err = live.Announce(dir, id, w)
	}
	if err != nil {
		return f, fmt.Errorf("the copy in the home register: %w", err)
	}
	copies.Store(f, c)
	return f, nil
}

// withdraw is live.Withdraw of an announcement and of its copy.
func withdraw(f *os.File) {
	if f == nil {
		return
	}
	if c, ok := copies.LoadAndDelete(f); ok {
		live.Withdraw(c.(*os.File))
	}
	live.Withdraw(f)
}

// distrust empties what moat acts on or trusts in a state directory the
// first time a run lists it (RecordStateDir): moat may not have made it,
// and until it is listed no sandbox protected it. A sandboxed command that
// could write where it was to be made ($XDG_STATE_HOME inside a project)
// could have made it first, with a journal record naming a file of the
// user's (the next run's sweep removes a recorded placeholder whose
// content matches the record: any file the command could read) or a
// compiled seccomp filter under the key the next run computes. What goes:
// the caches (made again on use) and the records of runs that are not
// live (their placeholders, if any, stay: inert, and a state directory of
// an older moat is listed once). The announcements stay: a dead one's
// audit only takes things out.
func distrust(dir string) error {
	for _, sub := range []string{"cache", "sentinel"} {
		if err := os.RemoveAll(filepath.Join(dir, sub)); err != nil {
			return fmt.Errorf("empty the unlisted state directory's %s: %w", sub, err)
		}
	}
	jdir := filepath.Join(dir, "journal")
	fi, err := os.Lstat(jdir)
	if err != nil {
		return nil
	}
	if !fi.IsDir() {
		return os.Remove(jdir)
	}
	es, err := os.ReadDir(jdir)
	if err != nil {
		return fmt.Errorf("read the unlisted state directory's journal: %w", err)
	}
	for _, e := range es {
		if !strings.HasSuffix(e.Name(), ".run") {
			continue
		}
		file := filepath.Join(jdir, e.Name())
		f, err := os.OpenFile(file, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err == nil {
			held := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil
			f.Close()
			if held {
				continue // a live run's own record
			}
		}
		if err := os.Remove(file); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("remove a record of the unlisted state directory: %w", err)
		}
	}
	return nil
}
