package api

import (
	"net/http"
	"path/filepath"
	"strings"

	"github.com/moat-sandbox/moat/permissions"
	"github.com/moat-sandbox/moat/runtime"
	"github.com/moat-sandbox/moat/runtime/policy"
	"github.com/moat-sandbox/moat/shell/api/client"
)

// policy answers the server's policy and what enforces each part on this
// machine (GET /v1/policy), as moat policy --json prints them.
func (s *Server) policy(w http.ResponseWriter, r *http.Request) error {
	desc, err := runtime.Describe(s.cfg.Policy, s.cfg.StateDir)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		Policy      *policy.Policy `json:"policy"`
		Notes       []string       `json:"notes"`
		Enforcement any            `json:"enforcement"`
	}{s.cfg.Policy, append([]string{}, s.cfg.Notes...), desc})
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
	cwd := s.cfg.Policy.Cwd
	if req.Cwd != "" {
		if !filepath.IsAbs(req.Cwd) || strings.ContainsRune(req.Cwd, 0) {
			return errorf(http.StatusBadRequest, "cwd", "cwd must be an absolute path")
		}
		cwd = filepath.Clean(req.Cwd)
	}
	res := s.engine.DecideContext(r.Context(), permissions.Request{Command: req.Command, Cwd: cwd, Mode: req.Mode})
	writeJSON(w, http.StatusOK, permissions.Summarize(res))
	return nil
}
