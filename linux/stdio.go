//go:build linux

package linux

import (
	"fmt"
	"io"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// The caller's descriptors 0-2 reach the command as they are, but a
// regular file's (or a block device's) descriptor is reopened through
// /proc/self/fd/N against the host's mount, not the sandbox's view of it:
// a file handed in for reading was reopened for writing (`moat run ... <
// .mcp.json` let the command write a protected name, a denyWrite file,
// any file of the host it was given), one handed in for writing for
// reading (`>> ~/.netrc` read the whole file; found by an attack pass).
// So such a descriptor is never handed over: the command gets a pipe, and
// moat copies between the pipe and the caller's descriptor (the file's
// offset and append mode kept, since moat writes and reads through the
// caller's own descriptor). Pipes, sockets, terminals and character
// devices are handed over as they are; a directory is refused
// (checkStdio).

// stdioCopy is the copying a run's descriptors need.
type stdioCopy struct {
	wg    sync.WaitGroup
	child []*os.File // the pipe ends given to the sandbox: closed here once it has them
}

// pipeStdio returns the descriptors to hand to the sandbox for the
// caller's stdio (and fd3, if not nil): a pipe for each regular file or
// block device, whose copying starts at once.
func pipeStdio(stdio [3]*os.File, fd3 *os.File) (out [3]*os.File, out3 *os.File, c *stdioCopy, err error) {
	c = &stdioCopy{}
	out = stdio
	out3 = fd3
	done := map[[2]uint64]*os.File{} // one pipe for stdout and stderr that are one file
	for i, f := range append(stdio[:], fd3) {
		if f == nil {
			continue
		}
		var st unix.Stat_t
		if err := unix.Fstat(int(f.Fd()), &st); err != nil {
			c.abort()
			return stdio, fd3, nil, fmt.Errorf("descriptor %d: %w", i, err)
		}
		if t := st.Mode & unix.S_IFMT; t != unix.S_IFREG && t != unix.S_IFBLK {
			continue
		}
		input := i == 0
		if i == 3 {
			fl, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
			if err != nil || fl&unix.O_ACCMODE == unix.O_RDWR {
				c.abort()
				return stdio, fd3, nil, fmt.Errorf("descriptor 3 is a file open for reading and writing: moat hands the command a pipe for a file, one way")
			}
			input = fl&unix.O_ACCMODE == unix.O_RDONLY
		}
		key := [2]uint64{uint64(st.Dev), st.Ino}
		var p *os.File
		if prev, ok := done[key]; ok && !input {
			p = prev // 2>&1 into a file: one pipe, the order of the lines kept
		} else {
			r, w, err := os.Pipe()
			if err != nil {
				c.abort()
				return stdio, fd3, nil, err
			}
			src := f
			c.wg.Add(1)
			if input {
				p = r
				c.child = append(c.child, r)
				go func() {
					defer c.wg.Done()
					io.Copy(w, src) // ends at the file's end, or when the command stops reading (EPIPE)
					w.Close()
				}()
			} else {
				p = w
				c.child = append(c.child, w)
				done[key] = w
				go func() {
					defer c.wg.Done()
					io.Copy(src, r) // ends when every process of the run has let go of the pipe
					r.Close()
				}()
			}
		}
		if i == 3 {
			out3 = p
		} else {
			out[i] = p
		}
	}
	return out, out3, c, nil
}

// started closes this process's copies of the pipe ends the sandbox now
// holds: the copying then ends with the sandbox's last holder.
func (c *stdioCopy) started() {
	if c == nil {
		return
	}
	for _, f := range c.child {
		f.Close()
	}
	c.child = nil
}

// wait waits for the copying to finish (after the run's processes ended).
func (c *stdioCopy) wait() {
	if c == nil {
		return
	}
	c.started()
	c.wg.Wait()
}

// abort ends the copying of a run that did not start.
func (c *stdioCopy) abort() { c.wait() }
