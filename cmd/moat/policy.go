package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/moat-sandbox/moat/runtime"
	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/policy"
	"github.com/moat-sandbox/moat/runtime/settings"
)

func init() { subcommands = append(subcommands, newPolicyCmd) }

func newPolicyCmd() *cobra.Command {
	var file string
	var asJSON, seatbelt, inline bool
	c := &cobra.Command{
		Use:   "policy [--settings FILE] [--json] [--seatbelt [--inline]]",
		Short: "Print the resolved policy and what enforces each part on this machine",
		Long: `Print the resolved policy and what enforces each part on this machine.

With --seatbelt, print instead the macOS Seatbelt profile a Mac would
enforce for this policy (on any platform): the profile text, whose
policy strings are parameters, then sandbox-exec's -D arguments. --inline
writes each parameter in place (a self-contained profile); --json prints
{profile, params, description}.

From a working directory moat run refuses (a system directory, with Claude
Code's settings), the policy is printed all the same, with a note that moat
run would refuse.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if inline && !seatbelt {
				return usageError("--inline needs --seatbelt (it is a form of the Seatbelt profile)")
			}
			if inline && asJSON {
				return usageError("--inline and --json do not go together: --json already carries the profile's parameters")
			}
			// moat policy runs nothing: where moat run would refuse the
			// working directory, the policy is shown with a note saying so.
			pol, _, err := settings.Load(settings.Options{File: file, Check: runtime.SettingsCheck(""), RunsNothing: true})
			if err != nil {
				return &exitError{code: exitMoatError, err: err}
			}
			if seatbelt {
				return printSeatbelt(cmd.OutOrStdout(), pol, asJSON, inline)
			}
			desc, err := runtime.Describe(pol, "")
			if err != nil {
				return &exitError{code: exitMoatError, err: err}
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return newJSONEncoder(out, true).Encode(struct {
					Policy      *policy.Policy `json:"policy"`
					Notes       []string       `json:"notes"`
					Enforcement any            `json:"enforcement"`
				}{pol, append([]string{}, policyNotes(pol)...), desc})
			}
			printPolicy(out, pol)
			for _, n := range policyNotes(pol) {
				fmt.Fprintf(out, "note: %s\n", n)
			}
			printDescription(out, desc)
			return nil
		},
	}
	c.Flags().StringVar(&file, "settings", "", "settings `FILE` (srt format or Claude Code settings.json)")
	c.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	c.Flags().BoolVar(&seatbelt, "seatbelt", false, "print the macOS Seatbelt profile of the policy (on any platform)")
	c.Flags().BoolVar(&inline, "inline", false, "with --seatbelt: write the parameters into the profile")
	return c
}

// printSeatbelt prints the Seatbelt profile a Mac would enforce for pol:
// for reading (the text, then the -D arguments as comments), inline, or
// as JSON. A policy Seatbelt cannot express is an error, as on a Mac.
func printSeatbelt(w io.Writer, pol *policy.Policy, asJSON, inline bool) error {
	sb, err := runtime.Seatbelt(pol)
	if err != nil {
		return &exitError{code: exitMoatError, err: fmt.Errorf("seatbelt profile: %w", err)}
	}
	switch {
	case asJSON:
		return newJSONEncoder(w, true).Encode(sb)
	case inline:
		_, err = io.WriteString(w, sb.Inline)
	default:
		_, err = io.WriteString(w, sb.Document)
	}
	return err
}

func printPolicy(w io.Writer, p *policy.Policy) {
	fmt.Fprintf(w, "working directory: %s\n", p.Cwd)
	if len(p.Sources) == 0 {
		fmt.Fprintln(w, "settings: none (defaults)")
	}
	for _, s := range p.Sources {
		fmt.Fprintf(w, "settings: %s\n", s)
	}
	rules := func(name string, rs []policy.PathRule) {
		fmt.Fprintf(w, "%s:\n", name)
		if len(rs) == 0 {
			fmt.Fprintln(w, "  (none)")
		}
		for _, r := range rs {
			g := ""
			if r.Glob {
				g = " (glob)"
			}
			fmt.Fprintf(w, "  %s%s  [%s]\n", r.Path, g, r.Source)
		}
	}
	rules("allowWrite", p.FS.AllowWrite)
	rules("denyWrite", p.FS.DenyWrite)
	rules("denyRead", p.FS.DenyRead)
	rules("allowRead", p.FS.AllowRead)
	fmt.Fprintf(w, "allowGitConfig: %v\nmandatoryDenySearchDepth: %d\n", p.FS.AllowGitConfig, p.FS.MandatoryDenySearchDepth)
	var doms []string
	for _, d := range p.Net.AllowedDomains {
		doms = append(doms, d.Pattern)
	}
	fmt.Fprintf(w, "network allowedDomains: [%s]\n", strings.Join(doms, ", "))
	doms = doms[:0]
	for _, d := range p.Net.DeniedDomains {
		doms = append(doms, d.Pattern)
	}
	fmt.Fprintf(w, "network deniedDomains: [%s]\n", strings.Join(doms, ", "))
	if p.Limits.Timeout > 0 {
		fmt.Fprintf(w, "timeout: %v\n", p.Limits.Timeout)
	}
	if len(p.Env.Allow) > 0 {
		fmt.Fprintf(w, "env allow: %s\n", strings.Join(p.Env.Allow, ", "))
	}
	fmt.Fprintf(w, "bestEffort: %v\nviolations: %v\n", p.BestEffort, p.Violations)
}

func printDescription(w io.Writer, d *enforce.Description) {
	fmt.Fprintf(w, "\nenforcement on this machine (tier: %s):\n", d.Tier)
	for _, m := range d.Mechanisms {
		mark := "yes"
		if !m.Enforced {
			mark = "NO "
		}
		note := ""
		if m.Note != "" {
			note = " (" + m.Note + ")"
		}
		fmt.Fprintf(w, "  [%s] %s: %s%s\n", mark, m.Part, m.By, note)
	}
	if len(d.Protected) > 0 {
		fmt.Fprintf(w, "protected inside writable paths:\n")
		for _, p := range d.Protected {
			fmt.Fprintf(w, "  %s\n", p)
		}
	}
	if len(d.Placeholders) > 0 {
		fmt.Fprintf(w, "mount points a run creates (and removes): %s\n", strings.Join(d.Placeholders, ", "))
	}
	for _, n := range d.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}
