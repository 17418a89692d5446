package gitguard

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// An index entry's path is not checked by git when git reads the index,
// only when something is added: a command that wrote an entry named
// "../secret/key" (or "/etc/passwd") into .git/index made the user's git
// commit -a copy that file, hidden from the sandbox, into the repository,
// where the next sandboxed command read it and a push sent it away (found
// by an attack pass). The audit takes out an index the run changed that
// holds a path git's own checks (verify_path) would refuse.

// indexFile judges the index of git directory g.
func (a *auditor) indexFile(g string) {
	p := filepath.Join(g, "index")
	a.reachPath(p)
	if !a.stateChanged(p) {
		return
	}
	hashSize := a.hashSize(g) // only for an index the run changed: it reads the config again
	real, ok := a.changedActionable(p)
	if !ok {
		return
	}
	data, _, err := a.readBig(p)
	if err != nil {
		a.quarantine(real, "a git index moat cannot read ("+err.Error()+"): git reads the paths in it unchecked (git commit -a copies what they name)")
		return
	}
	if bad, err := badIndexPath(data, hashSize); err != nil {
		a.quarantine(real, "a git index moat cannot parse ("+err.Error()+"): git reads the paths in it unchecked")
		return
	} else if bad != "" {
		a.quarantine(real, "a git index names "+quoteName(bad)+", a path git itself refuses (outside the work tree): the user's git commit -a or add -u would copy what it names into the repository (git reset rebuilds the index)")
		return
	}
	// A split index (core.splitIndex) keeps most entries in
	// sharedindex.<id> beside it, which the index names: each is judged
	// with it (one written in an earlier run is read through this one).
	shared, _ := filepath.Glob(filepath.Join(filepath.Dir(p), "sharedindex.*"))
	for _, sp := range shared {
		b, _, err := a.readBig(sp)
		if errors.Is(err, errBigReads) {
			// Every sharedindex.* is read, the old ones too (git reads
			// the one the index names): what was not judged cannot be
			// left to git with this index.
			a.quarantine(real, "a git index whose shared indexes moat did not read all of ("+err.Error()+"): git reads the paths in them unchecked")
			return
		}
		if err != nil {
			// git read a sparse 257 MiB one that moat would not, and
			// copied what its ../ entry named (found by an attack pass).
			if a.stateChanged(sp) {
				if sreal, ok := a.changedActionable(sp); ok {
					a.quarantine(sreal, "a shared git index written during the run that moat cannot read ("+err.Error()+"): git reads the paths in it unchecked")
					a.quarantine(real, "a git index whose shared index moat cannot read: git reads the paths in it unchecked")
				}
			}
			continue
		}
		if bad, err := badIndexPath(b, hashSize); err == nil && bad != "" {
			a.quarantine(real, "a git index whose shared index "+quoteName(filepath.Base(sp))+" names "+quoteName(bad)+", a path git itself refuses: the user's git commit -a would copy what it names into the repository (git reset rebuilds the index)")
			if sreal, ok := a.changedActionable(sp); ok {
				a.quarantine(sreal, "a shared git index naming "+quoteName(bad)+", a path git itself refuses")
			}
			return
		}
	}
}

// maxIndexSize bounds the index the audit parses (a monorepo's is tens of
// MB); a larger one is taken out as unreadable.
const maxIndexSize = 256 << 20

// maxBigReads bounds what one audit reads of git's large state files (the
// indexes, shared indexes and packed-refs a run changed, each up to
// maxIndexSize). Such a file costs the command nothing to make: sparse
// (truncate -s 256M), or a hard link to another; and every sharedindex.*
// of a repository is read. A run that made 150 sparse shared indexes in
// .git and touched the index held moatd, root's, at a CPU and 650 MB for
// 40 s (attack pass 58: 10,000 for hours, with 200 KB of disk;
// TestAuditBigReadsBounded). Past the bound, such a file is one moat
// cannot read: the run's own is taken out (git reset rebuilds an index).
// (A variable only so that TestAuditBigReadsBounded can prove the bound
// with a smaller one: reading 4 GiB of zeroes took it 50 s of CI's time.)
var maxBigReads int64 = 4 << 30

var errBigReads = errors.New("the audit read all it may of git indexes and packed-refs for this run")

