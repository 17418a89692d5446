//go:build linux

package nsinit

import (
	"encoding/binary"
	"fmt"
	"io"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/internal/sys"
)

// Mirrors of plan.h (plan_test.go checks them against the C header).
const (
	Magic   = "MOAT"
	Version = 1

	FdPlan    = 3
	FdSync    = 4
	FdGo      = 5
	FdLock    = 6 // the run's cgroup lock, kept by init
	FdSession = 7

	// EnvVar, set to "1", with Argv0 as argv[0] and no other argument,
	// makes the binary run stage 2 instead of main.
	EnvVar = "_MOAT_NSINIT"
	Argv0  = "moat-init"
	// EnvVar set to "hold", with HoldArgv0 as argv[0] and no other
	// argument, makes the binary only keep its descriptors until killed
	// (an inotify instance's holder), without starting the Go runtime.
	HoldArgv0 = "moat-hold"
)

// Record types.
const (
	rHostname  = 1
	rLoUp      = 2
	rMount     = 3
	rLLRuleset = 4
	rLLPath    = 5
	rSeccomp   = 6
	rExec      = 7
	rPTY       = 8
	rSysctl    = 9
	rCwd       = 10
	rKeyring   = 11
	rRlimit    = 12
	rCleanup   = 13
	rLLStdio   = 14
	rListen    = 15
	rWaitGo    = 16
	rMode      = 17
	rLLPort    = 18
	rWatch     = 19
)

// Mount operations.
const (
	mPrivate    = 1
	mClone      = 2
	mAttachRoot = 3
	mAttach     = 4
	mTmpfs      = 5
	mProc       = 6
	mDevpts     = 7
	mMkdir      = 8
	mMkfile     = 9
	mSymlink    = 10
	mSetattr    = 11
	mBind       = 12
)

// Flags.
const (
	CloneRecursive = 1 // MC_RECURSIVE
	CloneOptional  = 2 // MC_OPTIONAL
	LLOptional     = 1 // LLP_OPTIONAL
	mvOptional     = 1 // MV_OPTIONAL
	SeccompListen  = 1 // SC_LISTENER
	ExecSearch     = 1 // EX_SEARCH
	ModeNoNS       = 1 // MODE_NONS
	ModeSession    = 2 // MODE_SESSION
	ReqFD3         = 1 // REQ_FD3
)

// Session requests, and the request to init on FdSync.
const (
	ReqRun     = 1
	ReqSignal  = 2
	ReqConnect = 3
	ReqStdio   = 4 // to a spare's init on FdSync, first: its descriptors 0, 1, 2
	// ReqStdio's flags: FdGo's descriptor follows, then the cgroup lock's
	// (FdLock).
	ReqStdioGo   = 2
	ReqStdioLock = 4
	ReqSize      = 16 // sizeof(struct moat_req)

	// MaxConnectors bounds the connects init makes for the command at
	// once (ReqConnect; beyond, the answer is EAGAIN), ConnectTimeout how
	// long one may block, in seconds (then ETIMEDOUT).
	MaxConnectors  = 16
	ConnectTimeout = 30
)

// Mount attributes (MOUNT_ATTR_*).
const (
	AttrRdonly = 0x1
	AttrNosuid = 0x2
	AttrNodev  = 0x4
	AttrNoexec = 0x8
)

// Messages from stage 2.
const (
	MsgError    = 1
	MsgExecFail = 2
	MsgPTY      = 3
	MsgNotify   = 4
	MsgExit     = 5
	MsgListen   = 6
	MsgChild    = 7
	MsgMounted  = 8

	MsgCmdStarted  = 9
	MsgCmdExit     = 10
	MsgCmdNotify   = 11
	MsgCmdExecFail = 12
	MsgCmdError    = 13
	MsgWatch       = 14
	MsgInotify     = 15
	MsgUserns      = 16
	MsgSpare       = 17 // a spare's init waits for its descriptors (ReqStdio)

	// MaxGroups bounds the groups of IDs (struct moat_ids).
	MaxGroups = 64
	// MaxJoins bounds the cgroup v1 `tasks` files sent with IDs.
	MaxJoins = 4

	MsgTextSize = 480
	MsgSize     = 12 + MsgTextSize
)

