package netproxy

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"sync"
	"testing"

	"github.com/moat-sandbox/moat/netproxy/internal/loadgen"
)

// benchProxy starts a loadgen origin on loopback and a proxy whose policy
// allows exactly that origin (as an IP literal, so loopback is allowed).
func benchProxy(b *testing.B) (proxy, origin string) {
	ol, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go loadgen.ServeOrigin(ol)
	origin = ol.Addr().String()
	pl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &Server{}
	srv.SetRules(mustRules(&testing.T{}, netOf([]string{origin}, nil)))
	go srv.Serve(pl)
	b.Cleanup(func() {
		srv.Close()
		ol.Close()
	})
	return pl.Addr().String(), origin
}

var methods = []string{loadgen.Direct, loadgen.Connect, loadgen.Forward, loadgen.SOCKS}

// BenchmarkDownload moves 256 MiB per operation over a new connection,
// directly and through each proxy path; MB/s is the figure to compare.
func BenchmarkDownload(b *testing.B) {
	proxy, origin := benchProxy(b)
	const size = 256 << 20
	buf := make([]byte, 256<<10)
	for _, m := range methods {
		b.Run(m, func(b *testing.B) {
			b.SetBytes(size)
			for i := 0; i < b.N; i++ {
				if n, err := loadgen.Fetch(m, proxy, origin, size, buf); err != nil || n != size {
					b.Fatalf("%s: %d bytes, %v", m, n, err)
				}
			}
		})
	}
}

// BenchmarkNewConnection opens a new connection, fetches 100 bytes and
// closes it; the difference to "direct" is what the proxy adds to each new
// connection.
func BenchmarkNewConnection(b *testing.B) {
	proxy, origin := benchProxy(b)
	buf := make([]byte, 4096)
	for _, m := range methods {
		b.Run(m, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := loadgen.Fetch(m, proxy, origin, 100, buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkConcurrent1000 holds 1,000 CONNECT tunnels open at once (each
// has carried one request) and reports the proxy's heap and goroutines per
// tunnel while they are open. The heap figure is rough (GC timing); the
// RSS figures of bench/proxy-bench.sh are the ones to quote.
func BenchmarkConcurrent1000(b *testing.B) {
	proxy, origin := benchProxy(b)
	const n = 1000
	var heapPer, gPer float64
	for i := 0; i < b.N; i++ {
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		g0 := runtime.NumGoroutine()
		conns := make([]net.Conn, n)
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for j := 0; j < n; j++ {
			wg.Add(1)
			go func(j int) {
				defer wg.Done()
				c, br, err := loadgen.Open(loadgen.Connect, proxy, origin)
				if err != nil {
					errs <- err
					return
				}
				fmt.Fprintf(c, "GET /?size=100 HTTP/1.1\r\nHost: x\r\n\r\n")
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					errs <- err
					c.Close()
					return
				}
				io.Copy(io.Discard, resp.Body)
				conns[j] = c
			}(j)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			b.Fatal(err)
		}
		runtime.GC()
		var during runtime.MemStats
		runtime.ReadMemStats(&during)
		// Goroutines of the whole test process: the proxy's two per
		// tunnel plus the origin's one (the clients have none).
		gPer = float64(runtime.NumGoroutine()-g0) / n
		heapPer = float64(int64(during.HeapInuse)-int64(before.HeapInuse)) / n
		for _, c := range conns {
			c.Close()
		}
	}
	b.ReportMetric(heapPer, "heapB/tunnel")
	b.ReportMetric(gPer, "goroutines/tunnel")
}

// BenchmarkDownloadByName is BenchmarkDownload through tunnels to a name
// (localhost:PORT), whose plain HTTP the proxy reads request by request
// (relayHTTP).
func BenchmarkDownloadByName(b *testing.B) {
	ol, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go loadgen.ServeOrigin(ol)
	origin := fmt.Sprintf("localhost:%d", ol.Addr().(*net.TCPAddr).Port)
	pl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &Server{LocalAddrs: func() ([]netip.Addr, error) { return nil, nil }}
	srv.SetRules(mustRules(&testing.T{}, netOf([]string{origin}, nil)))
	go srv.Serve(pl)
	b.Cleanup(func() {
		srv.Close()
		ol.Close()
	})
	const size = 256 << 20
	buf := make([]byte, 256<<10)
	for _, m := range []string{loadgen.Connect, loadgen.Forward} {
		b.Run(m, func(b *testing.B) {
			b.SetBytes(size)
			for i := 0; i < b.N; i++ {
				if n, err := loadgen.Fetch(m, pl.Addr().String(), origin, size, buf); err != nil || n != size {
					b.Fatalf("%s: %d bytes, %v", m, n, err)
				}
			}
		})
	}
}
