/* moat run through the user's own moat serve, before the Go runtime starts.
 *
 * When MOAT_SERVER names the socket of a `moat serve` of this user and the
 * command line is `moat run ...`, this client hands the whole invocation to
 * that server: its arguments, working directory, environment, umask,
 * resource limits and groups, then its descriptors 0-2 (SCM_RIGHTS). The
 * server resolves the policy and runs the command exactly as `moat run`
 * would in this process, writing moat's own messages to these descriptors;
 * this client forwards signals and exits with the status the server sends.
 * A cold `moat run` then costs no Go runtime start, no package
 * initialisation and no first-touch faults of a new Go heap
 * (docs/PERFORMANCE.md).
 *
 * Whenever the server cannot serve the invocation exactly as this process
 * would (no server, a terminal, a process state the server does not share:
 * docs/API.md, POST /v1/cli/run), the constructor returns and moat runs as
 * always, in this process; moat_server_note says why, and moat run prints
 * it. Nothing here runs a command, and nothing here ever decides a policy. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "fastrun.h"

char moat_server_note[MOAT_SERVER_NOTE];
int moat_server_quiet;

/* The request's body may not exceed the server's bound (1 MiB). */
#define MAX_BODY (1000 * 1000)
/* The handshake (connect, request, answer) gives up after this long. */
#define HANDSHAKE_SECONDS 10

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(moat_server_note, sizeof moat_server_note, fmt, ap);
	va_end(ap);
}

struct buf {
	char *p;
	size_t len, cap;
	int bad;
};

static void b_add(struct buf *b, const char *s, size_t n)
{
	if (b->bad)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t c = b->cap ? b->cap : 4096;
		while (b->len + n + 1 > c)
			c *= 2;
		if (c > 2 * MAX_BODY) {
			b->bad = 1;
			return;
		}
		char *p = realloc(b->p, c);
		if (!p) {
			b->bad = 1;
			return;
		}
		b->p = p;
		b->cap = c;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
}

static void b_lit(struct buf *b, const char *s) { b_add(b, s, strlen(s)); }

static void b_num(struct buf *b, long long v)
{
	char t[32];
	b_add(b, t, (size_t)snprintf(t, sizeof t, "%lld", v));
}

static void b_unum(struct buf *b, unsigned long long v)
{
	char t[32];
	b_add(b, t, (size_t)snprintf(t, sizeof t, "%llu", v));
}

/* utf8_ok says whether s is valid UTF-8 (JSON carries nothing else: the
 * server would read other bytes as U+FFFD, another argument). */
static int utf8_ok(const unsigned char *s)
{
	while (*s) {
		unsigned c = *s;
		int n;
		unsigned min;
		if (c < 0x80) {
			s++;
			continue;
		} else if ((c & 0xE0) == 0xC0) {
			n = 1, min = 0x80, c &= 0x1F;
		} else if ((c & 0xF0) == 0xE0) {
			n = 2, min = 0x800, c &= 0x0F;
		} else if ((c & 0xF8) == 0xF0) {
			n = 3, min = 0x10000, c &= 0x07;
		} else {
			return 0;
		}
		s++;
		for (int i = 0; i < n; i++, s++) {
			if ((*s & 0xC0) != 0x80)
				return 0;
			c = (c << 6) | (*s & 0x3F);
		}
		if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
			return 0;
	}
	return 1;
}

/* b_str appends s as a JSON string; 0 if s is not UTF-8. */
static int b_str(struct buf *b, const char *s)
{
	if (!utf8_ok((const unsigned char *)s))
		return 0;
	b_lit(b, "\"");
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\') {
			char e[2] = {'\\', (char)*p};
			b_add(b, e, 2);
		} else if (*p < 0x20 || *p == 0x7f) {
			char e[8];
			b_add(b, e, (size_t)snprintf(e, sizeof e, "\\u%04x", *p));
		} else {
			b_add(b, (const char *)p, 1);
		}
	}
	b_lit(b, "\"");
	return 1;
}

static int send_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

static void put_err(const char *s) { (void)!write(2, s, strlen(s)); }

