// Cgroup socket filter for moat sandboxes.
//
// Attached to a sandbox's cgroup, these programs decide every inet
// connect(), unconnected UDP sendmsg(), bind() and socket() of the processes
// in it. Every rule is looked up by the id of the calling process's cgroup
// (or, for connect() and sendmsg() by a process in no sandbox, of the
// cgroup that made the socket: `owners`),
// so one loaded set of programs serves many sandboxes (moatd loads it once
// and attaches it to each run's cgroup): `configs` holds each cgroup's
// options, `allowed` its destinations. A process whose cgroup has no entry
// in `configs` is refused everything.
//
// A destination is allowed when its (cgroup, address, port) is in
// `allowed` (moat's proxy listeners and the loopback ports the policy
// names: TCP services) and the call is a connect() of a stream socket (TCP,
// MPTCP, TCP Fast Open), never a UDP datagram; or, when the cgroup's
// allow_loopback is set, when it is a loopback address (any protocol). A bind() is allowed to the map's ALLOW_BIND entries and
// as the cgroup's bind_policy says. Everything else is refused with EPERM
// and reported on the `events` ring buffer, with the cgroup's id. The
// verdict never depends on the report: when the ring buffer is full, or
// nobody reads it any more, the attempt is still refused and only counted
// (in the cgroup's config, or in `dropped` without one).
//
// Addresses are judged in one form: IPv4 addresses become IPv4-mapped IPv6
// addresses (::ffff:a.b.c.d), so an AF_INET6 socket that names a mapped
// address meets exactly the rule of the IPv4 address inside it.
//
// Regenerate with `go generate ./bpf/...` (needs clang and libbpf-dev).

//go:build ignore

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define AF_INET 2
#define AF_INET6 10
#define SOCK_STREAM 1
#define SOCK_DGRAM 2
#define IPPROTO_TCP 6
#define IPPROTO_UDP 17
#define IPPROTO_MPTCP 262

// Operations reported in event.op; bpf/filter_linux.go names them.
enum {
	OP_CONNECT = 1,
	OP_SENDMSG = 2,
	OP_BIND = 3,
	OP_SOCKET = 4,
};

// Flags in an `allowed` map value: what the destination may be used for.
enum {
	ALLOW_CONNECT = 1, // connect() of a stream socket (TCP, MPTCP) to it
	ALLOW_BIND = 2,    // bind() to it, whatever bind_policy says
};

// Values of bind_policy; the Go BindPolicy constants match.
enum {
	BIND_DENY = 0,     // every bind is refused (except allowed destinations)
	BIND_LOOPBACK = 1, // binds to loopback addresses are allowed, wildcard is not
	BIND_ANY = 2,      // bind programs are not attached at all
};

// dest_key is an allowed destination of one cgroup: the cgroup's id, the
// address in network byte order, IPv4 as ::ffff:a.b.c.d, and the port in
// host byte order.
struct dest_key {
	__u64 cgid;
	__u32 addr[4];
	__u16 port;
	__u16 pad;
	__u32 pad2;
};

// run_config is one cgroup's options.
struct run_config {
	__u8 allow_loopback; // connect and sendmsg to loopback are allowed
	__u8 bind_policy;    // BIND_*
	__u8 pad[6];
	__u64 dropped;       // refusals not reported: the ring buffer was full
};

// event is one refused attempt.
struct event {
	__u32 tgid;     // process id
	__u32 pid;      // thread id
	__u32 addr[4];  // as dest_key.addr; zero for OP_SOCKET
	__u16 port;     // host byte order
	__u16 protocol; // IPPROTO_* (IPPROTO_MPTCP is 262)
	__u8 family;    // AF_INET or AF_INET6: the hook (or socket) family
	__u8 op;        // OP_*
	__u8 sock_type; // SOCK_*
	__u8 pad;
	char comm[16];  // task name, empty when the kernel lacks the helper here
	__u64 cgid;     // the caller's cgroup
};

// owners holds the id of the cgroup that made each socket of a sandbox
// (moat_sock_create records it). A socket connected by a process in no
// sandbox's cgroup (moat's unix-socket broker connects the command's
// sockets itself, so that no other thread of the command can swap the
// descriptor between the check and the connect) is judged by the rules of
// the sandbox that made it, as if the command had connected it.
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} owners SEC(".maps");

