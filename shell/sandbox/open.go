package sandbox

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/moat-sandbox/moat/internal/ascred"
	"github.com/moat-sandbox/moat/permissions"
	"github.com/moat-sandbox/moat/runtime"
	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/policy"
	"github.com/moat-sandbox/moat/shell"
)

// Gate says which of moat's decisions let a command run in an opened
// shell. Every command runs in the sandbox whatever the gate.
type Gate string

const (
	// GateStrict runs only commands the pipeline allows; "ask" and "deny"
	// come back refused. The zero Gate is GateStrict.
	GateStrict Gate = "strict"
	// GateDeny runs everything but denied commands (the host asked the
	// user about the rest).
	GateDeny Gate = "deny"
	// GateOff runs every command (the host decided).
	GateOff Gate = "off"
)

// Config opens a gated shell on a session sandbox. The zero value of every
// field but Policy is usable.
type Config struct {
	// Policy is what the sandbox enforces and what the decisions read
	// (its Permissions). Required; Open validates it and does not change
	// it.
	Policy *policy.Policy
	// Gate: GateStrict if empty.
	Gate Gate
	// Mode is the permission mode of the decisions (policy.Modes); empty
	// is "default".
	Mode string
	// Env is the shell's environment before the policy filters it. If
	// nil, this process's environment.
	Env []string
	// Timeout is a command's default timeout (shell.Config.Timeout).
	Timeout time.Duration
	// IdleTimeout ends the sandbox after this long without a command.
	IdleTimeout time.Duration
	// OutputDir is where long output is saved. If empty, a new directory
	// under moat's state directory, which every sandbox protects (readable,
	// not writable, inside), removed by Close.
	OutputDir string
	// StateDir is moat's state directory (runtime.SessionRequest); if
	// empty, runtime.DefaultStateDir().
	StateDir string
	// Logger receives debug logs. If nil, nothing is logged.
	Logger *slog.Logger
	// As, if set, runs the sandbox as that user (runtime.SessionRequest.As:
	// moatd, root, serving an unprivileged client). Env must then be set:
	// the supervisor's own environment is never the client's.
	As *enforce.Identity
	// Enforcer, if set, is a long-lived supervisor's enforcer
	// (runtime.SessionRequest.Enforcer: moatd's); nil, one of the
	// session's own.
	Enforcer *runtime.Enforcer
}

// Shell is a shell.Session on a session sandbox, with moat's decisions in
// front of it. Safe for concurrent use.
type Shell struct {
	Session *shell.Session
	Sandbox *runtime.Session
	Engine  *permissions.Engine
	mode    string
	outDir  string         // removed by Close when Open made it
	worker  *ascred.Worker // the client's credentials for decisions (moatd), or nil
	once    sync.Once
}

