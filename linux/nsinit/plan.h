/* The plan moat's supervisor hands to stage 2, and the messages stage 2
 * sends back. Mirrored in plan.go; plan_test.go checks that both agree.
 *
 * A plan is "MOAT" + u32 version + u32 record count, then records:
 * u32 type, u32 payload length, payload. Integers are native-endian;
 * a string is u32 length + bytes (no NUL). */
#ifndef MOAT_PLAN_H
#define MOAT_PLAN_H

#include <stdint.h>

#define MOAT_PLAN_MAGIC "MOAT"
#define MOAT_PLAN_VERSION 1

/* argv[0] of stage 2 (with _MOAT_NSINIT=1 in its environment). */
#define MOAT_INIT_ARGV0 "moat-init"
#define MOAT_HOLD_ARGV0 "moat-hold"

/* Fixed file descriptors of stage 2 (os/exec ExtraFiles start at 3). */
#define MOAT_FD_PLAN 3 /* a pipe: the plan, then EOF */
#define MOAT_FD_SYNC 4 /* SOCK_SEQPACKET to the supervisor */
#define MOAT_FD_GO 5   /* a pipe: one byte when the command may exec (R_WAIT_GO) */
#define MOAT_FD_SESSION 7 /* MODE_SESSION: SOCK_SEQPACKET of command requests (struct moat_req) */

/* Record types. */
enum {
	R_HOSTNAME = 1,   /* str name */
	R_LO_UP = 2,      /* - */
	R_MOUNT = 3,      /* u32 op, then op fields (M_*) */
	R_LL_RULESET = 4, /* u32 abi, u64 handled_fs, u64 handled_net, u64 scoped */
	R_LL_PATH = 5,    /* u64 access, u32 flags (LLP_*), str path */
	R_SECCOMP = 6,    /* u32 flags (SC_*), u32 len, bytes (struct sock_filter[]) */
	R_EXEC = 7,       /* u32 flags (EX_*), str path, u32 argc, str*, u32 envc, str* */
	R_PTY = 8,        /* u32 fdmask (bit i: fd i is the terminal), u32 rows, u32 cols */
	R_SYSCTL = 9,     /* str path, str value */
	R_CWD = 10,       /* str path */
	R_KEYRING = 11,   /* - : join a new anonymous session keyring */
	R_RLIMIT = 12,    /* u32 resource, u64 soft, u64 hard */
	R_CLEANUP = 13,   /* u32 argc, str*: argv init execs after the supervisor died */
	R_LL_STDIO = 14,  /* u64 access: rules for the files behind fds 0-2 */
	R_LISTEN = 15,    /* u32 family, u32 port, str addr: a TCP listener for the supervisor */
	R_WAIT_GO = 16,   /* - : before exec, wait for a byte on MOAT_FD_GO (EOF: give up) */
	R_MODE = 17,      /* u32 flags (MODE_*): must come first */
	R_LL_PORT = 18,   /* u64 access, u64 port: a Landlock network rule */
	R_WATCH = 19,     /* u32 dir, str path: report opens of a hidden path (inotify IN_OPEN) */
};

/* Mount operations (R_MOUNT). */
enum {
	M_PRIVATE = 1,     /* - : make / rprivate */
	M_CLONE = 2,       /* u32 slot, u32 flags (MC_*), u64 set, u64 clr, str path */
	M_ATTACH_ROOT = 3, /* u32 slot, str staging dir */
	M_ATTACH = 4,      /* u32 slot, u32 flags (MV_OPTIONAL), str target */
	M_TMPFS = 5,       /* u32 mode, u32 uid, u32 gid, u32 flags (MV_OPTIONAL), u64 attr, u64 size,
			    * u64 nr_inodes (0: default), str target */
	M_PROC = 6,        /* u64 attr, str target */
	M_DEVPTS = 7,      /* str target */
	M_MKDIR = 8,       /* u32 mode, str path (parents created too) */
	M_MKFILE = 9,      /* u32 mode, str path */
	M_SYMLINK = 10,    /* str target, str linkpath */
	M_SETATTR = 11,    /* u32 recursive, u64 set, u64 clr, str path */
	M_BIND = 12,       /* u32 flags (MC_OPTIONAL), u64 set, u64 clr, str source, str target:
			    * a bind of a path of the new root, made once it is in place */
};

/* M_CLONE flags. */
#define MC_RECURSIVE 1u
#define MC_OPTIONAL 2u /* a missing source leaves the slot empty */

/* M_ATTACH and M_TMPFS flags. */
#define MV_OPTIONAL 1u /* a mask over a hidden path: a target that vanished since the plan
			 * was made is skipped, with every later mount step at or below it */

/* R_LL_PATH flags. */
#define LLP_OPTIONAL 1u /* skip a path that does not exist */

/* R_MODE flags. */
#define MODE_SESSION 2u /* a session: the command's process sets up the sandbox once, then
			  * starts each command a request on MOAT_FD_SESSION asks for */
#define MODE_NONS 1u /* no namespaces (best effort where user namespaces are refused):
		       * init is not pid 1 but a subreaper that kills every descendant */

/* R_SECCOMP flags. */
#define SC_LISTENER 1u /* ask for a user-notification fd and send it */