// Plan is an encoded stage-2 plan. Records are applied in the order they are
// added; init applies its own records (hostname, lo, listeners, clean-up)
// and the command's process applies the rest.
type Plan struct {
	buf   []byte
	n     uint32
	slots uint32
	// Desc describes each record, for error messages (index = record).
	Desc    []string
	proc    map[int]bool   // records that mount a procfs
	mounts  map[int]bool   // records that mount, clone or change a mount
	watches map[int]string // R_WATCH records: the path watched
}

// IsProc reports whether record i mounts a new procfs (a container may
// refuse it).
func (p *Plan) IsProc(i int) bool { return p.proc[i] }

// Watch asks stage 2 to report every open of path, a hidden file or
// directory (for a directory, opens of it and of what is in it), through an
// inotify instance it sends to the supervisor (MsgInotify) after one
// MsgWatch per watch. It comes after the mounts.
func (p *Plan) Watch(path string, dir bool) {
	if p.watches == nil {
		p.watches = map[int]string{}
	}
	p.watches[int(p.n)] = path
	d := uint32(0)
	if dir {
		d = 1
	}
	p.add(rWatch, "watch "+path, (&rec{}).u32(d).str(path))
}

// Watched is the path of R_WATCH record i.
func (p *Plan) Watched(i int) (string, bool) {
	path, ok := p.watches[i]
	return path, ok
}

// IsMount reports whether record i is a mount operation (a container's
// security profile may refuse them all).
func (p *Plan) IsMount(i int) bool { return p.mounts[i] }

// New returns an empty plan.
func New() *Plan {
	p := &Plan{buf: make([]byte, 12, 4096)}
	copy(p.buf, Magic)
	binary.NativeEndian.PutUint32(p.buf[4:], Version)
	return p
}

// Bytes returns the encoded plan.
func (p *Plan) Bytes() []byte {
	binary.NativeEndian.PutUint32(p.buf[8:], p.n)
	return p.buf
}

// Len is the number of records.
func (p *Plan) Len() int { return int(p.n) }

type rec struct{ b []byte }

func (r *rec) u32(v uint32) *rec { r.b = binary.NativeEndian.AppendUint32(r.b, v); return r }
func (r *rec) u64(v uint64) *rec { r.b = binary.NativeEndian.AppendUint64(r.b, v); return r }
func (r *rec) str(s string) *rec {
	r.u32(uint32(len(s)))
	r.b = append(r.b, s...)
	return r
}

func (p *Plan) add(typ uint32, desc string, r *rec) {
	if typ == rMount && !strings.HasPrefix(desc, "mkdir ") && !strings.HasPrefix(desc, "create ") && !strings.HasPrefix(desc, "symlink ") {
		// (mkdir, create and symlink records make files, not mounts)
		if p.mounts == nil {
			p.mounts = map[int]bool{}
		}
		p.mounts[int(p.n)] = true
	}
	p.buf = binary.NativeEndian.AppendUint32(p.buf, typ)
	p.buf = binary.NativeEndian.AppendUint32(p.buf, uint32(len(r.b)))
	p.buf = append(p.buf, r.b...)
	p.n++
	p.Desc = append(p.Desc, desc)
}

// Mode sets the launch mode (MODE_*); it must be the first record.
func (p *Plan) Mode(flags uint32) { p.add(rMode, "mode", (&rec{}).u32(flags)) }

// LandlockPort allows TCP access (connect, bind) to one port.
func (p *Plan) LandlockPort(access, port uint64) {
	p.add(rLLPort, fmt.Sprintf("Landlock rule for port %d", port), (&rec{}).u64(access).u64(port))
}

