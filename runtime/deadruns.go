//go:build unix

package runtime

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/live"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// AuditDeadRuns audits what runs killed before their own git audit could
// write (moat SIGKILLed: its announcement in STATE/journal stays, its lock
// gone), each from when it started, and removes their announcements. It
// returns what it found and took out (violations whose rule says they were
// left by a killed run) and what it could not cover. moat run, moat
// session and moatd's start call it before anything else, so that no
// settings file or git state such a run planted is used; until a dead
// run's trees are audited, SettingsCheck refuses settings files it could
// have written. Only the runs of this process's user are audited, and as
// root the runs moatd made as a client (as that user).
func AuditDeadRuns(stateDir string) ([]policy.Violation, []string) {
	if stateDir == "" {
		stateDir = DefaultStateDir()
	}
	var (
		vs    []policy.Violation
		warns []string
	)
	if err := checkStateDir(stateDir); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil // no state yet: no run was killed
		}
		// Another user's announcements are not this user's dead runs.
		return nil, []string{"dead runs not audited: " + err.Error()}
	}
	audited := map[string]bool{} // a run announced in two registers is audited once
	for _, w := range registeredWriters(stateDir) {
		if !w.Dead {
			continue
		}
		done, ok := live.Claim(w)
		if !ok {
			continue
		}
		if audited[w.ID] {
			done(true)
			continue
		}
		audited[w.ID] = true
		var as *enforce.Identity
		home, _ := os.UserHomeDir()
		if w.As > 0 && w.As != os.Geteuid() {
			if os.Geteuid() != 0 {
				done(false)
				continue
			}
			id, err := identityOfUID(w.As, w.AsGroups)
			if err != nil {
				warns = append(warns, fmt.Sprintf("git audit of a killed run (uid %d) not done: %v", w.As, err))
				done(false)
				continue
			}
			as, home = id, id.Home
		}
		ro := w.ReadOnly
		fp := enforce.Footprint{WritableRoots: w.Roots, ReadOnly: func(p string) bool {
			for _, r := range ro {
				if p == r || strings.HasPrefix(p, r+"/") {
					return true
				}
			}
			return false
		}}
		since := w.Since
		report := func(v policy.Violation) {
			v.Rule += fmt.Sprintf(" (left by a moat run killed before its audit, started %s)", since.Format("2006-01-02 15:04:05"))
			vs = append(vs, v)
		}
		warns = append(warns, auditGit(fp, since, unsettledSince(stateDir, w.Roots, nil), home, stateDir, as, userEnv(nil, as), report)...)
		done(true)
	}
	return vs, warns
}

// identityOfUID is the identity a killed run's sandbox had: the uid's home
// and name from the user database, its gid and groups (the gid first) as
// its announcement recorded them, the client's own. An announcement
// without them (an older moatd's) gets the database's primary group alone:
// never more groups than the sandbox had.
func identityOfUID(uid int, groups []int) (*enforce.Identity, error) {
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		return nil, err
	}
	id := &enforce.Identity{Uid: uid, Home: filepath.Clean(u.HomeDir), Name: u.Username}
	if len(groups) > 0 {
		id.Gid, id.Groups = groups[0], slices.Clone(groups[1:])
		return id, nil
	}
	if id.Gid, err = strconv.Atoi(u.Gid); err != nil {
		return nil, err
	}
	return id, nil
}

// announcedUID is the uid a run's announcement records: a client's (moatd),
// so that the audit of a killed run is made as that user; 0 for this
// process's own user.
func announcedUID(as *enforce.Identity) int {
	if as == nil {
		return 0
	}
	return as.Uid
}

// announcedGroups are the gid and then the groups a client's run records
// with its uid (nil for this process's own user): the audit of a killed
// run is made with them.
func announcedGroups(as *enforce.Identity) []int {
	if as == nil {
		return nil
	}
	return append([]int{as.Gid}, as.Groups...)
}

// unsettledSince is when the earliest live sandbox that can write roots
// began (other than own, this run's announcement: nil counts every one,
// as a session's command does, whose session is live): zero if none.
func unsettledSince(stateDir string, roots []string, own *os.File) time.Time {
	if stateDir == "" {
		stateDir = DefaultStateDir()
	}
	ownID := ""
	if own != nil {
		ownID = strings.TrimSuffix(filepath.Base(own.Name()), ".live")
	}
	var earliest time.Time
	for _, w := range registeredWriters(stateDir) {
		if w.Dead || w.ID == ownID {
			continue
		}
		overlap := false
		for _, r := range roots {
			for _, wr := range w.Roots {
				if r == wr || r == "/" || wr == "/" || strings.HasPrefix(wr, r+"/") || strings.HasPrefix(r, wr+"/") {
					overlap = true
				}
			}
		}
		if overlap && (earliest.IsZero() || w.Since.Before(earliest)) {
			earliest = w.Since
		}
	}
	return earliest
}

// homeRegister is the register (a journal directory) of the user's home
// state directory (homeStateDir) when stateDir is another one ("" if not):
// a run announces itself there too, and every run reads it, so that runs
// of one user that keep different state directories ($XDG_STATE_HOME set
// for one, as an agent host may) see each other. With each register read
// by the runs of its own state directory alone, a run of the default one
// loaded a .claude/settings.json that a live sandbox of another had just
// written, and ran with the widened policy (attack pass 106). moatd's runs
// (another user's, as) keep root's.
func homeRegister(stateDir string, as *enforce.Identity) string {
	if as != nil && as.Uid != os.Geteuid() {
		return ""
	}
	if stateDir == "" {
		stateDir = DefaultStateDir()
	}
	home := homeStateDir()
	if filepath.Clean(home) == filepath.Clean(stateDir) {
		return ""
	}
	return filepath.Join(home, "journal")
}

// registeredWriters lists the announcements in stateDir's register and in
// the user's home register (homeRegister), which must be this user's alone
// to count (checkStateDir).
func registeredWriters(stateDir string) []live.Writer {
	if stateDir == "" {
		stateDir = DefaultStateDir()
	}
	ws := live.Writers(filepath.Join(stateDir, "journal"))
	if h := homeRegister(stateDir, nil); h != "" && checkStateDir(filepath.Dir(h)) == nil {
		ws = append(ws, live.Writers(h)...)
	}
	return ws
}

// homeCopies maps an announcement to its copy in the home register.
var homeCopies sync.Map // *os.File -> *os.File

// announce is live.Announce in stateDir's register and, for this user's own
// run of another state directory, in the home register (homeRegister):
// withdraw ends both.
func announce(stateDir string, as *enforce.Identity, w live.Writer) (*os.File, error) {
	id := randomID()
	f, err := live.Announce(filepath.Join(stateDir, "journal"), id, w)
	if err != nil {
		return nil, err
	}
	if h := homeRegister(stateDir, as); h != "" && prepareStateDir(filepath.Dir(h)) == nil {
		if c, err := live.Announce(h, id, w); err == nil {
			homeCopies.Store(f, c)
		}
	}
	return f, nil
}

// withdraw is live.Withdraw of an announcement and of its home copy.
func withdraw(f *os.File) {
	if f == nil {
		return
	}
	if c, ok := homeCopies.LoadAndDelete(f); ok {
		live.Withdraw(c.(*os.File))
	}
	live.Withdraw(f)
}
