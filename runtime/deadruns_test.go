//go:build unix

package runtime

import (
	"os/user"
	"slices"
	"strconv"
	"testing"
)

// The audit of a killed client run takes the gid and groups its
// announcement recorded (the client's own), never the user database's; an
// announcement without them (an older moatd's) gets the database's
// primary group alone.
func TestDeadRunIdentityNeverWidens(t *testing.T) {
	u, err := user.Current()
	if err != nil {
		t.Skip(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	id, err := identityOfUID(uid, []int{4242, 4243})
	if err != nil {
		t.Fatal(err)
	}
	if id.Gid != 4242 || !slices.Equal(id.Groups, []int{4243}) || id.Home == "" {
		t.Errorf("recorded groups: gid %d groups %v home %q", id.Gid, id.Groups, id.Home)
	}
	id, err = identityOfUID(uid, nil)
	if err != nil {
		t.Fatal(err)
	}
	if id.Gid != gid || len(id.Groups) != 0 {
		t.Errorf("no recorded groups: gid %d groups %v, want gid %d and none", id.Gid, id.Groups, gid)
	}
}
