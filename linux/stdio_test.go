//go:build linux

package linux

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A sealed memfd (a session's shell snapshot) is handed over as it is; a
// memfd that can still be written, and a file, are not.
func TestHandOverSealedMemfdOnly(t *testing.T) {
	memfd := func(seals int) *os.File {
		fd, err := unix.MemfdCreate("t", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
		if err != nil {
			t.Skip(err)
		}
		if seals != 0 {
			if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
				t.Fatal(err)
			}
		}
		f := os.NewFile(uintptr(fd), "t")
		t.Cleanup(func() { f.Close() })
		return f
	}
	file, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	all := unix.F_SEAL_WRITE | unix.F_SEAL_GROW | unix.F_SEAL_SHRINK | unix.F_SEAL_SEAL
	for _, tc := range []struct {
		name string
		f    *os.File
		want bool
	}{
		{"sealed memfd", memfd(all), true},
		{"memfd open to writes", memfd(0), false},
		{"memfd sealed but for writes", memfd(unix.F_SEAL_GROW | unix.F_SEAL_SHRINK | unix.F_SEAL_SEAL), false},
		{"file", file, false},
	} {
		var st unix.Stat_t
		if err := unix.Fstat(int(tc.f.Fd()), &st); err != nil {
			t.Fatal(err)
		}
		if got := handOver(tc.f, &st); got != tc.want {
			t.Errorf("%s: handOver = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A socket is handed over only when it is a connected unix stream (and a
// pipe never: reopened through /proc it runs the other way): a datagram
// or unconnected socket of the caller's is the host network's (sendto
// reached the host's loopback and its unix datagram sockets: found by an
// attack pass), and a listening one is refused by pipeStdio.
func TestHandOverSocketKinds(t *testing.T) {
	sock := func(domain, typ int) *os.File {
		fd, err := unix.Socket(domain, typ|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		f := os.NewFile(uintptr(fd), "s")
		t.Cleanup(func() { f.Close() })
		return f
	}
	pair := func(typ int) *os.File {
		fds, err := unix.Socketpair(unix.AF_UNIX, typ|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		a, b := os.NewFile(uintptr(fds[0]), "a"), os.NewFile(uintptr(fds[1]), "b")
		t.Cleanup(func() { a.Close(); b.Close() })
		return a
	}
	listening := sock(unix.AF_INET, unix.SOCK_STREAM)
	if err := unix.Bind(int(listening.Fd()), &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(int(listening.Fd()), 1); err != nil {
		t.Fatal(err)
	}
	connected := sock(unix.AF_INET, unix.SOCK_STREAM)
	la, err := unix.Getsockname(int(listening.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Connect(int(connected.Fd()), la); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		f    *os.File
		want bool
	}{
		// connect(AF_UNSPEC) disconnects a TCP socket, which then connects
		// anywhere in the host's network
		{"connected tcp", connected, false},
		{"udp", sock(unix.AF_INET, unix.SOCK_DGRAM), false},
		{"unix datagram pair", pair(unix.SOCK_DGRAM), false},
		{"unix seqpacket pair", pair(unix.SOCK_SEQPACKET), false},
		{"unconnected tcp", sock(unix.AF_INET, unix.SOCK_STREAM), false},
		{"listening tcp", listening, false},
		{"unix stream pair", pair(unix.SOCK_STREAM), true},
		{"pipe", pipeEnd(t), false},
	} {
		var st unix.Stat_t
		if err := unix.Fstat(int(tc.f.Fd()), &st); err != nil {
			t.Fatal(err)
		}
		if got := handOver(tc.f, &st); got != tc.want {
			t.Errorf("%s: handOver %v, want %v", tc.name, got, tc.want)
		}
	}
	if _, _, _, err := pipeStdio([3]*os.File{listening, nil, nil}, nil, nil); err == nil || !strings.Contains(err.Error(), "listening socket") {
		t.Errorf("a listening socket as stdin: %v, want a refusal", err)
	}
}

func pipeEnd(t *testing.T) *os.File {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r
}

// The output copying is waited for while it makes progress, and no longer
// once the caller stops reading: a reader that waited for moat to exit
// first kept moat (and moatd's shutdown) waiting past the timeout (found
// by an attack pass).
func TestOutputCopyingStallEnds(t *testing.T) {
	saved := outputStall
	outputStall = 200 * time.Millisecond
	defer func() { outputStall = saved }()
	r, w, err := os.Pipe() // the caller's stdout, which it never reads
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	out, _, c, err := pipeStdio([3]*os.File{nil, w, nil}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if out[1] == w {
		t.Fatal("the caller's pipe was handed over")
	}
	chunk := make([]byte, 64<<10)
	go func() {
		for i := 0; i < 8; i++ { // more than both pipes hold
			if _, err := out[1].Write(chunk); err != nil {
				break
			}
		}
		out[1].Close()
	}()
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	ended := make(chan struct{})
	go func() { c.wait(); close(ended) }()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("wait did not return with a caller that does not read")
	}
	if d := time.Since(start); d < outputStall {
		t.Errorf("wait returned after %v, before the stall time", d)
	}
}

// BenchmarkCopyOut moves 16 MiB of a command's output through moat's pipe
// to a caller's pipe: splice (moat's way) against read and write.
//
//	go test -run '^$' -bench CopyOut -benchtime 20x ./linux
func BenchmarkCopyOut(b *testing.B) {
	const size = 16 << 20
	chunk := make([]byte, 1<<20)
	for _, mode := range []string{"splice", "read-write"} {
		b.Run(mode, func(b *testing.B) {
			b.SetBytes(size)
			for i := 0; i < b.N; i++ {
				r, w, _ := os.Pipe()   // moat's pipe: the command writes w
				cr, cw, _ := os.Pipe() // the caller's pipe: its reader drains cr
				drained := make(chan struct{})
				go func() { io.Copy(io.Discard, cr); close(drained) }()
				go func() {
					for n := 0; n < size; n += len(chunk) {
						w.Write(chunk)
					}
					w.Close()
				}()
				c := &stdioCopy{}
				if mode == "splice" {
					c.copyOut(cw, r)
				} else {
					buf := make([]byte, 64<<10)
					for {
						n, err := r.Read(buf)
						if n > 0 {
							cw.Write(buf[:n])
						}
						if err != nil {
							break
						}
					}
				}
				cw.Close()
				<-drained
				r.Close()
				cr.Close()
			}
		})
	}
}

// The copy of a command's output ends when the command's pipe does, also
// while the caller's pipe is full: the kernel answers a splice into a full
// pipe EAGAIN even when the source is at its end, and a copier that then
// waited for the source waited for an event that had come and gone (it
// hung about once in 400 runs of BenchmarkCopyOut).
func TestCopyOutEndsBehindAFullPipe(t *testing.T) {
	for i := 0; i < 200; i++ {
		r, w, _ := os.Pipe()
		cr, cw, _ := os.Pipe()
		go func() {
			w.Write(make([]byte, 256<<10))
			w.Close()
		}()
		drained := make(chan int)
		go func() {
			n, buf := 0, make([]byte, 4096)
			for {
				m, err := cr.Read(buf)
				n += m
				if err != nil {
					drained <- n
					return
				}
				if i%2 == 0 {
					time.Sleep(10 * time.Microsecond)
				}
			}
		}()
		done := make(chan struct{})
		go func() { (&stdioCopy{}).copyOut(cw, r); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("run %d: the copy did not end after its source did", i)
		}
		cw.Close()
		if n := <-drained; n != 256<<10 {
			t.Fatalf("run %d: %d bytes copied, want %d", i, n, 256<<10)
		}
		r.Close()
		cr.Close()
	}
}
