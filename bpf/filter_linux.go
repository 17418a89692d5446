//go:build linux && (386 || amd64 || arm || arm64 || loong64 || mips64le || mipsle || ppc64le || riscv64)

// The architectures above are the little-endian ones bpf2go generated
// sockfilter_bpfel.go for; filter_other.go covers the rest.

package bpf

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strconv"
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
		{"bpf_get_current_cgroup_id in cgroup sock_addr programs", func() error {
			return features.HaveProgramHelper(ebpf.CGroupSockAddr, asm.FnGetCurrentCgroupId)
		}},
		{"bpf_get_current_cgroup_id in cgroup sock programs", func() error {
			return features.HaveProgramHelper(ebpf.CGroupSock, asm.FnGetCurrentCgroupId)
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

// Programs is one loaded set of the filter's programs and maps. Every rule
// in it is keyed by the id of the calling process's cgroup, so filters on
// many cgroups can share one set: a supervisor that starts many sandboxes
// (moatd) loads it once and attaches it to each run's cgroup, paying the
// kernel's verifier once instead of at every run. [Attach] loads a set of
// its own for one filter.
type Programs struct {
	objs    sockfilterObjects
	bind    bool // the bind programs are loaded
	reader  *ringbuf.Reader
	done    chan struct{}
	flushed chan struct{} // the read loop reached a Flush
	drainMu sync.Mutex
	unknown atomic.Uint64 // events of cgroups with no filter here

	mu      sync.Mutex
	filters map[uint64]*Filter // by cgroup id
	closed  bool
}

// LoadOptions size a set of programs.
type LoadOptions struct {
	// EventBuffer is the size of the ring buffer all its filters share,
	// in bytes: a power of two and a multiple of the page size. If 0,
	// 64 KiB (about 1100 events waiting to be read).
	EventBuffer int
	// Filters is how many cgroups can have a filter from the set at once
	// (default 1).
	Filters int
	// Destinations is how many allow-list entries its filters can have
	// together (default 64).
	Destinations int
	// NoBind leaves the bind programs out: filters from the set must then
	// use BindAny (each program loaded costs 0.1-0.3 ms).
	NoBind bool
}

// Load loads a set of the programs, which [Programs.Attach] attaches to
// cgroups. Close releases this process's handles on it; programs attached
// to a cgroup stay there, with their maps, until the cgroup is removed.
func Load(opts LoadOptions) (*Programs, error) {
	if n := opts.EventBuffer; n != 0 && (n < 4096 || n&(n-1) != 0) {
		return nil, fmt.Errorf("bpf: event buffer of %d bytes: want a power of two, at least a page", n)
	}
	if opts.Filters < 0 || opts.Destinations < 0 {
		return nil, errors.New("bpf: negative map sizes")
	}
	p := &Programs{bind: !opts.NoBind, filters: map[uint64]*Filter{}}
	spec, err := loadSockfilter()
	if err != nil {
		return nil, fmt.Errorf("bpf: %w", err)
	}
	if err := configure(spec, opts); err != nil {
		return nil, err
	}
	if err := loadObjects(spec, &p.objs, p.bind); err != nil {
		var verr *ebpf.VerifierError
		if errors.As(err, &verr) {
			return nil, fmt.Errorf("bpf: load programs: %+v", verr)
		}
		return nil, fmt.Errorf("bpf: load programs: %w", err)
	}
	p.reader, err = ringbuf.NewReader(p.objs.Events)
	if err != nil {
		p.objs.Close()
		return nil, fmt.Errorf("bpf: ring buffer reader: %w", err)
	}
	p.done = make(chan struct{})
	p.flushed = make(chan struct{}, 1)
	go p.read()
	return p, nil
}

// Filter is the filter of one cgroup: a set of programs attached to it,
// with the cgroup's rules in the set's maps.
type Filter struct {
	progs    *Programs
	own      bool // the set is this filter's alone (Attach): Close closes it
	cgroup   *os.File
	cgid     uint64
	keys     []sockfilterDestKey
	listen   []netip.AddrPort // Options.Listen, kept for SetAllowed
	attached []attachment
	events   chan Event
	chClosed bool // events is closed (guarded by progs.mu)
	lost     atomic.Uint64
	sent     atomic.Uint64 // events delivered on the channel

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

// Attach loads a set of the programs for this filter alone and attaches it
// to the cgroup2 directory cgroupDir. From then on, the processes in that
// cgroup may connect() TCP (and MPTCP) sockets only to the addresses in
// allow, and with opts.AllowLoopback connect any socket and send UDP
// datagrams to loopback (no UDP reaches an address in allow: its entries
// are TCP services); they may
// bind() as opts says, and create only TCP and UDP sockets. Everything else
// fails with EPERM and is reported on Events. A process in a cgroup below
// it (which the filter's rules do not name) is refused everything.
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
	// Room for what live updates (SetAllowed) may add, not only for the
	// entries of now.
	p, err := Load(LoadOptions{EventBuffer: opts.EventBuffer, Filters: 1, Destinations: MaxDestinations, NoBind: opts.Bind == BindAny})
	if err != nil {
		return nil, err
	}
	opts.EventBuffer = 0
	f, err := p.attach(cgroupDir, entries, opts)
	if err != nil {
		p.Close()
		return nil, err
	}
	f.own = true
	return f, nil
}

// Attach attaches the set to the cgroup2 directory cgroupDir, with the
// rules of allow and opts (as [Attach] says) for that cgroup. opts'
// EventBuffer must be 0: the set's buffer is shared ([LoadOptions]).
// Processes in the cgroup are refused everything until Attach returns, and
// again after the filter's Close.
func (p *Programs) Attach(cgroupDir string, allow []netip.AddrPort, opts Options) (*Filter, error) {
	if err := checkOptions(opts); err != nil {
		return nil, err
	}
	if opts.EventBuffer != 0 {
		return nil, errors.New("bpf: a set's filters share its event buffer: set LoadOptions.EventBuffer")
	}
	entries, err := allowEntries(allow, opts.Listen)
	if err != nil {
		return nil, err
	}
	return p.attach(cgroupDir, entries, opts)
}

func (p *Programs) attach(cgroupDir string, entries map[destKey]uint8, opts Options) (*Filter, error) {
	if opts.Bind != BindAny && !p.bind {
		return nil, fmt.Errorf("bpf: bind policy %v needs the bind programs, which this set was loaded without", opts.Bind)
	}
	dir, err := openCgroup(cgroupDir)
	if err != nil {
		return nil, err
	}
	id, err := cgroupID(dir)
	if err != nil {
		dir.Close()
		return nil, err
	}
	f := &Filter{progs: p, cgroup: dir, cgid: id, events: make(chan Event, eventQueue), listen: opts.Listen}
	p.mu.Lock()
	switch {
	case p.closed:
		err = errors.New("bpf: attach from a closed set of programs")
	case p.filters[id] != nil:
		err = fmt.Errorf("bpf: %s already has a filter from this set of programs", cgroupDir)
	default:
		p.filters[id] = f // its events are delivered from now on
	}
	p.mu.Unlock()
	if err != nil {
		dir.Close()
		return nil, err
	}
	if err := f.fill(entries, opts); err != nil {
		f.unregister()
		f.removeRules()
		dir.Close()
		return nil, err
	}
	if err := f.attachAll(opts); err != nil {
		f.unregister()
		f.removeRules()
		dir.Close()
		return nil, err
	}
	return f, nil
}

// cgroupID is the id of the cgroup2 directory dir, as
// bpf_get_current_cgroup_id returns it: its kernfs file handle.
func cgroupID(dir *os.File) (uint64, error) {
	h, _, err := unix.NameToHandleAt(int(dir.Fd()), "", unix.AT_EMPTY_PATH)
	if err == nil && h.Size() == 8 {
		return binary.NativeEndian.Uint64(h.Bytes()), nil
	}
	var st unix.Stat_t
	if ferr := unix.Fstat(int(dir.Fd()), &st); ferr != nil || strconv.IntSize < 64 {
		return 0, fmt.Errorf("bpf: the id of cgroup %s: %v", dir.Name(), errors.Join(err, ferr))
	}
	return st.Ino, nil // kernfs: the inode number is the id on 64-bit kernels
}

// fill puts the cgroup's rules in the set's maps: the allow-list, then
// the options (the entry that lets anything through).
func (f *Filter) fill(entries map[destKey]uint8, opts Options) error {
	for k, flags := range entries {
		key := sockfilterDestKey{Cgid: f.cgid, Port: k.port}
		for i := range key.Addr {
			key.Addr[i] = binary.NativeEndian.Uint32(k.addr[4*i:])
		}
		if err := f.progs.objs.Allowed.Update(&key, flags, ebpf.UpdateNoExist); err != nil {
			return fmt.Errorf("bpf: fill allow-list: %w", f.mapFull(err))
		}
		f.keys = append(f.keys, key)
	}
	cfg := sockfilterRunConfig{BindPolicy: uint8(opts.Bind)}
	if opts.AllowLoopback {
		cfg.AllowLoopback = 1
	}
	if err := f.progs.objs.Configs.Update(&f.cgid, &cfg, ebpf.UpdateNoExist); err != nil {
		return fmt.Errorf("bpf: the cgroup's options: %w", err)
	}
	return nil
}

// SetAllowed replaces the destinations the cgroup's processes may reach
// (live network updates): what is no longer allowed is deleted from the
// set's allow-list, what is new is added, up to [MaxDestinations] with the
// Listen addresses. An error leaves some of the change made: the caller
// should treat the update as failed.
func (f *Filter) SetAllowed(allow []netip.AddrPort) error {
	entries, err := allowEntries(allow, f.listen)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return errors.New("bpf: the filter is closed")
	}
	want := make(map[sockfilterDestKey]uint8, len(entries))
	for k, flags := range entries {
		key := sockfilterDestKey{Cgid: f.cgid, Port: k.port}
		for i := range key.Addr {
			key.Addr[i] = binary.NativeEndian.Uint32(k.addr[4*i:])
		}
		want[key] = flags
	}
	var keep []sockfilterDestKey
	for i := range f.keys {
		if _, ok := want[f.keys[i]]; ok {
			keep = append(keep, f.keys[i])
			continue
		}
		if err := f.progs.objs.Allowed.Delete(&f.keys[i]); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			f.keys = append(keep, f.keys[i:]...)
			return fmt.Errorf("bpf: withdraw a destination: %w", err)
		}
	}
	f.keys = keep
	for key, flags := range want {
		if err := f.progs.objs.Allowed.Update(&key, flags, ebpf.UpdateAny); err != nil {
			return fmt.Errorf("bpf: allow a destination: %w", f.mapFull(err))
		}
		if !slices.Contains(f.keys, key) {
			f.keys = append(f.keys, key)
		}
	}
	return nil
}