// Set from Go before loading (rewritten in .rodata, frozen by the loader).
volatile const __u8 have_comm = 0;

// Refusals of processes in a cgroup without a config that could not be
// reported because the ring buffer was full.
__u64 dropped = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct dest_key);
	__type(value, __u8); // ALLOW_* flags
	__uint(max_entries, 1); // sized from Go
} allowed SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __u64); // cgroup id
	__type(value, struct run_config);
	__uint(max_entries, 1); // sized from Go
} configs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 16);
} events SEC(".maps");

// Emits BTF for struct event, so bpf2go can generate its Go twin (-type).
const struct event *event_type __attribute__((unused));

static __always_inline int is_mapped_v4(const struct dest_key *k)
{
	return k->addr[0] == 0 && k->addr[1] == 0 && k->addr[2] == bpf_htonl(0x0000ffff);
}

// is_loopback reports 127.0.0.0/8 and ::1, and when wildcard is set also
// 0.0.0.0 and ::, which a connect() reaches on the local host.
static __always_inline int is_loopback(const struct dest_key *k, int wildcard)
{
	if (is_mapped_v4(k)) {
		__u32 a = bpf_ntohl(k->addr[3]);
		return (a >> 24) == 127 || (wildcard && a == 0);
	}
	if (k->addr[0] != 0 || k->addr[1] != 0 || k->addr[2] != 0)
		return 0;
	return k->addr[3] == bpf_htonl(1) || (wildcard && k->addr[3] == 0);
}

static __always_inline void report(struct run_config *cfg, __u64 cgid, __u8 op, __u8 family,
				   __u16 protocol, __u8 type, const struct dest_key *k)
{
	struct event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		if (cfg)
			__sync_fetch_and_add(&cfg->dropped, 1);
		else
			__sync_fetch_and_add(&dropped, 1);
		return;
	}
	e->cgid = cgid;
	__u64 id = bpf_get_current_pid_tgid();
	e->tgid = id >> 32;
	e->pid = (__u32)id;
	e->addr[0] = k->addr[0];
	e->addr[1] = k->addr[1];
	e->addr[2] = k->addr[2];
	e->addr[3] = k->addr[3];
	e->port = k->port;
	e->family = family;
	e->protocol = protocol;
	e->op = op;
	e->sock_type = type;
	e->pad = 0;
	__builtin_memset(e->comm, 0, sizeof(e->comm));
	if (have_comm)
		bpf_get_current_comm(e->comm, sizeof(e->comm));
	bpf_ringbuf_submit(e, 0);
}

static __always_inline void destination(struct bpf_sock_addr *ctx, int v6, __u64 cgid, struct dest_key *k)
{
	k->cgid = cgid;
	k->pad = 0;
	k->pad2 = 0;
	k->port = bpf_ntohs((__u16)ctx->user_port);
	if (v6) {
		k->addr[0] = ctx->user_ip6[0];
		k->addr[1] = ctx->user_ip6[1];
		k->addr[2] = ctx->user_ip6[2];
		k->addr[3] = ctx->user_ip6[3];
	} else {
		k->addr[0] = 0;
		k->addr[1] = 0;
		k->addr[2] = bpf_htonl(0x0000ffff);
		k->addr[3] = ctx->user_ip4;
	}
}

// config_of finds the rules for a call on sk: the calling process's
// cgroup's, or, for a caller in no sandbox's cgroup, those of the cgroup
// that made the socket.
static __always_inline struct run_config *config_of(struct bpf_sock_addr *ctx, __u64 *cgid)
{
	*cgid = bpf_get_current_cgroup_id();
	struct run_config *cfg = bpf_map_lookup_elem(&configs, cgid);
	if (cfg)
		return cfg;
	struct bpf_sock *sk = ctx->sk;
	if (!sk)
		return 0;
	__u64 *owner = bpf_sk_storage_get(&owners, sk, 0, 0);
	if (!owner)
		return 0;
	*cgid = *owner;
	return bpf_map_lookup_elem(&configs, cgid);
}

