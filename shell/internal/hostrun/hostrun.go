//go:build unix

// Package hostrun is a shell.Runner that starts processes directly on the
// host with os/exec: NO sandbox at all. It exists so that shell's own tests
// can run real shells end to end. Being internal, only packages under
// shell/ can import it, and a test (TestNoHostRunner in shell) checks that
// no non-test package does: a library user can never run a command
// unsandboxed through it.
package hostrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"

	"github.com/moat-sandbox/moat/shell"
	"github.com/moat-sandbox/moat/shell/internal/reportfd"
	"github.com/moat-sandbox/moat/shell/internal/sealed"
)

// Runner starts processes on the host, each in its own process group, with
// stdout and stderr on one pipe and descriptor 3 on another.
type Runner struct {
	// Starts counts the processes started (for tests).
	mu     sync.Mutex
	starts int
	// Last is the last Proc started.
	last shell.Proc
}

// Starts returns how many processes were started.
func (r *Runner) Starts() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.starts
}

// Last returns the last Proc started.
func (r *Runner) Last() shell.Proc {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// Start implements shell.Runner.
func (r *Runner) Start(ctx context.Context, p shell.Proc) (shell.Process, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(p.Argv) == 0 {
		return nil, errors.New("hostrun: empty argv")
	}
	r.mu.Lock()
	r.starts++
	r.last = p
	r.mu.Unlock()
	cmd := exec.Command(p.Argv[0], p.Argv[1:]...)
	cmd.Env = p.Env
	cmd.Dir = p.Dir
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
	cmd.Stdout = outW
	cmd.Stderr = outW
	cmd.ExtraFiles = []*os.File{repW}
	if p.Stdin != nil {
		in, err := sealed.File(p.Stdin)
		if err != nil {
			outR.Close()
			outW.Close()
			repR.Close()
			repW.Close()
			return nil, fmt.Errorf("hostrun: standard input: %w", err)
		}
		defer in.Close()
		cmd.Stdin = in
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		outR.Close()
		outW.Close()
		repR.Close()
		repW.Close()
		return nil, fmt.Errorf("hostrun: start %s: %w", p.Argv[0], err)
	}
	outW.Close()
	repW.Close()
	pr := &proc{cmd: cmd}
	pr.copies.Add(2)
	go pr.copy(p.Output, outR)
	go pr.copy(p.Report, repR)
	return pr, nil
}

type proc struct {
	cmd    *exec.Cmd
	copies sync.WaitGroup
	mu     sync.Mutex
	exited bool
}

func (p *proc) copy(w io.Writer, r *os.File) {
	defer p.copies.Done()
	defer r.Close()
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

func (p *proc) Wait() (shell.Exit, error) {
	err := p.cmd.Wait()
	p.mu.Lock()
	p.exited = true
	p.mu.Unlock()
	// Nothing the command started outlives it: its process group goes.
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	p.copies.Wait()
	var ex shell.Exit
	st := p.cmd.ProcessState
	if st == nil {
		return ex, err
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		ex.Signal = int(ws.Signal())
		ex.Code = 128 + ex.Signal
		return ex, nil
	}
	ex.Code = st.ExitCode()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		return ex, err
	}
	return ex, nil
}

func (p *proc) Kill() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited {
		return nil
	}
	return syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
}
