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
	// A state directory the home one does not list as itself could be a
	// sandbox's, forged announcements and a symlinked quarantine included:
	// not audited from until it is readied as a run's is (adoptStateDir).
	if home := filepath.Clean(homeStateDir()); home != filepath.Clean(stateDir) {
		if err := readyStateDir(home, filepath.Clean(stateDir)); err != nil {
			return nil, []string{"dead runs not audited: " + err.Error()}
		}
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
