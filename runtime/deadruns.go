//go:build unix

package runtime

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
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
	for _, w := range live.Writers(filepath.Join(stateDir, "journal")) {
		if !w.Dead {
			continue
		}
		done, ok := live.Claim(w)
		if !ok {
			continue
		}
		var as *enforce.Identity
		home, _ := os.UserHomeDir()
		if w.As > 0 && w.As != os.Geteuid() {
			if os.Geteuid() != 0 {
				done(false)
				continue
			}
			id, err := identityOfUID(w.As)
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
		warns = append(warns, auditGit(fp, since, unsettledSince(stateDir, w.Roots, nil), home, stateDir, as, xdgConfigHome(nil, as), report)...)
		done(true)
	}
	return vs, warns
}

// identityOfUID is a user's identity from the user database.
func identityOfUID(uid int) (*enforce.Identity, error) {
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		return nil, err
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return nil, err
	}
	id := &enforce.Identity{Uid: uid, Gid: gid, Home: filepath.Clean(u.HomeDir), Name: u.Username}
	gids, err := u.GroupIds()
	if err != nil {
		return nil, err
	}
	for _, g := range gids {
		if n, err := strconv.Atoi(g); err == nil {
			id.Groups = append(id.Groups, n)
		}
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
	for _, w := range live.LiveWriters(filepath.Join(stateDir, "journal")) {
		if w.ID == ownID {
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
