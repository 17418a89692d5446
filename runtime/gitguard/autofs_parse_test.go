//go:build linux

package gitguard

import "testing"

// parseAutofs: an autofs mount with a mount of its own at its path is
// covered; systemd's automount points (source systemd-1) ask no program
// with the name and are not counted, so an ordinary systemd host (its
// /proc/sys/fs/binfmt_misc) keeps the audit's look-ahead.
func TestParseAutofs(t *testing.T) {
	const mi = `1 0 8:1 / / rw - ext4 /dev/vda rw
20 1 0:20 / /proc rw - proc proc rw
30 20 0:30 / /proc/sys/fs/binfmt_misc rw - autofs systemd-1 rw,fd=29,pgrp=1,timeout=0,minproto=5,maxproto=5,direct
40 1 0:40 / /net rw - autofs -hosts rw,fd=7,pgrp=100,timeout=300,minproto=5,maxproto=5,indirect
41 40 0:41 / /net/files rw - nfs files:/ rw
50 1 0:50 / /mnt/d rw - autofs /etc/auto.direct rw,direct
51 50 0:51 / /mnt/d rw - nfs srv:/d rw
`
	tb := parseAutofs([]byte(mi))
	if tb == nil {
		t.Fatal("no uncovered autofs mount found")
	}
	for p, want := range map[string]bool{"/net": true, "/proc/sys/fs/binfmt_misc": false, "/mnt/d": false} {
		if tb.uncovered[p] != want {
			t.Errorf("uncovered[%s] = %v, want %v", p, tb.uncovered[p], want)
		}
	}
	if !tb.asks("/net", "data.attacker.test") || tb.asks("/net", "files") {
		t.Error("/net: a new name must ask, a mounted share must not")
	}
	if parseAutofs([]byte("30 20 0:30 / /proc/sys/fs/binfmt_misc rw - autofs systemd-1 rw,direct\n")) != nil {
		t.Error("a host whose only autofs mount is systemd's counts as one with an automounter")
	}
}
