//go:build unix

package runtime

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

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
	if err := readyStateDir(home, stateDir); err != nil {
		return us, err
	}
	if err := live.RecordStateDir(home, stateDir); err != nil {
		return us, fmt.Errorf("moat lists this run's state directory %s in %s, which every run of this user reads, and cannot: %w", stateDir, home, err)
	}
	us.home = home
	us.hide = otherStateDirs(home, stateDir)
	return us, nil
}

// readyStateDir adopts stateDir (adoptStateDir) unless the home state
// directory home lists it as that very directory.
func readyStateDir(home, stateDir string) error {
	if live.Listed(home, stateDir) {
		return nil
	}
	return adoptStateDir(stateDir)
}

// adoptStateDir readies a state directory the home one does not list
// (or lists as another directory, since removed), before a run lists it.
// No sandbox planned while it was missing hid or protected it: one that
// could write where it is (a writable home, with
// $XDG_STATE_HOME=~/.local/state/agent for an agent host's runs) made it
// and put in its cache a compiled seccomp program that allowed every call,
// which the next run of that state directory loaded into its sandbox
// (attack pass 107, TestStateDirMadeByASandbox); the plan's and the git
// audit's caches are trusted as well. So a live sandbox that can write it
// refuses the run, what moat would follow out of it (a symlink) refuses
// it too, and its cache, only ever a copy of what moat can compute
// again, goes. AuditDeadRuns readies it first.
func adoptStateDir(stateDir string) error {
	cache := filepath.Join(stateDir, "cache")
	for _, w := range registeredWriters(stateDir) {
		// (A killed one wrote what it wrote, as one that ended did.)
		if !w.Dead && (w.Writes(stateDir) || w.Writes(cache)) {
			return fmt.Errorf("state directory %s is new to this user's runs, and a live sandbox can write it (moat run %s, started %s): moat loads compiled filters and caches from there and does not use a state directory a sandboxed command could be writing; run again once that run has ended", stateDir, w.ID, w.Since.Format("15:04:05"))
		}
	}
	// What moat keeps there it makes itself, as directories and files (and
	// moat serve's socket). A symlink a sandbox left there led moat out of
	// its state: the sweep of old sentinels removed the user's files a few
	// days old in the directory "sentinel" named, and a session saved its
	// commands' output, files its policy let it read, into a tree other
	// sandboxes read (attack pass 107, TestStateDirSymlinkFromASandbox).
	es, err := os.ReadDir(stateDir)
	if err != nil {
		return fmt.Errorf("state directory %s: %w", stateDir, err)
	}
	for _, e := range es {
		if t := e.Type(); !t.IsDir() && !t.IsRegular() && t&fs.ModeSocket == 0 {
			return fmt.Errorf("state directory %s is new to this user's runs and holds %s, which is no directory or file of moat's (%s): a sandboxed command could have left it to lead moat out of its state; remove it", stateDir, e.Name(), t)
		}
	}
	// A killed run's record names the placeholders the next run removes
	// (a file with the content it gives, an empty directory, a socket): a
	// record a sandbox wrote named a file of the user's it could read and
	// not write, with its content, and the next run removed it (attack
	// pass 107, TestStateDirForgedRecord). A record nobody holds goes
	// (what a run killed before this one listed the directory made
	// stays); one held is a live run's.
	journal := filepath.Join(stateDir, "journal")
	js, _ := os.ReadDir(journal)
	for _, e := range js {
		if t := e.Type(); !t.IsDir() && !t.IsRegular() {
			return fmt.Errorf("state directory %s is new to this user's runs and its journal holds %s, which is no directory or file of moat's (%s): a sandboxed command could have left it to lead moat out of its state; remove it", stateDir, e.Name(), t)
		}
		if f := filepath.Join(journal, e.Name()); strings.HasSuffix(e.Name(), ".run") && e.Type().IsRegular() && !live.Held(f) {
			if err := os.Remove(f); err != nil {
				return fmt.Errorf("state directory %s is new to this user's runs, and a record in its journal, which a sandboxed command could have written, cannot be removed: %w", stateDir, err)
			}
		}
	}
	if err := os.RemoveAll(cache); err != nil {
		return fmt.Errorf("state directory %s is new to this user's runs, and its cache, which a sandboxed command could have written, cannot be removed: %w", stateDir, err)
	}
	return nil
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

// errRegister: the announcement, or its copy in the home register, could
// not be made.
var errRegister = errors.New("the register of live sandboxes")

// announce is live.Announce of w in stateDir's register and, when us says
// so, in the home register: withdraw ends both. Neither is best effort
// (errRegister: the run is refused). A sandbox filled the home's
// filesystem before a run of another state directory started: that run's
// copy could not be written and it ran unseen by the user's runs of the
// home state directory, one of which loaded the settings file its command
// wrote and ran widened (attack pass 107, TestHomeRegisterFull). The
// announcement in the run's own register was best effort too, open to
// the same attack by the runs of its state directory.
func announce(stateDir string, us userState, w live.Writer) (*os.File, error) {
	id := randomID()
	own := filepath.Join(stateDir, "journal")
	f, err := live.Announce(own, id, w)
	if err != nil {
		return nil, fmt.Errorf("this sandbox's announcement in %s, which the other runs of this state directory read, cannot be written (%w: %v): moat does not run a sandbox they would not see", own, errRegister, err)
	}
	if us.home == "" {
		return f, nil
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
		live.Withdraw(f)
		return nil, fmt.Errorf("this sandbox's announcement in %s, which the user's other runs read, cannot be written (%w: %v): moat does not run a sandbox they would not see", dir, errRegister, err)
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