// Hostname sets the sandbox's host name (init).
func (p *Plan) Hostname(name string) { p.add(rHostname, "hostname", (&rec{}).str(name)) }

// LoUp brings the loopback interface up (init).
func (p *Plan) LoUp() { p.add(rLoUp, "loopback", &rec{}) }

// Listen makes init listen on addr:port inside the sandbox's network
// namespace and send the socket to the supervisor (family: 2 or 10).
func (p *Plan) Listen(family int, addr string, port int) {
	p.add(rListen, fmt.Sprintf("listen %s:%d", addr, port), (&rec{}).u32(uint32(family)).u32(uint32(port)).str(addr))
}

// Cleanup is the argv init execs (as /proc/self/exe) after the supervisor
// died and the sandbox was killed.
func (p *Plan) Cleanup(argv []string) {
	r := (&rec{}).u32(uint32(len(argv)))
	for _, a := range argv {
		r.str(a)
	}
	p.add(rCleanup, "clean-up", r)
}

// Private makes the command's mount namespace private.
func (p *Plan) Private() { p.add(rMount, "make / private", (&rec{}).u32(mPrivate)) }

// Clone takes a detached copy of the mount tree at path (host view) and
// returns its slot.
func (p *Plan) Clone(path string, flags uint32, set, clr uint64) uint32 {
	s := p.slots
	p.slots++
	p.add(rMount, "clone "+path, (&rec{}).u32(mClone).u32(s).u32(flags).u64(set).u64(clr).str(path))
	return s
}

// AttachRoot makes the tree in slot the root, staging it on dir first.
func (p *Plan) AttachRoot(slot uint32, staging string) {
	p.add(rMount, "pivot to the new root", (&rec{}).u32(mAttachRoot).u32(slot).str(staging))
}

// Attach mounts the tree in slot over target (in the new root).
func (p *Plan) Attach(slot uint32, target string) {
	p.add(rMount, "mount over "+target, (&rec{}).u32(mAttach).u32(slot).u32(0).str(target))
}

// Mask mounts the tree in slot over target, a hidden file or a path shown
// again inside a mask: a target that vanished since the plan was made (or
// a source removed since its clone) is skipped (MV_OPTIONAL), and every
// later mount step at or below it.
func (p *Plan) Mask(slot uint32, target string) {
	p.add(rMount, "mask "+target, (&rec{}).u32(mAttach).u32(slot).u32(mvOptional).str(target))
}

// Tmpfs mounts a new tmpfs over target.
func (p *Plan) Tmpfs(target string, mode, uid, gid uint32, attr uint64) {
	p.TmpfsSized(target, mode, uid, gid, attr, 0, 0)
}

// TmpfsMask mounts a new tmpfs over target, a hidden directory: a target
// that vanished since the plan was made is skipped (MV_OPTIONAL), and
// every later mount step at or below it.
func (p *Plan) TmpfsMask(target string, mode, uid, gid uint32, attr uint64) {
	p.add(rMount, "mask "+target, (&rec{}).u32(mTmpfs).u32(mode).u32(uid).u32(gid).u32(mvOptional).u64(attr).u64(0).u64(0).str(target))
}

// TmpfsSized mounts a new tmpfs over target that holds at most size bytes
// in at most inodes files (0: the kernel's defaults, half the machine's
// memory).
func (p *Plan) TmpfsSized(target string, mode, uid, gid uint32, attr, size, inodes uint64) {
	what := "tmpfs on " + target
	if size > 0 {
		what += " (size " + strconv.FormatUint(size, 10) + ", " + strconv.FormatUint(inodes, 10) + " inodes)"
	}
	p.add(rMount, what, (&rec{}).u32(mTmpfs).u32(mode).u32(uid).u32(gid).u32(0).u64(attr).u64(size).u64(inodes).str(target))
}

// Proc mounts a new procfs over target.
func (p *Plan) Proc(target string, attr uint64) {
	if p.proc == nil {
		p.proc = map[int]bool{}
	}
	p.proc[int(p.n)] = true
	p.add(rMount, "procfs on "+target, (&rec{}).u32(mProc).u64(attr).str(target))
}

