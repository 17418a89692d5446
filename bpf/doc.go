// Package bpf confines a sandbox's network at the kernel's socket layer:
// eBPF programs attached to the sandbox's cgroup let its processes reach
// only the listed destinations (moat's proxy) and report every refused
// attempt. It applies only when moat runs as root; unprivileged processes
// cannot load these programs (kernel.unprivileged_bpf_disabled).
//
// # What it owns
//
//   - c/sockfilter.bpf.c: the programs, and the generated
//     sockfilter_bpfel.go and sockfilter_bpfel.o that embed them.
//   - [Attach], [Filter], [Event], [Supported]: loading, attaching,
//     reporting, probing.
//   - Subpackage cgroup: the per-run cgroup v2 directory the sandbox is
//     started in (CLONE_INTO_CGROUP) and its removal, including cgroups left
//     by runs that died.
//
// It does not decide policy: the caller passes the addresses (the proxy's
// listeners, and in shared-network mode the loopback ports the policy names
// explicitly) and [Options].
//
// # What the programs decide
//
//	cgroup/connect4, connect6  connect() of TCP, UDP and MPTCP sockets: a
//	                           stream socket (TCP, MPTCP) is allowed to the
//	                           allow-list, and with AllowLoopback any socket to
//	                           any loopback address; otherwise EPERM and an
//	                           event. TCP Fast Open (sendto with MSG_FASTOPEN)
//	                           passes here too.
//	cgroup/sendmsg4, sendmsg6  unconnected UDP sends (sendto, sendmsg with an
//	                           address): only with AllowLoopback, to loopback.
//	                           DNS and QUIC to the world are refused.
//	cgroup/bind4, bind6        bind(): Options.Listen, plus what Options.Bind
//	                           allows (not attached with BindAny).
//	cgroup/sock_create         socket(): TCP, MPTCP and UDP only. Raw sockets,
//	                           ICMP echo ("ping") sockets, SCTP and the rest
//	                           are refused, since their traffic does not all
//	                           pass the address hooks.
//
// The allow-list's entries are TCP services (the proxy's listeners, the
// loopback ports a shared-network policy names): its key has no protocol,
// so a UDP datagram never uses it, sent or connected (a datagram to an
// allowed TCP literal's port reached a UDP service there: found by an
// attack pass).
//
// Addresses are judged as 16 bytes with IPv4 as IPv4-mapped IPv6, so an
// AF_INET6 socket that names ::ffff:a.b.c.d meets exactly the rule of
// a.b.c.d, and events report such an address as IPv4. 0.0.0.0 and :: count
// as loopback for connect (they reach the local host) but not for bind
// (they listen on every interface). Allow-list addresses with an IPv6 zone
// are rejected: the hooks do not see scope ids.
//
// # Two ways to use it
//
// With a network namespace (the default launch path), the proxy's listeners
// are created inside the sandbox's namespace; the filter is a second layer
// behind the namespace:
//
//	bpf.Attach(group.Path(), proxyListeners, bpf.Options{AllowLoopback: true, Bind: bpf.BindAny})
//
// Loopback there is the sandbox's own, so allowing it costs nothing and
// keeps dev servers inside the sandbox reachable; UDP, raw and ping
// sockets and every non-loopback destination stay refused.
//
// Sharing the host's network (when no network namespace can be used but
// root can, for example in a privileged container on the host network),
// the filter is the enforcement: list the proxy's host listeners and the
// 127.0.0.1:PORT / [::1]:PORT entries the policy allows explicitly, leave
// AllowLoopback off (host loopback is every local service), and choose
// BindDeny or, for the policy's allowLocalBinding, BindLoopback.
//
// # Fail closed
//
// The programs are attached with the legacy BPF_PROG_ATTACH command and
// BPF_F_ALLOW_MULTI, not as bpf_links. A bpf_link is owned by its file
// descriptor and detaches when the last one closes, so a moat that crashed
// would leave the sandbox unfiltered (measured on the development machine;
// pinning the link would need a bpffs mount, which is not mounted there,
// and pins to clean up). A legacy attachment is owned by the cgroup: it
// stays when moat exits, crashes or calls [Filter.Close], and goes away
// only with [Filter.Detach] or when the cgroup is removed. So:
//
//   - Attach before the sandbox starts, with the cgroup empty, and start the
//     sandbox inside it (cgroup.Group.FD with SysProcAttr.UseCgroupFD): no
//     system call of the sandbox runs unfiltered.
//   - If moat dies, the sandbox's processes stay in the cgroup under the
//     filter; the next moat start calls cgroup.Manager.CleanStale, which
//     kills them and removes the cgroup (the kernel then frees the programs).
//   - With BPF_F_ALLOW_MULTI every program attached to the cgroup or an
//     ancestor runs and all must allow a call; a child cgroup cannot
//     override them. Two filters on one cgroup allow the intersection,
//     which lets a policy be replaced without a gap.
//   - A refusal never depends on reporting: when the ring buffer is full or
//     nobody reads it, the call is still refused and the lost event counted
//     ([Filter.Dropped]).
//   - Every rule is keyed by the id of the calling process's cgroup
//     (bpf_get_current_cgroup_id): the options in map configs, the
//     allow-list in map allowed. A process whose cgroup has no entry (one
//     below a filtered cgroup, or any after a shared filter's Close) is
//     refused everything.
//
// # One set of programs for many cgroups
//
// Because the rules are per cgroup, one loaded set serves many sandboxes:
// [Load] loads it (the verifier runs once), [Programs.Attach] puts a
// cgroup's rules in its maps and attaches its programs to the cgroup, and
// each filter's Events get only its own cgroup's refusals (the ring buffer
// is shared; its reader hands each event to the filter of its cgroup).
// moatd does this: a run pays 0.47-0.49 ms to attach and detach a loaded
// set against 2.8-3.4 ms to load one of its own ([Attach]), measured with
// `go test -bench Attach ./bpf/`. A shared filter's Close takes its rules
// out of the maps; a filter of its own set keeps them with its programs.
//
// # Known gaps
//
//   - The hooks judge a socket by the cgroup it was created in, not by the
//     process using it. A socket created outside the cgroup and handed to
//     the sandbox (an inherited fd, SCM_RIGHTS) is not filtered: close
//     every such fd before the sandbox's exec. Conversely, sockets the
//     sandbox creates stay filtered when it passes them out, so the proxy's
//     listeners made inside a network namespace cannot be used by moat to
//     connect anywhere (moat only accepts on them).
//   - listen() on a socket that was never bound picks an ephemeral port on
//     the wildcard address without passing the bind hook. In shared-network
//     mode a sandboxed process can therefore listen on a random port even
//     with BindDeny.
//   - Unix sockets are not handled here (the cgroup/connect_unix hooks need
//     Linux 6.7); the launcher's seccomp filter refuses socket(AF_UNIX).
//   - MPTCP is allowed because its first subflow meets the connect hooks
//     (tested). Subflows the kernel's path manager adds later, to addresses
//     an allowed peer announces, are charged to the sandbox's cgroup only on
//     kernels that attach subflows to their parent's cgroup (5.1x; not
//     verified on older ones).
//
// # Kernel and privileges
//
// Linux 5.8 or later (ring buffers; cgroup socket programs are older),
// CLONE_INTO_CGROUP needs 5.7, cgroup.kill 5.14 (package cgroup falls back
// to freezing and signalling). On kernels before 5.11, BPF memory is
// charged to RLIMIT_MEMLOCK: raise it in the caller if loading fails with
// EPERM there. [Supported] probes with cilium/ebpf's features package; only
// an error wrapping [ErrUnsupported] is conclusive. Little-endian
// architectures only (the object is generated for bpfel).
//
// # Regenerating the programs
//
// After editing c/sockfilter.bpf.c, run
//
//	go generate ./bpf/...
//
// which runs bpf2go (a tool dependency in go.mod) and needs clang,
// llvm-strip and llvm-objcopy (package llvm), and the libbpf-dev and linux-libc-dev headers (Debian:
// apt-get install clang llvm libbpf-dev). c/include holds three asm/ shims
// so generation does not depend on the host's multiarch include path.
// Commit the regenerated sockfilter_bpfel.go and sockfilter_bpfel.o: the
// build never needs clang.
//
// # Imports
//
// The standard library, github.com/cilium/ebpf, golang.org/x/sys/unix and
// bpf/cgroup. Never linux/, darwin/, netproxy/, runtime/, validators/,
// permissions/ or shell/ (deps_test.go checks): linux/ calls this package,
// not the other way round.
package bpf
