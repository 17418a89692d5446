package api

import (
	"errors"
	"net/http"
	"syscall"

	"github.com/moat-sandbox/moat/netproxy"
)

// What a daemon user's sessions, commands and runs hold of the daemon's
// descriptors and threads, in the proxies' slots of six descriptors
// (netproxy.DescriptorsPerSlot) and a thread, measured under moatd: a
// session's sandbox (its pidfds, pipes, cgroup files, seccomp listener,
// the shell's channel) about 14 descriptors and 5 threads, a command 5
// or 6 (its pipes, pidfd, its request's connection) and a thread (its
// violation observer's), a POST /v1/run about 20 (the client's three
// descriptors, the connection, the sandbox's) and 3 threads. A session
// counted 3, by its descriptors: in a cgroup of pids.max 160 one user's
// sessions and commands took every thread the daemon could have, and the
// daemon died (runtime/cgo: pthread_create failed) with every user's
// sandboxes (TestDaemonAttackOneUserTakesEveryThread; under systemd the
// limit is TasksMax, 4,915 where pid_max is 32,768). They are counted against the user's share of
// the process's slots and the reserve kept for users holding few
// (netproxy.TakeSlots), as the proxies' connections are: one user's 16
// sessions of 32 background commands held 2,985 of a daemon's 4,096
// descriptors, two such users every one, and every other user's run and
// session failed ("too many open files"), whatever the per-user counts
// (attack pass 75).
const (
	sessionSlots = 5
	commandSlots = 1
	runSlots     = 4
)

// checkSlots is what a daemon request holds while the daemon works as its
// user before any slot of a session or run is taken: checking its cwd and
// writable paths, planning its policy's description, following its
// command's paths (each on an OS thread of its own with the user's
// credentials: ascred). A path on a stalled mount (an NFS server gone, a
// FUSE server that stops answering) holds that thread for good, and the
// request's client may hang up: one user's POSTs of a session with such a
// cwd, each dropped after 0.2 s, took a thread apiece until moatd, in a
// cgroup of pids.max 160, died (pthread_create failed) with every user's
// sandboxes (attack pass 83, TestDaemonAttackStalledMountTakesThreads).
// Counted, a user's stuck checks use up that user's share only.
const checkSlots = 1

// checking counts checkSlots for the request's user while a daemon works
// as that user; release gives them back (never, if the work never ends).
func (s *Server) checking(r *http.Request) (release func(), err error) {
	owner := s.owner(r)
	if err := s.takeSlots(owner, checkSlots, "a request"); err != nil {
		return nil, err
	}
	return func() { s.giveSlots(owner, checkSlots) }, nil
}

// takeSlots counts n slots for owner in a daemon (moat serve serves one
// user: nothing to count), or says why not: 429 when the user's share is
// in use, 503 when the daemon's slots are, the message naming the limit.
func (s *Server) takeSlots(owner, n int, what string) error {
	if s.cfg.Daemon == nil || owner < 0 {
		return nil
	}
	err := netproxy.TakeSlots(netproxy.UserShare(owner), n)
	var se *netproxy.SlotError
	if errors.As(err, &se) {
		status := http.StatusServiceUnavailable
		if se.Share {
			status = http.StatusTooManyRequests
		}
		return errorf(status, "", "%s refused: %v: close a session, or read or kill a background command, first", what, err)
	}
	return err
}

// giveSlots gives back what takeSlots took.
func (s *Server) giveSlots(owner, n int) {
	if s.cfg.Daemon == nil || owner < 0 {
		return
	}
	netproxy.GiveSlots(netproxy.UserShare(owner), n)
}

// nofile is the process's descriptor limit (Go raised the soft limit to
// the hard one at start); 0 when unknown.
func nofile() uint64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0
	}
	return rl.Cur
}

// connsFor is how many API connections a daemon under a descriptor limit
// serves at once, and one user: three quarters of what the proxies'
// slots leave of the limit (a quarter of it, at most 2048; sessions,
// commands and runs count in the slots), at most 4096, and an eighth of
// that a user, at most 256, so that four users hold at most half. The
// bounds were 4096 and 256 whatever the limit: under 4,096 descriptors,
// the proxies' 2,304 and 16 users' connections were more than the limit
// (attack pass 75).
func connsFor(limit uint64) (total, perUser int) {
	if limit == 0 {
		return 4096, 256
	}
	left := min(limit/4, 2048)
	total = int(max(min(left*3/4, 4096), 64))
	return total, max(min(total/8, 256), 8)
}