/* json_field finds "name": in s and returns what follows, or NULL. */
static const char *json_field(const char *s, const char *name)
{
	char key[64];
	snprintf(key, sizeof key, "\"%s\":", name);
	const char *p = strstr(s, key);
	return p ? p + strlen(key) : NULL;
}

/* json_text copies the JSON string at p (after its opening quote) into out,
 * undoing the escapes the server writes (\" \\ \n \t \uXXXX for ASCII). */
static void json_text(const char *p, char *out, size_t cap)
{
	size_t n = 0;
	if (*p != '"') {
		out[0] = 0;
		return;
	}
	for (p++; *p && *p != '"' && n + 1 < cap; p++) {
		char c = *p;
		if (c == '\\' && p[1]) {
			p++;
			switch (*p) {
			case 'n':
				c = '\n';
				break;
			case 't':
				c = '\t';
				break;
			case 'u': {
				unsigned v = 0;
				if (sscanf(p + 1, "%4x", &v) == 1 && strlen(p + 1) >= 4)
					p += 4;
				c = v < 0x80 ? (char)v : '?';
				break;
			}
			default:
				c = *p;
			}
		}
		out[n++] = c;
	}
	out[n] = 0;
}

/* read_small reads a small file into buf (NUL-terminated); -1 if unreadable. */
static ssize_t read_small(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t n = 0;
	for (;;) {
		ssize_t r = read(fd, buf + n, cap - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
		if (n >= cap - 1)
			break;
	}
	close(fd);
	buf[n] = 0;
	return (ssize_t)n;
}

/* status_line copies the value of "key:" in a /proc status text. */
static void status_line(const char *st, const char *key, char *out, size_t cap)
{
	out[0] = 0;
	size_t kl = strlen(key);
	for (const char *l = st; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (strncmp(l, key, kl) == 0 && l[kl] == ':') {
			const char *v = l + kl + 1;
			while (*v == ' ' || *v == '\t')
				v++;
			size_t n = strcspn(v, "\n");
			if (n >= cap)
				n = cap - 1;
			memcpy(out, v, n);
			out[n] = 0;
			return;
		}
	}
}

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

/* server_is_mine says why the process serving socket s is not this user's
 * own moat serve, or NULL: it must run as this user, the same moat binary
 * (a server of another build, or a copy, would protect its own binary and
 * not the caller's), in this user and mount namespace, under no
 * confinement this process is not under (a command of some sandbox that
 * bound the path first must get neither the environment nor the
 * descriptors). The pidfd taken from the socket proves the pid read is
 * still the peer's after the reads. */
/* server_proof finds the token moat serve shows to whoever may inspect it:
 * the name of a memfd it holds, "/memfd:moat-serve-proof-TOKEN" in
 * /proc/PID/fd (shell/api/proof_linux.go). Reading it needs ptrace read
 * access to the server, which a process confined by Landlock lacks. */
static int server_proof(int pid, char *tok, size_t cap)
{
	char dir[64];
	snprintf(dir, sizeof dir, "/proc/%d/fd", pid);
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	static const char pre[] = "/memfd:moat-serve-proof-";
	int found = -1;
	struct dirent *e;
	while (found < 0 && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char p[384], t[256];
		snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
		ssize_t n = readlink(p, t, sizeof t - 1);
		if (n <= 0)
			continue;
		t[n] = 0;
		if (strncmp(t, pre, sizeof pre - 1) != 0)
			continue;
		size_t k = strcspn(t + sizeof pre - 1, " ");
		if (k == 0 || k >= cap)
			continue;
		memcpy(tok, t + sizeof pre - 1, k);
		tok[k] = 0;
		found = 0;
	}
	closedir(d);
	return found;
}

static const char *server_is_mine(int s, char *why, size_t cap, char *tok, size_t tokcap)
{
	struct ucred cr;
	socklen_t crl = sizeof cr;
	if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cr, &crl) < 0)
		return snprintf(why, cap, "SO_PEERCRED: %s", strerror(errno)), why;
	if (cr.uid != geteuid())
		return snprintf(why, cap, "the process serving it runs as uid %d, not as this user (%d)", (int)cr.uid, (int)geteuid()), why;
	if (cr.pid <= 0)
		return snprintf(why, cap, "the process serving it is not visible from here"), why;
	int pidfd = -1;
	socklen_t pl = sizeof pidfd;
	if (getsockopt(s, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &pl) < 0)
		pidfd = -1;
	char p[64], a[PATH_MAX], b[PATH_MAX];
	struct stat me, it;
	snprintf(p, sizeof p, "/proc/%d/exe", (int)cr.pid);
	const char *bad = NULL;
	if (stat("/proc/self/exe", &me) < 0 || stat(p, &it) < 0) {
		snprintf(why, cap, "the process serving it cannot be inspected (%s): a process this one may not look at", strerror(errno));
		bad = why;
	} else if (me.st_dev != it.st_dev || me.st_ino != it.st_ino)
		bad = "the process serving it is not this moat binary (another build, or one replaced since it started: restart moat serve)";
	if (!bad) {
		snprintf(p, sizeof p, "/proc/%d/root", (int)cr.pid);
		if (stat("/proc/self/root", &me) < 0 || stat(p, &it) < 0 || me.st_dev != it.st_dev || me.st_ino != it.st_ino)
			bad = "the process serving it runs in another root directory (a chroot)";
	}
	static const char *const ns[] = {"user", "mnt"};
	for (int i = 0; !bad && i < 2; i++) {
		char q[64];
		snprintf(q, sizeof q, "/proc/self/ns/%s", ns[i]);
		ssize_t n1 = readlink(q, a, sizeof a - 1);
		snprintf(q, sizeof q, "/proc/%d/ns/%s", (int)cr.pid, ns[i]);
		ssize_t n2 = readlink(q, b, sizeof b - 1);
		if (n1 < 0 || n2 < 0 || n1 != n2 || memcmp(a, b, (size_t)n1) != 0)
			bad = "the process serving it is in another user or mount namespace (a sandboxed command?)";
	}
	static char mine[8192], theirs[8192];
	if (!bad) {
		snprintf(p, sizeof p, "/proc/%d/status", (int)cr.pid);
		if (read_small("/proc/self/status", mine, sizeof mine) < 0 || read_small(p, theirs, sizeof theirs) < 0)
			bad = "the process serving it cannot be read";
	}
	static const char *const keys[] = {"NoNewPrivs", "Seccomp", "Seccomp_filters"};
	for (int i = 0; !bad && i < 3; i++) {
		status_line(mine, keys[i], a, 64);
		status_line(theirs, keys[i], b, 64);
		if (strcmp(a, b) != 0)
			bad = "the process serving it is confined otherwise than this one (no_new_privs or seccomp: a command of some sandbox?)";
	}
	if (!bad) {
		snprintf(p, sizeof p, "/proc/%d/attr/current", (int)cr.pid);
		ssize_t n1 = read_small("/proc/self/attr/current", a, 256);
		ssize_t n2 = read_small(p, b, 256);
		if ((n1 < 0) != (n2 < 0) || (n1 >= 0 && strcmp(a, b) != 0))
			bad = "the process serving it runs under another LSM label";
	}
	if (!bad && server_proof((int)cr.pid, tok, tokcap) < 0)
		bad = "the process serving it shows no proof (an older moat serve, or one this process may not inspect)";
	if (!bad && pidfd >= 0 && syscall(__NR_pidfd_send_signal, pidfd, 0, NULL, 0) < 0)
		bad = "the process serving it ended while it was checked";
	if (pidfd >= 0)
		close(pidfd);
	return bad;
}

