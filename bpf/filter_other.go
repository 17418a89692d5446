//go:build !linux || !(386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64)

package bpf

import (
	"fmt"
	"net/netip"
	"runtime"
)

var errPlatform = fmt.Errorf("%w on %s/%s (Linux on a little-endian architecture only)", ErrUnsupported, runtime.GOOS, runtime.GOARCH)

// Supported returns an error wrapping [ErrUnsupported].
func Supported() error { return errPlatform }

// Programs is a loaded set of the filter's programs (none here).
type Programs struct{}

// LoadOptions size a set of programs.
type LoadOptions struct {
	EventBuffer, Filters, Destinations int
	NoBind                             bool
}

// Load returns an error wrapping [ErrUnsupported].
func Load(LoadOptions) (*Programs, error) { return nil, errPlatform }

// Attach returns an error wrapping [ErrUnsupported].
func (p *Programs) Attach(string, []netip.AddrPort, Options) (*Filter, error) {
	return nil, errPlatform
}

// Unknown returns 0.
func (p *Programs) Unknown() uint64 { return 0 }

// Close does nothing.
func (p *Programs) Close() error { return nil }

// Filter is the filter of one cgroup.
type Filter struct{}

// Attach returns an error wrapping [ErrUnsupported].
func Attach(cgroupDir string, allow []netip.AddrPort, opts Options) (*Filter, error) {
	return nil, errPlatform
}

// Events returns nil.
func (f *Filter) Events() <-chan Event { return nil }

// Dropped returns 0.
func (f *Filter) Dropped() uint64 { return 0 }

// Close does nothing.
func (f *Filter) Close() error { return nil }

// Detach does nothing.
func (f *Filter) Detach() error { return nil }

// SetAllowed returns an error wrapping [ErrUnsupported].
func (f *Filter) SetAllowed(allow []netip.AddrPort) error { return errPlatform }

// Drain is a no-op where the filter does not exist.
func (f *Filter) Drain() uint64 { return 0 }
