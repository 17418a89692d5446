package api

import (
	"bufio"
	"errors"
	"io/fs"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// Every route of the mux is in docs/openapi.yaml, and every operation
// there is a route.
func TestOpenAPICoversRoutes(t *testing.T) {
	f, err := os.Open("../../docs/openapi.yaml")
	if errors.Is(err, fs.ErrNotExist) {
		// A test binary run outside the source tree (CI's rootless run):
		// go test in the tree checks the document.
		t.Skip("docs/openapi.yaml is not at ../../docs: not run from the source tree")
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pathRe := regexp.MustCompile(`^  (/\S*):\s*$`)
	opRe := regexp.MustCompile(`^    (get|put|post|delete|patch|head|options):\s*$`)
	documented := map[string]bool{}
	// noProof: the operations that say "security: []" (no proof asked).
	noProof := map[string]bool{}
	// forbidden: the operations that list a 403 (every route answers it
	// to a peer of another user, in other namespaces or confined
	// otherwise, and every route but two without the proof).
	forbidden := map[string]bool{}
	enumRe := regexp.MustCompile(`enum: \[([^\]]*)\]`)
	path, op := "", ""
	proofScheme := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "  - proof: []" {
			proofScheme = true // the document's default security
		}
		if m := pathRe.FindStringSubmatch(line); m != nil {
			path = m[1]
			continue
		}
		if !strings.HasPrefix(line, "  ") {
			path = "" // out of paths:
		}
		if m := opRe.FindStringSubmatch(line); m != nil && path != "" {
			op = strings.ToUpper(m[1]) + " " + path
			documented[op] = true
		}
		if line == "      security: []" && path != "" {
			noProof[op] = true
		}
		if strings.HasPrefix(line, `        "403":`) && path != "" {
			forbidden[op] = true
		}
		// YAML 1.1 readers (PyYAML, many generators) read a bare off, on,
		// yes or no as a boolean: the gate enum [strict, deny, off] read
		// as [strict, deny, false], and the server's "off" failed to
		// validate against it (pass 77).
		if m := enumRe.FindStringSubmatch(line); m != nil {
			for _, v := range strings.Split(m[1], ",") {
				switch strings.ToLower(strings.TrimSpace(v)) {
				case "off", "on", "yes", "no", "y", "n", "true", "false", "null", "~":
					t.Errorf("docs/openapi.yaml: %q: quote %s, which YAML 1.1 reads as a boolean or null", strings.TrimSpace(line), strings.TrimSpace(v))
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	for _, r := range (&Server{}).routes() {
		served[r.pattern] = true
		if !documented[r.pattern] {
			t.Errorf("route %s is not in docs/openapi.yaml", r.pattern)
		}
		if documented[r.pattern] && !forbidden[r.pattern] {
			t.Errorf("route %s: docs/openapi.yaml lists no 403, which every route answers to a peer it refuses", r.pattern)
		}
		if noProof[r.pattern] != proofExempt(r.pattern) {
			t.Errorf("route %s: docs/openapi.yaml says it needs the proof: %v; the server: %v", r.pattern, !noProof[r.pattern], !proofExempt(r.pattern))
		}
	}
	if !proofScheme {
		t.Error("docs/openapi.yaml does not ask for the proof (security: - proof: [])")
	}
	var extra []string
	for op := range documented {
		if !served[op] {
			extra = append(extra, op)
		}
	}
	sort.Strings(extra)
	for _, op := range extra {
		t.Errorf("docs/openapi.yaml documents %s, which no route serves", op)
	}
	if len(documented) == 0 {
		t.Fatal("no operation found in docs/openapi.yaml")
	}
}
