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

	"github.com/moat-sandbox/moat/permissions"
	"github.com/moat-sandbox/moat/runtime/policy"
	"github.com/moat-sandbox/moat/shell"
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
	f.gate = "off" // moat shell decides and asks itself
	stdout, stderr := cmd.OutOrStdout(), cmd.ErrOrStderr()
	ctx := context.Background()
	if err := rootlessOnly(ctx, stderr, "moat shell"); err != nil {
		return err
	}
	e, err := openShell(ctx, &f.sessionFlags, stderr)
	if err != nil {
		return err
	}
	defer e.close()
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
	fmt.Fprintf(stderr, "moat shell: session sandbox ready in %s (%s). Commands run as an agent's; \"exit\" ends the session.\n", e.pol.Cwd, e.sb.Mode())
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
		line, ok := readLine(fmt.Sprintf("moat:%s$ ", e.sess.Cwd()))
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
		res := e.decide(ctx, command, e.sess.Cwd())
		printDecision(stdout, res)
		d := res.Decision.Final()
		if d.Verdict == policy.Deny {
			fmt.Fprintln(stdout, "not run")
			continue
		}
		if d.Verdict != policy.Allow && !f.yes {
			if res.SedEdit != nil {
				if fe, err := e.sess.PreviewEdit(ctx, command); err == nil && fe != nil {
					fmt.Fprintf(stdout, "edit of %s:\n%s", fe.Path, fe.Diff)
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
		if err := runOne(ctx, e, command, sigs, stdout); err != nil {
			return err
		}
	}
}

// runOne runs one command in the session; a signal ends the command.
func runOne(ctx context.Context, e *shellEnv, command string, sigs <-chan os.Signal, w io.Writer) error {
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
	res, err := e.sess.Run(ctx, shell.Request{Command: command, AutoBackground: -1})
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

func printDecision(w io.Writer, r permissions.Result) {
	d := r.Decision.Final()
	fmt.Fprintf(w, "%s: %s", d.Verdict, d.Reason)
	if d.Rule != "" {
		fmt.Fprintf(w, " [%s]", d.Rule)
	}
	fmt.Fprintln(w)
	for _, wn := range r.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", wn)
	}
	if r.Suggestion != "" {
		fmt.Fprintf(w, "  to allow it from now on: %s\n", r.Suggestion)
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
