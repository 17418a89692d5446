package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/moat-sandbox/moat/internal/ascred"
	"github.com/moat-sandbox/moat/runtime"
	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/policy"
	"github.com/moat-sandbox/moat/runtime/settings"
	"github.com/moat-sandbox/moat/shell/api"
	"github.com/moat-sandbox/moat/shell/api/client"
	"github.com/moat-sandbox/moat/shell/sandbox"
)

func init() { subcommands = append(subcommands, newDaemonCmd) }

// Defaults of moat daemon (moatd).
const (
	DefaultDaemonSocket = "/run/moat/moatd.sock"
	defaultUsersDir     = "/etc/moat/users.d"
	defaultDaemonState  = "/var/lib/moat"
)

type daemonFlags struct {
	socket, group, usersDir, stateDir, gate string
	maxSessions, maxPerUser, maxCommands    int
	idle                                    time.Duration
	debug                                   bool
}

func newDaemonCmd() *cobra.Command {
	var f daemonFlags
	c := &cobra.Command{
		Use:   "daemon [--socket PATH] [--group moat]",
		Short: "Run moatd: the root helper that builds sandboxes for unprivileged users (docs/DAEMON.md)",
		Long: `Run moatd, the privileged helper of developer laptops (docs/DAEMON.md): as
root, it serves the local API (docs/API.md) on a unix socket (mode 0660,
group --group) to every user who can reach it. Each request acts for the user
the kernel names (SO_PEERCRED), sessions belong to that user and are invisible
to others, and every sandbox runs as that user, with the calling process's own
gid and groups (SO_PEERGROUPS): the daemon does only what
needs root (the eBPF network filter and its violation reports, cgroup limits).

Each user's policy is /etc/moat/users.d/USER.json (root-owned; default.json
when there is none; moat's defaults when neither exists), resolved in the
session's working directory; managed settings apply on top. A client may only
narrow it: a stricter gate, and extra writable paths its user can itself write.

Socket activation (systemd's LISTEN_FDS) is used when present.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runDaemon(cmd, &f) },
	}
	fl := c.Flags()
	fl.StringVar(&f.socket, "socket", DefaultDaemonSocket, "unix socket `PATH` (ignored under socket activation)")
	fl.StringVar(&f.group, "group", "moat", "the socket's `GROUP`: its members may use the daemon")
	fl.StringVar(&f.usersDir, "users-dir", defaultUsersDir, "`DIR` of the per-user policies (root-owned)")
	fl.StringVar(&f.stateDir, "state-dir", defaultDaemonState, "the daemon's state `DIR`")
	fl.StringVar(&f.gate, "gate", "strict", "the sessions' default and loosest gate: `strict`, deny or off")
	fl.IntVar(&f.maxSessions, "max-sessions", 256, "most sessions open at once")
	fl.IntVar(&f.maxPerUser, "max-sessions-per-user", 16, "most sessions a user has open at once")
	fl.IntVar(&f.maxCommands, "max-commands", api.DefaultMaxCommandsPerSession, "most commands a session holds at once")
	fl.DurationVar(&f.idle, "idle-timeout", 30*time.Minute, "close a session unused for this long")
	fl.BoolVar(&f.debug, "debug", false, "log what moatd does on stderr")
	return c
}

func runDaemon(cmd *cobra.Command, f *daemonFlags) error {
	stderr := cmd.ErrOrStderr()
	if os.Geteuid() != 0 {
		return usageError("moat daemon runs as root (it builds sandboxes for other users); as a user, moat serve is the local API")
	}
	switch {
	case f.gate != "strict" && f.gate != "deny" && f.gate != "off":
		return usageError("unknown --gate %q (want strict, deny or off)", f.gate)
	case f.maxSessions < 1 || f.maxPerUser < 1 || f.maxCommands < 1:
		return usageError("--max-sessions, --max-sessions-per-user and --max-commands must be at least 1")
	case !filepath.IsAbs(f.usersDir) || !filepath.IsAbs(f.stateDir):
		return usageError("--users-dir and --state-dir must be absolute")
	}
	gid := -1
	if f.group != "" {
		g, err := user.LookupGroup(f.group)
		if err != nil {
			return usageError("--group %q: %v (create it: groupadd --system %s)", f.group, err, f.group)
		}
		gid, _ = strconv.Atoi(g.Gid)
	}
	l, sock, err := daemonListener(f.socket, gid)
	if err != nil {
		return &exitError{code: exitMoatError, err: err}
	}
	// One enforcer for the daemon's life: it loads the eBPF programs once
	// and attaches them to every run's and session's cgroup; released
	// once the server has shut down.
	enf := runtime.NewEnforcer()
	defer enf.Close()
	cfg := api.Config{Gate: sandbox.Gate(f.gate), MaxSessions: f.maxSessions, MaxCommandsPerSession: f.maxCommands,
		StateDir: f.stateDir, Hide: []string{sock}, Enforcer: enf,
		Daemon: &api.Daemon{
			PolicyFor: func(id *enforce.Identity, cwd string) (*policy.Policy, []string, error) {
				return userPolicy(f.usersDir, id, cwd)
			},
			CheckWritable: func(id *enforce.Identity, p string) (string, error) {
				return ascred.Writable(id.Uid, id.Gid, id.Groups, p)
			},
			CheckDir: func(id *enforce.Identity, p string) (string, error) {
				return ascred.Usable(id.Uid, id.Gid, id.Groups, p)
			},
			MaxSessionsPerUser: f.maxPerUser, IdleTimeout: f.idle,
		}}
	// Warnings always reach the daemon's stderr (the journal, under
	// systemd): a killed run's plant taken out, a session whose sandbox
	// ended under running commands. --debug adds everything else.
	level := slog.LevelWarn
	if f.debug {
		level = slog.LevelDebug
	}
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	srv, err := api.New(cfg)
	if err != nil {
		l.Close()
		return &exitError{code: exitMoatError, err: err}
	}
	ctx, stop := interrupted()
	defer stop()
	fmt.Fprintf(stderr, "moat: moatd serving on %s\n", sock)
	return serveUntil(ctx, srv, l)
}

// daemonListener is systemd's socket (LISTEN_FDS, fd 3) when the daemon
// was socket-activated, else a new socket at path, mode 0660, owned by
// root and group gid (none: 0600), in a directory others can traverse.
func daemonListener(path string, gid int) (net.Listener, string, error) {
	if os.Getenv("LISTEN_PID") == strconv.Itoa(os.Getpid()) && os.Getenv("LISTEN_FDS") != "" {
		n, err := strconv.Atoi(os.Getenv("LISTEN_FDS"))
		if err != nil || n < 1 {
			return nil, "", fmt.Errorf("LISTEN_FDS=%q: want the socket unit's one socket", os.Getenv("LISTEN_FDS"))
		}
		os.Unsetenv("LISTEN_PID")
		os.Unsetenv("LISTEN_FDS")
		os.Unsetenv("LISTEN_FDNAMES")
		syscall.CloseOnExec(3)
		l, err := net.FileListener(os.NewFile(3, "systemd-socket"))
		if err != nil {
			return nil, "", fmt.Errorf("the socket from systemd: %w", err)
		}
		sock := path
		if ua, ok := l.Addr().(*net.UnixAddr); ok && ua.Name != "" {
			sock = ua.Name
		}
		return l, sock, nil
	}
	path = filepath.Clean(path)
	if !filepath.IsAbs(path) {
		return nil, "", fmt.Errorf("--socket %q must be absolute", path)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", err
	}
	l, err := api.Listen(path) // 0600, root's
	if err != nil {
		return nil, "", err
	}
	if gid >= 0 {
		if err := os.Lchown(path, 0, gid); err != nil {
			l.Close()
			return nil, "", err
		}
		if err := os.Chmod(path, 0o660); err != nil {
			l.Close()
			return nil, "", err
		}
	}
	return l, path, nil
}

// userPolicy is a user's policy in cwd: the root-owned users.d/USER.json,
// else users.d/default.json, else moat's defaults; managed settings on
// top. No file of the user's is read (root would read it on the user's
// behalf): the user narrows through the request.
func userPolicy(dir string, id *enforce.Identity, cwd string) (*policy.Policy, []string, error) {
	file := ""
	for _, name := range []string{id.Name + ".json", "default.json"} {
		p := filepath.Join(dir, name)
		ok, err := rootOwnedFile(dir, p)
		if err != nil {
			return nil, nil, err
		}
		if ok {
			file = p
			break
		}
	}
	// The client's runtime directory is systemd's for its uid: the
	// daemon does not take a client's $XDG_RUNTIME_DIR.
	opts := settings.Options{File: file, Cwd: cwd, Home: id.Home, RuntimeDir: "/run/user/" + strconv.Itoa(id.Uid), NoDefaults: true}
	pol, _, err := settings.Load(opts)
	if err != nil {
		return nil, nil, err
	}
	return pol, policyNotes(pol), nil
}

// rootOwnedFile reports whether p exists; it and its directory must be
// root's and writable by nobody else, else it is an error (a policy a user
// could have written is no policy).
func rootOwnedFile(dir, p string) (bool, error) {
	for _, q := range []string{dir, p} {
		fi, err := os.Lstat(q)
		if errors.Is(err, os.ErrNotExist) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || st.Uid != 0 || fi.Mode().Perm()&0o022 != 0 || (q == p && !fi.Mode().IsRegular()) {
			return false, fmt.Errorf("%s must be a root-owned %s writable by root only", q, map[bool]string{true: "file", false: "directory"}[q == p])
		}
	}
	return true, nil
}

// daemonSocket is moatd's socket: $MOAT_DAEMON_SOCKET, else the default.
func daemonSocket() string {
	if s := os.Getenv("MOAT_DAEMON_SOCKET"); s != "" {
		return s
	}
	return DefaultDaemonSocket
}

// daemonCheck is moat doctor's line about moatd: whether it answers here.
// A user without it runs rootless (no eBPF layer, cgroup limits only where
// delegated); root does not use it.
func daemonCheck(ctx context.Context) enforce.Check {
	sock := daemonSocket()
	c := enforce.Check{Name: "moatd (the root helper)"}
	if os.Geteuid() == 0 {
		c.OK, c.Detail = true, "not used: root runs moat's sandboxes itself"
		return c
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	cl := client.New(sock)
	cl.Peer = client.PeerRoot // moatd is root's; anyone else is not moatd
	defer cl.Close()
	h, err := cl.Health(ctx)
	if err != nil {
		c.Detail = fmt.Sprintf("not reachable on %s (%v): moat runs rootless", sock, err)
		c.Fix = "install moatd (docs/DAEMON.md) and join group moat, for the eBPF network layer and cgroup limits as a user"
		return c
	}
	c.OK, c.Detail = true, fmt.Sprintf("answers on %s (version %s): moat run, moat shell and moat session --jsonl run through it as you, with eBPF and cgroups, unless your own settings file applies (then rootless, said on stderr)", sock, h.Version)
	return c
}
