//go:build unix

package main

import (
	"net"
	"os"
	"syscall"
)

// listenUnixPrivate listens on a unix socket that only this user can
// connect to: made under umask 0177 (so never open to others, not even for
// a moment), then chmod 0600 to be sure.
func listenUnixPrivate(path string) (net.Listener, error) {
	old := syscall.Umask(0o177)
	lis, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		lis.Close()
		return nil, err
	}
	return lis, nil
}
