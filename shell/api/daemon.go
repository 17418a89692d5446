package api

import (
	"context"
	"fmt"
	"net/http"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// Daemon makes a Server serve many users (moat daemon, moatd): any user
// may connect, each request acts for the user the kernel says is at the
// other end of the connection (SO_PEERCRED, SO_PEERGROUPS), every session
// belongs to the user who opened it and is invisible to every other (404
// on every route), and every session's sandbox runs as its owner, with the
// client's own groups (enforce.Launch.As).
type Daemon struct {
	// PolicyFor returns the policy of a user's session in cwd (absolute,
	// already checked to be a directory the user can use): the user's
	// root-owned policy, which a client may only narrow. Required.
	PolicyFor func(id *enforce.Identity, cwd string) (*policy.Policy, []string, error)
	// CheckWritable, if set, checks that the user itself can write path
	// and returns its real path; CheckDir that the user can use the
	// directory (its working directory). Both check as the user (never as
	// root). Required.
	CheckWritable func(id *enforce.Identity, path string) (string, error)
	CheckDir      func(id *enforce.Identity, path string) (string, error)
	// MaxSessionsPerUser bounds each user's open sessions (default 16).
	MaxSessionsPerUser int
	// MaxConnsPerUser bounds each user's connections to the daemon at
	// once (default an eighth of MaxConns, at most 256): an extra one gets
	// a 429 and is closed, before the daemon reads anything from it.
	MaxConnsPerUser int
	// MaxConns bounds the daemon's connections at once, of all users
	// together (default from the descriptor limit, at most 4096:
	// connsFor): an extra one gets a 429 and is closed.
	MaxConns int
	// IdleTimeout closes a session no command has used for that long
	// (default 30 minutes): a client that went away leaves nothing.
	IdleTimeout time.Duration
	// PATH is the sessions' PATH (default /usr/local/bin:/usr/bin:/bin).
	PATH string
}

// Peer is who is at the other end of a connection, from the kernel: its
// process's effective uid and gid and its supplementary groups when it
// connected (SO_PEERCRED, SO_PEERGROUPS), and its pid.
type Peer struct {
	Uid, Gid, Pid int
	Groups        []int
	// Rlimits are the peer process's resource limits when it was checked
	// (soft, hard; by resource), nil where they could not be read.
	Rlimits [][2]uint64
	// Nice and OOMScoreAdj are the peer process's, nil where unknown.
	Nice, OOMScoreAdj *int
	// Umask is the peer process's, nil where unknown.
	Umask *int
}

// identityOf is the user of a daemon peer: uid, gid and groups from the
// kernel (the peer's own, never more: a process its launcher started with
// fewer groups than the user database lists gets a sandbox with no more
// than it has), home and name from the user database. Root is not served:
// it runs moat itself.
func identityOf(p *Peer) (*enforce.Identity, error) {
	if p == nil {
		return nil, fmt.Errorf("the connection's peer is unknown")
	}
	if p.Uid == 0 {
		return nil, fmt.Errorf("the daemon serves unprivileged users: root runs moat itself")
	}
	u, err := user.LookupId(strconv.Itoa(p.Uid))
	if err != nil {
		return nil, fmt.Errorf("uid %d is not in the user database: %v", p.Uid, err)
	}
	id := &enforce.Identity{Uid: p.Uid, Gid: p.Gid, Groups: slices.Clone(p.Groups), Home: filepath.Clean(u.HomeDir), Name: u.Username, Rlimits: slices.Clone(p.Rlimits), Nice: p.Nice, OOMScoreAdj: p.OOMScoreAdj, Umask: p.Umask}
	if !filepath.IsAbs(id.Home) {
		return nil, fmt.Errorf("user %s has no absolute home directory (%q)", u.Username, u.HomeDir)
	}
	return id, nil
}

// peerIdentity is the identity of the request's peer (daemon mode).
func (s *Server) peerIdentity(r *http.Request) (*enforce.Identity, error) {
	pr, _ := r.Context().Value(peerKey{}).(peerResult)
	id, err := identityOf(pr.peer)
	if err != nil {
		return nil, errorf(http.StatusForbidden, "", "%v", err)
	}
	return id, nil
}

// owner is the uid a request acts for: the peer's in daemon mode, -1 (the
// server's own user) otherwise.
func (s *Server) owner(r *http.Request) int {
	if s.cfg.Daemon == nil {
		return -1
	}
	pr, _ := r.Context().Value(peerKey{}).(peerResult)
	if pr.peer == nil {
		return -2 // matches no session
	}
	return pr.peer.Uid
}

// daemonEnv is a daemon session's environment: the user's, from the user
// database (never the daemon's own).
func (s *Server) daemonEnv(id *enforce.Identity) []string {
	path := s.cfg.Daemon.PATH
	if path == "" {
		path = "/usr/local/bin:/usr/bin:/bin"
	}
	return []string{"HOME=" + id.Home, "USER=" + id.Name, "LOGNAME=" + id.Name, "PATH=" + path, "LANG=C.UTF-8"}
}

// daemonCwd checks a requested working directory as the user: absolute,
// and a directory the user can use. Empty is the user's home.
func (s *Server) daemonCwd(id *enforce.Identity, cwd string) (string, error) {
	if cwd == "" {
		cwd = id.Home
	}
	if !filepath.IsAbs(cwd) || strings.ContainsRune(cwd, 0) {
		return "", errorf(http.StatusBadRequest, "cwd", "cwd must be an absolute path")
	}
	real, err := s.cfg.Daemon.CheckDir(id, filepath.Clean(cwd))
	if err != nil {
		return "", errorf(http.StatusBadRequest, "cwd", "%v", err)
	}
	return real, nil
}

// daemonPolicy is the policy for the request's user in cwd.
func (s *Server) daemonPolicy(ctx context.Context, id *enforce.Identity, cwd string) (*policy.Policy, []string, error) {
	pol, notes, err := s.cfg.Daemon.PolicyFor(id, cwd)
	if err != nil {
		return nil, nil, fmt.Errorf("the policy of user %s: %w", id.Name, err)
	}
	return pol, notes, nil
}
