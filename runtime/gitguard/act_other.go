//go:build !linux && !darwin

package gitguard

import (
	"errors"
	"io/fs"
	"os"
)

// Elsewhere the audit changes nothing (it has no safe way to: act.go).
var errNoActions = errors.New("the audit cannot act on this system")

func (a *auditor) chmodDir(string, fs.FileMode)   {}
func (a *auditor) putModesBack()                  {}
func (a *auditor) moveOut(string) (string, error) { return "", errNoActions }
func (a *auditor) remove(string) error            { return errNoActions }
func (a *auditor) rewriteAt(string, fileID, []byte) (string, error, rewriteOutcome, error) {
	return "", nil, notTheRead, errNoActions
}

// auditorUID is the user the audit runs as.
func auditorUID() int { return os.Geteuid() }
