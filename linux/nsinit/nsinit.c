//go:build linux && cgo

/* Stage 2 of moat's launch path, in C, before the Go runtime starts (the
 * runc nsexec pattern): a second Go runtime start would cost ~2 ms of the
 * ~5 ms budget, and Go cannot fork without exec.
 *
 * The supervisor execs /proc/self/exe with _MOAT_NSINIT=1 in new user, pid,
 * net, ipc and uts namespaces. This constructor then runs as pid 1 (init):
 * it brings up lo, makes itself non-dumpable and forks the command. The
 * command's process unshares a mount namespace, builds the sandbox's
 * filesystem by following the plan's mount operations, drops every
 * capability, sets no_new_privs, applies Landlock, loads seccomp last and
 * execs. Init reaps, forwards signals, reports the exit status, makes (in a
 * child) the connects the supervisor's unix-socket broker allowed, and when
 * the supervisor dies (its socket closes) kills the whole namespace and
 * execs the supervisor's clean-up.
 *
 * Stage 2 never decides anything: every path, flag and rule comes from the
 * plan the supervisor computed. It only performs syscalls in order and
 * reports the first failure. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <dirent.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <linux/securebits.h>

#include "plan.h"
#include "fastrun.h"

/* The most pseudo-terminals a sandbox's devpts instance holds (M_DEVPTS). */
#define PTY_MAX "256"

/* ---- syscalls glibc 2.36 does not wrap ------------------------------- */

#ifndef __NR_open_tree
#define __NR_open_tree 428
#endif
#ifndef __NR_move_mount
#define __NR_move_mount 429
#endif
#ifndef __NR_fsopen
#define __NR_fsopen 430
#endif
#ifndef __NR_fsconfig
#define __NR_fsconfig 431
#endif
#ifndef __NR_fsmount
#define __NR_fsmount 432
#endif
#ifndef __NR_close_range
#define __NR_close_range 436
#endif
#ifndef __NR_openat2
#define __NR_openat2 437
#endif
#ifndef __NR_mount_setattr
#define __NR_mount_setattr 442
#endif
#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#endif
#ifndef __NR_landlock_add_rule
#define __NR_landlock_add_rule 445
#endif
#ifndef __NR_landlock_restrict_self
#define __NR_landlock_restrict_self 446
#endif
#ifndef __NR_seccomp
#define __NR_seccomp 317
#endif

#define X_OPEN_TREE_CLONE 1u
#define X_AUTOFS_SUPER_MAGIC 0x0187
#define X_OPEN_TREE_CLOEXEC O_CLOEXEC
#define X_AT_RECURSIVE 0x8000
#define X_MOVE_MOUNT_F_EMPTY_PATH 0x04
#define X_MOVE_MOUNT_T_EMPTY_PATH 0x40
#define X_FSCONFIG_SET_FLAG 0
#define X_FSCONFIG_SET_STRING 1
#define X_FSCONFIG_CMD_CREATE 6
#define X_FSOPEN_CLOEXEC 1u
#define X_FSMOUNT_CLOEXEC 1u
#define X_CLOSE_RANGE_CLOEXEC (1u << 2)
#define X_RESOLVE_NO_MAGICLINKS 0x02
#define X_RESOLVE_NO_SYMLINKS 0x04
#define X_LANDLOCK_RULE_PATH_BENEATH 1
#define X_TIOCGPTPEER _IO('T', 0x41)
#define X_KEYCTL_JOIN_SESSION_KEYRING 1
#ifndef __NR_keyctl
#define __NR_keyctl 250
#endif
#ifndef SECCOMP_FILTER_FLAG_NEW_LISTENER
#define SECCOMP_FILTER_FLAG_NEW_LISTENER (1UL << 3)
#endif

struct x_mount_attr {
	uint64_t attr_set, attr_clr, propagation, userns_fd;
};
struct x_open_how {
	uint64_t flags, mode, resolve;
};
struct x_ll_ruleset_attr {
	uint64_t handled_access_fs, handled_access_net, scoped;
};
struct __attribute__((packed)) x_ll_path_beneath {
	uint64_t allowed_access;
	int32_t parent_fd;
};

/* ---- plan reader ----------------------------------------------------- */

struct rd {
	const unsigned char *p, *end;
	int bad;
};

static uint32_t rd_u32(struct rd *r)
{
	uint32_t v = 0;
	if (r->end - r->p < 4) {
		r->bad = 1;
		return 0;
	}
	memcpy(&v, r->p, 4);
	r->p += 4;
	return v;
}

static uint64_t rd_u64(struct rd *r)
{
	uint64_t v = 0;
	if (r->end - r->p < 8) {
		r->bad = 1;
		return 0;
	}
	memcpy(&v, r->p, 8);
	r->p += 8;
	return v;
}

/* rd_str returns a NUL-terminated copy (never freed: stage 2 is short-lived). */
static char *rd_str(struct rd *r)
{
	uint32_t n = rd_u32(r);
	if (r->bad || (uint64_t)(r->end - r->p) < n) {
		r->bad = 1;
		return (char *)"";
	}
	char *s = malloc(n + 1);
	if (!s) {
		r->bad = 1;
		return (char *)"";
	}
	memcpy(s, r->p, n);
	s[n] = 0;
	r->p += n;
	return s;
}

struct rec {
	uint32_t type;
	struct rd body;
};

static unsigned char *plan;
static size_t plan_len;
static struct rec *recs;
static uint32_t nrecs;

/* ---- reporting -------------------------------------------------------- */

static int cur_rec = -1; /* index of the record being applied */
static uint32_t mode;    /* MODE_* from R_MODE */

