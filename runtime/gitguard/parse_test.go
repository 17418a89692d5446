package gitguard

import (
	"encoding/binary"
	"os/exec"
	"strings"
	"testing"
)

// ParseBool reads a value as git does. Where git is installed, every case
// is also asked of git itself (`git config --type=bool`), so that moat's
// reading cannot drift from the git it protects.
func TestParseBoolAsGit(t *testing.T) {
	cases := []struct {
		v     string
		b, ok bool
	}{
		{"true", true, true}, {"YES", true, true}, {"on", true, true},
		{"false", false, true}, {"No", false, true}, {"off", false, true}, {"", false, true},
		{"1", true, true}, {"0", false, true}, {"2", true, true}, {"-1", true, true}, {"+3", true, true},
		{"1k", true, true}, {"0k", false, true}, {"1G", true, true}, {"0x1", true, true}, {"0X0", false, true},
		{"010", true, true}, {"00", false, true}, {" 1", true, true},
		{"08", false, false}, {"0x", false, false}, {"1kb", false, false}, {"maybe", false, false},
		{"1 ", false, false}, {"3g", false, false}, {"0b1", false, false}, {"1_0", false, false}, {"0o7", false, false},
	}
	git, _ := exec.LookPath("git")
	for _, c := range cases {
		b, ok := ParseBool(c.v)
		if b != c.b || ok != c.ok {
			t.Errorf("ParseBool(%q) = %v, %v; want %v, %v", c.v, b, ok, c.b, c.ok)
		}
		if git == "" {
			continue
		}
		cmd := exec.Command(git, "-c", "x.y="+c.v, "config", "--type=bool", "--get", "x.y")
		cmd.Dir = t.TempDir()
		out, err := cmd.Output()
		gitOK := err == nil
		gitB := strings.TrimSpace(string(out)) == "true"
		if gitOK != c.ok || (gitOK && gitB != c.b) {
			t.Errorf("git reads %q as %q (ok %v), this case says %v, %v", c.v, strings.TrimSpace(string(out)), gitOK, c.b, c.ok)
		}
	}
}

// An index entry's name is as long as its flags say (git's
// create_from_disk), not up to its first NUL: an entry named
// "z\0<another entry's header>ok" hid git's real second entry,
// "../userkey", behind a fake one the audit read instead (found by an
// attack pass). Such an index is refused.
func TestIndexNameLengthFromFlags(t *testing.T) {
	const hashSize = 20
	entry := func(name []byte) []byte {
		e := make([]byte, 40+hashSize+2, 40+hashSize+2+len(name)+8)
		binary.BigEndian.PutUint32(e[24:], 0o100644)
		binary.BigEndian.PutUint16(e[40+hashSize:], uint16(len(name))&0xfff)
		e = append(e, name...)
		for len(e) < (40+hashSize+2+len(name)+8)&^7 {
			e = append(e, 0)
		}
		return e
	}
	index := func(entries ...[]byte) []byte {
		b := []byte("DIRC")
		b = binary.BigEndian.AppendUint32(b, 2)
		b = binary.BigEndian.AppendUint32(b, uint32(len(entries)))
		for _, e := range entries {
			b = append(b, e...)
		}
		return append(b, make([]byte, hashSize)...)
	}
	fake := entry([]byte("ok"))[:40+hashSize+2]
	hidden := append(append([]byte("z\x00"), fake...), "ok"...)
	bad, err := badIndexPath(index(entry(hidden), entry([]byte("../userkey"))), hashSize)
	if err == nil && bad == "" {
		t.Fatal("ESCAPE: an entry with a NUL in its name hid ../userkey from the audit")
	}
	if bad, err := badIndexPath(index(entry([]byte("a")), entry([]byte("../userkey"))), hashSize); bad != "../userkey" || err != nil {
		t.Errorf("a plain index: %q %v", bad, err)
	}
	if bad, err := badIndexPath(index(entry([]byte("a")), entry([]byte("b/c"))), hashSize); bad != "" || err != nil {
		t.Errorf("a good index: %q %v", bad, err)
	}
}

// A MERGE_RR record is read as git's read_rr reads it (strtol skips tabs
// before the variant); one in any other form than <hex>[.<n>]<TAB><path>
// is not canonical, and taken out.
func TestRerereRecordAsGit(t *testing.T) {
	h := strings.Repeat("a", 40)
	for _, c := range []struct {
		rec, path string
		canonical bool
	}{
		{h + "\tsrc/a.c", "src/a.c", true},
		{h + ".1\tsrc/a.c", "src/a.c", true},
		{h + ".\t\t0\t/home/u/key", "/home/u/key", false},
		{h + ". 7\tx", "x", false},
		{h + ".-1\tx", "x", false},
		{h + "\t\tx", "\tx", true},
		{h + "x\ty", "", false},
		{"zz\tx", "", false},
	} {
		path, canonical := rrPath(c.rec, 40)
		if path != c.path || canonical != c.canonical {
			t.Errorf("%q: path %q canonical %v, want %q %v", c.rec, path, canonical, c.path, c.canonical)
		}
	}
}
