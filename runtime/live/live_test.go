//go:build unix

package live

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// A client's run (moatd) records the gid and groups its sandbox had, so
// that the audit after it is killed is made with those and no others (the
// user database may list more groups than the client had); an
// announcement of an older moat has none, and one of this process's own
// user records no uid.
func TestAnnouncementKeepsClientGroups(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "journal")
	since := time.Now().Truncate(time.Second)
	for _, tc := range []struct {
		name   string
		w      Writer
		as     int
		groups []int
	}{
		{"client", Writer{As: 1013, AsGroups: []int{1013, 27, 1014}}, 1013, []int{1013, 27, 1014}},
		{"client, gid only", Writer{As: 1013, AsGroups: []int{1013}}, 1013, []int{1013}},
		{"older moat", Writer{As: 1013}, 1013, nil},
		{"own user", Writer{AsGroups: []int{5}}, 0, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.w.Since, tc.w.Roots = since, []string{"/var/tmp/x"}
			f, err := Announce(dir, "a", tc.w)
			if err != nil {
				t.Fatal(err)
			}
			defer Withdraw(f)
			ws := Writers(dir)
			if len(ws) != 1 {
				t.Fatalf("%d announcements", len(ws))
			}
			if w := ws[0]; w.As != tc.as || !slices.Equal(w.AsGroups, tc.groups) || !w.Since.Equal(since) || w.Dead {
				t.Errorf("read back uid %d groups %v since %v dead %v, want uid %d groups %v", w.As, w.AsGroups, w.Since, w.Dead, tc.as, tc.groups)
			}
		})
	}
	// A damaged groups line makes the announcement unreadable, as any
	// damaged line does.
	if err := os.WriteFile(filepath.Join(dir, "b.live"), []byte("S 1\nU 1013\nG 1013 x\nE\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok := readAnnouncement(filepath.Join(dir, "b.live")); ok {
		t.Error("an announcement with a damaged G line was read")
	}
}