static void send_msg(int type, int a, int b, const char *text, const int *fds, int nfds)
{
	struct moat_msg m;
	memset(&m, 0, sizeof m);
	m.type = type;
	m.a = a;
	m.b = b;
	if (text)
		snprintf(m.text, sizeof m.text, "%s", text);
	struct iovec iov = {.iov_base = &m, .iov_len = sizeof m};
	char cbuf[CMSG_SPACE(sizeof(int) * 16)];
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	if (nfds > 0) {
		memset(cbuf, 0, sizeof cbuf);
		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	while (sendmsg(MOAT_FD_SYNC, &mh, MSG_NOSIGNAL) < 0 && errno == EINTR)
		;
}

/* die reports the failing record and errno to the supervisor and exits. */
static uint32_t cur_cmd; /* the session command this process serves (0: none) */

static void __attribute__((noreturn, format(printf, 1, 2))) die(const char *fmt, ...)
{
	int e = errno;
	char buf[MOAT_MSG_TEXT];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (cur_cmd)
		send_msg(MSG_CMD_ERROR, (int)cur_cmd, e, buf, NULL, 0);
	else
		send_msg(MSG_ERROR, cur_rec, e, buf, NULL, 0);
	_exit(125);
}

/* ---- helpers ---------------------------------------------------------- */

static int xopenat2(int dirfd, const char *path, int flags)
{
	struct x_open_how how = {.flags = (uint64_t)flags | O_CLOEXEC,
				 .resolve = X_RESOLVE_NO_SYMLINKS | X_RESOLVE_NO_MAGICLINKS};
	int fd;
	do
		fd = (int)syscall(__NR_openat2, dirfd, path, &how, sizeof how);
	while (fd < 0 && errno == EINTR);
	return fd;
}

/* open_path opens an absolute path as O_PATH without following any symlink:
 * the supervisor resolved every path already, so a symlink here means the
 * tree changed under us, and stage 2 refuses rather than follow it. */
static int open_path(const char *path)
{
	return xopenat2(AT_FDCWD, path, O_PATH | O_NOFOLLOW);
}

static int mount_setattr_fd(int fd, int recursive, uint64_t set, uint64_t clr)
{
	struct x_mount_attr a = {.attr_set = set, .attr_clr = clr};
	return (int)syscall(__NR_mount_setattr, fd, "", AT_EMPTY_PATH | (recursive ? X_AT_RECURSIVE : 0), &a, sizeof a);
}

static int move_mount_to(int from, const char *target)
{
	int t = open_path(target);
	if (t < 0)
		return -1;
	int rc = (int)syscall(__NR_move_mount, from, "", t, "", X_MOVE_MOUNT_F_EMPTY_PATH | X_MOVE_MOUNT_T_EMPTY_PATH);
	int e = errno;
	close(t);
	errno = e;
	return rc;
}

/* new_fs creates a detached filesystem of the given type with options. */
static int new_fs(const char *type, const char **kv, uint64_t attr)
{
	int fs = (int)syscall(__NR_fsopen, type, X_FSOPEN_CLOEXEC);
	if (fs < 0)
		return -1;
	for (; kv && kv[0]; kv += 2) {
		int cmd = kv[1] ? X_FSCONFIG_SET_STRING : X_FSCONFIG_SET_FLAG;
		if (syscall(__NR_fsconfig, fs, cmd, kv[0], kv[1], 0) < 0) {
			int e = errno;
			close(fs);
			errno = e;
			return -1;
		}
	}
	if (syscall(__NR_fsconfig, fs, X_FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0) {
		int e = errno;
		close(fs);
		errno = e;
		return -1;
	}
	int m = (int)syscall(__NR_fsmount, fs, X_FSMOUNT_CLOEXEC, (unsigned int)attr);
	int e = errno;
	close(fs);
	errno = e;
	return m;
}

static int mkdir_p(const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (char *s = buf + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return -1;
		*s = '/';
	}
	if (mkdir(buf, mode) < 0 && errno != EEXIST)
		return -1;
	return 0;
}

static int write_file(const char *path, const char *data)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -1;
	size_t n = strlen(data);
	ssize_t w = write(fd, data, n);
	int e = errno;
	close(fd);
	if (w != (ssize_t)n) {
		errno = w < 0 ? e : EIO;
		return -1;
	}
	return 0;
}

/* ---- the mount interpreter (the command's process) --------------------- */

#define MAX_SLOTS 4096
static int slots[MAX_SLOTS];

static int slot_take(uint32_t s)
{
	if (s >= MAX_SLOTS)
		die("mount slot %u out of range", s);
	int fd = slots[s];
	slots[s] = -1;
	return fd;
}

/* vanished are the targets of masks (MV_OPTIONAL) that no longer existed
 * when stage 2 came to them: a hidden path removed on the host between the
 * plan and the mount (another of the user's state directories, which its
 * run removes as it ends: two of the user's runs at once failed their
 * set-up on it). Nothing is left there to hide, as with a hidden path that
 * did not exist when the plan was made; the runtime ends a run or session
 * where one is made again (latesecrets.go). Every later step at or below a
 * vanished target is skipped: a mkdir in the mask, made on the host's
 * filesystem instead, would make the path again, and the read-only remount
 * at the end would take the mount of its parent. */
#define MAX_VANISHED 256
static const char *vanished[MAX_VANISHED];
static int nvanished;

/* gone reports whether path is at or below a vanished target. */
static int gone(const char *path)
{
	for (int i = 0; i < nvanished; i++) {
		size_t n = strlen(vanished[i]);
		if (strncmp(path, vanished[i], n) == 0 && (path[n] == 0 || path[n] == '/'))
			return 1;
	}
	return 0;
}

/* vanish records that target, a mask's, is gone (errno ENOENT, from the
 * look up of the target) when flags allow it, and reports whether it did. */
static int vanish(uint32_t flags, const char *target)
{
	if (!(flags & MV_OPTIONAL) || errno != ENOENT || strcmp(target, "/") == 0)
		return 0;
	if (nvanished == MAX_VANISHED)
		die("too many hidden paths vanished during the set-up (the last: %s)", target);
	vanished[nvanished++] = target;
	return 1;
}

static void do_mount_op(struct rd *r)
{
	uint32_t op = rd_u32(r);
	switch (op) {
	case M_PRIVATE:
		if (mount("", "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
			die("make / private");
		break;
	case M_CLONE: {
		uint32_t s = rd_u32(r), fl = rd_u32(r);
		uint64_t set = rd_u64(r), clr = rd_u64(r);
		char *path = rd_str(r);
		if (r->bad)
			break;
		if (s >= MAX_SLOTS)
			die("mount slot %u out of range", s);
		int src = open_path(path);
		if (src < 0) {
			if ((fl & MC_OPTIONAL) && errno == ENOENT) {
				slots[s] = -1;
				break;
			}
			die("open %s", path);
		}
		if (fl & MC_OPTIONAL) {
			/* A path shown again inside a mask (MC_OPTIONAL): one the
			 * host unmounted since the plan may have left the autofs
			 * directory it was mounted on (an automount that expired),
			 * whose bind would let a lookup below it ask the host's
			 * automounter (attack pass 56): taken as gone. */
			struct statfs sfs;
			if (fstatfs(src, &sfs) == 0 && sfs.f_type == X_AUTOFS_SUPER_MAGIC) {
				close(src);
				slots[s] = -1;
				break;
			}
		}
		int fd = (int)syscall(__NR_open_tree, src, "",
				      AT_EMPTY_PATH | X_OPEN_TREE_CLONE | X_OPEN_TREE_CLOEXEC |
					      ((fl & MC_RECURSIVE) ? X_AT_RECURSIVE : 0));
		if (fd < 0)
			die("clone the mount tree at %s", path);
		close(src);
		if ((set || clr) && mount_setattr_fd(fd, fl & MC_RECURSIVE, set, clr) < 0)
			die("set mount attributes of %s", path);
		slots[s] = fd;
		break;
	}
	case M_ATTACH_ROOT: {
		uint32_t s = rd_u32(r);
		char *staging = rd_str(r);
		if (r->bad)
			break;
		int fd = slot_take(s);
		if (fd < 0)
			die("no root tree");
		if (syscall(__NR_move_mount, fd, "", AT_FDCWD, staging, X_MOVE_MOUNT_F_EMPTY_PATH) < 0)
			die("attach the new root at %s", staging);
		if (fchdir(fd) < 0)
			die("enter the new root");
		if (syscall(SYS_pivot_root, ".", ".") < 0)
			die("pivot_root");
		if (umount2(".", MNT_DETACH) < 0)
			die("detach the old root");
		if (chdir("/") < 0)
			die("chdir /");
		close(fd);
		break;
	}
	case M_ATTACH: {
		uint32_t s = rd_u32(r), fl = rd_u32(r);
		char *target = rd_str(r);
		if (r->bad)
			break;
		int fd = slot_take(s);
		if (fd < 0)
			break; /* an optional source that did not exist */
		if (!gone(target) && move_mount_to(fd, target) < 0 && !vanish(fl, target))
			die("mount over %s", target);
		close(fd);
		break;
	}
	case M_TMPFS: {
		uint32_t mode = rd_u32(r), uid = rd_u32(r), gid = rd_u32(r), fl = rd_u32(r);
		uint64_t attr = rd_u64(r), size = rd_u64(r), inodes = rd_u64(r);
		char *target = rd_str(r);
		if (r->bad || gone(target))
			break;
		char m[16], u[16], g[16], sz[24], in[24];
		snprintf(m, sizeof m, "%o", mode);
		snprintf(u, sizeof u, "%u", uid);
		snprintf(g, sizeof g, "%u", gid);
		snprintf(sz, sizeof sz, "%llu", (unsigned long long)size);
		snprintf(in, sizeof in, "%llu", (unsigned long long)inodes);
		/* size and nr_inodes bound what the tmpfs holds (0: the
		 * kernel's default, half the machine's memory) */
		const char *kv[] = {"mode", m, "uid", u, "gid", g, size ? "size" : NULL, sz, inodes ? "nr_inodes" : NULL, in, NULL};
		int fd = new_fs("tmpfs", kv, attr);
		if (fd < 0)
			die("create a tmpfs for %s", target);
		if (move_mount_to(fd, target) < 0 && !vanish(fl, target))
			die("mount a tmpfs over %s", target);
		close(fd);
		break;
	}
	case M_PROC: {
		uint64_t attr = rd_u64(r);
		char *target = rd_str(r);
		if (r->bad || gone(target))
			break;
		int fd = new_fs("proc", NULL, attr);
		if (fd < 0)
			die("mount a new procfs (a container that masks /proc refuses this; see enableWeakerNestedSandbox)");
		if (move_mount_to(fd, target) < 0)
			die("mount procfs over %s", target);
		close(fd);
		break;
	}
	case M_DEVPTS: {
		char *target = rd_str(r);
		if (r->bad || gone(target))
			break;
		/* max: the machine's pseudo-terminals (kernel.pty.max, 4096,
		 * less the 1024 kept for the host's own devpts) are one count
		 * for every other devpts instance: a command opened all 3071,
		 * and every other sandbox with a terminal, any user's, and
		 * every container failed to start (attack pass 80). */
		const char *kv[] = {"newinstance", NULL, "ptmxmode", "0666", "mode", "0620", "max", PTY_MAX, NULL};
		int fd = new_fs("devpts", kv, 0x2 | 0x8); /* MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC */
		if (fd < 0)
			die("create a devpts instance");
		if (move_mount_to(fd, target) < 0)
			die("mount devpts over %s", target);
		close(fd);
		break;
	}
	case M_MKDIR: {
		uint32_t mode = rd_u32(r);
		char *path = rd_str(r);
		if (!r->bad && !gone(path) && mkdir_p(path, mode) < 0)
			die("mkdir %s", path);
		break;
	}
	case M_MKFILE: {
		uint32_t mode = rd_u32(r);
		char *path = rd_str(r);
		if (r->bad || gone(path))
			break;
		char *slash = strrchr(path, '/');
		if (slash && slash != path) {
			*slash = 0;
			int rc = mkdir_p(path, 0755);
			*slash = '/';
			if (rc < 0)
				die("mkdir the parents of %s", path);
		}
		int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, mode);
		if (fd < 0)
			die("create %s", path);
		close(fd);
		break;
	}
	case M_SYMLINK: {
		char *target = rd_str(r);
		char *path = rd_str(r);
		if (!r->bad && !gone(path) && symlink(target, path) < 0)
			die("symlink %s -> %s", path, target);
		break;
	}
	case M_SETATTR: {
		uint32_t fl = rd_u32(r);
		uint64_t set = rd_u64(r), clr = rd_u64(r);
		char *path = rd_str(r);
		if (r->bad || gone(path))
			break;
		int rec = (int)(fl & 1), if_present = (int)(fl & 2);
		int fd = open_path(path);
		if (fd < 0 && if_present && errno == ENOENT)
			break; /* hidden under a mask: nothing to change */
		if (fd < 0)
			die("open %s", path);
		if (mount_setattr_fd(fd, rec, set, clr) < 0)
			die("set mount attributes of %s", path);
		close(fd);
		break;
	}
	case M_BIND: {
		uint32_t fl = rd_u32(r);
		uint64_t set = rd_u64(r), clr = rd_u64(r);
		char *src = rd_str(r), *target = rd_str(r);
		if (r->bad || gone(target))
			break;
		int s = open_path(src);
		if (s < 0) {
			if ((fl & MC_OPTIONAL) && errno == ENOENT)
				break;
			die("open %s", src);
		}
		int fd = (int)syscall(__NR_open_tree, s, "", AT_EMPTY_PATH | X_OPEN_TREE_CLONE | X_OPEN_TREE_CLOEXEC);
		if (fd < 0)
			die("clone the mount at %s", src);
		close(s);
		if ((set || clr) && mount_setattr_fd(fd, 0, set, clr) < 0)
			die("set mount attributes of %s", src);
		if (move_mount_to(fd, target) < 0) {
			if ((fl & MC_OPTIONAL) && errno == ENOENT)
				break;
			die("mount %s over %s", src, target);
		}
		close(fd);
		break;
	}
	default:
		errno = EINVAL;
		die("unknown mount operation %u", op);
	}
	if (r->bad) {
		errno = EINVAL;
		die("truncated mount record");
	}
}

/* ---- capabilities, Landlock, seccomp ----------------------------------- */

/* has_cap reports whether this process holds capability c (permitted). */
static int has_cap(int c)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof d);
	if (syscall(SYS_capget, &h, d) < 0)
		return 0;
	return (d[c / 32].permitted >> (c % 32)) & 1;
}

static void drop_capabilities(void)
{
	if ((mode & MODE_NONS) && !has_cap(CAP_SETPCAP)) {
		/* Without a user namespace a process that cannot drop the
		 * bounding set has no capabilities to drop, unless it is uid 0
		 * (exec would give it the bounding set back). */
		if (getuid() == 0 || geteuid() == 0) {
			errno = EPERM;
			die("uid 0 without CAP_SETPCAP cannot give up its capabilities");
		}
		if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
			die("clear ambient capabilities");
		return;
	}
	int last = CAP_LAST_CAP;
	FILE *f = fopen("/proc/sys/kernel/cap_last_cap", "re");
	if (f) {
		if (fscanf(f, "%d", &last) != 1)
			last = CAP_LAST_CAP;
		fclose(f);
	}
	if (last < CAP_LAST_CAP)
		last = CAP_LAST_CAP;
	for (int c = 0; c <= last + 8; c++) {
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			die("drop capability %d from the bounding set", c);
	}
	/* uid 0 inside the sandbox must never regain capabilities on exec. */
	if (prctl(PR_SET_SECUREBITS, SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
					     SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
					     SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED,
		  0, 0, 0) < 0)
		die("set securebits");
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
		die("clear ambient capabilities");
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof d);
	if (syscall(SYS_capset, &h, d) < 0)
		die("drop all capabilities");
}

static int ll_fd = -1;
static uint64_t ll_scoped; /* the plan's Landlock scopes (ABI 6: signals, abstract sockets) */

