//go:build linux && (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64)

// The architectures above are the little-endian ones bpf2go generated
// sockfilter_bpfel.go for; filter_other.go covers the rest.

package bpf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/moat-sandbox/moat/bpf/cgroup"
)

// Supported reports whether this process can attach the filter: a cgroup2
// hierarchy, and a kernel and privileges for cgroup socket programs, ring
// buffers and the helpers the programs call. An error wrapping
// [ErrUnsupported] is conclusive; any other error means a probe could not
// decide.
func Supported() error {
	if _, err := cgroup.Mountpoint(); err != nil {
		return fmt.Errorf("%w: %w", ErrUnsupported, err)
	}
	probes := []struct {
		what  string
		probe func() error
	}{
		{"cgroup sock_addr programs", func() error { return features.HaveProgramType(ebpf.CGroupSockAddr) }},
		{"cgroup sock programs", func() error { return features.HaveProgramType(ebpf.CGroupSock) }},
		{"ring buffer maps", func() error { return features.HaveMapType(ebpf.RingBuf) }},
		{"bpf_ringbuf_reserve in cgroup sock_addr programs", func() error {
			return features.HaveProgramHelper(ebpf.CGroupSockAddr, asm.FnRingbufReserve)
		}},
		{"bpf_get_current_pid_tgid in cgroup sock_addr programs", func() error {
			return features.HaveProgramHelper(ebpf.CGroupSockAddr, asm.FnGetCurrentPidTgid)
		}},
		{"bpf_ringbuf_reserve in cgroup sock programs", func() error {
			return features.HaveProgramHelper(ebpf.CGroupSock, asm.FnRingbufReserve)
		}},
		{"bpf_get_current_pid_tgid in cgroup sock programs", func() error {
			return features.HaveProgramHelper(ebpf.CGroupSock, asm.FnGetCurrentPidTgid)
		}},
	}
	for _, p := range probes {
		err := p.probe()
		switch {
		case err == nil:
		case errors.Is(err, ebpf.ErrNotSupported):
			return fmt.Errorf("%w: kernel lacks %s: %w", ErrUnsupported, p.what, err)
		case errors.Is(err, unix.EPERM):
			return fmt.Errorf("%w: not permitted to load %s (needs root: CAP_BPF and CAP_NET_ADMIN, or CAP_SYS_ADMIN): %w",
				ErrUnsupported, p.what, err)
		default:
			return fmt.Errorf("bpf: probe for %s: %w", p.what, err)
		}
	}
	return nil
}

// haveComm reports whether the programs may call bpf_get_current_comm.
func haveComm() bool {
	return features.HaveProgramHelper(ebpf.CGroupSockAddr, asm.FnGetCurrentComm) == nil &&
		features.HaveProgramHelper(ebpf.CGroupSock, asm.FnGetCurrentComm) == nil
}

// Filter is a set of socket programs attached to one cgroup.
type Filter struct {
	cgroup   *os.File
	objs     sockfilterObjects
	attached []attachment
	reader   *ringbuf.Reader
	events   chan Event
	done     chan struct{}
	lost     atomic.Uint64
	sent     atomic.Uint64 // events delivered on the channel
	flushed  chan struct{} // the read loop reached a Flush

	mu      sync.Mutex
	closed  bool
	dropped uint64 // kernel drops, read at Close
}

type attachment struct {
	prog *ebpf.Program
	typ  ebpf.AttachType
}

// eventQueue is how many decoded events wait for the caller before more
// are dropped (and counted).
const eventQueue = 256

