//go:build linux && cgo

package seccomp

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"

	lsc "github.com/seccomp/libseccomp-golang"
)

var update = flag.Bool("update", false, "rewrite testdata/filters.golden for this architecture and libseccomp")

// TestFilterGolden: the program Build produces for each combination of
// Options is the one recorded in testdata/filters.golden (its SHA-256 and
// length), for the architectures and libseccomp versions recorded there:
// a change to how Build is written leaves the filter as it was. A change
// of the rules themselves updates the file on purpose:
//
//	go test ./linux/seccomp/ -run TestFilterGolden -args -update
func TestFilterGolden(t *testing.T) {
	maj, mnr, mic := lsc.GetLibraryVersion()
	key := fmt.Sprintf("%s libseccomp-%d.%d.%d", goruntime.GOARCH, maj, mnr, mic)
	path := filepath.Join("testdata", "filters.golden")
	var got []string
	for _, o := range []Options{
		{}, {Notify: true},
		{AllowUnix: true}, {AllowUnix: true, Notify: true},
		{UnixBroker: true}, {UnixBroker: true, Notify: true},
		{AllowUnix: true, UnixBroker: true, Notify: true},
		{NoListen: true}, {NoListen: true, Notify: true}, {NoListen: true, AllowUnix: true},
		{NoListen: true, UnixBroker: true, Notify: true},
		{NoListen: true, NoMetadata: true, NoNamespaces: true}, {NoListen: true, NoMetadata: true, NoNamespaces: true, Notify: true},
		{NoListen: true, NoNamespaces: true, Notify: true},
		{NoListen: true, NoNamespaces: true, NotifyMetadata: true}, {NoListen: true, NoNamespaces: true, Notify: true, NotifyMetadata: true},
		{NoListen: true, MemoryBound: 256 << 20}, {NoListen: true, MemoryBound: 256 << 20, Notify: true},
		{NoListen: true, NoGrowsDown: true}, {NoListen: true, Session: true}, {NoListen: true, Session: true, NoGrowsDown: true, Notify: true},
		{NoListen: true, NoNamespaces: true, NotifyMetadata: true, NoFastOpen: true},
		{NoListen: true, NoSourceRoute: true}, {NoListen: true, NoSourceRoute: true, Notify: true},
		{NoListen: true, NoNamespaces: true, NotifyMetadata: true, NoFastOpen: true, NoSourceRoute: true},
	} {
		prog, err := Build(o)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(prog)
		got = append(got, fmt.Sprintf("%s %+v %d %s", key, o, len(prog)/8, hex.EncodeToString(sum[:])))
	}
	var kept, want []string
	if b, err := os.ReadFile(path); err == nil {
		sc := bufio.NewScanner(strings.NewReader(string(b)))
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, key+" ") {
				want = append(want, line)
			} else if line != "" {
				kept = append(kept, line)
			}
		}
	} else if !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if *update {
		out := strings.Join(append(kept, got...), "\n") + "\n"
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if len(want) == 0 {
		t.Skipf("no recorded filters for %s (go test -run TestFilterGolden -update records them)", key)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the filters differ from testdata/filters.golden:\ngot\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