static void landlock_ruleset(struct rd *r)
{
	uint32_t abi = rd_u32(r);
	struct x_ll_ruleset_attr a = {0};
	a.handled_access_fs = rd_u64(r);
	a.handled_access_net = rd_u64(r);
	a.scoped = rd_u64(r);
	if (r->bad)
		return;
	ll_scoped = a.scoped;
	size_t sz = abi >= 6 ? 24 : abi >= 4 ? 16 : 8;
	ll_fd = (int)syscall(__NR_landlock_create_ruleset, &a, sz, 0);
	if (ll_fd < 0)
		die("create a Landlock ruleset (ABI %u)", abi);
}

static void landlock_add(int fd, uint64_t access, const char *what)
{
	struct x_ll_path_beneath pb = {.allowed_access = access, .parent_fd = fd};
	if (syscall(__NR_landlock_add_rule, ll_fd, X_LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0)
		die("add a Landlock rule for %s", what);
}

static void landlock_path(struct rd *r)
{
	uint64_t access = rd_u64(r);
	uint32_t fl = rd_u32(r);
	char *path = rd_str(r);
	if (r->bad || ll_fd < 0)
		return;
	int fd = open_path(path);
	if (fd < 0) {
		if ((fl & LLP_OPTIONAL) && errno == ENOENT)
			return;
		die("open %s for Landlock", path);
	}
	struct stat st;
	if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode))
		access &= 0x1 | 0x2 | 0x4 | (1ull << 14) | (1ull << 15); /* file rights only */
	landlock_add(fd, access, path);
	close(fd);
}

/* landlock_stdio lets the command reopen what fds 0-2 already are (say
 * `echo x > /dev/stderr` when stderr is a file or terminal outside the
 * writable paths): the fd was granted by the caller, reopening it through
 * /proc/self/fd grants nothing new. */
static void landlock_stdio(struct rd *r)
{
	uint64_t access = rd_u64(r);
	if (r->bad || ll_fd < 0)
		return;
	for (int i = 0; i < 3; i++) {
		struct stat st;
		if (fstat(i, &st) < 0 || !(S_ISREG(st.st_mode) || S_ISCHR(st.st_mode)))
			continue;
		char p[32];
		snprintf(p, sizeof p, "/proc/self/fd/%d", i);
		int fd = open(p, O_PATH | O_CLOEXEC);
		if (fd < 0)
			continue;
		int fl = fcntl(i, F_GETFL);
		uint64_t a = access;
		if (fl >= 0 && (fl & O_ACCMODE) == O_RDONLY)
			a &= ~(uint64_t)0x2; /* WRITE_FILE */
		/* A file of a kernel-internal filesystem (a memfd, as stdin)
		 * takes no rule (EBADFD): Landlock does not restrict those. */
		struct x_ll_path_beneath pb = {.allowed_access = a & (0x1 | 0x2 | 0x4 | (1ull << 14)), .parent_fd = fd};
		/* Nothing to grant (a read-only fd where Landlock has no
		 * truncate right, ABI < 3: Debian 12's 6.1): a rule with no
		 * access is refused (ENOMSG), and none is needed. */
		if (pb.allowed_access == 0) {
			close(fd);
			continue;
		}
		if (syscall(__NR_landlock_add_rule, ll_fd, X_LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0 && errno != EBADFD)
			die("add a Landlock rule for %s", p);
		close(fd);
	}
}

static void landlock_port(struct rd *r)
{
	struct __attribute__((packed)) {
		uint64_t allowed_access;
		uint64_t port;
	} np;
	np.allowed_access = rd_u64(r);
	np.port = rd_u64(r);
	if (r->bad || ll_fd < 0)
		return;
	if (syscall(__NR_landlock_add_rule, ll_fd, 2 /* LANDLOCK_RULE_NET_PORT */, &np, 0) < 0)
		die("add a Landlock rule for TCP port %llu", (unsigned long long)np.port);
}

static void landlock_restrict(void)
{
	if (ll_fd < 0)
		return;
	if (syscall(__NR_landlock_restrict_self, ll_fd, 0) < 0)
		die("enforce the Landlock ruleset");
	close(ll_fd);
	ll_fd = -1;
}

/* sc_filter is the seccomp program copied to aligned memory, made by
 * prepare_seccomp before a command starts so that the command's own process
 * (which may share its parent's memory until it execs) allocates nothing. */
static struct sock_filter *sc_filter;

static void prepare_seccomp(const unsigned char *prog, uint32_t len)
{
	if (len == 0 || len % sizeof(struct sock_filter) != 0) {
		errno = EINVAL;
		die("malformed seccomp program (%u bytes)", len);
	}
	if (sc_filter)
		return;
	sc_filter = malloc(len);
	if (!sc_filter)
		die("allocate the seccomp program");
	memcpy(sc_filter, prog, len);
}

static void load_seccomp(uint32_t flags, const unsigned char *prog, uint32_t len)
{
	prepare_seccomp(prog, len);
	struct sock_fprog fp = {.len = (unsigned short)(len / sizeof(struct sock_filter)), .filter = sc_filter};
	unsigned long fl = (flags & SC_LISTENER) ? SECCOMP_FILTER_FLAG_NEW_LISTENER : 0;
	int fd = (int)syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, fl, &fp);
	if (fd < 0)
		die("load the seccomp filter");
	if (flags & SC_LISTENER) {
		/* Nothing between here and execve may be a notified syscall:
		 * sendmsg, close and execve are not. */
		if (cur_cmd)
			send_msg(MSG_CMD_NOTIFY, (int)cur_cmd, 0, NULL, &fd, 1);
		else
			send_msg(MSG_NOTIFY, 0, 0, NULL, &fd, 1);
		close(fd);
	}
}

/* ---- exec --------------------------------------------------------------- */

static void __attribute__((noreturn)) do_exec(uint32_t flags, char *path, char **argv, char **envp)
{
	int err = ENOENT;
	if (!(flags & EX_SEARCH) || strchr(path, '/')) {
		execve(path, argv, envp);
		err = errno;
	} else {
		const char *pathenv = "/usr/local/bin:/usr/bin:/bin";
		for (char **e = envp; *e; e++)
			if (strncmp(*e, "PATH=", 5) == 0)
				pathenv = *e + 5;
		int saw_eacces = 0;
		const char *p = pathenv;
		for (;;) {
			const char *c = strchr(p, ':');
			size_t n = c ? (size_t)(c - p) : strlen(p);
			char buf[PATH_MAX];
			if (n == 0)
				snprintf(buf, sizeof buf, "./%s", path);
			else
				snprintf(buf, sizeof buf, "%.*s/%s", (int)n, p, path);
			execve(buf, argv, envp);
			if (errno == EACCES)
				saw_eacces = 1;
			else if (errno != ENOENT && errno != ENOTDIR && errno != ESTALE && errno != ELOOP &&
				 errno != ENAMETOOLONG) {
				err = errno;
				break;
			}
			if (!c)
				break;
			p = c + 1;
		}
		if (err == ENOENT && saw_eacces)
			err = EACCES;
	}
	if (cur_cmd)
		send_msg(MSG_CMD_EXECFAIL, (int)cur_cmd, err, path, NULL, 0);
	else
		send_msg(MSG_EXECFAIL, 0, err, path, NULL, 0);
	_exit(err == ENOENT ? 127 : 126);
}

/* ---- the command's process ---------------------------------------------- */

/* What the plan says about the command, read by setup(). */
static uint32_t ex_flags;
static char *ex_path, **ex_argv, **ex_envp;
static uint32_t sc_flags, sc_len;
static const unsigned char *sc_prog;
static uint32_t pty_mask, pty_rows, pty_cols;
static int want_pty, wait_go;

/* read_exec reads an R_EXEC record. */
static void read_exec(struct rd *r)
{
	ex_flags = rd_u32(r);
	ex_path = rd_str(r);
	uint32_t argc = rd_u32(r);
	if (argc > 1 << 20)
		r->bad = 1;
	ex_argv = calloc(r->bad ? 1 : argc + 1, sizeof(char *));
	for (uint32_t k = 0; !r->bad && k < argc; k++)
		ex_argv[k] = rd_str(r);
	uint32_t envc = rd_u32(r);
	if (envc > 1 << 20)
		r->bad = 1;
	ex_envp = calloc(r->bad ? 1 : envc + 1, sizeof(char *));
	for (uint32_t k = 0; !r->bad && k < envc; k++)
		ex_envp[k] = rd_str(r);
}

static void enter_dir(const char *path)
{
	int fd = xopenat2(AT_FDCWD, path, O_PATH | O_DIRECTORY);
	if (fd < 0 || fchdir(fd) < 0)
		die("enter the working directory %s", path);
	close(fd);
}

static int watch_fd = -1; /* R_WATCH's inotify instance, until it is sent */

/* nofile_saved is RLIMIT_NOFILE as the supervisor started stage 2, which
 * the command gets (confine_and_exec restores it); setup holds one
 * descriptor per mount source until it is mounted, and a plan of a few
 * thousand would not fit under a soft limit of 1024, so setup raises the
 * soft limit to the hard one. nofile_raised says it did, and that no
 * R_RLIMIT record set the command's own. */
static struct rlimit nofile_saved;
static int nofile_raised;

/* setup builds the sandbox's filesystem and reads what the command needs
 * (the records that confine it are applied by confine_and_exec). */
