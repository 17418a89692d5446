package api

import (
	"fmt"
	"net/http"
	"path/filepath"
	"strings"

	"github.com/moat-sandbox/moat/internal/ascred"
	"github.com/moat-sandbox/moat/permissions"
	"github.com/moat-sandbox/moat/runtime"
	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/policy"
	"github.com/moat-sandbox/moat/shell/api/client"
)

// policy answers the server's policy and what enforces each part on this
// machine (GET /v1/policy), as moat policy --json prints them.
func (s *Server) policy(w http.ResponseWriter, r *http.Request) error {
	pol, notes := s.cfg.Policy, s.cfg.Notes
	var as *enforce.Identity
	if s.cfg.Daemon != nil {
		// the checks and the plan below work as the peer (checkSlots)
		release, err := s.checking(r)
		if err != nil {
			return err
		}
		defer release()
		// The peer's policy in its home directory (a session names its
		// own cwd).
		id, err := s.peerIdentity(r)
		if err != nil {
			return err
		}
		cwd, err := s.daemonCwd(id, r.URL.Query().Get("cwd"))
		if err != nil {
			return err
		}
		if pol, notes, err = s.daemonPolicy(r.Context(), id, cwd); err != nil {
			return err
		}
		as = id
	}
	desc, err := runtime.DescribeAs(pol, s.cfg.StateDir, as)
	if err != nil {
		return err
	}
	if s.cfg.Daemon != nil && desc != nil {
		// The protected paths and the placeholders are planned as the
		// client now; they were planned by root, which looked in the cwd
		// as root: a cwd swapped for a symbolic link after its check as
		// the client (to another user's 0700 directory, to /root) listed
		// which protected names exist there (found by an attack pass).
		// The peer still gets only their count.
		d := *desc
		d.Protected, d.Placeholders = nil, nil
		desc = &d
	}
	writeJSON(w, http.StatusOK, struct {
		Policy      *policy.Policy `json:"policy"`
		Notes       []string       `json:"notes"`
		Enforcement any            `json:"enforcement"`
	}{pol, append([]string{}, notes...), desc})
	return nil
}

// decide answers moat's decision on a command (POST /v1/decide), as moat
// check --json prints it. Nothing runs.
func (s *Server) decide(w http.ResponseWriter, r *http.Request) error {
	var req client.DecideRequest
	if err := decodeBody(w, r, s.cfg.MaxRequestBytes, &req, false); err != nil {
		return err
	}
	if strings.TrimSpace(req.Command) == "" {
		return errorf(http.StatusBadRequest, "command", "command is required: a non-empty string")
	}
	if req.Mode != "" && !policy.ValidMode(req.Mode) {
		return errorf(http.StatusBadRequest, "mode", "unknown mode %q (want one of %s)", req.Mode, strings.Join(policy.Modes, ", "))
	}
	eng := s.engine
	var cwd string
	if s.cfg.Daemon != nil {
		// the checks and the decision work as the peer (checkSlots)
		release, err := s.checking(r)
		if err != nil {
			return err
		}
		defer release()
		id, err := s.peerIdentity(r)
		if err != nil {
			return err
		}
		if cwd, err = s.daemonCwd(id, req.Cwd); err != nil {
			return err
		}
		pol, _, err := s.daemonPolicy(r.Context(), id, cwd)
		if err != nil {
			return err
		}
		// As the client: the engine follows symbolic links, and as root a
		// client learnt where links led in places only root may look
		// (another user's /proc/PID/cwd; found by an attack pass).
		within := func(fn func()) error { return ascred.Do(id.Uid, id.Gid, id.Groups, func() error { fn(); return nil }) }
		if eng, err = permissions.New(pol.Permissions, permissions.Options{FollowSymlinks: true, Sandbox: &pol.Sandbox, Within: within}); err != nil {
			return fmt.Errorf("settings: %w", err)
		}
	} else {
		cwd = s.cfg.Policy.Cwd
		if req.Cwd != "" {
			if !filepath.IsAbs(req.Cwd) || strings.ContainsRune(req.Cwd, 0) {
				return errorf(http.StatusBadRequest, "cwd", "cwd must be an absolute path")
			}
			cwd = filepath.Clean(req.Cwd)
		}
	}
	if err := eng.CheckMode(req.Mode); err != nil {
		return errorf(http.StatusBadRequest, "mode", "%v", err)
	}
	res := eng.DecideContext(r.Context(), permissions.Request{Command: req.Command, Cwd: cwd, Mode: req.Mode})
	writeJSON(w, http.StatusOK, permissions.Summarize(res))
	return nil
}
