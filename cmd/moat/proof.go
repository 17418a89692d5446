package main

import (
	"fmt"
	"net"
	goruntime "runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/moat-sandbox/moat/shell/api/client"
)

func init() { subcommands = append(subcommands, newProofCmd) }

func newProofCmd() *cobra.Command {
	var header bool
	c := &cobra.Command{
		Use:   "proof [SOCKET]",
		Short: "Print the proof (X-Moat-Proof) of the moat serve or moat mcp serving a unix socket",
		Long: `Print the proof the process serving SOCKET (moat serve's, by default its
default socket; or moat mcp --http unix:PATH's) asks every request for, in
the header X-Moat-Proof: the token in the name of its memfd
/memfd:moat-serve-proof-TOKEN, read from /proc/PID/fd of the socket's peer.
Only a process that may inspect the server (its own user, not confined by
Landlock or the like) can read it. moat's Go client sends it by itself; a
client of its own (curl) shows it, as a header read from a pipe:

  curl --unix-socket /var/tmp/moat.sock -H @<(moat proof --header /var/tmp/moat.sock) http://moat/v1/policy

Never put the token on a command line (-H "X-Moat-Proof: TOKEN"): any
process may read another's command line (/proc/PID/cmdline), a confined
one included, and the token lasts as long as the server's process. Exit
status: 0, or 125 when the process serving SOCKET shows no proof to this
one.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if goruntime.GOOS != "linux" {
				return &exitError{code: exitMoatError, err: fmt.Errorf("the servers ask for a proof on Linux only (Landlock's confinement is not seen in /proc): none here")}
			}
			flag := ""
			if len(args) == 1 {
				flag = strings.TrimPrefix(args[0], "unix:")
			}
			sock, err := socketPath(flag)
			if err != nil {
				return err
			}
			c, err := net.DialTimeout("unix", sock, 5*time.Second)
			if err != nil {
				return &exitError{code: exitMoatError, err: err}
			}
			defer c.Close()
			p := client.Proof(c)
			if p == "" {
				return &exitError{code: exitMoatError, err: fmt.Errorf("%s: the process serving it shows no proof to this one (not a moat serve or moat mcp of this user, or one this process may not inspect)", sock)}
			}
			if header {
				p = client.ProofHeader + ": " + p
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), p)
			return err
		},
	}
	c.Flags().BoolVar(&header, "header", false, "print the whole header line (X-Moat-Proof: TOKEN), for curl -H @FILE")
	return c
}