static void setup(void)
{
	/* Default signal dispositions and an empty mask for the command. */
	sigset_t all;
	sigemptyset(&all);
	for (int s = 1; s < NSIG; s++)
		signal(s, SIG_DFL);
	sigprocmask(SIG_SETMASK, &all, NULL);

	if (getrlimit(RLIMIT_NOFILE, &nofile_saved) == 0 && nofile_saved.rlim_cur < nofile_saved.rlim_max) {
		struct rlimit more = {.rlim_cur = nofile_saved.rlim_max, .rlim_max = nofile_saved.rlim_max};
		if (setrlimit(RLIMIT_NOFILE, &more) == 0)
			nofile_raised = 1;
	}

	if (!(mode & MODE_NONS) && unshare(CLONE_NEWNS) < 0)
		die("create a mount namespace");

	for (uint32_t i = 0; i < nrecs; i++) {
		struct rd r = recs[i].body;
		cur_rec = (int)i;
		switch (recs[i].type) {
		case R_MOUNT:
			do_mount_op(&r);
			break;
		case R_SYSCTL: {
			char *path = rd_str(&r), *val = rd_str(&r);
			if (!r.bad && write_file(path, val) < 0)
				die("write %s to %s", val, path);
			break;
		}
		case R_CWD: {
			char *path = rd_str(&r);
			if (!r.bad)
				enter_dir(path);
			break;
		}
		case R_KEYRING:
			if (syscall(__NR_keyctl, X_KEYCTL_JOIN_SESSION_KEYRING, NULL) < 0 && errno != ENOSYS)
				die("join a new session keyring");
			break;
		case R_RLIMIT: {
			uint32_t res = rd_u32(&r);
			struct rlimit rl = {.rlim_cur = rd_u64(&r), .rlim_max = rd_u64(&r)};
			if (!r.bad && setrlimit((int)res, &rl) < 0)
				die("set resource limit %u", res);
			if (res == RLIMIT_NOFILE)
				nofile_raised = 0; /* the plan's own value stands */
			break;
		}
		case R_PTY:
			pty_mask = rd_u32(&r);
			pty_rows = rd_u32(&r);
			pty_cols = rd_u32(&r);
			want_pty = !r.bad;
			break;
		case R_SECCOMP:
			sc_flags = rd_u32(&r);
			sc_len = rd_u32(&r);
			if ((uint64_t)(r.end - r.p) < sc_len)
				r.bad = 1;
			sc_prog = r.p;
			break;
		case R_EXEC:
			read_exec(&r);
			break;
		case R_WAIT_GO:
			wait_go = 1;
			break;
		case R_WATCH: {
			/* Opens of a hidden path are reported, at no cost to any
			 * other path: an inotify watch on the mask alone. A path
			 * that cannot be watched is only not reported. */
			uint32_t dir = rd_u32(&r);
			char *path = rd_str(&r);
			if (r.bad || gone(path))
				break;
			if (watch_fd < 0)
				watch_fd = inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
			if (watch_fd >= 0) {
				int wd = inotify_add_watch(watch_fd, path, IN_OPEN | IN_DONT_FOLLOW | (dir ? IN_ONLYDIR : 0));
				if (wd >= 0)
					send_msg(MSG_WATCH, (int)i, wd, NULL, NULL, 0);
			}
			break;
		}
		case R_LL_RULESET:
		case R_LL_PATH:
		case R_LL_STDIO:
		case R_LL_PORT:
			break; /* applied by confine_and_exec, after the capabilities are gone */
		default:
			break; /* init's records */
		}
		if (r.bad) {
			errno = EINVAL;
			die("malformed plan record %u (type %u)", i, recs[i].type);
		}
	}
	cur_rec = -1;
	if (watch_fd >= 0) {
		send_msg(MSG_INOTIFY, 0, 0, NULL, &watch_fd, 1);
		close(watch_fd);
		watch_fd = -1;
	}
	send_msg(MSG_MOUNTED, 0, 0, NULL, NULL, 0);
}

static int confined; /* capabilities, no_new_privs and Landlock are in place */

/* init_status is init's /proc/PID/status, opened by init for a run's
 * command (setup_interrupted), or -1. */
static int init_status = -1;

/* pending_mask reads a "Key:\thex" mask line of a status file. */
static unsigned long long pending_mask(const char *st, const char *key)
{
	const char *p = strstr(st, key);
	return p ? strtoull(p + strlen(key), NULL, 16) : 0;
}

/* setup_interrupted: a run's command starts vfork-style, and init, which
 * is suspended until the exec, reads neither its supervisor's socket nor
 * its signals meanwhile. So just before the exec the command's process
 * looks for both itself. The supervisor gone (its end of the socket
 * closed: moat killed, or Kill in the no-namespace tier) ends it here;
 * a signal forwarded to init while it set up (Ctrl-C during the setup),
 * which init would have passed on, ends it too, as that signal: the
 * command never runs, as when init forked it. Signals that do not end a
 * process by default stay with init, which passes them on after the exec
 * (a stop here would leave init suspended). */
static void setup_interrupted(void)
{
	struct pollfd p = {.fd = MOAT_FD_SYNC, .events = POLLRDHUP};
	if (poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLRDHUP | POLLERR)))
		_exit(125); /* the supervisor is gone: it reports nothing more */
	if (init_status < 0)
		return;
	char st[4096];
	ssize_t n = pread(init_status, st, sizeof st - 1, 0);
	if (n <= 0)
		return;
	st[n] = 0;
	unsigned long long pend = pending_mask(st, "\nSigPnd:\t") | pending_mask(st, "\nShdPnd:\t");
	for (int sig = 1; sig < 64 && pend; sig++) {
		if (!(pend & (1ULL << (sig - 1))))
			continue;
		switch (sig) {
		case SIGCHLD:
		case SIGCONT:
		case SIGURG:
		case SIGWINCH:
		case SIGTSTP:
		case SIGTTIN:
		case SIGTTOU:
		case SIGSTOP:
			continue;
		}
		signal(sig, SIG_DFL);
		raise(sig);
	}
}

/* confine drops every capability, sets no_new_privs and applies Landlock
 * (with the rules for what descriptors 0-2 are, if stdio). */
static void confine(int stdio)
{
	drop_capabilities();
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		die("set no_new_privs");
	for (uint32_t i = 0; i < nrecs; i++) {
		struct rd r = recs[i].body;
		cur_rec = (int)i;
		if (recs[i].type == R_LL_RULESET)
			landlock_ruleset(&r);
		else if (recs[i].type == R_LL_PATH)
			landlock_path(&r);
		else if (recs[i].type == R_LL_STDIO && stdio)
			landlock_stdio(&r);
		else if (recs[i].type == R_LL_PORT)
			landlock_port(&r);
	}
	cur_rec = -1;
	landlock_restrict();
	confined = 1;
}

/* confine_and_exec applies what confines the command, in order, and execs
 * it: the terminal (or a new session), capabilities, no_new_privs,
 * Landlock, the descriptors, the wait for the supervisor's go, seccomp. */
static void __attribute__((noreturn)) confine_and_exec(int keep_fds)
{
	if (!ex_path || !ex_argv || !ex_envp) {
		errno = EINVAL;
		die("the plan has no command");
	}

	/* The terminal: a new pty from the sandbox's own devpts, so nothing
	 * inside can reach the caller's terminal; the supervisor relays. */
	if (want_pty) {
		/* The sandbox's own devpts; without namespaces, the host's. */
		const char *ptmx = (mode & MODE_NONS) ? "/dev/ptmx" : "/dev/pts/ptmx";
		int master = open(ptmx, O_RDWR | O_NOCTTY | O_CLOEXEC);
		if (master < 0)
			die("open %s", ptmx);
		int unlock = 0;
		if (ioctl(master, TIOCSPTLCK, &unlock) < 0)
			die("unlock the pty");
		int slave = ioctl(master, X_TIOCGPTPEER, O_RDWR | O_NOCTTY);
		if (slave < 0)
			die("open the pty peer");
		struct winsize ws = {.ws_row = (unsigned short)pty_rows, .ws_col = (unsigned short)pty_cols};
		if (pty_rows && pty_cols)
			ioctl(slave, TIOCSWINSZ, &ws);
		send_msg(MSG_PTY, 0, 0, NULL, &master, 1);
		close(master);
		if (setsid() < 0)
			die("setsid");
		if (ioctl(slave, TIOCSCTTY, 0) < 0)
			die("make the pty the controlling terminal");
		for (int fd = 0; fd < 3; fd++)
			if ((pty_mask & (1u << fd)) && dup2(slave, fd) < 0)
				die("dup the pty to fd %d", fd);
		if (slave > 2)
			close(slave);
	} else if (setsid() < 0) {
		die("setsid");
	}

	/* Capabilities go first (the bounding set needs CAP_SETPCAP), then
	 * no_new_privs, Landlock (it needs no_new_privs), and seccomp last.
	 * A session's server did the first three once for all its commands. */
	if (!confined) {
		confine(1);
	} else if (ll_scoped) {
		/* A session's commands share its server's Landlock domain: a
		 * layer of their own, scoped, keeps them from signalling the
		 * server and the other commands' reapers. */
		struct x_ll_ruleset_attr a = {.scoped = ll_scoped};
		int fd = (int)syscall(__NR_landlock_create_ruleset, &a, sizeof a, 0);
		if (fd < 0 || syscall(__NR_landlock_restrict_self, fd, 0) < 0)
			die("enforce the command's Landlock scope");
		close(fd);
	}

	/* No descriptor but stdio (and a session command's fd 3) reaches the
	 * command. */
	if (syscall(__NR_close_range, (unsigned)keep_fds, ~0U, X_CLOSE_RANGE_CLOEXEC) < 0)
		for (int fd = keep_fds; fd < 1024; fd++)
			fcntl(fd, F_SETFD, FD_CLOEXEC);
	/* The supervisor may still be arming a layer that must be in place
	 * before the command runs (the eBPF filter): wait for its go. */
	if (wait_go) {
		char go;
		ssize_t n;
		do
			n = read(MOAT_FD_GO, &go, 1);
		while (n < 0 && errno == EINTR);
		if (n != 1)
			_exit(125); /* the supervisor gave up: it reports why */
	}
	/* The command's own descriptor limit (setup raised it). Not cleared:
	 * a session's commands start in its server's memory, each restores. */
	if (nofile_raised && setrlimit(RLIMIT_NOFILE, &nofile_saved) < 0)
		die("restore the command's descriptor limit");
	if (sc_prog)
		load_seccomp(sc_flags, sc_prog, sc_len);
	/* Last, so that what init was sent before this point is seen. */
	if (!(mode & MODE_SESSION))
		setup_interrupted();
	do_exec(ex_flags, ex_path, ex_argv, ex_envp);
}

static void __attribute__((noreturn)) run_command(void)
{
	setup();
	confine_and_exec(3);
}

/* run_command_main is run_command as a clone(2) entry (run_init); init's
 * signalfd is close-on-exec. */
static int run_command_main(void *arg)
{
	(void)arg;
	run_command();
}

/* ---- a session: many commands in one sandbox ------------------------------ */

/* own_scope: this process entered a Landlock domain of its own that scopes
 * signals (scope_signals) before it started anything: what it starts is in
 * that domain or one nested in it, and nothing else is. */
static int own_scope;

/* scope_signals puts this process, and everything it starts from now on,
 * in a Landlock domain of its own that scopes signals (Landlock ABI 6):
 * a kill(-1) from it then reaches its own tree and nothing else, not even
 * as root, and a fork cannot outrun it (the kernel walks every process
 * under the task list's lock, and a fork that a fatal signal meets is
 * abandoned). Killing child by child could be outrun: each round killed
 * one generation while the next forked again, and a tree that kept forking
 * outlived a session command's end and, without a pid namespace, moat
 * itself (found by an attack pass). On an older kernel nothing changes
 * and the rounds remain. */
static void scope_signals(void)
{
	struct x_ll_ruleset_attr a = {.scoped = 2}; /* LANDLOCK_SCOPE_SIGNAL */
	int fd = (int)syscall(__NR_landlock_create_ruleset, &a, sizeof a, 0);
	if (fd < 0)
		return;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 && syscall(__NR_landlock_restrict_self, fd, 0) == 0)
		own_scope = 1;
	close(fd);
}

/* kill_scoped ends every process of this process's own signal scope (its
 * tree: scope_signals) and reaps them; 0 without such a scope. */
static int kill_scoped(void)
{
	if (!own_scope)
		return 0;
	kill(-1, SIGKILL);
	while (waitpid(-1, NULL, __WALL) > 0 || errno == EINTR)
		;
	return 1;
}

