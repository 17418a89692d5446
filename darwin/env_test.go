package darwin

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/moat-sandbox/moat/runtime/enforce"
)

func TestLookPath(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(bin, 0o755))
	must(os.WriteFile(filepath.Join(bin, "tool"), []byte("#!/bin/sh\n"), 0o755))
	must(os.WriteFile(filepath.Join(bin, "data"), []byte("x"), 0o644))
	if p, err := lookPath("tool", "/nonexistent:"+bin, dir); err != nil || p != filepath.Join(bin, "tool") {
		t.Errorf("tool: %q %v", p, err)
	}
	if p, err := lookPath("tool", "bin", dir); err != nil || p != filepath.Join(bin, "tool") {
		t.Errorf("a relative PATH entry: %q %v", p, err)
	}
	for _, c := range []struct {
		name string
		code int
	}{{"missing", 127}, {"data", 126}, {"./bin/missing", 127}, {"./bin/data", 126}} {
		_, err := lookPath(c.name, bin, dir)
		var ee *enforce.ExecError
		if !errors.As(err, &ee) || ee.ExitCode() != c.code {
			t.Errorf("%s: %v, want exit %d", c.name, err, c.code)
		}
	}
	if _, err := lookPath("./bin/tool", "", dir); err != nil {
		t.Errorf("a path with a slash: %v", err)
	}
}

func TestEnvHelpers(t *testing.T) {
	env := []string{"A=1", "PATH=/x", "A=2"}
	if v := lookupEnv(env, "A"); v != "2" {
		t.Errorf("lookupEnv: %q", v)
	}
	env = setEnv(env, "A=3", "TMPDIR=/t/")
	if !slices.Equal(env, []string{"PATH=/x", "A=3", "TMPDIR=/t/"}) {
		t.Errorf("setEnv: %q", env)
	}
}

// procargs2 builds a kern.procargs2 buffer as macOS lays it out.
func procargs2(exe string, argv, env []string) []byte {
	b := binary.LittleEndian.AppendUint32(nil, uint32(len(argv)))
	b = append(b, exe...)
	b = append(b, 0, 0, 0, 0) // NUL and alignment padding
	for _, a := range argv {
		b = append(append(b, a...), 0)
	}
	for _, e := range env {
		b = append(append(b, e...), 0)
	}
	b = append(b, 0)
	return append(b, "ptr_munge=\x00executable_path=/bin/sh\x00"...)
}

func TestProcArgsEnv(t *testing.T) {
	b := procargs2("/bin/sleep", []string{"sleep", "100"}, []string{"HOME=/Users/dev", markerVar + "=abc123"})
	if got := procArgsEnv(b); !slices.Equal(got, []string{"HOME=/Users/dev", markerVar + "=abc123"}) {
		t.Errorf("env %q", got)
	}
	if !hasMarker(b, "abc123") || hasMarker(b, "abc12") {
		t.Error("hasMarker")
	}
	// An argument that looks like the marker is not the environment.
	b = procargs2("/bin/echo", []string{"echo", markerVar + "=abc123"}, []string{"HOME=/Users/dev"})
	if hasMarker(b, "abc123") {
		t.Error("the marker found among the arguments")
	}
	for _, bad := range [][]byte{nil, {1, 0}, {5, 0, 0, 0, '/', 'x'}, {2, 0, 0, 0, '/', 0, 'a', 0}} {
		if procArgsEnv(bad) != nil {
			t.Errorf("%q: an environment from a truncated buffer", bad)
		}
	}
}
