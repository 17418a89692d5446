// Command moat-netproxy runs moat's proxy standalone, for benchmarks and
// manual tests (bench/proxy-bench.sh). It is not part of the moat CLI.
//
//	moat-netproxy proxy  -listen 127.0.0.1:3128 -allow 'example.com,127.0.0.1:8080' [-deny ...] [-credential u:p]
//	moat-netproxy origin -listen 127.0.0.1:8080      # serves GET /?size=N
//	moat-netproxy load   -proxy ADDR -origin ADDR -n 1000 [-hold 2s]
//	moat-netproxy latency -proxy ADDR -origin ADDR -method connect -n 500
//
// proxy and origin print their address on stdout once listening.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/moat-sandbox/moat/netproxy"
	"github.com/moat-sandbox/moat/netproxy/internal/loadgen"
	"github.com/moat-sandbox/moat/runtime/policy"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: moat-netproxy proxy|origin|load [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "proxy":
		err = runProxy(os.Args[2:])
	case "origin":
		err = runOrigin(os.Args[2:])
	case "load":
		err = runLoad(os.Args[2:])
	case "latency":
		err = runLatency(os.Args[2:])
	default:
		err = fmt.Errorf("unknown mode %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "moat-netproxy:", err)
		os.Exit(1)
	}
}

func split(s string) []policy.DomainRule {
	var out []policy.DomainRule
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, policy.DomainRule{Pattern: f, Source: "-flag"})
		}
	}
	return out
}

func runProxy(args []string) error {
	fs := flag.NewFlagSet("proxy", flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:0", "listen address")
	allow := fs.String("allow", "", "comma-separated allowedDomains")
	deny := fs.String("deny", "", "comma-separated deniedDomains")
	cred := fs.String("credential", "", "required credential user:password")
	verbose := fs.Bool("v", false, "log decisions to stderr")
	fs.Parse(args)
	rules, err := netproxy.NewRules(policy.Network{AllowedDomains: split(*allow), DeniedDomains: split(*deny), StrictAllowlist: true})
	if err != nil {
		return err
	}
	srv := &netproxy.Server{Rules: rules, Credential: *cred}
	if *verbose {
		srv.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
		srv.OnViolation = func(v policy.Violation) { fmt.Fprintln(os.Stderr, v.Line()) }
	}
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	fmt.Println(l.Addr())
	go func() {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
		<-ch
		srv.Close()
	}()
	if err := srv.Serve(l); err != netproxy.ErrServerClosed {
		return err
	}
	return nil
}

func runOrigin(args []string) error {
	fs := flag.NewFlagSet("origin", flag.ExitOnError)
	listen := fs.String("listen", "127.0.0.1:0", "listen address")
	fs.Parse(args)
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	fmt.Println(l.Addr())
	return loadgen.ServeOrigin(l)
}

// runLoad opens n CONNECT tunnels at once, sends one request on each,
// holds them all open for -hold, then closes them; it reports failures.
func runLoad(args []string) error {
	fs := flag.NewFlagSet("load", flag.ExitOnError)
	proxy := fs.String("proxy", "", "proxy address")
	origin := fs.String("origin", "", "origin address (IPv4:port)")
	n := fs.Int("n", 1000, "concurrent connections")
	hold := fs.Duration("hold", 2*time.Second, "how long to keep them open")
	method := fs.String("method", loadgen.Connect, "connect, http or socks")
	fs.Parse(args)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	fails := 0
	start := time.Now()
	for i := 0; i < *n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, br, err := loadgen.Open(*method, *proxy, *origin)
			if err == nil {
				target := "/?size=100"
				if *method == loadgen.Forward {
					target = "http://" + *origin + target
				}
				fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", target)
				var resp *http.Response
				resp, err = http.ReadResponse(bufio.NewReader(br), nil)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				fails++
				if c != nil {
					c.Close()
				}
				return
			}
			conns = append(conns, c)
		}()
	}
	wg.Wait()
	fmt.Printf("open=%d failed=%d in %v\n", len(conns), fails, time.Since(start).Round(time.Millisecond))
	time.Sleep(*hold)
	for _, c := range conns {
		c.Close()
	}
	if fails > 0 {
		return fmt.Errorf("%d of %d connections failed", fails, *n)
	}
	return nil
}

// runLatency times n sequential new connections, each fetching 100 bytes,
// and prints the median in milliseconds.
func runLatency(args []string) error {
	fs := flag.NewFlagSet("latency", flag.ExitOnError)
	proxy := fs.String("proxy", "", "proxy address")
	origin := fs.String("origin", "", "origin address (IPv4:port)")
	n := fs.Int("n", 500, "connections")
	method := fs.String("method", loadgen.Direct, "direct, connect, http or socks")
	fs.Parse(args)
	buf := make([]byte, 4096)
	ds := make([]time.Duration, 0, *n)
	for i := 0; i < *n; i++ {
		t0 := time.Now()
		if _, err := loadgen.Fetch(*method, *proxy, *origin, 100, buf); err != nil {
			return err
		}
		ds = append(ds, time.Since(t0))
	}
	slices.Sort(ds)
	fmt.Printf("%.3f\n", float64(ds[len(ds)/2].Microseconds())/1000)
	return nil
}