// Devpts mounts a new devpts instance over target.
func (p *Plan) Devpts(target string) {
	p.add(rMount, "devpts on "+target, (&rec{}).u32(mDevpts).str(target))
}

// Mkdir creates a directory (and parents) inside a tmpfs moat mounted.
func (p *Plan) Mkdir(path string, mode uint32) {
	p.add(rMount, "mkdir "+path, (&rec{}).u32(mMkdir).u32(mode).str(path))
}

// Mkfile creates an empty file inside a tmpfs moat mounted.
func (p *Plan) Mkfile(path string, mode uint32) {
	p.add(rMount, "create "+path, (&rec{}).u32(mMkfile).u32(mode).str(path))
}

// Symlink creates linkpath -> target inside a tmpfs moat mounted.
func (p *Plan) Symlink(target, linkpath string) {
	p.add(rMount, "symlink "+linkpath, (&rec{}).u32(mSymlink).str(target).str(linkpath))
}

// Setattr changes the mount attributes at path.
func (p *Plan) Setattr(path string, recursive bool, set, clr uint64) {
	rb := uint32(0)
	if recursive {
		rb = 1
	}
	p.add(rMount, "set attributes of "+path, (&rec{}).u32(mSetattr).u32(rb).u64(set).u64(clr).str(path))
}

// SetattrIfPresent is Setattr on a path that may not exist in the new
// root (hidden under a mask): then nothing is done.
func (p *Plan) SetattrIfPresent(path string, recursive bool, set, clr uint64) {
	rb := uint32(2)
	if recursive {
		rb |= 1
	}
	p.add(rMount, "set attributes of "+path+" (if there)", (&rec{}).u32(mSetattr).u32(rb).u64(set).u64(clr).str(path))
}

// Bind mounts source over target, both paths of the new root (after the
// pivot), with the attributes changed; optional skips a source or target
// that does not exist.
func (p *Plan) Bind(source, target string, set, clr uint64, optional bool) {
	fl := uint32(0)
	if optional {
		fl = CloneOptional
	}
	p.add(rMount, "bind "+source+" over "+target, (&rec{}).u32(mBind).u32(fl).u64(set).u64(clr).str(source).str(target))
}

// Sysctl writes value to a /proc/sys file (after /proc is mounted).
func (p *Plan) Sysctl(path, value string) {
	p.add(rSysctl, "write "+path, (&rec{}).str(path).str(value))
}

// Cwd sets the working directory (after the mounts).
func (p *Plan) Cwd(path string) { p.add(rCwd, "working directory "+path, (&rec{}).str(path)) }

// NewKeyring joins a new anonymous session keyring.
func (p *Plan) NewKeyring() { p.add(rKeyring, "new session keyring", &rec{}) }

// Rlimit sets a resource limit.
func (p *Plan) Rlimit(resource int, soft, hard uint64) {
	p.add(rRlimit, fmt.Sprintf("rlimit %d", resource), (&rec{}).u32(uint32(resource)).u64(soft).u64(hard))
}

// PTY gives the command a new pseudo-terminal on the fds in mask.
func (p *Plan) PTY(mask uint32, rows, cols uint16) {
	p.add(rPTY, "pty", (&rec{}).u32(mask).u32(uint32(rows)).u32(uint32(cols)))
}

// LandlockRuleset creates the ruleset (ABI-sized attributes).
func (p *Plan) LandlockRuleset(abi int, fs, net, scoped uint64) {
	p.add(rLLRuleset, "Landlock ruleset", (&rec{}).u32(uint32(abi)).u64(fs).u64(net).u64(scoped))
}

// LandlockPath allows access beneath path.
func (p *Plan) LandlockPath(path string, access uint64, flags uint32) {
	p.add(rLLPath, "Landlock rule "+path, (&rec{}).u64(access).u32(flags).str(path))
}

