package api

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Listen creates the unix socket path, mode 0600, for Serve; closing the
// listener removes it. The parent directory is created (0700) if missing.
// An existing socket nothing listens on (left by a server that died) is
// removed; any other existing file is an error, as is a socket a server
// answers on.
//
// The socket is bound in a new private directory beside path, made 0600
// there, then linked into place: it never exists at path with a wider mode
// (no umask games, which would race with the rest of the process), and the
// link fails rather than replace what appeared at path meanwhile.
func Listen(path string) (net.Listener, error) {
	if path == "" {
		return nil, errors.New("api: no socket path")
	}
	path = filepath.Clean(path)
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := removeStale(path); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(dir, ".moat-api-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	l, err := net.Listen("unix", filepath.Join(tmp, "s"))
	if err != nil {
		return nil, err
	}
	ul := l.(*net.UnixListener)
	ul.SetUnlinkOnClose(false) // the name it was bound to goes with tmp
	if err := os.Chmod(filepath.Join(tmp, "s"), 0o600); err != nil {
		l.Close()
		return nil, err
	}
	if err := os.Link(filepath.Join(tmp, "s"), path); err != nil {
		l.Close()
		return nil, fmt.Errorf("api: socket %s: %w", path, err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		l.Close()
		return nil, err
	}
	return &socket{UnixListener: ul, path: path, fi: fi}, nil
}

// removeStale removes path if it is a socket nobody answers on.
func removeStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode().Type() != os.ModeSocket {
		return fmt.Errorf("api: %s exists and is not a socket", path)
	}
	c, err := net.DialTimeout("unix", path, 2*time.Second)
	if err == nil {
		c.Close()
		return fmt.Errorf("api: a server already answers on %s", path)
	}
	return os.Remove(path)
}

// socket is a listener that removes its path on Close, if the path is
// still its socket.
type socket struct {
	*net.UnixListener
	path string
	fi   os.FileInfo
	once sync.Once
}

func (s *socket) Close() error {
	err := s.UnixListener.Close()
	s.once.Do(func() {
		if fi, lerr := os.Lstat(s.path); lerr == nil && os.SameFile(fi, s.fi) {
			os.Remove(s.path)
		}
	})
	return err
}