// judge decides a connect() or sendmsg(): 1 lets it through, 0 makes the
// system call fail with EPERM.
static __always_inline int judge(struct bpf_sock_addr *ctx, int v6, __u8 op)
{
	struct dest_key k;
	__u8 *flags;
	__u64 cgid;
	struct run_config *cfg = config_of(ctx, &cgid);

	destination(ctx, v6, cgid, &k);
	if (cfg) {
		// The allow-list holds TCP services (the proxy's listeners, the
		// loopback ports the policy names). The key has no protocol, so
		// only a stream socket's connect may use it: a UDP datagram to an
		// allowed port (sendmsg, or connect of a UDP socket) reached
		// whatever listened on UDP there (found by an attack pass).
		if (op == OP_CONNECT && ctx->type == SOCK_STREAM) {
			flags = bpf_map_lookup_elem(&allowed, &k);
			if (flags && (*flags & ALLOW_CONNECT))
				return 1;
		}
		if (cfg->allow_loopback && is_loopback(&k, 1))
			return 1;
	}
	report(cfg, cgid, op, v6 ? AF_INET6 : AF_INET, ctx->protocol, ctx->type, &k);
	return 0;
}

static __always_inline int judge_bind(struct bpf_sock_addr *ctx, int v6)
{
	struct dest_key k;
	__u8 *flags;
	__u64 cgid = bpf_get_current_cgroup_id();
	struct run_config *cfg = bpf_map_lookup_elem(&configs, &cgid);

	destination(ctx, v6, cgid, &k);
	if (cfg) {
		flags = bpf_map_lookup_elem(&allowed, &k);
		if (flags && (*flags & ALLOW_BIND))
			return 1;
		if (cfg->bind_policy == BIND_ANY)
			return 1;
		if (cfg->bind_policy == BIND_LOOPBACK && is_loopback(&k, 0))
			return 1;
	}
	report(cfg, cgid, OP_BIND, v6 ? AF_INET6 : AF_INET, ctx->protocol, ctx->type, &k);
	return 0;
}

SEC("cgroup/connect4")
int moat_connect4(struct bpf_sock_addr *ctx)
{
	return judge(ctx, 0, OP_CONNECT);
}

SEC("cgroup/connect6")
int moat_connect6(struct bpf_sock_addr *ctx)
{
	return judge(ctx, 1, OP_CONNECT);
}

SEC("cgroup/sendmsg4")
int moat_sendmsg4(struct bpf_sock_addr *ctx)
{
	return judge(ctx, 0, OP_SENDMSG);
}

SEC("cgroup/sendmsg6")
int moat_sendmsg6(struct bpf_sock_addr *ctx)
{
	return judge(ctx, 1, OP_SENDMSG);
}

SEC("cgroup/bind4")
int moat_bind4(struct bpf_sock_addr *ctx)
{
	return judge_bind(ctx, 0);
}

SEC("cgroup/bind6")
int moat_bind6(struct bpf_sock_addr *ctx)
{
	return judge_bind(ctx, 1);
}

// moat_sock_create lets the sandbox create TCP, MPTCP and UDP sockets
// only: those whose every way out passes the connect, sendmsg and bind hooks
// above. The others either bypass them (ICMP "ping" sockets send to any host
// without a sendmsg hook; SCTP has paths of its own) or need privileges the
// sandbox should not have (raw sockets). MPTCP stays allowed because its
// connect runs the connect hooks (the tests check it) and Go programs open
// MPTCP listeners by default (they fall back to TCP, but each refusal would
// be a spurious violation).
SEC("cgroup/sock_create")
int moat_sock_create(struct bpf_sock *sk)
{
	__u32 type = sk->type;
	__u32 protocol = sk->protocol;
	__u64 cgid = bpf_get_current_cgroup_id();
	struct run_config *cfg = bpf_map_lookup_elem(&configs, &cgid);

	if (cfg && ((type == SOCK_STREAM && (protocol == IPPROTO_TCP || protocol == IPPROTO_MPTCP)) ||
		    (type == SOCK_DGRAM && protocol == IPPROTO_UDP))) {
		__u64 *owner = bpf_sk_storage_get(&owners, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
		if (owner)
			*owner = cgid;
		return 1;
	}

	struct dest_key none = {};
	report(cfg, cgid, OP_SOCKET, sk->family, protocol, type, &none);
	return 0;
}

char __license[] SEC("license") = "Dual MIT/GPL";
