package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/runtime"
	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/policy"
	"github.com/moat-sandbox/moat/runtime/settings"
)

func init() { subcommands = append(subcommands, newRunCmd) }

type runFlags struct {
	settings   string
	command    string
	timeout    time.Duration
	bestEffort bool
	write      []string
	debug      bool
	controlFD  int
	shell      string // for -c; empty: shellPath()
	// noDefaults: without --settings, read only the managed settings (moat
	// srt without ~/.srt-settings.json: srt's own defaults, no project or
	// user file of Claude Code's).
	noDefaults bool
	// noStdin: the command reads /dev/null (ssh -n).
	noStdin bool
}

func newRunCmd() *cobra.Command {
	var f runFlags
	c := &cobra.Command{
		Use:   "run [flags] (-c 'STRING' | -- CMD [ARGS...])",
		Short: "Run a command inside the sandbox",
		Long: `Run a command inside a kernel-enforced sandbox.

  moat run -- CMD [ARGS...]     exec CMD directly (looked up in PATH)
  moat run -c 'STRING'          run STRING with /bin/bash -c (/bin/sh without bash)

The policy comes from --settings FILE (the npm sandbox runtime's format or
Claude Code's settings.json) or from the default settings locations, with
managed settings on top. Exit status: the command's own; 128+N when signal N
ended it; 124 when --timeout ended it; 125 for moat's own errors; 126/127
when the command cannot be executed / is not found.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRun(cmd, f, args)
		},
	}
	fl := c.Flags()
	fl.StringVar(&f.settings, "settings", "", "settings `FILE` (srt format or Claude Code settings.json)")
	fl.StringVarP(&f.command, "command", "c", "", "run `STRING` with /bin/bash -c")
	fl.DurationVar(&f.timeout, "timeout", 0, "end the whole process tree after `DURATION` (e.g. 30s)")
	fl.BoolVar(&f.bestEffort, "best-effort", false, "run with what can be enforced and report what was skipped, instead of refusing")
	fl.StringArrayVarP(&f.write, "write", "w", nil, "also make `PATH` writable (repeatable)")
	fl.BoolVar(&f.debug, "debug", false, "log what moat does on stderr")
	fl.BoolVarP(&f.noStdin, "no-stdin", "n", false, "give the command /dev/null as its standard input (as ssh -n): moat reads a pipe on its stdin ahead of the command, so a while-read loop of moat runs needs this")
	fl.IntVar(&f.controlFD, "control-fd", -1, "read network-list updates from descriptor `N` while the command runs (one srt settings document per line)")
	fl.SetInterspersed(false)
	return c
}

// mayUseDaemon says whether moat run asks moatd at all: as a user, unless
// MOAT_DAEMON=off, and only where a daemon is installed (its socket exists)
// or required: without one, moat run's output stays as it always was.
func mayUseDaemon() bool {
	m, err := daemonMode()
	if err != nil || m == "required" {
		return true // chooseDaemon reports the bad value, or requires it
	}
	if m == "off" || os.Geteuid() == 0 {
		return false
	}
	_, err = os.Lstat(daemonSocket())
	return err == nil
}

// shellPath is the shell for -c.
func shellPath() string {
	for _, s := range []string{"/bin/bash", "/usr/bin/bash", "/bin/sh"} {
		if fi, err := os.Stat(s); err == nil && fi.Mode().IsRegular() {
			return s
		}
	}
	return "/bin/sh"
}

func runRun(cmd *cobra.Command, f runFlags, args []string) error {
	inv := invocationOf(cmd.Context())
	if inv == nil {
		if processExits {
			runtime.Prewarm()
		}
		if why, quiet := runtime.ServerFallback(); why != "" && !quiet {
			fmt.Fprintf(cmd.ErrOrStderr(), "moat: note: MOAT_SERVER not used (%s): sandboxing from this process\n", why)
		}
	}
	var argv []string
	switch {
	case f.command != "" && len(args) > 0:
		return usageError("give either -c 'STRING' or -- CMD [ARGS...], not both")
	case cmd.Flags().Changed("command"):
		if f.command == "" {
			return usageError("-c needs a non-empty command string")
		}
		sh := f.shell
		if sh == "" {
			sh = shellPath()
		}
		argv = []string{sh, "-c", f.command}
	case len(args) > 0:
		argv = args
	default:
		return usageError("no command: use moat run -- CMD [ARGS...] or moat run -c 'STRING'")
	}
	if f.timeout < 0 {
		return usageError("--timeout must not be negative")
	}
	// As a user, through moatd when it answers (eBPF layer, cgroup
	// limits), unless a flag or a settings file of the user's needs the
	// rootless path; root builds its sandboxes itself.
	if inv == nil && mayUseDaemon() { // moat serve checked it before (cliRunCheck)
		cl, _, err := chooseDaemon(cmd.Context(), cmd.ErrOrStderr(), runUnsuited(&f, cmd.Flags().Changed("control-fd")))
		if err != nil {
			return err
		}
		if cl != nil {
			defer cl.Close()
			return daemonRun(context.Background(), cl, f, argv, cmd.ErrOrStderr())
		}
	}
	inv.mark("moat run started")
	pol, err := inv.loadPolicy(f.settings, f.noDefaults)
	if err != nil {
		return err
	}
	inv.mark("settings loaded")
	if f.timeout > 0 {
		pol.Limits.Timeout = f.timeout
	}
	if f.bestEffort {
		pol.BestEffort = true
	}
	for _, w := range f.write {
		if w == "" || strings.ContainsRune(w, 0) {
			return usageError("--write needs a path")
		}
		pr := policy.PathRule{Path: absPath(pol.Cwd, w), Source: "--write " + w}
		if _, err := os.Stat(pr.Path); err != nil {
			return usageError("--write %s: %v (moat makes existing paths writable; create it first)", w, errors.Unwrap(err))
		}
		pol.FS.AllowWrite = append(pol.FS.AllowWrite, pr)
	}
	if err := pol.Validate(); err != nil {
		return &exitError{code: exitMoatError, err: err}
	}
	var control *os.File
	if cmd.Flags().Changed("control-fd") && inv != nil {
		return usageError("--control-fd names a descriptor of the caller's: run moat yourself") // cliRunCheck refused it before
	}
	if cmd.Flags().Changed("control-fd") {
		if control, err = controlFile(f.controlFD); err != nil {
			return err
		}
		defer control.Close()
	}
	stderr := cmd.ErrOrStderr()
	for _, n := range policyNotes(pol) {
		fmt.Fprintf(stderr, "moat: note: %s\n", n)
	}
	res, err := sandboxRun(inv, pol, argv, f.debug, f.noStdin, stderr, control)
	if err != nil {
		return runError(explainReserveError(pol, err))
	}
	for _, sk := range res.Skipped {
		fmt.Fprintf(stderr, "moat: best effort: not enforced: %s\n", sk)
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(stderr, "moat: warning: %s\n", w)
	}
	printViolations(stderr, pol, argv, res.Violations)
	if res.TimedOut {
		fmt.Fprintf(stderr, "moat: timed out after %v: the process tree was killed\n", pol.Limits.Timeout)
	}
	if res.ExitCode != 0 {
		return &exitError{code: res.ExitCode}
	}
	return nil
}

// sandboxRun wires the command line to runtime.Run: the caller's stdio and
// signals, --control-fd lines parsed into network updates, --debug,
// MOAT_TRACE.
func sandboxRun(inv *invocation, pol *policy.Policy, argv []string, debug, noStdin bool, stderr io.Writer, control *os.File) (*runtime.Result, error) {
	ctx := context.Background()
	req := runtime.Request{Policy: pol, Argv: argv, Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
	if debug {
		req.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if inv != nil {
		ctx = inv.ctx
		req.Stdin, req.Stdout, req.Stderr = inv.stdio[0], inv.stdio[1], inv.stdio[2]
		req.Env = inv.env
		req.Signals = inv.signals
		req.Enforcer = inv.enforcer
	} else {
		sigs, stop := catchSignals()
		defer stop()
		req.Signals = sigs
	}
	if noStdin {
		null, err := os.Open(os.DevNull)
		if err != nil {
			return nil, err
		}
		defer null.Close()
		req.Stdin = null
	}
	if control != nil {
		name := control.Name()
		updates := make(chan policy.Network)
		req.Updates = updates
		req.UpdateErrors = func(err error) {
			fmt.Fprintf(stderr, "moat: %s: %v: ignored, the previous network lists stay in force\n", name, err)
		}
		go readControl(control, name, pol, updates, stderr)
	}
	var tr *tracer
	if inv.getenv("MOAT_TRACE") == "1" {
		tr = newTracer(inv == nil)
		if inv != nil {
			tr.start = inv.start
			tr.lines = tr.lines[:0]
			tr.at(inv.start, "request read")
			for _, m := range inv.marks {
				tr.at(m.at, m.what)
			}
		}
		req.Trace = tr.phase
		defer tr.print(stderr)
	}
	res, err := runtime.Run(ctx, req)
	if tr != nil {
		tr.phase("done")
	}
	return res, err
}

// readControl reads network-list updates, one complete settings document
// (srt format) per line, until EOF, as srt's --control-fd does. A bad line
// is reported without its content and changes nothing.
func readControl(r io.Reader, name string, pol *policy.Policy, updates chan<- policy.Network, stderr io.Writer) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 4<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		u, err := settings.ParseNetworkUpdate(name, line, pol.Cwd, pol.Home)
		if err != nil {
			reason := err.Error()
			var se *settings.Error
			if errors.As(err, &se) {
				reason = se.Field + ": " + se.Reason
			}
			fmt.Fprintf(stderr, "moat: invalid settings on %s (%s): ignored, the previous network lists stay in force\n", name, reason)
			continue
		}
		updates <- u
	}
}

// runError maps a launch failure to moat's exit codes.
func runError(err error) error {
	var xe *enforce.ExecError
	if errors.As(err, &xe) {
		return &exitError{code: xe.ExitCode(), err: err}
	}
	return &exitError{code: exitMoatError, err: err}
}

// tracer collects MOAT_TRACE's phase times.
type tracer struct {
	start time.Time
	mu    sync.Mutex
	lines []string
}

// newTracer counts from the process's start where it is known (the C
// constructor's clock reading), so the Go runtime's start and moat's own
// before the launch show as the first phases; from now otherwise.
func newTracer(fromStart bool) *tracer {
	now, since := time.Now(), time.Duration(0)
	if fromStart {
		since = runtime.SinceStart()
	}
	t := &tracer{start: now.Add(-since)}
	if since > 0 {
		t.at(mainStarted, "main")
	}
	t.at(now, "tracer")
	return t
}

func (t *tracer) at(when time.Time, what string) {
	t.lines = append(t.lines, fmt.Sprintf("%8.3f ms  %s", float64(when.Sub(t.start).Microseconds())/1000, what))
}

func (t *tracer) phase(what string) {
	t.mu.Lock()
	t.at(time.Now(), what)
	t.mu.Unlock()
}

func (t *tracer) print(w io.Writer) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, l := range t.lines {
		fmt.Fprintln(w, "moat trace:", l)
	}
}

// loadPolicy reads the settings; errors exit 125.
func loadPolicy(file string) (*policy.Policy, error) {
	return loadPolicyOpts(settings.Options{File: file, Check: runtime.SettingsCheck("")})
}

// loadPolicyOpts is loadPolicy with the loader's options.
func loadPolicyOpts(opts settings.Options) (*policy.Policy, error) {
	pol, _, err := settings.Load(opts)
	if err != nil {
		return nil, &exitError{code: exitMoatError, err: err}
	}
	return pol, nil
}

func absPath(cwd, p string) string {
	if strings.HasPrefix(p, "~/") {
		if h, err := os.UserHomeDir(); err == nil {
			return h + p[1:]
		}
	}
	if !strings.HasPrefix(p, "/") {
		p = cwd + "/" + p
	}
	return filepath.Clean(p)
}

// printViolations appends the <sandbox_violations> block, minus what the
// policy's ignoreViolations suppresses.
func printViolations(w io.Writer, pol *policy.Policy, argv []string, vs []policy.Violation) {
	fmt.Fprint(w, policy.Annotate(pol.Reported(argv, vs)))
}

// policyNotes are what the user should know about the resolved policy: the
// settings' own notes, and deny rules that name nothing that exists (a
// secret written as Read(/root/secret) in Claude Code's format is relative
// to the settings file, and stays readable).
// globBase is the directory a glob starts from: its segments before the
// first with *, ? or [.
func globBase(p string) string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		if strings.ContainsAny(s, "*?[") {
			if b := strings.Join(segs[:i], "/"); b != "" {
				return b
			}
			return "/"
		}
	}
	return p
}

func policyNotes(pol *policy.Policy) []string {
	notes := append([]string(nil), pol.Notes...)
	for _, l := range []struct {
		name  string
		rules []policy.PathRule
	}{{"denyRead", pol.FS.DenyRead}, {"denyWrite", pol.FS.DenyWrite}} {
		for _, r := range l.rules {
			if l.name == "denyRead" && !r.Glob {
				// A hidden file with other hard links stays readable
				// under those names that moat does not find (the plan
				// looks beside it and above it only): it hides a path,
				// not a file (a ~/.npmrc hard-linked from a dotfiles
				// checkout was read there: attack pass 84).
				var st unix.Stat_t
				if unix.Lstat(r.Path, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFREG && st.Nlink > 1 {
					notes = append(notes, fmt.Sprintf("denyRead %s has %d hard links: moat hides this name and the links beside it or in a directory above it, any other stays readable (make them symbolic links) [%s]", r.Path, st.Nlink, r.Source))
				}
			}
			if strings.HasPrefix(r.Source, "default") {
				continue
			}
			// A glob may match nothing yet (**/.env); the directory it
			// starts from not existing is a mistake worth saying (a
			// Claude Code /path read from the settings file's directory).
			at := r.Path
			if r.Glob {
				at = globBase(r.Path)
			}
			if _, err := os.Lstat(at); err == nil {
				continue
			}
			hint := ""
			if strings.Contains(r.Source, ".claude") || strings.HasSuffix(r.Source, "settings.json") || strings.Contains(r.Source, "permissions.") {
				hint = " (in Claude Code's settings /path is relative to the settings file; //path is absolute)"
			}
			notes = append(notes, fmt.Sprintf("%s %s names nothing that exists%s [%s]", l.name, r.Path, hint, r.Source))
		}
	}
	return notes
}