// Attach loads the filter and attaches it to the cgroup2 directory
// cgroupDir. From then on, the processes in that cgroup and its
// descendants may connect() (TCP, UDP, ICMP) and send UDP datagrams only
// to the addresses in allow (and loopback with opts.AllowLoopback); they
// may bind() as opts says, and create only TCP and UDP sockets. Everything
// else fails with EPERM and is reported on Events.
//
// Attach with the cgroup still empty, before the sandbox starts in it
// (CLONE_INTO_CGROUP), so no system call of the sandbox escapes it.
//
// The programs are attached with BPF_PROG_ATTACH and BPF_F_ALLOW_MULTI:
// they stay attached until the cgroup is removed or [Filter.Detach] is
// called, even if this process exits or crashes. Programs attached to
// ancestor cgroups keep running too, and a process inside cannot override
// them by creating a child cgroup: every attached program must allow a
// call. Two filters on one cgroup therefore allow only what both allow,
// which lets a caller replace a filter without a gap (attach the new one,
// then Detach the old).
func Attach(cgroupDir string, allow []netip.AddrPort, opts Options) (*Filter, error) {
	if err := checkOptions(opts); err != nil {
		return nil, err
	}
	entries, err := allowEntries(allow, opts.Listen)
	if err != nil {
		return nil, err
	}
	dir, err := openCgroup(cgroupDir)
	if err != nil {
		return nil, err
	}
	f := &Filter{cgroup: dir}
	if err := f.load(entries, opts); err != nil {
		dir.Close()
		return nil, err
	}
	if err := f.attach(opts); err != nil {
		f.objs.Close()
		dir.Close()
		return nil, err
	}
	f.reader, err = ringbuf.NewReader(f.objs.Events)
	if err != nil {
		// The programs are attached and enforce; only reporting failed.
		// Undo everything: a caller that sees an error runs nothing.
		derr := f.detachAll()
		f.objs.Close()
		dir.Close()
		return nil, errors.Join(fmt.Errorf("bpf: ring buffer reader: %w", err), derr)
	}
	f.events = make(chan Event, eventQueue)
	f.done = make(chan struct{})
	f.flushed = make(chan struct{}, 1)
	go f.read()
	return f, nil
}

// openCgroup opens a cgroup2 directory for BPF_PROG_ATTACH.
func openCgroup(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("bpf: %w", &os.PathError{Op: "open", Path: path, Err: err})
	}
	var st unix.Statfs_t
	if err := unix.Fstatfs(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("bpf: %w", &os.PathError{Op: "statfs", Path: path, Err: err})
	}
	if st.Type != unix.CGROUP2_SUPER_MAGIC {
		unix.Close(fd)
		return nil, fmt.Errorf("bpf: %s is not a cgroup2 directory", path)
	}
	return os.NewFile(uintptr(fd), path), nil
}

// load sets the policy into the spec, loads it (the verifier runs here)
// and fills and freezes the allow-list.
func (f *Filter) load(entries map[destKey]uint8, opts Options) error {
	spec, err := loadSockfilter()
	if err != nil {
		return fmt.Errorf("bpf: %w", err)
	}
	if err := configure(spec, len(entries), opts); err != nil {
		return err
	}
	if err := loadObjects(spec, &f.objs, opts.Bind != BindAny); err != nil {
		var verr *ebpf.VerifierError
		if errors.As(err, &verr) {
			return fmt.Errorf("bpf: load programs: %+v", verr)
		}
		return fmt.Errorf("bpf: load programs: %w", err)
	}
	for k, flags := range entries {
		key := sockfilterDestKey{Port: k.port}
		for i := range key.Addr {
			key.Addr[i] = binary.NativeEndian.Uint32(k.addr[4*i:])
		}
		if err := f.objs.Allowed.Update(&key, flags, ebpf.UpdateNoExist); err != nil {
			f.objs.Close()
			return fmt.Errorf("bpf: fill allow-list: %w", err)
		}
	}
	// Nobody changes the allow-list after this, from user space either.
	if err := f.objs.Allowed.Freeze(); err != nil {
		f.objs.Close()
		return fmt.Errorf("bpf: freeze allow-list: %w", err)
	}
	return nil
}

// noBindObjects are the objects of a filter with BindAny: the bind
// programs are never attached, so they are not loaded either (each program
// the kernel verifies and compiles costs a start 0.1-0.3 ms).
type noBindObjects struct {
	MoatConnect4   *ebpf.Program `ebpf:"moat_connect4"`
	MoatConnect6   *ebpf.Program `ebpf:"moat_connect6"`
	MoatSendmsg4   *ebpf.Program `ebpf:"moat_sendmsg4"`
	MoatSendmsg6   *ebpf.Program `ebpf:"moat_sendmsg6"`
	MoatSockCreate *ebpf.Program `ebpf:"moat_sock_create"`
	sockfilterMaps
	sockfilterVariables
}

