package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/moat-sandbox/moat/runtime/policy"
	"github.com/moat-sandbox/moat/shell"
	"github.com/moat-sandbox/moat/shell/api/client"
)

type shellFlags struct {
	sessionFlags
	yes bool
}

func newShellCmd() *cobra.Command {
	var f shellFlags
	c := &cobra.Command{
		Use:   "shell [flags]",
		Short: "An interactive shell that runs each command as an agent's, in one session sandbox",
		Long: `Read commands one line at a time and handle each as an agent host would:
show moat's decision (allow, ask with the reason, deny), run allowed ones in
the session sandbox, and print the result as the agent sees it (the output or
its preview and the file holding the rest, the exit status and what it means,
the working directory, the violations). "ask" asks you; "deny" never runs.
A sed -i edit is shown as a diff before you answer.

The working directory and exported variables carry over from one command to
the next; Ctrl-C ends the running command; "exit" or end of input ends the
session (and every process in it).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runShell(cmd, &f)
		},
	}
	f.sessionFlags.register(c, "off")
	c.Flags().Lookup("gate").Hidden = true
	c.Flags().BoolVarP(&f.yes, "yes", "y", false, "run commands that need approval (ask) without asking; denied commands still never run")
	return c
}

func runShell(cmd *cobra.Command, f *shellFlags) error {
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	ctx := context.Background()
	if err := checkSessionFlags(&f.sessionFlags); err != nil {
		return err
	}
	// Through moatd where one is installed (its socket exists) or
	// required, as moat run; where there is none, nothing is said.
	var cl *client.Client
	if mayUseDaemon() {
		var err error
		if cl, _, err = chooseDaemon(ctx, stderr, daemonUnsuited(&f.sessionFlags)); err != nil {
			return err
		}
	}
	var b shellBackend
	if cl != nil {
		defer cl.Close()
		d, err := openDaemonShell(ctx, cl, &f.sessionFlags)
		if err != nil {
			return err
		}
		b = d
	} else {
		f.gate = "off" // moat shell decides and asks itself
		e, err := openShell(ctx, &f.sessionFlags, stderr)
		if err != nil {
			return err
		}
		b = e
	}
	defer b.close()
	interactive := false
	if fi, ok := cmd.InOrStdin().(*os.File); ok {
		if st, err := fi.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			interactive = true
		}
	}
	// Ctrl-C ends the running command, not the shell.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)
	fmt.Fprintf(stderr, "moat shell: %s. Commands run as an agent's; \"exit\" ends the session.\n", b.ready())
	in := bufio.NewReader(cmd.InOrStdin())
	readLine := func(prompt string) (string, bool) {
		fmt.Fprint(stdout, prompt)
		line, err := in.ReadString('\n')
		if err != nil && line == "" {
			if interactive {
				fmt.Fprintln(stdout)
			}
			return "", false
		}
		return strings.TrimRight(line, "\r\n"), true
	}
	for {
		line, ok := readLine(fmt.Sprintf("moat:%s$ ", b.cwd()))
		if !ok {
			return nil
		}
		command := strings.TrimSpace(line)
		switch command {
		case "":
			continue
		case "exit", "quit", "logout":
			return nil
		}
		d, err := b.decide(ctx, command)
		if err != nil {
			fmt.Fprintf(stdout, "moat: %v\nnot run\n", err)
			continue
		}
		printDecision(stdout, d)
		if d.verdict == policy.Deny {
			fmt.Fprintln(stdout, "not run")
			continue
		}
		if d.verdict != policy.Allow {
			if why := b.refusesAsk(); why != "" {
				fmt.Fprintf(stdout, "not run: %s\n", why)
				continue
			}
		}
		if d.verdict != policy.Allow && !f.yes {
			if d.sedEdit {
				if diff, err := b.preview(ctx, command); err == nil && diff != "" {
					fmt.Fprint(stdout, diff)
				} else if err != nil {
					fmt.Fprintf(stdout, "(no preview: %v)\n", err)
				}
			}
			answer, ok := readLine("run it? [y/N] ")
			if !ok {
				return nil
			}
			if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
				fmt.Fprintln(stdout, "not run")
				continue
			}
		}
		if err := runOne(ctx, b, command, sigs, stdout); err != nil {
			return err
		}
	}
}

// shellBackend is where moat shell decides and runs its commands: a
// session sandbox of its own (rootless), or a session of moatd's.
type shellBackend interface {
	ready() string // what the ready line says
	cwd() string
	decide(ctx context.Context, command string) (shellDecision, error)
	// refusesAsk says why a command the decision asks about is not run
	// even when you approve it (moatd's gate), or "".
	refusesAsk() string
	preview(ctx context.Context, command string) (string, error)
	run(ctx context.Context, command string) (shell.Result, error)
	close()
}

// shellDecision is a decision as moat shell prints it.
type shellDecision struct {
	verdict                  policy.Verdict
	reason, rule, suggestion string
	warnings                 []string
	sedEdit                  bool
}

func (e *shellEnv) ready() string {
	return fmt.Sprintf("session sandbox ready in %s (%s)", e.pol.Cwd, e.sb.Mode())
}

func (e *shellEnv) cwd() string { return e.sess.Cwd() }

func (e *shellEnv) decide(ctx context.Context, command string) (shellDecision, error) {
	r := e.Decide(ctx, command, e.sess.Cwd())
	d := r.Decision.Final()
	return shellDecision{verdict: d.Verdict, reason: d.Reason, rule: d.Rule, suggestion: r.Suggestion,
		warnings: r.Warnings, sedEdit: r.SedEdit != nil}, nil
}

func (e *shellEnv) refusesAsk() string { return "" }

func (e *shellEnv) preview(ctx context.Context, command string) (string, error) {
	fe, err := e.sess.PreviewEdit(ctx, command)
	if err != nil || fe == nil {
		return "", err
	}
	return fmt.Sprintf("edit of %s:\n%s", fe.Path, fe.Diff), nil
}

func (e *shellEnv) run(ctx context.Context, command string) (shell.Result, error) {
	return e.sess.Run(ctx, shell.Request{Command: command, AutoBackground: -1})
}

// runOne runs one command in the session; a signal ends the command.
func runOne(ctx context.Context, b shellBackend, command string, sigs <-chan os.Signal, w io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-done:
		}
	}()
	res, err := b.run(ctx, command)
	if err != nil && !errors.Is(err, context.Canceled) {
		if errors.Is(err, shell.ErrClosed) {
			return &exitError{code: exitMoatError, err: errors.New("the session sandbox ended")}
		}
		fmt.Fprintf(w, "moat: %v\n", err)
		return nil
	}
	printResult(w, res)
	return nil
}

func printDecision(w io.Writer, d shellDecision) {
	fmt.Fprintf(w, "%s: %s", d.verdict, d.reason)
	if d.rule != "" {
		fmt.Fprintf(w, " [%s]", d.rule)
	}
	fmt.Fprintln(w)
	for _, wn := range d.warnings {
		fmt.Fprintf(w, "  warning: %s\n", wn)
	}
	if d.suggestion != "" {
		fmt.Fprintf(w, "  to allow it from now on: %s\n", d.suggestion)
	}
}

// printResult prints a command's result as the agent receives it.
func printResult(w io.Writer, r shell.Result) {
	out := r.Output
	if out != "" && !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	fmt.Fprint(w, out)
	if r.OutputFile != "" {
		fmt.Fprintf(w, "[output: %d bytes, %d lines; the whole of it is in %s]\n", r.OutputBytes, r.OutputLines, r.OutputFile)
	}
	if r.Image != nil {
		fmt.Fprintf(w, "[an image: %s]\n", r.Image.MediaType)
	}
	status := fmt.Sprintf("exit %d", r.ExitCode)
	switch {
	case r.Interrupted:
		status += ", interrupted"
	case r.TimedOut:
		status += ", timed out"
	}
	if r.IsError {
		status += ", an error"
	}
	if r.Message != "" {
		status += ": " + r.Message
	}
	fmt.Fprintf(w, "[%s; cwd %s]\n", status, r.Cwd)
	for _, n := range r.Notes {
		fmt.Fprintf(w, "[note: %s]\n", n)
	}
	for _, h := range r.Hints {
		keys := make([]string, 0, len(h.Attrs))
		for k := range h.Attrs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var parts []string
		for _, k := range keys {
			parts = append(parts, k+"="+h.Attrs[k])
		}
		fmt.Fprintf(w, "[hint: %s]\n", strings.Join(parts, " "))
	}
}
