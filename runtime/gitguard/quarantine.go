package gitguard

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// maxQuarantineCopy bounds what is copied when a file cannot be renamed
// into the quarantine (another filesystem): hooks and configs are small.
const maxQuarantineCopy = 64 << 20

func (a *auditor) record(f Finding) { a.rep.Findings = append(a.rep.Findings, f) }

// quarantine moves p out of the tree.
func (a *auditor) quarantine(p, reason string) {
	if a.done[p] {
		return
	}
	a.done[p] = true
	a.unlock(filepath.Dir(p))
	f := Finding{Path: p, Reason: reason, Action: "quarantined"}
	dest, err := a.moveOut(p)
	var qe *noQuarantineError
	switch {
	case errors.As(err, &qe):
		// The plant must not stay: without a quarantine it is removed.
		if rerr := a.remove(p); rerr != nil {
			f.Action = "failed: " + err.Error() + "; " + rerr.Error()
		} else {
			f.Action = "removed (not kept: " + err.Error() + ")"
		}
	case err != nil:
		f.Action = "failed: " + err.Error()
	}
	f.MovedTo = dest
	a.record(f)
}

// noQuarantineError: the quarantine directory could not be made (moatd's
// audit runs as the user, and keeps it in the user's home, which may not
// be writable): what was planted is then removed or rewritten all the
// same, and the finding says the original was not kept.
type noQuarantineError struct{ err error }

func (e *noQuarantineError) Error() string { return "no quarantine: " + e.err.Error() }
func (e *noQuarantineError) Unwrap() error { return e.err }

// rewrite replaces the config at p by the entries kept, the original going
// to the quarantine.
func (a *auditor) rewrite(p string, from fileID, keep []Entry, why string) {
	a.replace(p, from, FormatConfig(keep), "a git config written during the run sets "+why, "rewrote without those settings")
}

// replace puts data in place of the file at p (what it keeps of it), the
// original going to the quarantine; action says what was kept. from is
// the file data was read from: when the file at p (through its
// directory's descriptor) is not that one, data may have come from
// anywhere a swapped directory led the read (another sandbox still
// running, or another user who can write the tree, can swap it), and must
// not be written into the tree: the file is moved out whole instead, or,
// if it did not change during the run (what the swap led the audit to is
// no plant), left.
func (a *auditor) replace(p string, from fileID, data []byte, reason, action string) {
	if a.done[p] {
		return
	}
	a.unlock(filepath.Dir(p))
	dest, qerr, out, err := a.rewriteAt(p, from, data)
	switch out {
	case notTheRead:
		a.quarantine(p, reason+" (it changed while moat read it)")
		return
	case olderThere:
		a.done[p] = true
		a.record(Finding{Path: p, Reason: reason, Action: "left: the file there now is not the one moat read (a directory on its path was swapped while moat read it), and did not change during the run"})
		return
	}
	a.done[p] = true
	f := Finding{Path: p, Reason: reason, Action: action}
	if err == nil {
		if qerr != nil {
			f.Action = action + " (the original not kept: " + qerr.Error() + ")"
		}
		f.MovedTo = dest
		a.record(f)
		return
	}
	// The risky file must not stay: move it out whole.
	d, err2 := a.moveOut(p)
	var qe *noQuarantineError
	switch {
	case err2 == nil:
		f.Action, f.MovedTo = "quarantined (could not rewrite it: "+err.Error()+")", d
	case errors.As(err2, &qe) && a.remove(p) == nil:
		f.Action = "removed (could not rewrite it: " + err.Error() + "; not kept: " + err2.Error() + ")"
	default:
		f.Action = "failed: " + err.Error() + "; " + err2.Error()
	}
	a.record(f)
}

// rewriteOutcome is what rewriteAt found at the path.
type rewriteOutcome int

const (
	rewroteIt  rewriteOutcome = iota // rewritten, or the error says why not
	notTheRead                       // not the file read (or no file, or the directory changed)
	olderThere                       // not the file read, and a file that did not change during the run
)

func (a *auditor) dir() (string, error) {
	if a.qdir != "" {
		return a.qdir, nil
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	d := filepath.Join(a.o.QuarantineDir, time.Now().UTC().Format("20060102T150405Z")+"-"+hex.EncodeToString(b[:]))
	if err := os.MkdirAll(d, 0o700); err != nil {
		return "", &noQuarantineError{err}
	}
	a.qdir = d
	return d, nil
}

func (a *auditor) dest(p string) (string, error) {
	d, err := a.dir()
	if err != nil {
		return "", err
	}
	a.n++
	name := strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || r == '/' {
			return '_'
		}
		return r
	}, filepath.Base(p))
	// The name may be as long as a name can be (255 bytes): with the
	// number before it, it was too long for the quarantine, and the plant
	// stayed (attack pass 45: a legacy remote of a 255-byte name). The
	// full path is in index.txt.
	if len(name) > 200 {
		name = name[:200]
	}
	dest := filepath.Join(d, fmt.Sprintf("%03d-%s", a.n, name))
	// The quarantine is the user's (moatd): a FIFO or a symlink at the
	// index is not written through, nor waited on (readCache).
	idx, err := os.OpenFile(filepath.Join(d, "index.txt"), os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NONBLOCK|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if err == nil {
		if fi, serr := idx.Stat(); serr != nil || !fi.Mode().IsRegular() {
			idx.Close()
			err = errors.New("not a regular file")
		}
	}
	if err == nil {
		fmt.Fprintf(idx, "%s\t%q\n", filepath.Base(dest), p)
		idx.Close()
	}
	return dest, nil
}

func randHex() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
