package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/moat-sandbox/moat/netproxy"
)

func init() { subcommands = append(subcommands, newSSHProxyCmd) }

// newSSHProxyCmd is ssh's ProxyCommand inside a sandbox (GIT_SSH_COMMAND
// names it): it tunnels to HOST:PORT through moat's proxy, so git over SSH
// works without nc or socat.
func newSSHProxyCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "ssh-proxy HOST PORT",
		Short:  "Tunnel stdin/stdout to HOST:PORT through the sandbox's proxy (ssh ProxyCommand)",
		Hidden: true,
		Args:   cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := netproxy.SSHProxyCommand(os.Getenv, args[0], args[1], cmd.InOrStdin(), cmd.OutOrStdout()); err != nil {
				return &exitError{code: 255, err: err}
			}
			return nil
		},
	}
}
