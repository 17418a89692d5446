//go:build !unix

package runtime

import (
	"fmt"
	"os"
)

func writableDir(string) bool { return false }

func checkStateDir(string) error { return nil }

func prepareStateDir(d string) error {
	if err := os.MkdirAll(d, 0o700); err != nil {
		return fmt.Errorf("state directory: %w", err)
	}
	return nil
}

// SettingsCheck has nothing to check where moat has no sandbox.
func SettingsCheck(string) func(string) error { return nil }

// PrivateDir makes the directory d if it is not there.
func PrivateDir(d string) error { return prepareStateDir(d) }

func heldSafely(string) bool { return true }

func ownedByMe(string) bool { return false }

func missing(string) bool { return true }