/* kill_children_by_scan SIGKILLs every process whose parent is self. */
static int kill_children_by_scan(pid_t self)
{
	int found = 0;
	DIR *d = opendir("/proc");
	if (!d)
		return 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0)
			continue;
		char p[64], buf[512];
		snprintf(p, sizeof p, "/proc/%ld/stat", pid);
		int fd = open(p, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t n = read(fd, buf, sizeof buf - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = 0;
		char *rp = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
		long ppid;
		char st;
		if (rp && sscanf(rp + 1, " %c %ld", &st, &ppid) == 2 && ppid == self) {
			kill((pid_t)pid, SIGKILL);
			found = 1;
		}
	}
	closedir(d);
	return found;
}

/* kill_subreaped ends every process below this subreaper: with a signal
 * scope of its own, one kill(-1); otherwise kill its children, reap, and
 * repeat until none is left, since each kill hands the victim's children
 * to it. */
static void kill_subreaped(void)
{
	if (kill_scoped())
		return;
	pid_t self = getpid();
	for (int round = 0; round < 10000; round++) {
		int found = 0;
		char path[64];
		snprintf(path, sizeof path, "/proc/%d/task/%d/children", self, self);
		FILE *f = fopen(path, "re");
		if (f) {
			long pid;
			while (fscanf(f, "%ld", &pid) == 1) {
				kill((pid_t)pid, SIGKILL);
				found = 1;
			}
			fclose(f);
		} else {
			found |= kill_children_by_scan(self); /* no CONFIG_PROC_CHILDREN */
		}
		while (waitpid(-1, NULL, WNOHANG | __WALL) > 0)
			found = 1;
		if (!found && waitpid(-1, NULL, WNOHANG | __WALL) < 0 && errno == ECHILD)
			return;
		if (!found)
			usleep(1000);
	}
}

/* send_cmd_exit reports a session command's end with the CPU time of
 * everything the reaper waited for (the command's tree): a CPU-time rlimit
 * kills with SIGKILL at the hard limit, and only the time used tells that
 * kill apart from another. */
static void send_cmd_exit(uint32_t id, int status)
{
	struct rusage ru;
	char us[32] = "";
	if (getrusage(RUSAGE_CHILDREN, &ru) == 0) {
		long long t = (long long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000LL +
			      ru.ru_utime.tv_usec + ru.ru_stime.tv_usec;
		snprintf(us, sizeof us, "%lld", t);
	}
	send_msg(MSG_CMD_EXIT, (int)id, status, us, NULL, 0);
}

/* cmd_stack is the stack of a session command's process until it execs
 * (its pages are touched only then, in the reaper's memory). */
static char cmd_stack[256 << 10] __attribute__((aligned(64)));

/* cmd_start is what a session command's vfork-style child needs. */
struct cmd_start {
	int *fds;
	int nfds;
};

/* cmd_start_main runs in the command's process, in the reaper's memory:
 * stdio in place, then confined and exec'd (the descriptors the reaper
 * holds are close-on-exec, its signalfd and control pipe among them). */
static int cmd_start_main(void *arg)
{
	struct cmd_start *cs = arg;
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (int i = 0; i < cs->nfds; i++)
		if (cs->fds[i] != i && dup2(cs->fds[i], i) < 0)
			die("set up descriptor %d", i);
	for (int i = 0; i < cs->nfds; i++)
		if (cs->fds[i] >= cs->nfds)
			close(cs->fds[i]);
	confine_and_exec(cs->nfds);
}

/* run_cmd_reaper is a session command's own reaper: a subreaper that starts
 * the command (in a new session), forwards the signals the session asks for
 * on ctl, and when the command exits, or is killed, ends everything it
 * started before it reports the exit. */
static void __attribute__((noreturn)) run_cmd_reaper(uint32_t id, int ctl, int *fds, int nfds)
{
	cur_cmd = id;
	close(MOAT_FD_SESSION);
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		die("become the command's subreaper");
	/* A domain of its own: its kill(-1) then reaches this command's tree
	 * alone, not the server or the other commands' reapers, which share
	 * the server's domain. */
	scope_signals();
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0)
		die("signalfd");
	/* The command starts as a vfork-style child (posix_spawn's way): it
	 * shares the reaper's memory, on a stack of its own, with the reaper
	 * suspended until it execs or exits, so no page table is copied for a
	 * process that is about to be replaced (a fork here costs ~0.1 ms, a
	 * good part of a session command's start). It changes only its own
	 * descriptors, signal mask and kernel state, and allocates nothing:
	 * the seccomp program is copied out before. */
	if (sc_prog)
		prepare_seccomp(sc_prog, sc_len);
	struct cmd_start cs = {.fds = fds, .nfds = nfds};
	pid_t g = clone(cmd_start_main, cmd_stack + sizeof cmd_stack, CLONE_VM | CLONE_VFORK | SIGCHLD, &cs);
	if (g < 0)
		die("start the command");
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	send_msg(MSG_CMD_STARTED, (int)id, g, NULL, NULL, 0);
	struct pollfd pfd[2] = {{.fd = sfd, .events = POLLIN}, {.fd = ctl, .events = POLLIN}};
	for (;;) {
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			kill_subreaped();
			_exit(1);
		}
		if (pfd[1].revents & (POLLIN | POLLHUP | POLLERR)) {
			int sig = 0;
			ssize_t n = read(ctl, &sig, sizeof sig);
			if (n <= 0 && !(n < 0 && errno == EINTR)) {
				kill_subreaped(); /* the session is gone */
				_exit(1);
			}
			if (n == sizeof sig) {
				if (sig == SIGKILL) {
					/* The command first (its status is the report),
					 * then everything it started. */
					int status = 0;
					kill(g, SIGKILL);
					while (waitpid(g, &status, __WALL) < 0 && errno == EINTR)
						;
					kill_subreaped();
					send_cmd_exit(id, status);
					_exit(0);
				} else if (sig > 0 && sig < NSIG) {
					if (sig == SIGINT || sig == SIGQUIT || sig == SIGWINCH || sig == SIGTSTP || sig == SIGCONT)
						kill(-g, sig);
					kill(g, sig);
				}
			}
		}
		if (!(pfd[0].revents & POLLIN))
			continue;
		struct signalfd_siginfo si;
		while (read(sfd, &si, sizeof si) == sizeof si)
			;
		int status;
		pid_t p;
		while ((p = waitpid(-1, &status, WNOHANG | __WALL)) > 0) {
			if (p != g)
				continue;
			kill_subreaped();
			send_cmd_exit(id, status);
			_exit(0);
		}
	}
}

struct session_cmd {
	uint32_t id;
	pid_t reaper;
	int ctl; /* write end: signals for the reaper */
};

#define MAX_SESSION_CMDS 1024

/* take_fds keeps the first max descriptors a message carried (SCM_RIGHTS)
 * in fds, closes the rest, and returns how many it kept. */
static int take_fds(struct msghdr *mh, int *fds, int max)
{
	int n = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (int i = 0; i < k; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
			if (n < max)
				fds[n++] = fd;
			else
				close(fd);
		}
	}
	return n;
}

/* session_request receives one request (with its descriptors); it returns
 * 0 at the end of the session. */
static int session_request(struct moat_req *q, unsigned char **payload, size_t *plen, int *fds, int *nfds)
{
	/* The size first (a seqpacket keeps message boundaries). */
	ssize_t size;
	do
		size = recv(MOAT_FD_SESSION, NULL, 0, MSG_PEEK | MSG_TRUNC);
	while (size < 0 && errno == EINTR);
	if (size <= 0)
		return 0;
	if ((size_t)size < sizeof *q || size > (16 << 20)) {
		char drop;
		recv(MOAT_FD_SESSION, &drop, 1, 0);
		q->type = 0;
		return 1;
	}
	unsigned char *buf = malloc((size_t)size);
	if (!buf)
		die("allocate a request");
	struct iovec iov = {.iov_base = buf, .iov_len = (size_t)size};
	char cbuf[CMSG_SPACE(sizeof(int) * 8)];
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
	ssize_t n;
	do
		n = recvmsg(MOAT_FD_SESSION, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n <= 0) {
		free(buf);
		return 0;
	}
	*nfds = take_fds(&mh, fds, 8);
	memcpy(q, buf, sizeof *q);
	*payload = buf;
	*plen = (size_t)n;
	return 1;
}

/* run_session is the sandbox's command server: the filesystem is built and
 * the supervisor's go received once; then each REQ_RUN starts a command
 * (through its own reaper), each REQ_SIGNAL reaches one. The session ends
 * when the supervisor closes its end: every command dies with it. */
