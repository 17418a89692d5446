//go:build !unix

package runtime

import (
	"os"
	"time"

	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/runtime/policy"
)

// AuditDeadRuns has nothing to audit where moat keeps no announcements.
func AuditDeadRuns(string) ([]policy.Violation, []string) { return nil, nil }

func announcedUID(*enforce.Identity) int { return 0 }

func announcedGroups(*enforce.Identity) []int { return nil }

func unsettledSince(string, []string, *os.File) time.Time { return time.Time{} }
