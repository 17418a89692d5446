//go:build !darwin

package darwin

import (
	"context"
	"fmt"
	"syscall"

	"github.com/moat-sandbox/moat/runtime/enforce"
)

// errNotMac is what the runner says on any other system: the profile can
// be generated and read anywhere, only macOS runs it.
var errNotMac = fmt.Errorf("darwin: running under Seatbelt needs macOS: %w", enforce.ErrUnsupported)

// Run runs a command under Seatbelt (macOS only).
func Run(context.Context, Spec) (*Result, error) { return nil, errNotMac }

// Start starts a command under Seatbelt (macOS only).
func Start(context.Context, Spec) (*Process, error) { return nil, errNotMac }

// Wait waits for the command (macOS only).
func (p *Process) Wait() (*Result, error) { return nil, errNotMac }

// Signal signals the command's process group (macOS only).
func (p *Process) Signal(syscall.Signal) error { return errNotMac }

// Kill ends the command's process group (macOS only).
func (p *Process) Kill() error { return errNotMac }

// Reexec handles nothing here: only a macOS run re-executes moat to set
// the command's rlimits.
func Reexec([]string) (bool, error) { return false, nil }