static void __attribute__((noreturn)) run_session(void)
{
	setup();
	if (wait_go) {
		char go;
		ssize_t n;
		do
			n = read(MOAT_FD_GO, &go, 1);
		while (n < 0 && errno == EINTR);
		if (n != 1)
			_exit(125);
		close(MOAT_FD_GO);
		wait_go = 0;
	}
	/* The server itself gives up every capability and enters the Landlock
	 * domain now, once: every command inherits both (it needs neither: it
	 * only forks, waits and passes descriptors). A command's descriptors
	 * are the pipes and files the runtime gives it, so no rule is added for
	 * them (reopening one through /proc/self/fd outside the writable paths
	 * is refused). Each command loads seccomp itself, for a notification
	 * listener of its own. */
	confine(0);
	/* A signal for a command whose reaper has just exited (its exit
	 * reported, the reaper not yet reaped) is written to a pipe nobody
	 * reads: EPIPE, not SIGPIPE, which killed the server and every command
	 * of the session with it (the daemon's load test: "server killed by
	 * broken pipe"; TestSessionSignalAtCommandEnd). Each reaper restores
	 * the default before its command inherits it. */
	signal(SIGPIPE, SIG_IGN);
	/* The plan's own command (if any) is not run: requests name them. */
	struct session_cmd *cmds = calloc(MAX_SESSION_CMDS, sizeof *cmds);
	if (!cmds)
		die("allocate the session table");
	int ncmds = 0;
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0)
		die("signalfd");
	struct pollfd pfd[2] = {{.fd = MOAT_FD_SESSION, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
	for (;;) {
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pfd[1].revents & POLLIN) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof si) == sizeof si)
				;
			pid_t p;
			int st;
			while ((p = waitpid(-1, &st, WNOHANG | __WALL)) > 0) {
				for (int i = 0; i < ncmds; i++) {
					if (cmds[i].reaper == p) {
						/* A reaper reports its command's exit itself;
						 * one that was killed cannot: say so for it. */
						if (WIFSIGNALED(st))
							send_msg(MSG_CMD_EXIT, (int)cmds[i].id, st, NULL, NULL, 0);
						close(cmds[i].ctl);
						cmds[i] = cmds[--ncmds];
						break;
					}
				}
			}
		}
		if (!(pfd[0].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		struct moat_req q;
		unsigned char *payload = NULL;
		size_t plen = 0;
		int fds[8], nfds = 0;
		if (!session_request(&q, &payload, &plen, fds, &nfds))
			break;
		if (q.type == REQ_SIGNAL) {
			for (int i = 0; i < ncmds; i++) {
				if (cmds[i].id == q.id) {
					int sig = (int)q.sig;
					if (write(cmds[i].ctl, &sig, sizeof sig) < 0) {
						/* the reaper is gone: its exit is on its way */
					}
					break;
				}
			}
		} else if (q.type == REQ_RUN && q.id > 0) {
			int want = (q.flags & REQ_FD3) ? 4 : 3;
			int ctl[2] = {-1, -1};
			int ok = nfds == want && ncmds < MAX_SESSION_CMDS && pipe2(ctl, O_CLOEXEC) == 0;
			/* The payload: R_CWD and R_EXEC records (type, length, body). */
			char *cwd = NULL;
			ex_path = NULL;
			ex_argv = ex_envp = NULL;
			struct rd r = {.p = payload + sizeof q, .end = payload + plen};
			while (ok && r.p < r.end) {
				uint32_t type = rd_u32(&r), len = rd_u32(&r);
				if (r.bad || (uint64_t)(r.end - r.p) < len) {
					ok = 0;
					break;
				}
				struct rd body = {.p = r.p, .end = r.p + len};
				r.p += len;
				if (type == R_CWD)
					cwd = rd_str(&body);
				else if (type == R_EXEC)
					read_exec(&body);
				if (body.bad)
					ok = 0;
			}
			if (!ex_path || !ex_argv || !ex_envp)
				ok = 0;
			if (!ok) {
				errno = EINVAL;
				send_msg(MSG_CMD_ERROR, (int)q.id, EINVAL, "malformed request", NULL, 0);
			} else {
				pid_t c = fork();
				if (c == 0) {
					close(ctl[1]);
					close(sfd);
					signal(SIGPIPE, SIG_DFL);
					sigset_t none;
					sigemptyset(&none);
					sigprocmask(SIG_SETMASK, &none, NULL);
					cur_cmd = q.id;
					if (cwd)
						enter_dir(cwd);
					run_cmd_reaper(q.id, ctl[0], fds, nfds);
				}
				if (c < 0) {
					send_msg(MSG_CMD_ERROR, (int)q.id, errno, "fork", NULL, 0);
				} else {
					cmds[ncmds++] = (struct session_cmd){.id = q.id, .reaper = c, .ctl = ctl[1]};
					ctl[1] = -1;
				}
			}
			if (ctl[0] >= 0)
				close(ctl[0]);
			if (ctl[1] >= 0)
				close(ctl[1]);
			/* read_exec's strings point into the payload: the child has
			 * its copy; here they are done with. */
			free(ex_argv);
			free(ex_envp);
			ex_path = NULL;
			ex_argv = ex_envp = NULL;
		}
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
		free(payload);
	}
	/* The supervisor closed the session: every command dies with it. */
	for (int i = 0; i < ncmds; i++) {
		int sig = SIGKILL;
		if (write(cmds[i].ctl, &sig, sizeof sig) < 0) {
		}
		close(cmds[i].ctl);
	}
	kill_subreaped();
	_exit(0);
}

/* ---- init (pid 1) --------------------------------------------------------- */

static void lo_up(void)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		die("socket for lo");
	struct ifreq ifr;
	memset(&ifr, 0, sizeof ifr);
	snprintf(ifr.ifr_name, IFNAMSIZ, "lo");
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		die("read the flags of lo");
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		die("bring lo up");
	close(s);
}

static int listen_tcp(uint32_t family, uint32_t port, const char *addr)
{
	int s = socket((int)family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -1;
	int one = 1;
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	int rc;
	if (family == AF_INET6) {
		struct sockaddr_in6 sa = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)port)};
		setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
		if (inet_pton(AF_INET6, addr, &sa.sin6_addr) != 1) {
			errno = EINVAL;
			return -1;
		}
		rc = bind(s, (struct sockaddr *)&sa, sizeof sa);
	} else {
		struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
		if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
			errno = EINVAL;
			return -1;
		}
		rc = bind(s, (struct sockaddr *)&sa, sizeof sa);
	}
	if (rc < 0 || listen(s, 4096) < 0) {
		int e = errno;
		close(s);
		errno = e;
		return -1;
	}
	return s;
}

static pid_t child;

static void forward(int sig)
{
	if (child <= 0)
		return;
	/* What a terminal sends to the foreground process group goes to the
	 * command's group; the rest to the command itself. */
	if (sig == SIGINT || sig == SIGQUIT || sig == SIGWINCH || sig == SIGTSTP || sig == SIGCONT)
		kill(-child, sig);
	kill(child, sig);
}

/* kill_descendants ends every process below init. With a pid namespace
 * one kill(-1) does it. Without one, init is a subreaper (orphans of the
 * tree become its children): kill_subreaped. */
static void kill_descendants(void)
{
	if (!(mode & MODE_NONS)) {
		kill(-1, SIGKILL);
		while (waitpid(-1, NULL, __WALL) > 0 || errno == EINTR)
			;
		return;
	}
	kill_subreaped();
}

static void __attribute__((noreturn)) supervisor_gone(char **cleanup)
{
	/* The supervisor died: end everything in the sandbox, then run the
	 * clean-up it asked for (removing the mount points it created). */
	kill_descendants();
	if (cleanup && cleanup[0]) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		unsetenv("_MOAT_NSINIT");
		execv("/proc/self/exe", cleanup);
	}
	_exit(137);
}

/* ---- connects made for the command (the unix-socket broker) -------------- */

/* The unix-socket broker (linux/observer.go) decides a command's connect(2)
 * and used to make the connection itself, in the supervisor: the kernel
 * records the connecting task as the peer (SO_PEERCRED, SO_PEERPIDFD), so a
 * server that judges its peer by its process (moat serve, moatd, moat mcp)
 * saw moat, unconfined and outside the sandbox's namespaces, and served the
 * command as if it were the user (found by an attack pass: a session of the
 * user's moat serve that wrote the home directory). Now init makes it, in a
 * child of its own: in the sandbox's user, pid and network namespaces, under
 * no_new_privs and a seccomp filter, without capabilities (REQ_CONNECT in
 * plan.h). A child, so that a connect that blocks (a full backlog) never
 * stalls init; at most MOAT_MAX_CONNECTORS at once. */

static pid_t connectors[MOAT_MAX_CONNECTORS];
static int nconnectors;

/* connector_reaped forgets p if it is a connector. */
static int connector_reaped(pid_t p)
{
	for (int i = 0; i < nconnectors; i++) {
		if (connectors[i] == p) {
			connectors[i] = connectors[--nconnectors];
			return 1;
		}
	}
	return 0;
}

/* answer_connect sends the errno on reply (a socket: no SIGPIPE when the
 * supervisor stopped waiting, which init would pass on to the command). */
static void answer_connect(int reply, int err)
{
	ssize_t n;
	do
		n = send(reply, &err, sizeof err, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
}

static void connect_timed_out(int sig)
{
	(void)sig; /* connect(2) returns EINTR (no SA_RESTART) */
}

/* close_except closes every descriptor but keep[0..n) (ascending). */
static void close_except(const int *keep, int n)
{
	unsigned int lo = 0;
	for (int i = 0; i <= n; i++) {
		unsigned int hi = i < n ? (unsigned int)keep[i] : ~0U;
		if (hi > lo && syscall(__NR_close_range, lo, hi - 1, 0) < 0)
			for (unsigned int fd = lo; fd < hi && fd < 1024; fd++)
				close((int)fd);
		if (i < n)
			lo = hi + 1;
	}
}

#if defined(__x86_64__)
#define CONNECTOR_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define CONNECTOR_ARCH AUDIT_ARCH_AARCH64
#endif

/* connector_filter: the connector's seccomp filter. It makes the
 * connector confined as a command is, for a server that looks (a peer
 * under seccomp and no_new_privs is a sandboxed one), and leaves it
 * nothing but the calls it makes once it is loaded. */
static int connector_filter(void)
{
#ifdef CONNECTOR_ARCH
#define ALLOW_NR(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, CONNECTOR_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		ALLOW_NR(__NR_connect),
		ALLOW_NR(__NR_sendto),
		ALLOW_NR(__NR_rt_sigreturn),
		ALLOW_NR(__NR_restart_syscall),
		ALLOW_NR(__NR_exit),
		ALLOW_NR(__NR_exit_group),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
	};
#undef ALLOW_NR
	struct sock_fprog fp = {.len = (unsigned short)(sizeof f / sizeof f[0]), .filter = f};
	return (int)syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fp);
#else
	struct sock_filter f[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
	struct sock_fprog fp = {.len = 1, .filter = f};
	return (int)syscall(__NR_seccomp, SECCOMP_SET_MODE_FILTER, 0, &fp);
#endif
}

/* connector_main connects sock to the socket target (an O_PATH descriptor,
 * through /proc/self/fd: the socket the supervisor checked, whatever the
 * command does to its path meanwhile) and sends the errno on reply. */
static void __attribute__((noreturn)) connector_main(pid_t init, int sock, int target, int reply)
{
	int keep[3] = {sock, target, reply};
	for (int i = 0; i < 3; i++)
		for (int j = i + 1; j < 3; j++)
			if (keep[j] < keep[i]) {
				int t = keep[i];
				keep[i] = keep[j];
				keep[j] = t;
			}
	close_except(keep, 3);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != init)
		_exit(1); /* init is gone: so is the supervisor's answer */
	prctl(PR_SET_NAME, "moat-connect", 0, 0, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof sa.sun_path, "/proc/self/fd/%d", target);
	/* Every signal stays blocked (as in init) but the timeout's. */
	struct sigaction act;
	memset(&act, 0, sizeof act);
	act.sa_handler = connect_timed_out;
	sigaction(SIGALRM, &act, NULL);
	sigset_t alrm;
	sigemptyset(&alrm);
	sigaddset(&alrm, SIGALRM);
	sigprocmask(SIG_UNBLOCK, &alrm, NULL);
	alarm(MOAT_CONNECT_TIMEOUT);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || connector_filter() < 0) {
		answer_connect(reply, EPERM);
		_exit(1);
	}
	int err = connect(sock, (struct sockaddr *)&sa, sizeof sa) == 0 ? 0 : errno;
	if (err == EINTR)
		err = ETIMEDOUT;
	answer_connect(reply, err);
	_exit(0);
}

/* connect_for_command starts a connector (or answers EAGAIN) and closes
 * init's copies of the three descriptors. */
static void connect_for_command(int sock, int target, int reply)
{
	/* The supervisor closed its end of reply when it stopped waiting
	 * (it answered the command ETIMEDOUT): the socket stays as it is. */
	struct pollfd p = {.fd = reply, .events = POLLOUT};
	int abandoned = poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR));
	if (abandoned) {
		/* nothing to do */
	} else if (nconnectors >= MOAT_MAX_CONNECTORS) {
		answer_connect(reply, EAGAIN);
	} else {
		pid_t init = getpid();
		pid_t c = fork();
		if (c == 0)
			connector_main(init, sock, target, reply);
		if (c < 0)
			answer_connect(reply, EAGAIN);
		else
			connectors[nconnectors++] = c;
	}
	close(sock);
	close(target);
	close(reply);
}

