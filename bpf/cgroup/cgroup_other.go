//go:build !linux

package cgroup

import "fmt"

// Mountpoint returns an error wrapping [ErrUnsupported]: cgroups are Linux
// only.
func Mountpoint() (string, error) { return "", fmt.Errorf("%w: not Linux", ErrUnsupported) }

// Manager creates per-run cgroups under one parent directory.
type Manager struct {
	// Dir is the parent directory, inside a cgroup2 hierarchy.
	Dir string
}

// New returns an error wrapping [ErrUnsupported].
func New(name string) (*Manager, error) {
	_, err := Mountpoint()
	return nil, err
}

// Group is one per-run cgroup.
type Group struct{}

// Path returns "".
func (g *Group) Path() string { return "" }

// FD returns -1.
func (g *Group) FD() int { return -1 }

// Create returns an error wrapping [ErrUnsupported].
func (m *Manager) Create(id string) (*Group, error) {
	_, err := Mountpoint()
	return nil, err
}

// CleanStale does nothing.
func (m *Manager) CleanStale() ([]string, error) { return nil, nil }

// Close does nothing.
func (g *Group) Close() error { return nil }

// Kill returns an error wrapping [ErrUnsupported].
func (g *Group) Kill() error {
	_, err := Mountpoint()
	return err
}

// Remove does nothing.
func (g *Group) Remove() error { return nil }

// Add is unsupported off Linux.
func (g *Group) Add(pid int) error { return ErrUnsupported }