/* R_EXEC flags. */
#define EX_SEARCH 1u /* look the command up in PATH (from the new environment) */

/* Messages to the supervisor: a struct moat_msg, maybe with fds. */
enum {
	MSG_ERROR = 1,    /* a: record index, b: errno, text: what failed */
	MSG_EXECFAIL = 2, /* b: errno, text: the command */
	MSG_PTY = 3,      /* fd: the pty master */
	MSG_NOTIFY = 4,   /* fd: the seccomp user-notification listener */
	MSG_EXIT = 5,     /* a: wait status of the command */
	MSG_LISTEN = 6,   /* fds: the listeners of R_LISTEN, in order */
	MSG_CHILD = 7,    /* a: pid of the command in the sandbox's pid namespace */
	MSG_MOUNTED = 8,  /* the command's filesystem is in place */
	/* Session commands (MODE_SESSION): a is the request's id. */
	MSG_CMD_STARTED = 9,  /* b: pid of the command */
	MSG_CMD_EXIT = 10,    /* b: wait status (the command and all it started are gone),
	                       * text: the CPU time they used, decimal microseconds */
	MSG_CMD_NOTIFY = 11,  /* fd: the command's seccomp user-notification listener */
	MSG_CMD_EXECFAIL = 12, /* b: errno, text: the command */
	MSG_CMD_ERROR = 13,   /* b: errno, text: what failed before the command ran */
	MSG_WATCH = 14,       /* a: the R_WATCH record, b: its inotify watch descriptor */
	MSG_INOTIFY = 15,     /* fd: the inotify instance of the R_WATCH records (before MSG_MOUNTED) */
	MSG_USERNS = 16,      /* the user namespace exists: the supervisor writes its maps and answers (struct moat_ids) */
	MSG_SPARE = 17,       /* a spare's init waits for its descriptors (REQ_STDIO) */
};

/* The supervisor's answer to MSG_USERNS, on MOAT_FD_SYNC: the ids stage 2
 * takes in its user namespace (uid -1: keep its own), with up to
 * MOAT_MAX_JOINS descriptors (SCM_RIGHTS) of the `tasks` files of the run's
 * cgroup v1 hierarchies, which the supervisor opened: stage 2 writes "0" to
 * each, moving itself. */
#define MOAT_MAX_GROUPS 64
#define MOAT_MAX_JOINS 4
struct moat_ids {
	int32_t uid, gid;
	uint32_t ngroups;
	uint32_t groups[MOAT_MAX_GROUPS];
};

/* Requests on MOAT_FD_SESSION (supervisor to the session): a struct
 * moat_req, then for REQ_RUN a payload of plan records (R_CWD, R_EXEC), with
 * the command's descriptors 0, 1, 2 (and 3 if REQ_FD3) as SCM_RIGHTS. */
enum {
	REQ_RUN = 1,    /* start a command */
	REQ_SIGNAL = 2, /* sig: deliver it (SIGKILL ends the command and all it started) */
	REQ_CONNECT = 3, /* on MOAT_FD_SYNC, to init: connect a socket for the command (below) */
	REQ_STDIO = 4,   /* on MOAT_FD_SYNC, to a spare's init, first: its descriptors 0, 1, 2 (below) */
};
/* A spare stage 2 (linux/spare.go; _MOAT_SPARE=1) is started before its run,
 * with /dev/null for stdio: it makes its namespaces and forks init as any
 * stage 2 does, then init says MSG_SPARE and waits for a struct moat_req of
 * type REQ_STDIO with the run's descriptors 0, 1 and 2 (SCM_RIGHTS), then
 * MOAT_FD_GO's if flags has REQ_STDIO_GO and the cgroup's lock (fd 6) if
 * REQ_STDIO_LOCK, before it reads the plan. EOF instead: the spare was
 * discarded, and it exits. */
#define REQ_STDIO_GO 2u
#define REQ_STDIO_LOCK 4u
#define MOAT_FD_LOCK 6 /* the run's cgroup lock, kept by init (linux/launch.go) */
#define REQ_FD3 1u /* flags: a fourth descriptor becomes the command's fd 3 */
struct moat_req {
	unsigned int type;
	unsigned int id;
	unsigned int sig;
	unsigned int flags;
};

/* A connect the unix-socket broker allowed is made inside the sandbox, so
 * that the peer a server sees (SO_PEERCRED, SO_PEERPIDFD) is confined: the
 * supervisor sends init, on MOAT_FD_SYNC, a struct moat_req of type
 * REQ_CONNECT with three descriptors (SCM_RIGHTS): the command's socket, an
 * O_PATH descriptor of the socket it may connect to, and one end of a
 * socketpair. A child of init connects the one to the other and sends the
 * errno (an int, 0: connected) on the socketpair, or init sends EAGAIN when
 * MOAT_MAX_CONNECTORS are at work. A connect still waiting (a full backlog)
 * after MOAT_CONNECT_TIMEOUT seconds fails with ETIMEDOUT. */
#define MOAT_MAX_CONNECTORS 16
#define MOAT_CONNECT_TIMEOUT 30

#define MOAT_MSG_TEXT 480
struct moat_msg {
	unsigned int type;
	int a;
	int b;
	char text[MOAT_MSG_TEXT];
};

#endif
