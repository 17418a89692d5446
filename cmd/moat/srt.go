package main

import (
	"errors"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newSRTCmd) }

// exitSRTError is the npm sandbox runtime's exit status for its own
// errors (bad settings, bad command line, no sandbox).
const exitSRTError = 1

// srtArgs: when moat's binary is invoked under the name srt (a symlink or
// a copy), the command line is the npm runtime's, unchanged.
func srtArgs(argv0 string, args []string) []string {
	if filepath.Base(argv0) == "srt" {
		return append([]string{"srt"}, args...)
	}
	return args
}

func newSRTCmd() *cobra.Command {
	var f runFlags
	c := &cobra.Command{
		Use:   "srt [-d] [-s FILE] [--control-fd N] (-c 'STRING' | [--] CMD [ARGS...])",
		Short: "Run a command as the npm sandbox runtime's CLI (srt) does",
		Long: `moat srt takes the npm sandbox runtime's command line unchanged, so a host can
swap binaries (moat's binary invoked under the name srt does the same):

  srt [-d|--debug] [-s|--settings FILE] [--control-fd N] -c 'STRING'
  srt [-d|--debug] [-s|--settings FILE] [--control-fd N] [--] CMD [ARGS...]

As srt does, CMD and its arguments are quoted and joined and run by /bin/sh,
-c 'STRING' is run as written, SRT_DEBUG=1 is --debug, and the settings are
~/.srt-settings.json unless -s names a file (with moat's managed settings on
top). The sandbox is moat's (docs/SECURITY.md).

Exit status: the command's own (128+N when signal N ended it); 1 for the
runtime's own errors (bad settings, bad command line, no sandbox), as srt.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			f.shell = "/bin/sh" // node's spawn(..., {shell: true})
			if os.Getenv("SRT_DEBUG") != "" && os.Getenv("SRT_DEBUG") != "0" {
				f.debug = true
			}
			if f.settings == "" {
				if home, err := os.UserHomeDir(); err == nil {
					if p := filepath.Join(home, ".srt-settings.json"); fileExists(p) {
						f.settings = p
					}
				}
			}
			// No file: srt's defaults (nothing writable, no network) under
			// the managed settings; never the Claude Code chain, whose
			// project file a repository ships and which makes the working
			// directory writable.
			f.noDefaults = f.settings == ""
			if f.command == "" && len(args) == 0 && !cmd.Flags().Changed("command") {
				// srt's own usage, not moat run's.
				name := "moat srt"
				if filepath.Base(os.Args[0]) == "srt" {
					name = "srt"
				}
				return srtError(usageError("no command: use %s [-s FILE] -c 'STRING' or %s [-s FILE] [--] CMD [ARGS...]", name, name))
			}
			if f.command == "" && len(args) > 0 {
				// srt joins the words, quoted, and runs them with a shell.
				f.command = quoteWords(args)
				args = nil
				if err := cmd.Flags().Set("command", f.command); err != nil {
					return srtError(usageError("%v", err))
				}
			}
			return srtError(runRun(cmd, f, args))
		},
	}
	fl := c.Flags()
	fl.StringVarP(&f.settings, "settings", "s", "", "settings `FILE` (default ~/.srt-settings.json)")
	fl.StringVarP(&f.command, "command", "c", "", "run `STRING` with the shell")
	fl.BoolVarP(&f.debug, "debug", "d", false, "print what the sandbox does: proxy decisions, mounts and protections, the tier")
	fl.IntVar(&f.controlFD, "control-fd", -1, "read network-list updates from descriptor `N` (one settings document per line)")
	fl.SetInterspersed(false)
	// srt's usage errors exit 1 too.
	c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &exitError{code: exitSRTError, err: err}
	})
	return c
}

// srtError maps moat's own failures (exit 125) to srt's status for them;
// the command's own exit status is kept.
func srtError(err error) error {
	var ee *exitError
	if errors.As(err, &ee) && ee.err != nil && ee.code == exitMoatError {
		return &exitError{code: exitSRTError, err: ee.err}
	}
	return err
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