// loadObjects loads the maps and the programs (the bind programs only when
// withBind) into objs.
func loadObjects(spec *ebpf.CollectionSpec, objs *sockfilterObjects, withBind bool) error {
	if withBind {
		return spec.LoadAndAssign(objs, nil)
	}
	var o noBindObjects
	if err := spec.LoadAndAssign(&o, nil); err != nil {
		return err
	}
	objs.MoatConnect4, objs.MoatConnect6 = o.MoatConnect4, o.MoatConnect6
	objs.MoatSendmsg4, objs.MoatSendmsg6 = o.MoatSendmsg4, o.MoatSendmsg6
	objs.MoatSockCreate = o.MoatSockCreate
	objs.sockfilterMaps, objs.sockfilterVariables = o.sockfilterMaps, o.sockfilterVariables
	return nil
}

// configure writes the options into the spec's constants and map sizes.
func configure(spec *ebpf.CollectionSpec, entries int, opts Options) error {
	set := func(name string, v uint8) error {
		vs, ok := spec.Variables[name]
		if !ok {
			return fmt.Errorf("bpf: object has no variable %s", name)
		}
		if err := vs.Set(v); err != nil {
			return fmt.Errorf("bpf: set %s: %w", name, err)
		}
		return nil
	}
	var loopback, comm uint8
	if opts.AllowLoopback {
		loopback = 1
	}
	if haveComm() {
		comm = 1
	}
	for _, err := range []error{
		set(sockfilterVarAllowLoopback, loopback),
		set(sockfilterVarBindPolicy, uint8(opts.Bind)),
		set(sockfilterVarHaveComm, comm),
	} {
		if err != nil {
			return err
		}
	}
	spec.Maps[sockfilterMapAllowed].MaxEntries = uint32(max(entries, 1))
	size := opts.EventBuffer
	if size == 0 {
		size = defaultEventBuffer
	}
	if size%os.Getpagesize() != 0 {
		return fmt.Errorf("bpf: event buffer of %d bytes is not a multiple of the page size", size)
	}
	spec.Maps[sockfilterMapEvents].MaxEntries = uint32(size)
	return nil
}

// attach attaches the programs, or none of them.
func (f *Filter) attach(opts Options) error {
	progs := []attachment{
		{f.objs.MoatSockCreate, ebpf.AttachCGroupInetSockCreate},
		{f.objs.MoatConnect4, ebpf.AttachCGroupInet4Connect},
		{f.objs.MoatConnect6, ebpf.AttachCGroupInet6Connect},
		{f.objs.MoatSendmsg4, ebpf.AttachCGroupUDP4Sendmsg},
		{f.objs.MoatSendmsg6, ebpf.AttachCGroupUDP6Sendmsg},
	}
	if opts.Bind != BindAny {
		progs = append(progs,
			attachment{f.objs.MoatBind4, ebpf.AttachCGroupInet4Bind},
			attachment{f.objs.MoatBind6, ebpf.AttachCGroupInet6Bind})
	}
	for _, a := range progs {
		err := rawAttach(int(f.cgroup.Fd()), a)
		if err != nil {
			derr := f.detachAll()
			return errors.Join(fmt.Errorf("bpf: attach %v to %s: %w", a.typ, f.cgroup.Name(), err), derr)
		}
		f.attached = append(f.attached, a)
	}
	return nil
}

// rawAttach is BPF_PROG_ATTACH with BPF_F_ALLOW_MULTI. Unlike a bpf_link,
// this attachment is owned by the cgroup, not by a file descriptor: it
// survives this process.
func rawAttach(cgroupFD int, a attachment) error {
	return link.RawAttachProgram(link.RawAttachProgramOptions{
		Target:  cgroupFD,
		Program: a.prog,
		Attach:  a.typ,
		Flags:   unix.BPF_F_ALLOW_MULTI,
	})
}

func (f *Filter) detachAll() error {
	var errs []error
	for i := len(f.attached) - 1; i >= 0; i-- {
		a := f.attached[i]
		err := link.RawDetachProgram(link.RawDetachProgramOptions{
			Target:  int(f.cgroup.Fd()),
			Program: a.prog,
			Attach:  a.typ,
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("bpf: detach %v from %s: %w", a.typ, f.cgroup.Name(), err))
			continue
		}
		f.attached = f.attached[:i]
	}
	return errors.Join(errs...)
}

