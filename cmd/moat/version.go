package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/moat-sandbox/moat/runtime"
)

func init() { subcommands = append(subcommands, newVersionCmd) }

func newVersionCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "version [--json]",
		Short: "Print moat's version and the revision it was built from",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			v := runtime.Version()
			if asJSON {
				return newJSONEncoder(cmd.OutOrStdout(), true).Encode(v)
			}
			_, err := fmt.Fprintln(cmd.OutOrStdout(), v)
			return err
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print the build information as JSON")
	return c
}
