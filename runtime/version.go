package runtime

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// VersionInfo is what the build recorded about moat: the module version
// ("(devel)" for a build from a checkout) and the version control state.
type VersionInfo struct {
	Module   string `json:"module"`
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	Go       string `json:"go"`
}

// Version reads the build information of the running binary.
func Version() VersionInfo {
	v := VersionInfo{Module: "github.com/moat-sandbox/moat", Version: "(unknown)"}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return v
	}
	v.Go = bi.GoVersion
	if bi.Main.Path != "" {
		v.Module, v.Version = bi.Main.Path, bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

// String is one line: "moat v1.2.3 (revision 0123abcd, 2026-11-24T12:00:00Z, modified) go1.26.8".
func (v VersionInfo) String() string {
	var extra []string
	if v.Revision != "" {
		r := v.Revision
		if len(r) > 12 {
			r = r[:12]
		}
		extra = append(extra, "revision "+r)
	}
	if v.Time != "" {
		extra = append(extra, v.Time)
	}
	if v.Modified {
		extra = append(extra, "modified")
	}
	s := "moat " + v.Version
	if len(extra) > 0 {
		s += fmt.Sprintf(" (%s)", strings.Join(extra, ", "))
	}
	if v.Go != "" {
		s += " " + v.Go
	}
	return s
}