/* read_sync reads what the supervisor sent on its socket (REQ_CONNECT
 * requests) until none is left; 0: the supervisor is gone. */
static int read_sync(void)
{
	for (;;) {
		struct moat_req q;
		memset(&q, 0, sizeof q);
		struct iovec iov = {.iov_base = &q, .iov_len = sizeof q};
		char cbuf[CMSG_SPACE(sizeof(int) * 4)];
		struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
		ssize_t n = recvmsg(MOAT_FD_SYNC, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
		if (n == 0)
			return 0;
		int fds[4];
		int nfds = take_fds(&mh, fds, 4);
		if (n == (ssize_t)sizeof q && !(mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) && q.type == REQ_CONNECT && nfds == 3) {
			connect_for_command(fds[0], fds[1], fds[2]);
			continue;
		}
		for (int i = 0; i < nfds; i++)
			close(fds[i]);
	}
}

static void __attribute__((noreturn)) run_init(void)
{
	char **cleanup = NULL;
	int lfds[16];
	int nl = 0;

	for (uint32_t i = 0; i < nrecs; i++) {
		struct rd r = recs[i].body;
		cur_rec = (int)i;
		switch (recs[i].type) {
		case R_MODE:
			mode = rd_u32(&r);
			if (!r.bad && (mode & MODE_NONS) && prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
				die("become a subreaper");
			break;
		case R_HOSTNAME: {
			char *h = rd_str(&r);
			/* A container's seccomp profile may refuse sethostname
			 * (podman's default does without CAP_SYS_ADMIN): the UTS
			 * namespace is still the sandbox's own, only its name
			 * stays the container's, which hides nothing. */
			if (!r.bad && sethostname(h, strlen(h)) < 0 && errno != EPERM)
				die("set the hostname");
			break;
		}
		case R_LO_UP:
			lo_up();
			break;
		case R_LISTEN: {
			uint32_t fam = rd_u32(&r), port = rd_u32(&r);
			char *addr = rd_str(&r);
			if (r.bad)
				break;
			if (nl >= 16) {
				errno = E2BIG;
				die("too many listeners");
			}
			lfds[nl] = listen_tcp(fam, port, addr);
			if (lfds[nl] < 0)
				die("listen on %s port %u inside the sandbox", addr, port);
			nl++;
			break;
		}
		case R_CLEANUP: {
			uint32_t argc = rd_u32(&r);
			if (argc > 64) {
				r.bad = 1;
				break;
			}
			cleanup = calloc(argc + 1, sizeof(char *));
			for (uint32_t k = 0; k < argc && !r.bad; k++)
				cleanup[k] = rd_str(&r);
			break;
		}
		default:
			break;
		}
		if (r.bad) {
			errno = EINVAL;
			die("malformed plan record %u", i);
		}
	}
	cur_rec = -1;
	if (nl > 0) {
		send_msg(MSG_LISTEN, nl, 0, NULL, lfds, nl);
		for (int k = 0; k < nl; k++)
			close(lfds[k]);
	}

	/* Nothing in the sandbox may ptrace init or open its /proc entries
	 * (/proc/1/root would be the host's root). */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		die("make init non-dumpable");

	sigset_t mask;
	sigfillset(&mask);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0)
		die("signalfd");

	/* Without a pid namespace, no kill(-1) ends the tree unless init has a
	 * signal scope of its own (with one, kill(-1) stays inside it). */
	if (mode & MODE_NONS)
		scope_signals();
	if (mode & MODE_SESSION) {
		child = fork();
		if (child < 0)
			die("fork the session's server");
		if (child == 0) {
			close(sfd);
			/* The session's server must see its commands' orphans. */
			if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
				die("become the session's subreaper");
			run_session();
		}
	} else {
		/* The command starts vfork-style, in init's memory, on a stack
		 * of its own, until its exec (or its death) lets init go on: no
		 * copy of init's page tables, no copy-on-write faults, and its
		 * exec drops a shared address space instead of tearing one down
		 * (0.8-1 ms each on this project's VMs). It writes only what
		 * init no longer reads (the plan's cursors, its own descriptors
		 * are its own: no CLONE_FILES, CLONE_FS or CLONE_SIGHAND).
		 * Meanwhile init cannot watch its supervisor or pass on signals:
		 * the command's process looks at both before its exec, through
		 * init's status (setup_interrupted). */
		init_status = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
		child = clone(run_command_main, cmd_stack + sizeof cmd_stack, CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
		if (child < 0)
			die("start the command");
		if (init_status >= 0) {
			close(init_status);
			init_status = -1;
		}
	}
	if (mode & MODE_SESSION)
		close(MOAT_FD_SESSION);
	send_msg(MSG_CHILD, child, 0, NULL, NULL, 0);

	/* Init keeps no capabilities it does not need to reap and signal. */
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof d);
	syscall(SYS_capset, &h, d);

	struct pollfd pfd[2] = {{.fd = sfd, .events = POLLIN}, {.fd = MOAT_FD_SYNC, .events = POLLIN}};
	for (;;) {
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			supervisor_gone(cleanup);
		}
		if ((pfd[1].revents & (POLLIN | POLLHUP | POLLERR)) && !read_sync())
			supervisor_gone(cleanup);
		if (!(pfd[0].revents & POLLIN))
			continue;
		struct signalfd_siginfo si;
		while (read(sfd, &si, sizeof si) == sizeof si) {
			if (si.ssi_signo != SIGCHLD) {
				forward((int)si.ssi_signo);
				continue;
			}
			int status;
			pid_t p;
			while ((p = waitpid(-1, &status, WNOHANG | __WALL)) > 0) {
				if (p != child) {
					connector_reaped(p); /* (or an orphan of the command's) */
					continue;
				}
				/* Leaving kills everything else in the pid namespace;
				 * without one, init does it first. */
				if (mode & MODE_NONS)
					kill_descendants();
				send_msg(MSG_EXIT, status, 0, NULL, NULL, 0);
				_exit(0);
			}
		}
	}
}

/* ---- entry --------------------------------------------------------------- */

static void load_plan(void)
{
	/* The supervisor writes the plan into a pipe after this process has
	 * started (planning overlaps with namespace creation and exec), and
	 * closes it: read to EOF. An empty plan means the supervisor gave up. */
	size_t cap = 16384;
	plan = malloc(cap);
	if (!plan)
		die("allocate the plan");
	for (;;) {
		if (plan_len == cap) {
			if (cap >= (64u << 20)) {
				errno = E2BIG;
				die("plan too large");
			}
			cap *= 2;
			unsigned char *p = realloc(plan, cap);
			if (!p)
				die("allocate the plan");
			plan = p;
		}
		ssize_t n = read(MOAT_FD_PLAN, plan + plan_len, cap - plan_len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("read the plan");
		if (n == 0)
			break;
		plan_len += (size_t)n;
	}
	close(MOAT_FD_PLAN);
	if (plan_len == 0)
		_exit(125); /* the supervisor failed before sending a plan: it reports */
	if (plan_len < 12) {
		errno = EINVAL;
		die("truncated plan");
	}
	struct rd r = {.p = plan, .end = plan + plan_len};
	if (memcmp(plan, MOAT_PLAN_MAGIC, 4) != 0) {
		errno = EINVAL;
		die("bad plan magic");
	}
	r.p += 4;
	if (rd_u32(&r) != MOAT_PLAN_VERSION) {
		errno = EINVAL;
		die("plan version mismatch (moat binary changed while running?)");
	}
	nrecs = rd_u32(&r);
	if (nrecs > 1 << 20) {
		errno = EINVAL;
		die("too many plan records");
	}
	recs = calloc(nrecs ? nrecs : 1, sizeof *recs);
	for (uint32_t i = 0; i < nrecs; i++) {
		recs[i].type = rd_u32(&r);
		uint32_t len = rd_u32(&r);
		if (r.bad || (uint64_t)(r.end - r.p) < len) {
			errno = EINVAL;
			die("truncated plan");
		}
		recs[i].body.p = r.p;
		recs[i].body.end = r.p + len;
		r.p += len;
	}
}

/* ---- the namespaces ------------------------------------------------------ */

/* The capabilities stage 2 keeps in its user namespace, permitted, effective,
 * inheritable and ambient (so the clean-up helper it may exec keeps them
 * too): mounts, the loopback, the bounding set, rlimits. */
static const int stage2_caps[] = {CAP_SYS_ADMIN, CAP_NET_ADMIN, CAP_SETPCAP, CAP_SYS_RESOURCE};

static void keep_stage2_caps(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2];
	memset(d, 0, sizeof d);
	for (size_t i = 0; i < sizeof stage2_caps / sizeof stage2_caps[0]; i++) {
		int c = stage2_caps[i];
		d[c / 32].permitted |= 1u << (c % 32);
	}
	d[0].effective = d[0].inheritable = d[0].permitted;
	d[1].effective = d[1].inheritable = d[1].permitted;
	if (syscall(SYS_capset, &h, d) < 0)
		die("keep stage 2's capabilities");
	for (size_t i = 0; i < sizeof stage2_caps / sizeof stage2_caps[0]; i++)
		if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, stage2_caps[i], 0, 0) < 0)
			die("keep stage 2's capabilities across exec");
}

/* outer_relay is what remains of the process the supervisor started once
 * init (its child, pid 1 of the new pid namespace) runs: it passes on the
 * signals the supervisor sends and ends as init ends, so the supervisor
 * waits for and signals one process as before. If it is killed, init gets
 * SIGKILL (its parent-death signal) and the pid namespace ends. */
static void __attribute__((noreturn)) outer_relay(pid_t init)
{
	sigset_t all;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, NULL);
	/* Nothing of the sandbox's stays open here. */
	if (syscall(__NR_close_range, 0u, ~0U, 0) < 0)
		for (int fd = 0; fd < 1024; fd++)
			close(fd);
	int sfd = signalfd(-1, &all, SFD_CLOEXEC);
	if (sfd < 0) {
		kill(init, SIGKILL);
		_exit(125);
	}
	/* Reap first, then wait for a signal: init's SIGCHLD may have come
	 * before the mask above, between the fork and this function, and a
	 * SIGCHLD not blocked nor handled is discarded, so no read would ever
	 * return. An init that ended that early (a busy machine, a launch that
	 * failed at once) left this process waiting for good, and moat run
	 * with it (CI, TestFailedLaunchLeavesNothing, rootless). */
	for (int first = 1;; first = 0) {
		struct signalfd_siginfo si;
		if (!first) {
			ssize_t n = read(sfd, &si, sizeof si);
			if (n != sizeof si)
				continue;
			if (si.ssi_signo != SIGCHLD) {
				kill(init, (int)si.ssi_signo);
				continue;
			}
		}
		int st;
		pid_t p;
		while ((p = waitpid(-1, &st, WNOHANG | __WALL)) > 0) {
			if (p != init)
				continue;
			if (WIFSIGNALED(st)) {
				int sig = WTERMSIG(st);
				signal(sig, SIG_DFL);
				sigset_t one;
				sigemptyset(&one);
				sigaddset(&one, sig);
				sigprocmask(SIG_UNBLOCK, &one, NULL);
				kill(getpid(), sig);
			}
			_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 125);
		}
	}
}