// read turns ring buffer records into Events until the reader is closed.
func (f *Filter) read() {
	defer close(f.done)
	defer close(f.events)
	var rec ringbuf.Record
	for {
		if err := f.reader.ReadInto(&rec); err != nil {
			if errors.Is(err, ringbuf.ErrClosed) {
				return
			}
			if errors.Is(err, ringbuf.ErrFlushed) {
				select {
				case f.flushed <- struct{}{}:
				default:
				}
				continue
			}
			// Unexpected: stop reporting (the programs keep enforcing).
			return
		}
		ev, ok := decodeEvent(rec.RawSample)
		if !ok {
			f.lost.Add(1)
			continue
		}
		select {
		case f.events <- ev:
			f.sent.Add(1)
		default:
			f.lost.Add(1)
		}
	}
}

// eventSize is sizeof(struct event) in c/sockfilter.bpf.c.
const eventSize = 48

func decodeEvent(b []byte) (Event, bool) {
	if len(b) < eventSize {
		return Event{}, false
	}
	ne := binary.NativeEndian
	var raw sockfilterEvent
	raw.Tgid = ne.Uint32(b[0:])
	raw.Pid = ne.Uint32(b[4:])
	for i := range raw.Addr {
		raw.Addr[i] = ne.Uint32(b[8+4*i:])
	}
	raw.Port = ne.Uint16(b[24:])
	raw.Protocol = ne.Uint16(b[26:])
	raw.Family = b[28]
	raw.Op = b[29]
	raw.SockType = b[30]
	comm := b[32:48]
	ev := Event{
		Pid:   int(raw.Tgid),
		Tid:   int(raw.Pid),
		Op:    opName(raw.Op),
		Proto: protoName(raw.SockType, raw.Protocol),
	}
	for i, c := range comm {
		if c == 0 {
			comm = comm[:i]
			break
		}
	}
	ev.Comm = string(comm)
	if raw.Op != opSocket {
		var a [16]byte
		for i, w := range raw.Addr {
			ne.PutUint32(a[4*i:], w)
		}
		ev.Addr = netip.AddrPortFrom(netip.AddrFrom16(a).Unmap(), raw.Port)
	}
	return ev, true
}

// Events returns the refused attempts, in the order the kernel reported
// them. The channel is closed by Close. Events that arrive while the
// channel is full are dropped and counted by Dropped: read it promptly.
func (f *Filter) Events() <-chan Event { return f.events }

// Dropped returns how many refused attempts could not be reported (the
// ring buffer or the channel was full). The refusals themselves never
// depend on reporting. After Close it returns the count at Close.
func (f *Filter) Dropped() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return f.dropped + f.lost.Load()
	}
	return f.kernelDropped() + f.lost.Load()
}

func (f *Filter) kernelDropped() uint64 {
	var n uint64
	if f.objs.Dropped == nil || f.objs.Dropped.Get(&n) != nil {
		return 0
	}
	return n
}

// Drain makes every event the kernel has recorded so far available on
// Events, and returns how many events have been delivered on Events since
// Attach (so a consumer can wait until it has handled that many). Call it
// when the sandbox is gone and its last events must be reported.
func (f *Filter) Drain() uint64 {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return f.sent.Load()
	}
	err := f.reader.Flush()
	f.mu.Unlock()
	if err == nil {
		select {
		case <-f.flushed:
		case <-f.done:
		case <-time.After(time.Second):
		}
	}
	return f.sent.Load()
}

// Close stops reporting and releases this process's handles on the
// programs and maps. It does not detach: the programs keep enforcing on
// the cgroup until the cgroup is removed (remove it when the run is over;
// the kernel then frees them). This is the fail-closed default: moat
// exiting, crashing or closing a filter never opens the sandbox's network.
// Close is idempotent.
func (f *Filter) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.closeLocked()
}

func (f *Filter) closeLocked() error {
	if f.closed {
		return nil
	}
	f.closed = true
	f.dropped = f.kernelDropped()
	errs := []error{f.reader.Close()}
	<-f.done
	errs = append(errs, f.objs.Close(), f.cgroup.Close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("bpf: close filter: %w", err)
	}
	return nil
}

// Detach removes the programs from the cgroup, then closes the filter.
// Processes still in the cgroup are unfiltered from then on (apart from
// other filters attached to it), so call it only on an empty cgroup that
// will be reused, or after attaching a replacement. Detach after Close
// is an error: the handles it needs are gone.
func (f *Filter) Detach() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return errors.New("bpf: detach a closed filter")
	}
	err := f.detachAll()
	return errors.Join(err, f.closeLocked())
}
