package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/moat-sandbox/moat/shell/api"
	moatmcp "github.com/moat-sandbox/moat/shell/mcp"
)

func init() { subcommands = append(subcommands, newMCPCmd) }

type mcpFlags struct {
	sessionFlags
	http string
}

func newMCPCmd() *cobra.Command {
	var f mcpFlags
	c := &cobra.Command{
		Use:   "mcp [flags]",
		Short: "Serve a sandboxed bash tool over the Model Context Protocol (stdio, or --http)",
		Long: `Serve moat's sandboxed shell to an MCP client: one session sandbox, set up
once, and three tools:

  bash         {command, timeout (ms, at most 600000), run_in_background, description}
  bash_output  {id}   what a background command printed since the last read
  bash_kill    {id}   kill a background command and what it started

Each command is decided first by moat's permission pipeline (moat check):
allowed commands run; denied ones are refused; for the others the user is
asked through the client (MCP elicitation) when the client supports it, and
the command is refused otherwise. Whatever runs, runs in the sandbox.

The server speaks MCP over standard input and output unless --http is given:
--http unix:/path/to.sock (a socket only this user can open) or
--http 127.0.0.1:PORT / localhost:PORT / [::1]:PORT (streamable HTTP at /mcp;
loopback only, and requests whose Host or Origin is not loopback are refused).

docs/MCP.md has the tools, the results and the client configuration, e.g.

  claude mcp add moat -- moat mcp

It reads the settings moat run reads (managed, the project's in the
directory the client starts it in, ~/.claude/settings.json); --settings FILE
replaces the user and project files.

Exit status: 0 when the client went away (stdio) or on SIGINT/SIGTERM (HTTP);
125 for moat's own errors (bad settings, no sandbox, bad address).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runMCP(cmd, &f)
		},
	}
	f.register(c, "off")
	c.Flags().MarkHidden("gate") // the server decides: see shell/mcp
	c.Flags().StringVar(&f.http, "http", "", "serve streamable HTTP on `ADDR` (unix:/path, 127.0.0.1:PORT or localhost:PORT) instead of stdio")
	return c
}

func runMCP(cmd *cobra.Command, f *mcpFlags) error {
	if f.gate != "off" {
		return usageError("moat mcp decides each command itself (ask becomes a question to the user): --gate does not apply")
	}
	var lis net.Listener
	var where, sock string
	if f.http != "" {
		// Listen before the sandbox is set up: a bad or busy address fails
		// at once.
		network, address, err := parseMCPAddr(f.http)
		if err != nil {
			return usageError("--http %s: %v", f.http, err)
		}
		if network == "unix" {
			sock = address
		}
		if lis, where, err = listenMCP(f.http); err != nil {
			return &exitError{code: exitMoatError, err: fmt.Errorf("--http %s: %w", f.http, err)}
		}
		// Closing a listener of api.Listen removes the socket (the path
		// given, if it is still this socket's: not one another server
		// made there since).
		defer lis.Close()
	}
	ctx, stop := interrupted()
	defer stop()
	var hide []string
	if sock != "" {
		// Its own socket, the path given (the listener's address is the
		// name it was bound to first, in a temporary directory that is
		// gone already), is hidden from its sandbox (as moat serve's),
		// and only a peer of this user in these namespaces, confined as
		// this process is, is served: a command of another, narrower
		// sandbox ran its commands under this policy and answered its own
		// asks.
		hide = append(hide, sock)
		lis = api.PeerChecked(lis)
	}
	e, err := openShell(ctx, &f.sessionFlags, cmd.ErrOrStderr(), hide...)
	if err != nil {
		return err
	}
	defer e.close()
	opts := &moatmcp.Options{}
	if f.debug {
		opts.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	srv := moatmcp.New(e.Shell, opts)
	if lis == nil {
		err := srv.Run(ctx, moatmcp.CheckedIO(os.Stdin, nopCloser{os.Stdout}))
		if err != nil && ctx.Err() == nil && !errors.Is(err, sdk.ErrConnectionClosed) && !errors.Is(err, context.Canceled) {
			return &exitError{code: exitMoatError, err: err}
		}
		return nil
	}
	handler := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Logger: opts.Logger})
	mux := http.NewServeMux()
	checked := moatmcp.CheckedHandler(handler, sdk.DefaultMaxRequestBodyBytes)
	mux.Handle("/mcp", checked)
	mux.Handle("/mcp/", checked)
	var h http.Handler = mux
	if sock != "" {
		// The peer's checks read /proc, where Landlock leaves no trace: a
		// request must show this process's proof too (client.ProofHeader,
		// as moat serve's routes), which a Landlock-confined caller cannot
		// read (a root one without no_new_privs, or any when this server
		// runs under no_new_privs, passed the peer's checks and had its
		// commands run outside its domain: found by an attack pass).
		var err error
		if h, err = api.RequireProof(mux); err != nil {
			return &exitError{code: exitMoatError, err: fmt.Errorf("--http %s: %w", f.http, err)}
		}
	}
	hs := &http.Server{Handler: loopbackOnly(h, sock != ""), ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(cmd.ErrOrStderr(), "moat: MCP over streamable HTTP at %s\n", where)
	done := make(chan error, 1)
	go func() { done <- hs.Serve(lis) }()
	select {
	case err := <-done:
		return &exitError{code: exitMoatError, err: err}
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	hs.Shutdown(sctx)
	return nil
}

// parseMCPAddr splits --http's ADDR into a network and an address: unix and
// a path, or tcp and a loopback host:port. Other hosts are refused.
func parseMCPAddr(addr string) (network, address string, err error) {
	if p, ok := strings.CutPrefix(addr, "unix:"); ok {
		if p == "" || strings.ContainsRune(p, 0) {
			return "", "", errors.New("unix: needs a socket path")
		}
		return "unix", absPath(mustGetwd(), p), nil
	}
	h, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", "", fmt.Errorf("want unix:/path, 127.0.0.1:PORT or localhost:PORT (%v)", err)
	}
	if _, err := net.LookupPort("tcp", port); err != nil || port == "" {
		return "", "", fmt.Errorf("bad port %q", port)
	}
	switch {
	case h == "localhost":
		h = "127.0.0.1"
	case net.ParseIP(h) != nil && net.ParseIP(h).IsLoopback():
	default:
		return "", "", fmt.Errorf("%q is not a loopback address: moat mcp serves only this machine (use 127.0.0.1:PORT, localhost:PORT, [::1]:PORT or unix:/path)", h)
	}
	return "tcp", net.JoinHostPort(h, port), nil
}

func mustGetwd() string {
	wd, err := os.Getwd()
	if err != nil {
		return "/"
	}
	return wd
}

// listenMCP listens on --http's address; a unix socket is made 0600 (and a
// stale one, that nothing listens on, replaced). It returns the URL clients
// use.
func listenMCP(addr string) (net.Listener, string, error) {
	network, address, err := parseMCPAddr(addr)
	if err != nil {
		return nil, "", err
	}
	if network == "tcp" {
		lis, err := net.Listen("tcp", address)
		if err != nil {
			return nil, "", err
		}
		return lis, "http://" + lis.Addr().String() + "/mcp", nil
	}
	// The same socket as moat serve's: 0600 from the start, a stale one
	// replaced, a live one or another file refused.
	lis, err := api.Listen(address)
	if err != nil {
		return nil, "", err
	}
	return lis, "unix:" + address + " (path /mcp)", nil
}

// loopbackOnly refuses requests that a web page could have sent through DNS
// rebinding or from another origin: the Host header must name a loopback
// host (over TCP; a unix socket has no host), and an Origin header, when
// present, a loopback origin.
func loopbackOnly(h http.Handler, unixSocket bool) http.Handler {
	protect := http.NewCrossOriginProtection()
	return protect.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// An absolute-form target ("POST http://localhost/mcp") takes the
		// place of the Host header in net/http: only the origin form, whose
		// Host is the header, is served (an attack pass sent Host:
		// evil.com that way; browsers never do, so no rebinding, but the
		// check must look at what was sent).
		if !strings.HasPrefix(r.RequestURI, "/") {
			http.Error(w, "Bad Request: the request target must be a path", http.StatusBadRequest)
			return
		}
		if !unixSocket && !loopbackHost(r.Host) {
			http.Error(w, fmt.Sprintf("Forbidden: Host %q is not a loopback host", r.Host), http.StatusForbidden)
			return
		}
		if o := r.Header.Get("Origin"); o != "" {
			u, err := url.Parse(o)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || !loopbackHost(u.Host) {
				http.Error(w, fmt.Sprintf("Forbidden: Origin %q is not a loopback origin", o), http.StatusForbidden)
				return
			}
		}
		h.ServeHTTP(w, r)
	}))
}

// loopbackHost reports whether host (a Host header: name or IP, with an
// optional port) is localhost or a loopback address.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// nopCloser is standard output for moat mcp's stdio transport, which
// closes its writer when the client goes: moat's own messages may still
// follow on it (the SDK's stdio transport does the same).
type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