// LandlockStdio allows reopening the files behind fds 0-2.
func (p *Plan) LandlockStdio(access uint64) { p.add(rLLStdio, "Landlock stdio", (&rec{}).u64(access)) }

// Seccomp loads a BPF program (struct sock_filter array) last.
func (p *Plan) Seccomp(prog []byte, flags uint32) {
	p.add(rSeccomp, "seccomp", (&rec{}).u32(flags).u32(uint32(len(prog))).bytes(prog))
}

func (r *rec) bytes(b []byte) *rec { r.b = append(r.b, b...); return r }

// WaitGo makes the command's process wait, just before seccomp and exec,
// for one byte on fd 5 (the supervisor arming a last layer).
func (p *Plan) WaitGo() { p.add(rWaitGo, "wait for the supervisor", &rec{}) }

// Exec is the command.
func (p *Plan) Exec(path string, argv, env []string, flags uint32) {
	r := (&rec{}).u32(flags).str(path).u32(uint32(len(argv)))
	for _, a := range argv {
		r.str(a)
	}
	r.u32(uint32(len(env)))
	for _, e := range env {
		r.str(e)
	}
	p.add(rExec, "exec "+path, r)
}

// Message is one message from stage 2 (struct moat_msg, with the
// descriptors it carried).
type Message struct {
	Type uint32 // Msg*
	A, B int32
	Text string
	FDs  []int
}

// ReadMessage reads the next message from the supervisor's end of the
// socket (retrying EINTR); io.EOF once stage 2 and everything that held
// the other end is gone. A short or malformed message is skipped, its
// descriptors closed.
func ReadMessage(fd int) (Message, error) {
	return readMessage(func(buf, oob []byte) (int, int, error) {
		type got struct{ n, oobn int }
		g, err := sys.RetryValue(func() (got, error) {
			n, oobn, _, _, err := unix.Recvmsg(fd, buf, oob, unix.MSG_CMSG_CLOEXEC)
			return got{n, oobn}, err
		})
		return g.n, g.oobn, err
	})
}

// ReadMessageConn is ReadMessage on a non-blocking socket in Go's poller
// (os.NewFile of a descriptor made with SOCK_NONBLOCK): the reading
// goroutine parks instead of holding a thread in recvmsg, and closing the
// file ends the read (os.ErrClosed).
func ReadMessageConn(rc syscall.RawConn) (Message, error) {
	return readMessage(func(buf, oob []byte) (n, oobn int, err error) {
		rerr := rc.Read(func(fd uintptr) bool {
			err = sys.Retry(func() (e error) {
				n, oobn, _, _, e = unix.Recvmsg(int(fd), buf, oob, unix.MSG_CMSG_CLOEXEC)
				return e
			})
			return err != unix.EAGAIN
		})
		if err == nil {
			err = rerr
		}
		return n, oobn, err
	})
}

func readMessage(recv func(buf, oob []byte) (n, oobn int, err error)) (Message, error) {
	buf := make([]byte, MsgSize)
	oob := make([]byte, unix.CmsgSpace(4*16))
	for {
		n, oobn, err := recv(buf, oob)
		if err != nil {
			return Message{}, sys.Named("recvmsg", err)
		}
		if n == 0 {
			return Message{}, io.EOF
		}
		var fds []int
		if oobn > 0 {
			if cms, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
				for _, cm := range cms {
					if r, err := unix.ParseUnixRights(&cm); err == nil {
						fds = append(fds, r...)
					}
				}
			}
		}
		if n < 12 {
			for _, f := range fds {
				unix.Close(f)
			}
			continue
		}
		text := string(buf[12:n])
		if i := strings.IndexByte(text, 0); i >= 0 {
			text = text[:i]
		}
		return Message{
			Type: binary.NativeEndian.Uint32(buf[0:]),
			A:    int32(binary.NativeEndian.Uint32(buf[4:])),
			B:    int32(binary.NativeEndian.Uint32(buf[8:])),
			Text: text,
			FDs:  fds,
		}, nil
	}
}

