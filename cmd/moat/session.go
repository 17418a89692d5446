package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/moat-sandbox/moat/runtime"
	"github.com/moat-sandbox/moat/runtime/policy"
	"github.com/moat-sandbox/moat/shell"
	"github.com/moat-sandbox/moat/shell/jsonl"
	"github.com/moat-sandbox/moat/shell/sandbox"
)

func init() { subcommands = append(subcommands, newSessionCmd, newShellCmd) }

// sessionFlags are what moat session and moat shell share.
type sessionFlags struct {
	settings    string
	bestEffort  bool
	write       []string
	mode        string
	gate        string
	timeout     time.Duration
	idleTimeout time.Duration
	debug       bool
	jsonl       bool
}

func (f *sessionFlags) register(c *cobra.Command, gateDefault string) {
	fl := c.Flags()
	fl.StringVar(&f.settings, "settings", "", "settings `FILE` (srt format or Claude Code settings.json)")
	fl.BoolVar(&f.bestEffort, "best-effort", false, "run with what can be enforced and report what was skipped, instead of refusing")
	fl.StringArrayVarP(&f.write, "write", "w", nil, "also make `PATH` writable (repeatable)")
	fl.StringVar(&f.mode, "mode", "", "permission `MODE` for the decisions: default, acceptEdits, plan or bypassPermissions")
	fl.StringVar(&f.gate, "gate", gateDefault, "which decisions run a command: `strict` (allow only), deny (all but deny), off (every command; the host decided)")
	fl.DurationVar(&f.timeout, "timeout", 0, "a command's default timeout (default 2m; a request may ask for up to 10m)")
	fl.DurationVar(&f.idleTimeout, "idle-timeout", 0, "end the session after `DURATION` without a command (default: never)")
	fl.BoolVar(&f.debug, "debug", false, "log what moat does on stderr")
}

// shellEnv is an open session: the sandbox, the shell on it, the decisions.
type shellEnv struct {
	*sandbox.Shell
	pol  *policy.Policy
	sess *shell.Session
	sb   *runtime.Session
}

func (e *shellEnv) close() { e.Close() }

// openShell loads the policy, opens the session sandbox and the shell on it
// (sandbox.Open, what a library host calls).
func openShell(ctx context.Context, f *sessionFlags, stderr io.Writer, hide ...string) (*shellEnv, error) {
	if err := checkSessionFlags(f); err != nil {
		return nil, err
	}
	pol, err := loadPolicy(f.settings)
	if err != nil {
		return nil, err
	}
	for _, p := range hide {
		pol.FS.DenyRead = append(pol.FS.DenyRead, policy.PathRule{Path: p, Source: "moat: the server's socket"})
	}
	if f.bestEffort {
		pol.BestEffort = true
	}
	if err := addWritable(pol, f.write); err != nil {
		return nil, err
	}
	if err := pol.Validate(); err != nil {
		return nil, &exitError{code: exitMoatError, err: err}
	}
	for _, n := range policyNotes(pol) {
		fmt.Fprintf(stderr, "moat: note: %s\n", n)
	}
	cfg := sandbox.Config{Policy: pol, Gate: sandbox.Gate(f.gate), Mode: f.mode, Timeout: f.timeout, IdleTimeout: f.idleTimeout}
	if f.debug {
		cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	sh, err := sandbox.Open(ctx, cfg)
	if err != nil {
		return nil, runError(explainReserveError(pol, err))
	}
	for _, sk := range sh.Sandbox.Skipped() {
		fmt.Fprintf(stderr, "moat: best effort: not enforced: %s\n", sk)
	}
	return &shellEnv{Shell: sh, pol: pol, sess: sh.Session, sb: sh.Sandbox}, nil
}

// checkSessionFlags checks the flags a session takes.
func checkSessionFlags(f *sessionFlags) error {
	switch f.gate {
	case "strict", "deny", "off":
	default:
		return usageError("unknown --gate %q (want strict, deny or off)", f.gate)
	}
	if f.mode != "" && !policy.ValidMode(f.mode) {
		return usageError("unknown --mode %q (want one of %s)", f.mode, strings.Join(policy.Modes, ", "))
	}
	if f.timeout < 0 || f.idleTimeout < 0 {
		return usageError("--timeout and --idle-timeout must not be negative")
	}
	return nil
}

// addWritable adds --write paths to the policy.
func addWritable(pol *policy.Policy, paths []string) error {
	for _, w := range paths {
		if w == "" || strings.ContainsRune(w, 0) {
			return usageError("--write needs a path")
		}
		pr := policy.PathRule{Path: absPath(pol.Cwd, w), Source: "--write " + w}
		if _, err := os.Stat(pr.Path); err != nil {
			return usageError("--write %s: %v (moat makes existing paths writable; create it first)", w, errors.Unwrap(err))
		}
		pol.FS.AllowWrite = append(pol.FS.AllowWrite, pr)
	}
	return nil
}

// interrupted is a context cancelled by SIGINT, SIGTERM or SIGHUP.
func interrupted() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
}

func newSessionCmd() *cobra.Command {
	var f sessionFlags
	c := &cobra.Command{
		Use:   "session --jsonl [flags]",
		Short: "Run an agent's shell commands in one session sandbox, over JSON lines",
		Long: `Open one session sandbox (set up once) and run the agent's shell commands in
it the way the seeds' Bash tool does: the working directory and exported
variables carry over, output is capped and saved, exit codes are interpreted,
commands may run in the background.

One JSON request per line on standard input:

  {"id":"1","op":"run","command":"cd src && ls"}
  {"id":"2","op":"run","command":"npm test","background":true}
  {"id":"3","op":"read","target":"2"}    {"id":"4","op":"kill","target":"2"}
  {"id":"5","op":"close"}

one JSON event per line on standard output (started, output, progress,
backgrounded, finished, ...); each command's last event is "finished" with
exit_code, is_error, message, output, output_file and cwd. docs/SESSION.md
and docs/session.schema.json have the whole protocol.

Each command is decided first (moat check's pipeline): with --gate strict
(the default) only allowed commands run, and an "ask" or "deny" comes back
as a finished event with "refused"; --gate deny runs everything but denied
commands (the host asked the user); --gate off runs every command (the host
decided). Every command runs in the sandbox either way.

Exit status: 0 when the input ended or a close request came; 125 for moat's
own errors (bad settings, no sandbox).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !f.jsonl {
				return usageError("moat session speaks JSON lines only: moat session --jsonl (moat shell is the interactive one)")
			}
			ctx, stop := interrupted()
			defer stop()
			if err := checkSessionFlags(&f); err != nil {
				return err
			}
			srv := &jsonl.Server{}
			cl, _, err := chooseDaemon(ctx, cmd.ErrOrStderr(), daemonUnsuited(&f))
			if err != nil {
				return err
			}
			if cl != nil {
				b, err := openDaemonSession(ctx, cl, &f)
				if err != nil {
					cl.Close()
					return err
				}
				defer b.Close()
				srv.Backend = b
			} else {
				e, err := openShell(ctx, &f, cmd.ErrOrStderr())
				if err != nil {
					return err
				}
				defer e.close()
				srv.Session = e.sess
			}
			if f.debug {
				srv.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelDebug}))
			}
			if err := srv.Serve(ctx, cmd.InOrStdin(), cmd.OutOrStdout()); err != nil && ctx.Err() == nil {
				return &exitError{code: exitMoatError, err: err}
			}
			return nil
		},
	}
	f.register(c, "strict")
	c.Flags().BoolVar(&f.jsonl, "jsonl", false, "read requests from stdin, write events to stdout, one JSON object per line")
	return c
}