// Open validates cfg.Policy, sets up the session sandbox and the shell on
// it. Errors are the runtime's typed errors (runtime.NewSession) or name
// the field at fault.
func Open(ctx context.Context, cfg Config) (*Shell, error) {
	if cfg.Policy == nil {
		return nil, errors.New("sandbox.Open: Config.Policy is nil")
	}
	switch cfg.Gate {
	case "":
		cfg.Gate = GateStrict
	case GateStrict, GateDeny, GateOff:
	default:
		return nil, fmt.Errorf("sandbox.Open: unknown Gate %q (want strict, deny or off)", cfg.Gate)
	}
	if cfg.Policy != nil {
		if err := cfg.Policy.Permissions.CheckMode(cfg.Mode); err != nil {
			return nil, fmt.Errorf("sandbox.Open: Mode: %w", err)
		}
	} else if cfg.Mode != "" && !policy.ValidMode(cfg.Mode) {
		return nil, fmt.Errorf("sandbox.Open: unknown Mode %q", cfg.Mode)
	}
	if cfg.Timeout < 0 || cfg.IdleTimeout < 0 {
		return nil, errors.New("sandbox.Open: Timeout and IdleTimeout must not be negative")
	}
	if cfg.As != nil && cfg.Env == nil {
		return nil, errors.New("sandbox.Open: Config.Env is required with Config.As (the supervisor's environment is not the client's)")
	}
	pol := cfg.Policy
	if err := pol.Validate(); err != nil {
		return nil, err
	}
	opts := permissions.Options{FollowSymlinks: true, Sandbox: &pol.Sandbox}
	var worker *ascred.Worker
	if cfg.As != nil && cfg.As.Uid != os.Geteuid() {
		// moatd: the decisions follow symbolic links as the client does,
		// never as root (permissions.Options.Within).
		w, err := ascred.NewWorker(cfg.As.Uid, cfg.As.Gid, cfg.As.Groups)
		if err != nil {
			return nil, fmt.Errorf("sandbox.Open: the client's credentials: %w", err)
		}
		worker = w
		opts.Within = func(fn func()) error { return worker.Do(func() error { fn(); return nil }) }
	}
	eng, err := permissions.New(pol.Permissions, opts)
	if err != nil {
		worker.Close()
		return nil, fmt.Errorf("settings: %w", err)
	}
	outDir, ownDir := cfg.OutputDir, ""
	if outDir == "" {
		state := cfg.StateDir
		if state == "" {
			state = runtime.DefaultStateDir()
		}
		outDir = filepath.Join(state, "output", fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano()))
		ownDir = outDir
	}
	if err := os.MkdirAll(outDir, 0o700); err != nil {
		worker.Close()
		return nil, fmt.Errorf("output directory: %w", err)
	}
	// moat's state is hidden from every sandbox (other sessions' output
	// among it); this session's own saved output stays readable to its
	// commands (the agent reads it back with cat, head or grep), and is
	// never writable there, whatever the writable roots: with the state
	// under one (--write $HOME), a later command rewrote an earlier one's
	// saved output (found by an attack pass). Not for moatd's sessions:
	// their output is in root's state, which the client's sandbox could
	// never open.
	spol := pol
	if ownDir != "" && cfg.As == nil {
		p := *pol
		rule := policy.PathRule{Path: ownDir, Source: "moat: this session's saved output"}
		p.FS.AllowRead = append(append([]policy.PathRule(nil), pol.FS.AllowRead...), rule)
		p.FS.DenyWrite = append(append([]policy.PathRule(nil), pol.FS.DenyWrite...), rule)
		spol = &p
	}
	sb, err := runtime.NewSession(ctx, runtime.SessionRequest{Policy: spol, IdleTimeout: cfg.IdleTimeout, StateDir: cfg.StateDir, Logger: cfg.Logger, Env: cfg.Env, As: cfg.As, Enforcer: cfg.Enforcer})
	if err != nil {
		if ownDir != "" {
			os.RemoveAll(ownDir)
		}
		worker.Close()
		return nil, err
	}
	s := &Shell{Sandbox: sb, Engine: eng, mode: cfg.Mode, outDir: ownDir, worker: worker}
	env := cfg.Env
	if env == nil {
		env = os.Environ()
	}
	env, _ = policy.FilterEnv(env, pol.Env.Allow, pol.Env.Set)
	sc := shell.Config{
		Runner:    New(sb),
		Dir:       pol.Cwd,
		Env:       env,
		Prefix:    shell.PrefixFromEnv(os.Getenv),
		OutputDir: outDir,
		Timeout:   cfg.Timeout,
		Engine:    eng,
		Logger:    cfg.Logger,
	}
	if cfg.Gate != GateOff {
		gate := cfg.Gate
		sc.Gate = func(ctx context.Context, command, cwd string) policy.Decision {
			d := s.Decide(ctx, command, cwd).Decision.Final()
			if gate == GateDeny && d.Verdict != policy.Deny {
				d.Verdict = policy.Allow
			}
			return d
		}
	}
	if s.Session, err = shell.New(sc); err != nil {
		sb.Close()
		worker.Close()
		if s.outDir != "" {
			os.RemoveAll(s.outDir)
		}
		return nil, err
	}
	return s, nil
}

// Decide is the permission pipeline's decision for command in cwd (the
// shell's working directory if empty).
func (s *Shell) Decide(ctx context.Context, command, cwd string) permissions.Result {
	return s.DecideRequest(ctx, permissions.Request{Command: command, Cwd: cwd})
}

// DecideRequest is Decide for a whole request (an agent's
// dangerouslyDisableSandbox, say): an empty Cwd is the shell's working
// directory, an empty Mode the shell's (Config.Mode).
func (s *Shell) DecideRequest(ctx context.Context, req permissions.Request) permissions.Result {
	if req.Cwd == "" {
		req.Cwd = s.Session.Cwd()
	}
	if req.Mode == "" {
		req.Mode = s.mode
	}
	return s.Engine.DecideContext(ctx, req)
}

// Close kills what still runs, ends the sandbox and removes the output
// directory Open made. Safe to call more than once.
func (s *Shell) Close() error {
	var err error
	s.once.Do(func() {
		s.Session.Close()
		err = s.Sandbox.Close()
		s.worker.Close()
		if s.outDir != "" {
			os.RemoveAll(s.outDir)
		}
	})
	return err
}
