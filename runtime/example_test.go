package runtime_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/moat-sandbox/moat/runtime"
	"github.com/moat-sandbox/moat/runtime/policy"
	"github.com/moat-sandbox/moat/runtime/settings"
)

// examplePolicy is the policy of these examples: no settings file at all
// (reads everywhere but the secrets, writes nowhere but the private /tmp,
// no network), with a working directory under /var/tmp (the host's /tmp is
// hidden inside the sandbox). A host reads the user's files instead:
// settings.Load(settings.Options{}), as `moat run` does.
func examplePolicy() (pol *policy.Policy, dir string, err error) {
	if dir, err = os.MkdirTemp("/var/tmp", "moat-example-"); err != nil {
		return nil, "", err
	}
	os.Chmod(dir, 0o755) // a root supervisor's sandbox runs as root: readable is enough
	pol, _, err = settings.Load(settings.Options{Cwd: dir, Home: dir, NoDefaults: true, ManagedFile: "-"})
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", err
	}
	return pol, dir, nil
}

// Run one command in a sandbox. A program that calls runtime.Run handles
// runtime.Reexec first thing in main (stage 2 re-executes the program).
func ExampleRun() {
	if code, ok := runtime.Reexec(os.Args); ok {
		os.Exit(code)
	}
	pol, dir, err := examplePolicy()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	res, err := runtime.Run(context.Background(), runtime.Request{
		Policy:   pol,
		Argv:     []string{"/bin/sh", "-c", "echo hello; exit 3"},
		Stdout:   os.Stdout,
		Stderr:   os.Stderr,
		StateDir: filepath.Join(dir, "state"), // default: runtime.DefaultStateDir()
		OnViolation: func(v policy.Violation) {
			fmt.Fprintln(os.Stderr, v.Line())
		},
	})
	if err != nil { // nothing ran: *enforce.SetupError, *enforce.ExecError, ...
		fmt.Println(err)
		return
	}
	fmt.Println("exit status", res.ExitCode)
	// Output:
	// hello
	// exit status 3
}

// Open one session sandbox and run several commands in it: each is a new
// process tree in the same sandbox (set up once), with its own exit status
// and violations.
func ExampleNewSession() {
	pol, dir, err := examplePolicy()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	s, err := runtime.NewSession(context.Background(), runtime.SessionRequest{Policy: pol, StateDir: filepath.Join(dir, "state")})
	if err != nil { // typed: errors.Is(err, enforce.ErrNoUserNamespace), ...
		fmt.Println(err)
		return
	}
	defer s.Close()
	for _, argv := range [][]string{
		{"echo", "hello"},
		{"sh", "-c", "exit 3"},
		{"touch", "/etc/moat-example"}, // read-only: refused, and reported
	} {
		res, err := s.Run(context.Background(), runtime.Command{Argv: argv, Stdout: os.Stdout})
		if err != nil {
			fmt.Println(err)
			continue
		}
		for _, v := range res.Violations {
			fmt.Println(v.Line())
		}
		fmt.Println(argv[0], "exit status", res.ExitCode)
	}
	// Output:
	// hello
	// echo exit status 0
	// sh exit status 3
	// deny file-write /etc/moat-example (not in allowWrite)
	// touch exit status 1
}

// Change the network lists while the command runs (what --control-fd
// does): every new connection is checked against the latest lists, never
// beyond what managed settings allow. Here the command asks a server on
// the host's loopback, through moat's proxy (the only way out of the
// sandbox), before and after the host adds the server to allowedDomains.
func ExampleRequest_updates() {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer srv.Close()
	addr := srv.Listener.Addr().String() // 127.0.0.1:PORT
	pol, dir, err := examplePolicy()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	fmt.Println("allowedDomains:", pol.Net.AllowedDomains)

	// The command prints the proxy's answer (403: not on the lists), then
	// asks again until the update has reached the proxy.
	script := `ask() { curl -s -o /dev/null -w '%{http_code}' "$1"; }
echo "before: $(ask "$1")"
for i in $(seq 100); do code=$(ask "$1"); [ "$code" = 200 ] && break; sleep 0.05; done
echo "after: $code"`
	updates := make(chan policy.Network, 1)
	r, w, err := os.Pipe()
	if err != nil {
		fmt.Println(err)
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			fmt.Println(sc.Text())
			if strings.HasPrefix(sc.Text(), "before:") {
				// The user allows the server: the new lists replace the
				// old ones (managed entries stay).
				n := pol.Net
				n.AllowedDomains = append(n.AllowedDomains, policy.DomainRule{Pattern: addr})
				fmt.Println("allowedDomains: [127.0.0.1:PORT]")
				updates <- n
			}
		}
	}()
	res, err := runtime.Run(context.Background(), runtime.Request{
		Policy:       pol,
		Argv:         []string{"/bin/sh", "-c", script, "sh", "http://" + addr + "/"},
		Stdout:       w,
		StateDir:     filepath.Join(dir, "state"),
		Updates:      updates,
		UpdateErrors: func(err error) { fmt.Println("update refused:", err) },
	})
	w.Close()
	<-done
	r.Close()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("exit status", res.ExitCode)
	// Output:
	// allowedDomains: []
	// before: 403
	// allowedDomains: [127.0.0.1:PORT]
	// after: 200
	// exit status 0
}
