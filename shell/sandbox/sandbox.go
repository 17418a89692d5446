// Package sandbox runs a shell.Session's processes in a moat session
// sandbox (runtime.Session): the Runner that agent hosts, moat shell and
// moat session --jsonl use.
//
//	sb, err := runtime.NewSession(ctx, runtime.SessionRequest{Policy: pol})
//	sess, err := shell.New(shell.Config{Runner: sandbox.New(sb), Dir: pol.Cwd, Env: os.Environ()})
//	res, err := sess.Run(ctx, shell.Request{Command: "git status"})
package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/moat-sandbox/moat/runtime"
	"github.com/moat-sandbox/moat/runtime/enforce"
	"github.com/moat-sandbox/moat/shell"
	"github.com/moat-sandbox/moat/shell/internal/reportfd"
	"github.com/moat-sandbox/moat/shell/internal/sealed"
)

// Runner starts each process as a command of one session sandbox. It is
// safe for concurrent use.
type Runner struct {
	s *runtime.Session
}

// New returns the Runner of a session sandbox. Closing the session is the
// caller's job (after shell.Session.Close).
func New(s *runtime.Session) *Runner { return &Runner{s: s} }

// drainGrace bounds how long Wait waits for output after the command's
// process tree is gone (the session's reaper ends every process a command
// started, so the pipes close; this only guards against a stuck writer).
const drainGrace = 5 * time.Second

// Start implements shell.Runner.
func (r *Runner) Start(ctx context.Context, p shell.Proc) (shell.Process, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(p.Argv) == 0 {
		return nil, errors.New("sandbox: empty argv")
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	// Descriptor 3: a socket, which no other process can reopen through
	// /proc to forge the report (reportfd).
	repR, repW, err := reportfd.Pair()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, err
	}
	var in *os.File
	if p.Stdin != nil {
		// The snapshot: a descriptor nothing in the sandbox can write
		// (a pipe reopened through /proc/PID/fd/0 is writable).
		if in, err = sealed.File(p.Stdin); err != nil {
			outR.Close()
			outW.Close()
			repR.Close()
			repW.Close()
			return nil, fmt.Errorf("sandbox: standard input: %w", err)
		}
	}
	// The command's own context: Kill ends it, not the start's ctx.
	running, err := r.s.Start(context.Background(), runtime.Command{
		Argv: p.Argv, Env: p.Env, Dir: p.Dir,
		Stdin: in, Stdout: outW, Stderr: outW, FD3: repW,
	})
	outW.Close()
	repW.Close()
	if in != nil {
		in.Close()
	}
	if err != nil {
		outR.Close()
		repR.Close()
		return nil, err
	}
	pr := &process{r: running, readers: []*os.File{outR, repR}}
	pr.copies.Add(2)
	go pr.copy(p.Output, outR)
	go pr.copy(p.Report, repR)
	return pr, nil
}

type process struct {
	r       *runtime.Running
	copies  sync.WaitGroup
	readers []*os.File
}

func (p *process) copy(w io.Writer, r *os.File) {
	defer p.copies.Done()
	if w == nil {
		w = io.Discard
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			w.Write(buf[:n])
		}
		if err != nil {
			return
		}
	}
}

// Wait implements shell.Process.
func (p *process) Wait() (shell.Exit, error) {
	res, err := p.r.Wait()
	done := make(chan struct{})
	go func() { p.copies.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(drainGrace):
		for _, f := range p.readers {
			f.SetReadDeadline(time.Now())
		}
		<-done
	}
	for _, f := range p.readers {
		f.Close()
	}
	if err != nil {
		// A command that could not be executed exits as a shell says so.
		var xe *enforce.ExecError
		if errors.As(err, &xe) {
			return shell.Exit{Code: xe.ExitCode()}, nil
		}
		return shell.Exit{}, fmt.Errorf("sandbox: %w", err)
	}
	return shell.Exit{Code: res.ExitCode, Signal: int(res.Signal), TimedOut: res.TimedOut, Violations: res.Violations}, nil
}

// Kill implements shell.Process: the command's reaper ends its whole tree.
func (p *process) Kill() error {
	err := p.r.Kill()
	if errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return err
}