/* enter_namespaces makes the sandbox's namespaces from here rather than in
 * the supervisor's clone: the supervisor, a Go program, then starts this
 * binary with a vfork-style clone instead of copying its whole address
 * space (Go forks without CLONE_VM for a new user namespace, and a large
 * supervisor, moatd's heap, then paid milliseconds of page-table copies and
 * copy-on-write faults for every sandbox). The user namespace first; the
 * supervisor writes its maps (and moves this process into the limit
 * cgroups) and answers with the ids to take; then the other namespaces, and
 * for a new pid namespace the fork that makes init its pid 1. */
/* halve_shared_rlimits halves, before the user namespace is made, the
 * rlimits of the counts the kernel keeps per user and charges through
 * every user namespace up to the host's: queued signals and POSIX timers
 * (RLIMIT_SIGPENDING) and SHM_LOCKed memory (RLIMIT_MEMLOCK). The kernel
 * takes the new namespace's bound on its creator's count from these limits
 * as they are now, and checks the creator's whole count on the host (its
 * own processes' charges and every sandbox's) against it: half here holds
 * everything the sandboxes of a creator take together to half of its
 * count, where the command's own limit (linux/limits.go, the same half)
 * holds one sandbox alone. Under moatd the creator is root, and two
 * sandboxes of an unprivileged client, half each, took every queued signal
 * root had: every timer_create and sigqueue of root's own processes failed
 * with EAGAIN while they ran (attack pass 85). */
static void halve_shared_rlimits(void)
{
	static const int res[] = {RLIMIT_SIGPENDING, RLIMIT_MEMLOCK};
	for (size_t i = 0; i < sizeof res / sizeof res[0]; i++) {
		struct rlimit rl;
		if (getrlimit(res[i], &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
			continue;
		rlim_t half = rl.rlim_cur / 2;
		if (half > rl.rlim_max)
			half = rl.rlim_max;
		rl.rlim_cur = rl.rlim_max = half;
		if (setrlimit(res[i], &rl) < 0)
			die("halve resource limit %d", res[i]);
	}
}

/* join_cgroups moves this process into the run's cgroup v1 hierarchies
 * (the limits), before it forks anything: a "0" written to each `tasks`
 * file the supervisor opened and sent with its answer (mh). The supervisor
 * wrote this process's pid to each `cgroup.procs` before: a migration by
 * pid (or of a whole thread group) takes the kernel's
 * cgroup_threadgroup_rwsem for writing, which waits for an RCU grace
 * period, and as root on a host with the v1 controllers mounted (this
 * machine kind) that write took 8-15 ms of every run. A single-threaded
 * process moving itself through `tasks` does not take it (0.02-0.1 ms).
 * The permission check is the opener's (root's), as it was. */
static void join_cgroups(struct msghdr *mh)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t nfd = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		int fds[MOAT_MAX_JOINS];
		if (nfd > MOAT_MAX_JOINS) {
			errno = EPROTO;
			die("the supervisor's answer on the user namespace");
		}
		memcpy(fds, CMSG_DATA(c), nfd * sizeof(int));
		for (size_t i = 0; i < nfd; i++) {
			if (write(fds[i], "0", 1) != 1)
				die("join the run's limit cgroup");
			close(fds[i]);
		}
	}
}

static void enter_namespaces(unsigned long flags)
{
	if (flags & CLONE_NEWUSER) {
		halve_shared_rlimits();
		if (unshare(CLONE_NEWUSER) < 0)
			die("create the user namespace");
		send_msg(MSG_USERNS, 0, 0, NULL, NULL, 0);
		struct moat_ids ids;
		char cbuf[CMSG_SPACE(sizeof(int) * MOAT_MAX_JOINS)];
		struct iovec iov = {.iov_base = &ids, .iov_len = sizeof ids};
		struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
		ssize_t n;
		do
			n = recvmsg(MOAT_FD_SYNC, &mh, MSG_CMSG_CLOEXEC);
		while (n < 0 && errno == EINTR);
		if (n < (ssize_t)offsetof(struct moat_ids, groups) || ids.ngroups > MOAT_MAX_GROUPS ||
		    (size_t)n < offsetof(struct moat_ids, groups) + ids.ngroups * sizeof(uint32_t) ||
		    (mh.msg_flags & MSG_CTRUNC)) {
			if (n == 0)
				_exit(125); /* the supervisor gave up */
			errno = EPROTO;
			die("the supervisor's answer on the user namespace");
		}
		join_cgroups(&mh);
		if (ids.uid >= 0) {
			/* A sandbox for another user (moatd): its groups, then its
			 * ids, inside the namespace (the maps name only these). */
			gid_t gs[MOAT_MAX_GROUPS];
			for (uint32_t i = 0; i < ids.ngroups; i++)
				gs[i] = (gid_t)ids.groups[i];
			if (setgroups(ids.ngroups, gs) < 0)
				die("take the user's groups");
			if (setresgid((gid_t)ids.gid, (gid_t)ids.gid, (gid_t)ids.gid) < 0)
				die("take the user's group");
			if (setresuid((uid_t)ids.uid, (uid_t)ids.uid, (uid_t)ids.uid) < 0)
				die("take the user's id");
		}
		keep_stage2_caps();
	}
	unsigned long rest = flags & ~(unsigned long)CLONE_NEWUSER;
	if (rest && unshare((int)rest) < 0)
		die("create the namespaces");
	if (flags & CLONE_NEWPID) {
		pid_t c = fork();
		if (c < 0)
			die("start init");
		if (c > 0)
			outer_relay(c);
		if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
			die("tie init to its parent");
	}
}

/* take_stdio: a spare's init says it waits, then takes the run's
 * descriptors 0, 1 and 2, and MOAT_FD_GO's and the cgroup lock's where the
 * run has them (REQ_STDIO in plan.h), the first message on its socket. */
static void take_stdio(void)
{
	send_msg(MSG_SPARE, 0, 0, NULL, NULL, 0);
	struct moat_req q;
	memset(&q, 0, sizeof q);
	struct iovec iov = {.iov_base = &q, .iov_len = sizeof q};
	char cbuf[CMSG_SPACE(sizeof(int) * 5)];
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf, .msg_controllen = sizeof cbuf};
	ssize_t n;
	do
		n = recvmsg(MOAT_FD_SYNC, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n == 0)
		_exit(125); /* discarded before a run took it */
	if (n < 0)
		die("wait for the run's descriptors");
	int fds[5];
	int nfds = take_fds(&mh, fds, 5);
	int want = 3 + !!(q.flags & REQ_STDIO_GO) + !!(q.flags & REQ_STDIO_LOCK);
	if (n != (ssize_t)sizeof q || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || q.type != REQ_STDIO ||
	    (q.flags & ~(REQ_STDIO_GO | REQ_STDIO_LOCK)) || nfds != want) {
		errno = EPROTO;
		die("the run's descriptors");
	}
	int to[5] = {0, 1, 2, -1, -1};
	int k = 3;
	if (q.flags & REQ_STDIO_GO)
		to[k++] = MOAT_FD_GO;
	if (q.flags & REQ_STDIO_LOCK)
		to[k++] = MOAT_FD_LOCK;
	for (int i = 0; i < nfds; i++)
		if (dup2(fds[i], to[i]) < 0)
			die("take the run's descriptor %d", to[i]);
	/* The received copies (the lowest free descriptors, 5 and 6 among
	 * them) that are not now one of the targets. */
	for (int i = 0; i < nfds; i++) {
		int target = 0;
		for (int j = 0; j < nfds; j++)
			target |= fds[i] == to[j];
		if (!target)
			close(fds[i]);
	}
}

/* glibc passes argc, argv and envp to constructors. Stage 2 runs only when
 * the supervisor started this binary as "moat-init" with _MOAT_NSINIT=1, so
 * a stray variable in a user's environment cannot divert moat itself. */
/* moat_start_ns is CLOCK_MONOTONIC when this constructor ran, the first
 * user code of the process (before the Go runtime): MOAT_TRACE counts its
 * phases from here, so that the Go runtime's start shows too. */
long long moat_start_ns;

/* moat_start_nofile is RLIMIT_NOFILE as the process was started with it,
 * before the Go runtime raised its soft limit (which Go restores only in
 * what it execs itself): moat serve compares a caller's with it. */
struct rlimit moat_start_nofile;

__attribute__((constructor)) static void moat_nsinit(int argc, char **argv, char **envp)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_MONOTONIC, &ts) == 0)
		moat_start_ns = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
	if (getrlimit(RLIMIT_NOFILE, &moat_start_nofile) < 0)
		moat_start_nofile.rlim_cur = moat_start_nofile.rlim_max = 0;
	const char *v = getenv("_MOAT_NSINIT");
	if (v && strcmp(v, "hold") == 0 && argc == 1 && argv && argv[0] && strcmp(argv[0], MOAT_HOLD_ARGV0) == 0) {
		/* The holder of an inotify instance (linux/hidden.go): it only
		 * keeps the descriptors it was given until it is killed (by
		 * moat, or by the parent-death signal the supervisor set before
		 * the exec), so that the kernel's teardown of the instance runs
		 * in this process, which nobody waits for. No Go runtime. It
		 * keeps stdio and the instance (fd 3), nothing else the
		 * supervisor had open without close-on-exec. */
		if (syscall(__NR_close_range, 4u, ~0U, 0) < 0)
			for (int fd = 4; fd < 1024; fd++)
				close(fd);
		for (;;)
			pause();
	}
	if (!v || strcmp(v, "1") != 0 || argc != 1 || !argv || !argv[0] || strcmp(argv[0], MOAT_INIT_ARGV0) != 0) {
		/* moat itself: moat run may hand over to the user's moat
		 * serve (MOAT_SERVER) and never start the Go runtime. */
		if (!v)
			moat_fastrun(argc, argv, envp);
		return;
	}
	for (int i = 0; i < MAX_SLOTS; i++)
		slots[i] = -1;
	/* moatd's client's umask (EnvUmask): stage 2's, init's and the
	 * command's files are made with it, not with the daemon's. */
	const char *um = getenv("_MOAT_UMASK");
	if (um && *um) {
		umask((mode_t)(strtoul(um, NULL, 8) & 0777));
		unsetenv("_MOAT_UMASK");
	}
	const char *nsf = getenv("_MOAT_NSFLAGS");
	if (nsf && *nsf) {
		unsigned long flags = strtoul(nsf, NULL, 16);
		unsetenv("_MOAT_NSFLAGS");
		enter_namespaces(flags);
		const char *sp = getenv("_MOAT_SPARE");
		if (sp) {
			int spare = strcmp(sp, "1") == 0;
			unsetenv("_MOAT_SPARE");
			if (spare)
				take_stdio();
		}
	}
	load_plan();
	run_init();
}
