package darwin

import (
	"bytes"
	"encoding/binary"
)

// The process sweep. macOS has no cgroup to end everything a command
// started, so the runner puts a marker in the command's environment
// (markerVar=<random>) and, when the command ends, kills every process of
// the user whose environment still holds it. The environment is read with
// sysctl kern.procargs2 (macOS only, in run_darwin.go); parsing its buffer
// is plain byte work, tested everywhere.

// markerVar names the variable that marks a run's processes.
const markerVar = "MOAT_RUN"

// procArgsEnv returns the environment in a kern.procargs2 buffer: a
// native-endian int32 argc, the executable path and NUL padding, argc
// argument strings, then the environment strings, each NUL-terminated, up
// to an empty string.
func procArgsEnv(b []byte) []string {
	if len(b) < 4 {
		return nil
	}
	argc := int(int32(binary.LittleEndian.Uint32(b))) // arm64 and amd64 Macs are little-endian
	b = b[4:]
	// The executable path, then padding NULs.
	i := bytes.IndexByte(b, 0)
	if i < 0 {
		return nil
	}
	b = b[i:]
	for len(b) > 0 && b[0] == 0 {
		b = b[1:]
	}
	next := func() (string, bool) {
		j := bytes.IndexByte(b, 0)
		if j < 0 {
			return "", false
		}
		s := string(b[:j])
		b = b[j+1:]
		return s, true
	}
	for n := 0; n < argc; n++ {
		if _, ok := next(); !ok {
			return nil
		}
	}
	var env []string
	for {
		s, ok := next()
		if !ok || s == "" {
			return env
		}
		env = append(env, s)
	}
}

// hasMarker reports whether a kern.procargs2 buffer's environment holds
// the marker.
func hasMarker(b []byte, marker string) bool {
	want := markerVar + "=" + marker
	for _, kv := range procArgsEnv(b) {
		if kv == want {
			return true
		}
	}
	return false
}
