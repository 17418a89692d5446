//go:build !linux

package api

import (
	"errors"

	"github.com/moat-sandbox/moat/shell/api/client"
)

// sameProcess refuses: moat run hands over to a server only on Linux.
func sameProcess(*procState, *client.CLIRunRequest) error {
	return errors.New("POST /v1/cli/run is Linux-only")
}