// readBig is readSmall of one of git's large state files, within what is
// left of maxBigReads.
func (a *auditor) readBig(p string) ([]byte, fileID, error) {
	if fi, err := stat(p); err == nil && fi.Mode().IsRegular() {
		if fi.Size() > maxIndexSize {
			return nil, fileID{}, fmt.Errorf("larger than %d bytes", maxIndexSize)
		}
		if a.bigRead+fi.Size() > maxBigReads {
			return nil, fileID{}, fmt.Errorf("%w: %d MiB", errBigReads, maxBigReads>>20)
		}
	}
	b, id, err := readSmall(p, maxIndexSize)
	a.bigRead += int64(len(b))
	return b, id, err
}

// badIndexPath returns the first path of a git index (versions 2 to 4)
// that git's verify_path would refuse, "" if none.
func badIndexPath(b []byte, hashSize int) (string, error) {
	if len(b) < 12 || string(b[:4]) != "DIRC" {
		return "", errors.New("not an index")
	}
	version := binary.BigEndian.Uint32(b[4:8])
	if version < 2 || version > 4 {
		return "", errors.New("an index version moat does not know")
	}
	n := binary.BigEndian.Uint32(b[8:12])
	off := 12
	prev := ""
	for i := uint32(0); i < n; i++ {
		start := off
		fixed := 40 + hashSize + 2
		if off+fixed > len(b) {
			return "", errors.New("truncated")
		}
		flags := binary.BigEndian.Uint16(b[off+40+hashSize:])
		off += fixed
		if flags&0x4000 != 0 {
			if version < 3 || off+2 > len(b) {
				return "", errors.New("bad extended flags")
			}
			off += 2
		}
		// The name's length is the flags' (git's create_from_disk), or,
		// at 0xfff, up to a NUL: reading to the first NUL while git read
		// the flags' length let an entry hide the next one from the audit
		// ("z\0<an entry's header>ok" over "../secret"; found by an
		// attack pass). A name with a NUL inside is refused.
		namelen := int(flags & 0xfff)
		var name string
		if version == 4 {
			strip, k := uvarint(b[off:])
			if k <= 0 || int(strip) > len(prev) {
				return "", errors.New("bad path compression")
			}
			off += k
			keep := len(prev) - int(strip)
			suffix := namelen - keep
			if namelen == 0xfff {
				suffix = indexOf(b[off:], 0)
			}
			if suffix < 0 || off+suffix >= len(b) || b[off+suffix] != 0 || indexOf(b[off:off+suffix], 0) >= 0 {
				return "", errors.New("a path whose length is not its flags'")
			}
			name = prev[:keep] + string(b[off:off+suffix])
			off += suffix + 1
		} else {
			if namelen == 0xfff {
				namelen = indexOf(b[off:], 0)
			}
			if namelen < 0 || off+namelen >= len(b) || b[off+namelen] != 0 || indexOf(b[off:off+namelen], 0) >= 0 {
				return "", errors.New("a path whose length is not its flags'")
			}
			name = string(b[off : off+namelen])
			off = start + ((off - start + namelen + 8) &^ 7)
			if off > len(b) {
				return "", errors.New("truncated padding")
			}
		}
		if !gitPathOK(name) {
			return name, nil
		}
		prev = name
	}
	return "", nil
}

// uvarint is git's offset varint (varint.h): 7 bits a byte, each
// continuation adding one before the shift.
func uvarint(b []byte) (uint64, int) {
	var v uint64
	for i, c := range b {
		if i > 9 {
			return 0, -1
		}
		if i == 0 {
			v = uint64(c & 0x7f)
		} else {
			v = ((v + 1) << 7) | uint64(c&0x7f)
		}
		if c&0x80 == 0 {
			return v, i + 1
		}
	}
	return 0, -1
}

func indexOf(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// gitPathOK is git's verify_path for a path in the index: relative, no
// empty, "." or ".." component, no ".git" component (any case, and the
// spellings HFS+ and NTFS take for it: trailing dots and spaces).
func gitPathOK(p string) bool {
	if p == "" || strings.HasPrefix(p, "/") || strings.ContainsRune(p, '\\') && filepath.Separator == '\\' {
		return false
	}
	for _, c := range strings.Split(p, "/") {
		switch c {
		case "", ".", "..":
			return false
		}
		if strings.EqualFold(strings.TrimRight(c, ". "), ".git") || strings.EqualFold(c, "git~1") {
			return false
		}
	}
	return true
}