// mapFull names the set's allow-list size when err is the kernel's "map
// full" (E2BIG, "argument list too long"), which says nothing of a cap.
func (f *Filter) mapFull(err error) error {
	if !errors.Is(err, unix.E2BIG) {
		return err
	}
	return fmt.Errorf("the allow-list map of this set of programs is full (%d destinations for all its filters together): %w",
		f.progs.objs.Allowed.MaxEntries(), err)
}

// removeRules deletes the cgroup's rules from the set's maps: its
// processes are refused everything from then on.
func (f *Filter) removeRules() error {
	var errs []error
	if err := f.progs.objs.Configs.Delete(&f.cgid); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
		errs = append(errs, err)
	}
	for i := range f.keys {
		if err := f.progs.objs.Allowed.Delete(&f.keys[i]); err != nil && !errors.Is(err, ebpf.ErrKeyNotExist) {
			errs = append(errs, err)
		}
	}
	f.keys = nil
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("bpf: remove the rules of %s: %w", f.cgroup.Name(), err)
	}
	return nil
}

// unregister stops delivering the cgroup's events and closes Events.
func (f *Filter) unregister() {
	p := f.progs
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.filters[f.cgid] == f {
		delete(p.filters, f.cgid)
	}
	if !f.chClosed {
		f.chClosed = true
		close(f.events)
	}
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

// configure writes the set's constants and map sizes into the spec.
func configure(spec *ebpf.CollectionSpec, opts LoadOptions) error {
	vs, ok := spec.Variables[sockfilterVarHaveComm]
	if !ok {
		return fmt.Errorf("bpf: object has no variable %s", sockfilterVarHaveComm)
	}
	var comm uint8
	if haveComm() {
		comm = 1
	}
	if err := vs.Set(comm); err != nil {
		return fmt.Errorf("bpf: set %s: %w", sockfilterVarHaveComm, err)
	}
	spec.Maps[sockfilterMapAllowed].MaxEntries = uint32(cmp.Or(opts.Destinations, 64))
	spec.Maps[sockfilterMapConfigs].MaxEntries = uint32(cmp.Or(opts.Filters, 1))
	size := cmp.Or(opts.EventBuffer, defaultEventBuffer)
	if size%os.Getpagesize() != 0 {
		return fmt.Errorf("bpf: event buffer of %d bytes is not a multiple of the page size", size)
	}
	spec.Maps[sockfilterMapEvents].MaxEntries = uint32(size)
	return nil
}

// attachAll attaches the programs, or none of them.
func (f *Filter) attachAll(opts Options) error {
	o := &f.progs.objs
	progs := []attachment{
		{o.MoatSockCreate, ebpf.AttachCGroupInetSockCreate},
		{o.MoatConnect4, ebpf.AttachCGroupInet4Connect},
		{o.MoatConnect6, ebpf.AttachCGroupInet6Connect},
		{o.MoatSendmsg4, ebpf.AttachCGroupUDP4Sendmsg},
		{o.MoatSendmsg6, ebpf.AttachCGroupUDP6Sendmsg},
	}
	if opts.Bind != BindAny {
		progs = append(progs,
			attachment{o.MoatBind4, ebpf.AttachCGroupInet4Bind},
			attachment{o.MoatBind6, ebpf.AttachCGroupInet6Bind})
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

// read turns ring buffer records into Events of their cgroup's filter
// until the reader is closed.
func (p *Programs) read() {
	defer close(p.done)
	var rec ringbuf.Record
	for {
		if err := p.reader.ReadInto(&rec); err != nil {
			if errors.Is(err, ringbuf.ErrClosed) {
				return
			}
			if errors.Is(err, ringbuf.ErrFlushed) {
				select {
				case p.flushed <- struct{}{}:
				default:
				}
				continue
			}
			// Unexpected: stop reporting (the programs keep enforcing).
			return
		}
		ev, cgid, ok := decodeEvent(rec.RawSample)
		p.mu.Lock()
		f := p.filters[cgid]
		switch {
		case f == nil:
			p.unknown.Add(1)
		case !ok:
			f.lost.Add(1)
		default:
			select {
			case f.events <- ev:
				f.sent.Add(1)
			default:
				f.lost.Add(1)
			}
		}
		p.mu.Unlock()
	}
}

// eventSize is sizeof(struct event) in c/sockfilter.bpf.c.
const eventSize = 56

// decodeEvent decodes a record: the event and its cgroup's id.
func decodeEvent(b []byte) (Event, uint64, bool) {
	if len(b) < eventSize {
		return Event{}, 0, false
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
	cgid := ne.Uint64(b[48:])
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
	return ev, cgid, true
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
	var cfg sockfilterRunConfig
	if f.progs.objs.Configs == nil || f.progs.objs.Configs.Lookup(&f.cgid, &cfg) != nil {
		return 0
	}
	return cfg.Dropped
}

// Drain makes every event the kernel has recorded so far available on
// Events, and returns how many events have been delivered on Events since
// Attach (so a consumer can wait until it has handled that many). Call it
// when the sandbox is gone and its last events must be reported.
func (f *Filter) Drain() uint64 {
	f.mu.Lock()
	closed := f.closed
	f.mu.Unlock()
	if !closed {
		f.progs.drain()
	}
	return f.sent.Load()
}

// drain waits until the read loop has read what the ring buffer holds now
// (a second at most).
func (p *Programs) drain() {
	p.drainMu.Lock()
	defer p.drainMu.Unlock()
	select { // a flush that an earlier drain gave up waiting for
	case <-p.flushed:
	default:
	}
	if p.reader.Flush() != nil {
		return
	}
	select {
	case <-p.flushed:
	case <-p.done:
	case <-time.After(time.Second):
	}
}

// Close stops reporting and releases this process's handles. It does not
// detach: the cgroup stays filtered until it is removed, the fail-closed
// default (moat exiting, crashing or closing a filter never opens the
// sandbox's network). A filter of its own set ([Attach]) keeps its rules
// with the programs; a filter from a shared set ([Programs.Attach]) takes
// its rules out of the set's maps, so that the cgroup's processes, if any
// are left, are refused everything. Close is idempotent.
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
	f.unregister()
	var errs []error
	if f.own {
		errs = append(errs, f.progs.Close())
	} else if !f.progs.isClosed() {
		errs = append(errs, f.removeRules())
	}
	errs = append(errs, f.cgroup.Close())
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

func (p *Programs) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// Unknown returns how many refusals the set reported for cgroups it has no
// filter on (a process in a cgroup below a filtered one, say).
func (p *Programs) Unknown() uint64 { return p.unknown.Load() }

// Close stops reporting and releases this process's handles on the set.
// Its filters' attachments stay, enforcing with the rules they have. Close
// is idempotent.
func (p *Programs) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	for id, f := range p.filters {
		delete(p.filters, id)
		if !f.chClosed {
			f.chClosed = true
			close(f.events)
		}
	}
	p.mu.Unlock()
	errs := []error{p.reader.Close()}
	<-p.done
	errs = append(errs, p.objs.Close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("bpf: close programs: %w", err)
	}
	return nil
}
