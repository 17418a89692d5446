//go:build !darwin

package darwin

import (
	"context"
	"syscall"

	"github.com/moat-sandbox/moat/runtime/enforce"
)

// errNotMac is what the runner says on any other system: the profile can
// be generated and read anywhere, only macOS runs it. A type rather than
// fmt.Errorf: a package variable made by a call is made at init, before
// main, by every moat process (0.01 ms).
var errNotMac error = notMacError{}

type notMacError struct{}

func (notMacError) Error() string {
	return "darwin: running under Seatbelt needs macOS: " + enforce.ErrUnsupported.Error()
}

func (notMacError) Unwrap() error { return enforce.ErrUnsupported }

// Start starts a command under Seatbelt (macOS only).
func Start(context.Context, Spec) (*Process, error) { return nil, errNotMac }

// Wait waits for the command (macOS only).
func (p *Process) Wait() (*enforce.Exit, error) { return nil, errNotMac }

// Signal signals the command's process group (macOS only).
func (p *Process) Signal(syscall.Signal) error { return errNotMac }

// Kill ends the command's process group (macOS only).
func (p *Process) Kill() error { return errNotMac }

// Reexec handles nothing here: only a macOS run re-executes moat to set
// the command's rlimits.
func Reexec([]string) (bool, error) { return false, nil }