/* The signals moat run forwards to its command (cmd/moat, forwardedSignals). */
static const int fwd_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH, SIGUSR1, SIGUSR2};

/* relay runs once the server has the descriptors: signals go to the
 * server as lines, the server's one line is the exit status. It never
 * returns. */
static void __attribute__((noreturn)) relay(int s, const char *sock, char *rest, size_t restlen)
{
	/* What moat run in its own process ignores (Go's runtime ignores these
	 * asynchronous signals when nobody asked for them) must not kill this
	 * client, and with it the command. */
	static const int ignored[] = {SIGALRM, SIGVTALRM, SIGPROF, SIGIO, SIGPWR, SIGXCPU, SIGXFSZ, SIGURG, SIGPIPE};
	for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++)
		signal(ignored[i], SIG_IGN);
	for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
		signal(sig, SIG_IGN);
	sigset_t set;
	sigemptyset(&set);
	for (size_t i = 0; i < sizeof fwd_signals / sizeof fwd_signals[0]; i++)
		sigaddset(&set, fwd_signals[i]);
	sigset_t old;
	sigprocmask(SIG_BLOCK, &set, &old);
	int sfd = signalfd(-1, &set, SFD_CLOEXEC);
	if (sfd < 0)
		sigprocmask(SIG_SETMASK, &old, NULL); /* the signals act on this client, as without a server */
	char line[8192];
	size_t n = 0;
	if (restlen > sizeof line - 1)
		restlen = sizeof line - 1;
	memcpy(line, rest, restlen);
	n = restlen;
	for (;;) {
		line[n] = 0;
		char *nl = memchr(line, '\n', n);
		if (nl) {
			*nl = 0;
			const char *e = json_field(line, "error");
			if (e) {
				char text[4096];
				json_text(e, text, sizeof text);
				put_err("moat: ");
				put_err(text);
				put_err("\n");
			}
			const char *c = json_field(line, "exit_code");
			_exit(c ? (int)strtol(c, NULL, 10) & 0xff : 125);
		}
		struct pollfd p[2] = {{.fd = s, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
		if (poll(p, sfd >= 0 ? 2 : 1, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (sfd >= 0 && (p[1].revents & POLLIN)) {
			struct signalfd_siginfo si;
			if (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
				char m[40];
				int k = snprintf(m, sizeof m, "{\"signal\":%u}\n", si.ssi_signo);
				(void)send_all(s, m, (size_t)k);
			}
		}
		if (p[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			if (n >= sizeof line - 1)
				break; /* a line longer than any the server sends */
			ssize_t r = recv(s, line + n, sizeof line - 1 - n, 0);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0)
				break;
			n += (size_t)r;
		}
	}
	put_err("moat: the server at ");
	put_err(sock);
	put_err(" (MOAT_SERVER) ended the connection before the command's end: the command was killed\n");
	_exit(125);
}

/* read_answer reads one HTTP answer's head into ans, and for any status
 * but 101 its body too (Content-Length); *body points after the head.
 * -1 with why set when no whole answer came (bounded by the socket's
 * timeout). */
static int read_answer(int s, char *ans, size_t cap, size_t *an, int *status, char **body, char *why, size_t whycap)
{
	*an = 0;
	char *end = NULL;
	while (!end) {
		if (*an >= cap - 1) {
			snprintf(why, whycap, "an answer larger than any the server sends");
			return -1;
		}
		ssize_t r = recv(s, ans + *an, cap - 1 - *an, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			snprintf(why, whycap, "%s", r == 0 ? "the server closed the connection" : strerror(errno));
			return -1;
		}
		*an += (size_t)r;
		ans[*an] = 0;
		end = strstr(ans, "\r\n\r\n");
	}
	*body = end + 4;
	*status = 0;
	if (sscanf(ans, "HTTP/1.%*d %d", status) != 1) {
		snprintf(why, whycap, "not an HTTP answer");
		return -1;
	}
	if (*status == 101)
		return 0;
	const char *cl = strcasestr(ans, "\r\nContent-Length:");
	size_t want = cl ? strtoul(cl + 17, NULL, 10) : 0;
	size_t have = *an - (size_t)(*body - ans);
	while (have < want && *an < cap - 1) {
		ssize_t r = recv(s, ans + *an, cap - 1 - *an, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		*an += (size_t)r;
		have += (size_t)r;
		ans[*an] = 0;
	}
	return 0;
}

/* make_proof opens the memfd whose name proves this process to whoever may
 * inspect it (the server reads it in /proc/PID/fd and says it back before
 * the request, with the environment, is sent): "moat-run-proof-NONCE". */
static int make_proof(char *nonce, size_t cap)
{
	unsigned char r[16];
	if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r || cap < 2 * sizeof r + 1)
		return -1;
	for (size_t i = 0; i < sizeof r; i++)
		snprintf(nonce + 2 * i, 3, "%02x", r[i]);
	char name[64];
	snprintf(name, sizeof name, "moat-run-proof-%s", nonce);
	return memfd_create(name, MFD_CLOEXEC);
}

void moat_fastrun(int argc, char **argv, char **envp)
{
	const char *sock = getenv("MOAT_SERVER");
	if (!sock || !*sock || argc < 2 || !argv || !argv[0] || !argv[1] || strcmp(argv[1], "run") != 0)
		return;
	const char *base = strrchr(argv[0], '/');
	base = base ? base + 1 : argv[0];
	if (strcmp(base, "srt") == 0)
		return; /* the npm sandbox runtime's command line (cmd/moat/srt.go) */
	for (int fd = 0; fd < 3; fd++) {
		if (fcntl(fd, F_GETFD) < 0) {
			note("descriptor %d is closed", fd);
			return;
		}
		if (isatty(fd)) {
			/* A terminal needs the pty relay of moat run itself. */
			moat_server_quiet = 1;
			note("descriptor %d is a terminal", fd);
			return;
		}
	}
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (sock[0] != '/' || strlen(sock) >= sizeof sa.sun_path) {
		note("%s: want an absolute socket path shorter than %zu bytes", sock, sizeof sa.sun_path);
		return;
	}
	strcpy(sa.sun_path, sock);

	struct buf b = {0};
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof cwd)) {
		note("the working directory: %s", strerror(errno));
		return;
	}
	mode_t um = umask(0);
	umask(um);
	int ok = 1;
	b_lit(&b, "{\"args\":[");
	for (int i = 2; i < argc; i++) {
		if (i > 2)
			b_lit(&b, ",");
		ok &= b_str(&b, argv[i]);
	}
	b_lit(&b, "],\"cwd\":");
	ok &= b_str(&b, cwd);
	b_lit(&b, ",\"env\":[");
	for (char **e = envp; e && *e; e++) {
		if (e != envp)
			b_lit(&b, ",");
		ok &= b_str(&b, *e);
	}
	b_lit(&b, "],\"umask\":");
	b_num(&b, (long long)um);
	b_lit(&b, ",\"rlimits\":[");
	for (int r = 0; r < RLIM_NLIMITS; r++) {
		struct rlimit rl;
		if (getrlimit(r, &rl) < 0) {
			note("getrlimit %d: %s", r, strerror(errno));
			free(b.p);
			return;
		}
		b_lit(&b, r ? ",[" : "[");
		b_unum(&b, (unsigned long long)rl.rlim_cur);
		b_lit(&b, ",");
		b_unum(&b, (unsigned long long)rl.rlim_max);
		b_lit(&b, "]");
	}
	b_lit(&b, "],\"gid\":");
	b_num(&b, (long long)getgid());
	b_lit(&b, ",\"groups\":[");
	int ng = getgroups(0, NULL);
	gid_t *gs = ng > 0 ? calloc((size_t)ng, sizeof *gs) : NULL;
	if (ng > 0 && (!gs || (ng = getgroups(ng, gs)) < 0))
		ng = -1;
	for (int i = 0; i < ng; i++) {
		if (i)
			b_lit(&b, ",");
		b_num(&b, (long long)gs[i]);
	}
	free(gs);
	b_lit(&b, "]}");
	if (!ok) {
		note("an argument, the working directory or the environment is not UTF-8");
		free(b.p);
		return;
	}
	if (ng < 0) {
		note("getgroups failed");
		free(b.p);
		return;
	}
	if (b.bad || b.len > MAX_BODY) {
		note("the request would be larger than the server takes");
		free(b.p);
		return;
	}

	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0) {
		note("socket: %s", strerror(errno));
		free(b.p);
		return;
	}
	struct timeval tv = {.tv_sec = HANDSHAKE_SECONDS};
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	/* The proof the server must say back (below), made before the
	 * connection so that the hello can go at once. */
	char nonce[40], ans[16384], *body;
	size_t an;
	int status;
	int mfd = make_proof(nonce, sizeof nonce);
	if (mfd < 0) {
		note("%s: the proof memfd: %s", sock, strerror(errno));
		close(s);
		free(b.p);
		return;
	}
	if (connect(s, (struct sockaddr *)&sa, sizeof sa) < 0) {
		note("%s: connect: %s", sock, strerror(errno));
		close(mfd);
		close(s);
		free(b.p);
		return;
	}
	/* The hello carries nothing of this process's (no proof, no
	 * environment): it goes first, and the server works on its answer
	 * while this process checks who serves the socket. */
	static const char hello[] = "POST /v1/cli/hello HTTP/1.1\r\nHost: moat\r\nContent-Length: 0\r\n\r\n";
	int hello_errno = send_all(s, hello, sizeof hello - 1) == 0 ? 0 : errno;
	/* Only this user's own moat serve gets the environment and the
	 * descriptors: not a socket another user, or a command of some
	 * sandbox, bound first at that path. */
	char why[256], tok[80];
	const char *bad = server_is_mine(s, why, sizeof why, tok, sizeof tok);
	if (bad) {
		close(mfd);
		note("%s: %s", sock, bad);
		close(s);
		free(b.p);
		return;
	}
	/* The server proves it may inspect this process (a process confined
	 * by Landlock may not) before anything of it is sent. */
	if (hello_errno)
		snprintf(why, sizeof why, "send: %s", strerror(hello_errno));
	else if (read_answer(s, ans, sizeof ans, &an, &status, &body, why, sizeof why) == 0)
		why[0] = 0;
	if (why[0]) {
		close(mfd);
		note("%s: %s", sock, why);
		close(s);
		free(b.p);
		return;
	}
	close(mfd);
	char said[64] = "";
	const char *pf = json_field(body, "proof");
	if (pf)
		json_text(pf, said, sizeof said);
	if (status != 200 || strcmp(said, nonce) != 0) {
		char err[512] = "";
		const char *e = json_field(body, "error");
		if (e)
			json_text(e, err, sizeof err);
		note("%s: the process serving it did not prove it may inspect this one (%d%s%s)", sock, status, err[0] ? ": " : "", err);
		close(s);
		free(b.p);
		return;
	}
	char head[384];
	int hl = snprintf(head, sizeof head,
			  "POST /v1/cli/run HTTP/1.1\r\nHost: moat\r\nContent-Type: application/json\r\n"
			  "Connection: Upgrade\r\nUpgrade: " MOAT_CLI_UPGRADE "\r\nX-Moat-Proof: %s\r\nContent-Length: %zu\r\n\r\n",
			  tok, b.len);
	int sent = send_all(s, head, (size_t)hl) == 0 && send_all(s, b.p, b.len) == 0;
	free(b.p);
	if (!sent) {
		note("%s: send: %s", sock, strerror(errno));
		close(s);
		return;
	}
	/* The answer: 101 (the server takes the run) or an error with JSON. */
	if (read_answer(s, ans, sizeof ans, &an, &status, &body, why, sizeof why) < 0) {
		note("%s: %s", sock, why);
		close(s);
		return;
	}
	if (status != 101) {
		char err[512] = "";
		const char *e = json_field(body, "error");
		if (e)
			json_text(e, err, sizeof err);
		note("%s: %d %s", sock, status, err[0] ? err : "(no reason given)");
		close(s);
		return;
	}
	/* Upgraded: the descriptors, in one message with one byte. */
	int fds[3] = {0, 1, 2};
	char one = 0;
	struct iovec io = {.iov_base = &one, .iov_len = 1};
	union {
		char b[CMSG_SPACE(sizeof fds)];
		struct cmsghdr align;
	} cm;
	memset(&cm, 0, sizeof cm);
	struct msghdr mh = {.msg_iov = &io, .msg_iovlen = 1, .msg_control = cm.b, .msg_controllen = sizeof cm.b};
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof fds);
	memcpy(CMSG_DATA(c), fds, sizeof fds);
	ssize_t w;
	do
		w = sendmsg(s, &mh, MSG_NOSIGNAL);
	while (w < 0 && errno == EINTR);
	if (w != 1) {
		/* The server took the run but has no descriptors: it ends it. */
		put_err("moat: the server at ");
		put_err(sock);
		put_err(" (MOAT_SERVER): sending the descriptors failed\n");
		_exit(125);
	}
	struct timeval none = {0};
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &none, sizeof none);
	setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &none, sizeof none);
	relay(s, sock, body, an - (size_t)(body - ans));
}
