package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/moat-sandbox/moat/runtime"
)

func init() { subcommands = append(subcommands, newDoctorCmd) }

func newDoctorCmd() *cobra.Command {
	var asJSON bool
	var file string
	c := &cobra.Command{
		Use:   "doctor [--json] [--settings FILE]",
		Short: "Say which sandbox tier moat gets on this host, and what is missing",
		Long: `moat doctor probes what the sandbox depends on here (user namespaces, Landlock,
seccomp notifications, cgroups, eBPF, a container around moat), then starts
/bin/true in a sandbox twice, as moat run would and with --best-effort, and
names the tier each gets:

  full          every layer (as root, also the eBPF network filter and cgroups)
  host-proc     the host's /proc is shown (a container that refuses a new one)
  no-namespace  only Landlock, seccomp (and eBPF as root): --best-effort only
  unavailable   moat refuses to run

For each missing feature it says what would provide it (docs/CONTAINERS.md
has the container and Kubernetes settings). The settings' moat.minimumTier
and enableWeakerNestedSandbox are taken into account.

Exit status: 0 when moat run works here without best effort, 1 when it
refuses (the report says why), 125 for moat's own errors.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			pol, err := loadPolicy(file)
			if err != nil {
				return err
			}
			rep, err := runtime.Doctor(cmd.Context(), runtime.DoctorOptions{Policy: pol})
			if err != nil {
				return &exitError{code: exitMoatError, err: err}
			}
			rep.Checks = append(rep.Checks, daemonCheck(cmd.Context()))
			out := cmd.OutOrStdout()
			if asJSON {
				if err := newJSONEncoder(out, true).Encode(rep); err != nil {
					return err
				}
			} else {
				printDoctor(out, rep)
			}
			if rep.Tier == "unavailable" {
				return &exitError{code: 1}
			}
			return nil
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the report as JSON")
	c.Flags().StringVar(&file, "settings", "", "settings `FILE` (for moat.minimumTier and enableWeakerNestedSandbox)")
	return c
}

func printDoctor(w io.Writer, rep *runtime.DoctorReport) {
	who := "rootless"
	if rep.Root {
		who = "root"
	}
	fmt.Fprintf(w, "tier: %s (%s)\n", rep.Tier, who)
	if rep.Refusal != "" {
		fmt.Fprintf(w, "  moat run refuses here: %s\n", rep.Refusal)
	}
	fmt.Fprintf(w, "with --best-effort: %s\n", rep.BestEffortTier)
	if rep.BestEffortError != "" {
		fmt.Fprintf(w, "  %s\n", rep.BestEffortError)
	}
	for _, s := range rep.BestEffortSkips {
		fmt.Fprintf(w, "  not enforced: %s\n", s)
	}
	fmt.Fprintln(w)
	for _, c := range rep.Checks {
		mark := "ok     "
		if !c.OK {
			mark = "missing"
		}
		fmt.Fprintf(w, "%s  %-28s %s\n", mark, c.Name, c.Detail)
		if c.Fix != "" {
			fmt.Fprintf(w, "         fix: %s\n", c.Fix)
		}
	}
}