// CloseFDs closes the descriptors a message carried that nobody took.
func (m Message) CloseFDs() {
	for _, f := range m.FDs {
		unix.Close(f)
	}
}

// RunRequest encodes a session's request to start a command: argv with env
// in dir (exflags: ExecSearch to look argv[0] up in env's PATH); fd3 says a
// fourth descriptor is sent for the command's fd 3.
func RunRequest(id uint32, dir string, argv, env []string, exflags uint32, fd3 bool) []byte {
	flags := uint32(0)
	if fd3 {
		flags |= ReqFD3
	}
	b := reqHeader(ReqRun, id, 0, flags)
	cwd := (&rec{}).str(dir)
	b = appendRec(b, rCwd, cwd)
	ex := (&rec{}).u32(exflags).str(argv[0]).u32(uint32(len(argv)))
	for _, a := range argv {
		ex.str(a)
	}
	ex.u32(uint32(len(env)))
	for _, e := range env {
		ex.str(e)
	}
	return appendRec(b, rExec, ex)
}

// SignalRequest encodes a request to deliver sig to command id (SIGKILL ends
// it and everything it started).
func SignalRequest(id uint32, sig int) []byte { return reqHeader(ReqSignal, id, uint32(sig), 0) }

// ConnectRequest encodes a ReqConnect request: sent to init on FdSync with
// three descriptors (the command's socket, an O_PATH descriptor of the
// socket to connect it to, one end of a socketpair for the answer, an int
// errno), it has a child of init connect the socket inside the sandbox.
func ConnectRequest() []byte { return reqHeader(ReqConnect, 0, 0, 0) }

// StdioRequest encodes a ReqStdio request: sent first to a spare stage 2's
// init on FdSync with the run's descriptors 0, 1 and 2 (SCM_RIGHTS), then
// FdGo's and FdLock's as flags (ReqStdioGo, ReqStdioLock) say, before the
// plan (linux/spare.go).
func StdioRequest(flags uint32) []byte { return reqHeader(ReqStdio, 0, 0, flags) }

func reqHeader(typ, id, sig, flags uint32) []byte {
	b := make([]byte, 0, 256)
	for _, v := range []uint32{typ, id, sig, flags} {
		b = binary.NativeEndian.AppendUint32(b, v)
	}
	return b
}

func appendRec(b []byte, typ uint32, r *rec) []byte {
	b = binary.NativeEndian.AppendUint32(b, typ)
	b = binary.NativeEndian.AppendUint32(b, uint32(len(r.b)))
	return append(b, r.b...)
}

// EnvNSFlags names the clone flags of the namespaces stage 2 makes itself
// (hexadecimal; absent: none).
const EnvNSFlags = "_MOAT_NSFLAGS"

// EnvUmask, if set, is the umask (octal) stage 2 takes first thing: a
// sandbox for moatd's client has the client's, not the daemon's.
const EnvUmask = "_MOAT_UMASK"

// EnvSpare, set to "1" beside EnvNSFlags, starts a spare stage 2: once it
// has made its namespaces, its init waits for a ReqStdio before the plan.
const EnvSpare = "_MOAT_SPARE"

// IDs encodes the supervisor's answer to MsgUserns (struct moat_ids): the
// ids stage 2 takes in its user namespace; uid -1 keeps its own.
func IDs(uid, gid int, groups []int) ([]byte, error) {
	if len(groups) > MaxGroups {
		return nil, fmt.Errorf("%d groups: stage 2 takes at most %d", len(groups), MaxGroups)
	}
	b := make([]byte, 0, 12+4*len(groups))
	b = binary.NativeEndian.AppendUint32(b, uint32(int32(uid)))
	b = binary.NativeEndian.AppendUint32(b, uint32(int32(gid)))
	b = binary.NativeEndian.AppendUint32(b, uint32(len(groups)))
	for _, g := range groups {
		b = binary.NativeEndian.AppendUint32(b, uint32(g))
	}
	return b, nil
}
