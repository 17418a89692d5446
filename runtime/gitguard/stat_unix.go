//go:build linux || darwin

package gitguard

import (
	"io/fs"
	"syscall"
)

// fileID is what the audit needs to know of a file: its identity and when
// its inode last changed. The change time cannot be set by a program (only
// the modification time can), so "changed at or after the run began" is
// something a sandboxed command cannot hide.
type fileID struct {
	dev, ino uint64
	ctime    int64 // ns
	mode     fs.FileMode
	size     int64
}

func idOf(fi fs.FileInfo) fileID {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{mode: fi.Mode(), size: fi.Size(), ctime: maxTime}
	}
	return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino), ctime: ctimeNS(st), mode: fi.Mode(), size: fi.Size()}
}

// ownerOf is the uid that owns fi (false where the system does not say).
func ownerOf(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}
