package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/moat-sandbox/moat/runtime"
	"github.com/moat-sandbox/moat/shell/api"
	"github.com/moat-sandbox/moat/shell/sandbox"
)

func init() { subcommands = append(subcommands, newServeCmd) }

type serveFlags struct {
	socket      string
	settings    string
	bestEffort  bool
	write       []string
	gate        string
	maxSessions int
	maxCommands int
	debug       bool
}

func newServeCmd() *cobra.Command {
	var f serveFlags
	c := &cobra.Command{
		Use:   "serve [--socket PATH] [flags]",
		Short: "Serve the local API (HTTP and JSON over a unix socket): sessions, commands, decisions",
		Long: `Serve moat's local API on a unix socket (mode 0600; only this user, from
outside moat's sandboxes, is answered): open sessions, run commands in them
with their output streamed as NDJSON, in the background, read and kill them,
ask for decisions and the policy. docs/API.md and docs/openapi.yaml describe
it.

  moat serve --socket /var/tmp/moat.sock &
  curl --unix-socket /var/tmp/moat.sock http://moat/v1/health

Every request but the health check must show the server's proof, the
header X-Moat-Proof, which only a process that may inspect the server (not
one confined by Landlock) can read: moat's Go client (shell/api/client)
sends it; moat proof SOCKET prints it for other clients.

Every session is a session sandbox with the policy of --settings (a session
may add existing writable paths); every command runs in it. --gate is the
sessions' default gate and the loosest one they may ask for.

SIGINT or SIGTERM closes every session (no process is left) and removes the
socket. Exit status: 0 then; 125 for moat's own errors.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runServe(cmd, &f)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.socket, "socket", "", "unix socket `PATH` (default $XDG_RUNTIME_DIR/moat/api.sock, else api.sock in moat's state directory)")
	fl.StringVar(&f.settings, "settings", "", "settings `FILE` (srt format or Claude Code settings.json)")
	fl.BoolVar(&f.bestEffort, "best-effort", false, "run with what can be enforced instead of refusing")
	fl.StringArrayVarP(&f.write, "write", "w", nil, "also make `PATH` writable in every session (repeatable)")
	fl.StringVar(&f.gate, "gate", "strict", "the sessions' default and loosest gate: `strict`, deny or off")
	fl.IntVar(&f.maxSessions, "max-sessions", api.DefaultMaxSessions, "most sessions open at once")
	fl.IntVar(&f.maxCommands, "max-commands", api.DefaultMaxCommandsPerSession, "most commands a session holds at once")
	fl.BoolVar(&f.debug, "debug", false, "log what moat does on stderr")
	return c
}

func runServe(cmd *cobra.Command, f *serveFlags) error {
	switch {
	case f.gate != "strict" && f.gate != "deny" && f.gate != "off":
		return usageError("unknown --gate %q (want strict, deny or off)", f.gate)
	case f.maxSessions < 1 || f.maxCommands < 1:
		return usageError("--max-sessions and --max-commands must be at least 1")
	}
	stderr := cmd.ErrOrStderr()
	sock, err := socketPath(f.socket)
	if err != nil {
		return err
	}
	if f.socket == "" {
		// The default socket's directory is moat's own: one another
		// user made first (/var/tmp/moat-UID, where there is no home) let
		// that user swap the socket and take the clients' requests.
		if err := runtime.PrivateDir(filepath.Dir(sock)); err != nil {
			return &exitError{code: exitMoatError, err: err}
		}
	}
	pol, err := loadPolicy(f.settings)
	if err != nil {
		return err
	}
	pol.BestEffort = pol.BestEffort || f.bestEffort
	if err := addWritable(pol, f.write); err != nil {
		return err
	}
	if err := pol.Validate(); err != nil {
		return &exitError{code: exitMoatError, err: err}
	}
	notes := policyNotes(pol)
	for _, n := range notes {
		fmt.Fprintf(stderr, "moat: note: %s\n", n)
	}
	// One enforcer for the server's life, as moatd's: as root it loads the
	// eBPF programs once (the kernel's verifier took about 8 ms of CPU a
	// handed-over run here) and attaches them to each run's and session's
	// cgroup.
	enf := runtime.NewEnforcer()
	defer enf.Close()
	cfg := api.Config{Policy: pol, Notes: notes, Gate: sandbox.Gate(f.gate), MaxSessions: f.maxSessions,
		MaxCommandsPerSession: f.maxCommands, Hide: []string{sock}, Enforcer: enf, CLICheck: cliRunCheck,
		CLIRun: func(ctx context.Context, ci api.CLIInvocation) int { return serveCLIRun(ctx, ci, enf) }}
	if f.debug {
		cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	srv, err := api.New(cfg)
	if err != nil {
		return &exitError{code: exitMoatError, err: err}
	}
	ctx, stop := interrupted()
	defer stop()
	l, err := api.Listen(sock)
	if err != nil {
		return &exitError{code: exitMoatError, err: err}
	}
	fmt.Fprintf(stderr, "moat: serving the local API on %s\n", sock)
	return serveUntil(ctx, srv, l)
}

// serveUntil serves l until ctx ends (a signal) or serving fails, then
// shuts srv down (every session closed) and closes l (which removes a
// socket Serve never took).
func serveUntil(ctx context.Context, srv *api.Server, l net.Listener) error {
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	var err error
	select {
	case <-ctx.Done():
	case err = <-served:
	}
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	serr := srv.Shutdown(sctx)
	l.Close()
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return &exitError{code: exitMoatError, err: err}
	}
	if serr != nil {
		return &exitError{code: exitMoatError, err: fmt.Errorf("shutting down: %w", serr)}
	}
	return nil
}

// socketPath is --socket made absolute, or the default: moat/api.sock in
// $XDG_RUNTIME_DIR (a per-user 0700 directory), else api.sock in moat's
// state directory.
func socketPath(flag string) (string, error) {
	if flag != "" {
		p, err := filepath.Abs(flag)
		if err != nil {
			return "", usageError("--socket %q: %v", flag, err)
		}
		return p, nil
	}
	if d := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(d) {
		return filepath.Join(d, "moat", "api.sock"), nil
	}
	return filepath.Join(runtime.DefaultStateDir(), "api.sock"), nil
}
