//go:build linux

package privtests

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/moat-sandbox/moat/internal/testutil"
)

func openPTY(t testing.TB) (master, slave *os.File) { return testutil.OpenPTY(t) }

// runOnPTY runs cmd with its stdio already set to slave (a terminal whose
// master is master) and returns everything written to the terminal.
func runOnPTY(cmd *exec.Cmd, master, slave *os.File) (string, error) {
	got := make(chan string, 1)
	go func() {
		var all []byte
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			all = append(all, buf[:n]...)
			if err != nil {
				break
			}
		}
		got <- string(all)
	}()
	err := cmd.Run()
	slave.Close()
	// The read ends when every slave descriptor is closed; whatever the
	// command injected as input is then not readable any more either.
	time.AfterFunc(2*time.Second, func() { master.Close() })
	return <-got, err
}
