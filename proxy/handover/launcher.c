// SPDX-License-Identifier: GPL-2.0-or-later
/* launcher.c - starting the new binary of a live handover
 *
 * Theory of operation: on SIGUSR2 the daemon (OLD) starts the binary now
 * on disk (NEW) with the same arguments, one end of a SOCK_SEQPACKET
 * socketpair as its descriptor 3 and SMBSPLICE_HANDOVER_FD=3 in its
 * environment; socket activation's variables (LISTEN_FDS, LISTEN_PID,
 * LISTEN_FDNAMES) are not passed on, as NEW's sockets come over the
 * handover. NEW must start as root did (it forks its own privileged
 * helper, then drops to --user itself), so there are two ways:
 *
 *   direct	without --user OLD is what it was started as: it forks and
 *		execs NEW itself, from a multithreaded process. Everything
 *		the child needs (argv, envp) is built before fork(), every
 *		signal is blocked across it (no handler of OLD's runs in the
 *		child), and the child makes only async-signal-safe calls.
 *   launcher	with --user OLD holds no privilege. At start, before the
 *		drop, it forks a launcher: a process that keeps root, keeps
 *		descriptors 0, 1 and 2 (the log, which NEW inherits) and its
 *		socket only, dies with the daemon (PR_SET_PDEATHSIG),
 *		ignores the signals a service manager sends the whole group,
 *		and answers one request: LN_LAUNCH with one descriptor, an
 *		AF_UNIX SOCK_SEQPACKET socket (anything else is refused).
 *		It starts the binary and argv it was given at start, copies
 *		fork() made, never another, and only while that binary
 *		could have been written by root alone (exesafe.c: else
 *		LN_REFUSED, EPERM and why), and replies with the pid or the
 *		errno; when that child ends it reaps it and reports
 *		LN_EXIT {pid, wait status}. One child at a time (EBUSY). It
 *		ends on the hang-up of its socket, leaving the child alone:
 *		NEW outlives OLD.
 *
 * Under a service manager (NOTIFY_SOCKET set: OLD will name NEW the
 * unit's main process with MAINPID=), direct mode starts NEW as a child
 * of OLD's parent, the manager, with clone(CLONE_PARENT): systemd 252
 * supervises a main process that is not its own child only loosely
 * ("Supervising process N which is not our child"), and on `systemctl
 * stop` does not wait for it but sends SIGKILL at once, which would reset
 * every connection a drain should let finish (tests/integ/
 * test_guest_systemd.py found it). OLD keeps a pidfd of NEW to know when
 * it ends and to kill it, but cannot learn how it ended: the manager
 * reaps it. A kernel without CLONE_PIDFD (before 5.2) gets fork().
 *
 * Either way an exec() that fails is the spawn's error, not a child
 * exiting 127: the child holds the write end of a close-on-exec pipe and
 * writes its errno there if execve() returns; the parent reads EOF
 * (exec done) or the errno. The child's signal mask is emptied and every
 * disposition reset, since SIG_IGN (the launcher's, OLD's SIGPIPE)
 * survives exec; descriptors other than 0-3 are made close-on-exec.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "common/fdpass.h"
#include "handover/exesafe.h"
#include "handover/howire.h"
#include "handover/launcher.h"

extern char **environ;

/* How long the daemon waits for the launcher's reply to LN_LAUNCH. */
#define LN_REPLY_MS 5000

/* Descriptors a message may bring and still be read: one is all either
 * side sends, and a few more are taken (and closed) so that a reply with
 * a stray one is still a reply. */
#define LN_FDS_MAX 4

/* The handover socket's number in the new process, and its variable. */
#define LN_FD  3
#define LN_ENV HO_ENV

enum ln_op {
	LN_LAUNCH = 1, /* daemon -> launcher, with the socket */
	LN_PID,	       /* launcher -> daemon: @pid started, or @err */
	LN_REFUSED,    /* launcher -> daemon: the request was refused, @err */
	LN_EXIT,       /* launcher -> daemon: @pid ended with wait @status */
};

/**
 * struct ln_msg - every message between daemon and launcher
 * @op:		an enum ln_op
 * @pid:	the child's
 * @err:	an errno, 0 for none
 * @status:	a wait status
 * @why:	with LN_REFUSED and EPERM: which part of the binary's path
 *		the --user account could write (exesafe_check())
 */
struct ln_msg {
	int32_t op;
	int32_t pid;
	int32_t err;
	int32_t status;
	char why[EXE_SAFE_WHY];
};

/**
 * launcher_self_exe() - the path this process was started from
 * @buf:	where it goes, NUL-terminated
 * @len:	its size
 *
 * Call it at start: once an upgrade replaced the file, the link says
 * "PATH (deleted)", and the suffix is stripped so that PATH (the new
 * binary) is what a handover starts.
 *
 * Return: 0, or -1 with errno set (ENAMETOOLONG if @buf is too small).
 */
int launcher_self_exe(char *buf, size_t len)
{
	static const char deleted[] = " (deleted)";
	const size_t dl = sizeof(deleted) - 1;
	ssize_t n;

	if (len < 2) {
		errno = ENAMETOOLONG;
		return -1;
	}
	n = readlink("/proc/self/exe", buf, len);
	if (n < 0)
		return -1;
	if ((size_t)n >= len) {
		errno = ENAMETOOLONG;
		return -1;
	}
	buf[n] = '\0';
	if ((size_t)n > dl && !strcmp(buf + n - dl, deleted))
		buf[n - dl] = '\0';
	return 0;
}

/**
 * build_envp() - this process's environment as the new one gets it
 *
 * Without the variables of socket activation and of a handover, and
 * with SMBSPLICE_HANDOVER_FD=3. The strings are environ's (and a static
 * one): free only the array.
 *
 * Return: a NULL-terminated array, malloc()ed, or NULL (out of memory).
 */
static char **build_envp(void)
{
	static const char *const drop[] = { "LISTEN_FDS=", "LISTEN_PID=",
					    "LISTEN_FDNAMES=", LN_ENV "=" };
	static char mine[] = LN_ENV "=3";
	size_t n = 0, k = 0;
	char **envp;

	while (environ && environ[n])
		n++;
	envp = calloc(n + 2, sizeof(*envp));
	if (!envp)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		bool keep = true;

		for (size_t j = 0; j < sizeof(drop) / sizeof(drop[0]); j++)
			keep = keep &&
			       strncmp(environ[i], drop[j], strlen(drop[j]));
		if (keep)
			envp[k++] = environ[i];
	}
	envp[k++] = mine;
	envp[k] = NULL;
	return envp;
}

/**
 * child_exec() - in the forked child: become the new binary
 * @exe:	its path
 * @argv:	its arguments
 * @envp:	its environment
 * @fd:		the handover socket, to be descriptor 3
 * @wfd:	the error pipe's write end (close-on-exec)
 *
 * Only async-signal-safe calls: the parent may have had threads.
 */
static void __attribute__((noreturn))
child_exec(const char *exe, char *const argv[], char *const envp[], int fd,
	   int wfd)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	sigset_t none;
	int e;

	if (wfd <= LN_FD) {
		wfd = fcntl(wfd, F_DUPFD_CLOEXEC, LN_FD + 1);
		if (wfd < 0)
			_exit(127);
	}
	if (fd == LN_FD ? fcntl(fd, F_SETFD, 0) : dup2(fd, LN_FD) < 0) {
		e = errno;
		goto fail;
	}
	/* Whatever OLD left inheritable stays OLD's (the pipe is already
	 * close-on-exec); a kernel without it leaves them as they are. */
	close_range(LN_FD + 1, ~0u, CLOSE_RANGE_CLOEXEC);
	for (int s = 1; s < NSIG; s++)
		sigaction(s, &dfl, NULL); /* SIGKILL, SIGSTOP: EINVAL */
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	execve(exe, argv, envp);
	e = errno;
fail:
	while (write(wfd, &e, sizeof(e)) < 0 && errno == EINTR)
		;
	_exit(127);
}

/* The pidfd of a direct child the service manager adopted (CLONE_PARENT),
 * -1 when there is none: one child at a time. */
static int adopted_pidfd = -1;

/**
 * fork_child() - fork(), or, @adopt, a child of this process's parent
 * @adopt:	under a service manager, which is to supervise the child
 *
 * Sets adopted_pidfd when the child is the manager's.
 *
 * Return: as fork(): 0 in the child, its pid or -1 in the parent.
 */
static pid_t fork_child(bool adopt)
{
	const unsigned long flags = CLONE_PARENT | CLONE_PIDFD | SIGCHLD;
	long pid;

	if (adopted_pidfd >= 0)
		close(adopted_pidfd);
	adopted_pidfd = -1;
	if (adopt) {
		/* clone(), not clone3(): seccomp can see its flags, and
		 * systemd's RestrictNamespaces= answers clone3() ENOSYS.
		 * The pidfd goes where the parent's tid would; s390 has
		 * the first two arguments the other way round. */
#ifdef __s390__
		pid = syscall(SYS_clone, 0, flags, &adopted_pidfd, NULL, 0);
#else
		pid = syscall(SYS_clone, flags, 0, &adopted_pidfd, NULL, 0);
#endif
		if (pid >= 0 || errno != EINVAL)
			return (pid_t)pid;
		adopted_pidfd = -1;
	}
	return fork();
}

/**
 * spawn_exec() - fork and exec @exe with @fd as descriptor 3
 * @exe:	the binary
 * @argv:	its arguments
 * @fd:		the handover socket
 * @adopt:	make it the service manager's child (see the top)
 *
 * Return: the child's pid, or -1 with errno set (execve()'s when the
 * exec failed: the child is then reaped here, or by the manager).
 */
static pid_t spawn_exec(const char *exe, char *const argv[], int fd, bool adopt)
{
	char **envp = build_envp();
	sigset_t all, old;
	int p[2], e = 0;
	pid_t pid;
	ssize_t n;

	if (!envp)
		return -1;
	if (pipe2(p, O_CLOEXEC)) {
		free(envp);
		return -1;
	}
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid = fork_child(adopt);
	if (!pid)
		child_exec(exe, argv, envp, fd, p[1]);
	e = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	close(p[1]);
	free(envp);
	if (pid < 0) {
		close(p[0]);
		errno = e;
		return -1;
	}
	do
		n = read(p[0], &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(p[0]);
	if (n <= 0)
		return pid; /* EOF: the exec closed the pipe */
	if (adopted_pidfd >= 0) {
		close(adopted_pidfd);
		adopted_pidfd = -1;
	} else {
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	errno = n == sizeof(e) ? e : EIO;
	return -1;
}

/* ---- the launcher's side ------------------------------------------------ */

/**
 * ln_send() - one message, and a descriptor with it if @fd >= 0
 * @sock:	the socket
 * @m:		the message
 * @fd:		a descriptor, or -1
 * @flags:	MSG_DONTWAIT, or 0
 *
 * Return: 0, or -1 with errno set.
 */
static int ln_send(int sock, const struct ln_msg *m, int fd, int flags)
{
	return fdpass_send(sock, m, sizeof(*m), &fd, fd >= 0, flags);
}

/**
 * ln_recv() - one message, and the descriptors that came with it
 * @sock:	the socket
 * @m:		where it goes
 * @fds:	room for LN_FDS_MAX descriptors (O_CLOEXEC)
 * @nfds:	set to how many came
 * @flags:	MSG_DONTWAIT, or 0
 *
 * Return: 1 for a whole message, 0 on hang-up, -1 with errno set (EPROTO
 * for a datagram of another size, with more than LN_FDS_MAX descriptors,
 * or whose descriptors could not all be received; the descriptors of one
 * of another size are still returned).
 */
static int ln_recv(int sock, struct ln_msg *m, int *fds, unsigned *nfds,
		   int flags)
{
	ssize_t n =
		fdpass_recv(sock, m, sizeof(*m), fds, LN_FDS_MAX, nfds, flags);

	if (n < 0 &&
	    (errno == EMSGSIZE || errno == ETOOMANYREFS || errno == EMFILE))
		errno = EPROTO; /* malformed, all alike: refused */
	if (n < 0)
		return -1;
	if (n == 0 && !*nfds)
		return 0;
	if (n != (ssize_t)sizeof(*m)) {
		errno = EPROTO;
		return -1;
	}
	return 1;
}

/**
 * check_socket() - is @fd an AF_UNIX SOCK_SEQPACKET socket
 * @fd:	the descriptor a request brought
 *
 * Return: 0, or an errno (ENOTSOCK, EPROTOTYPE for another kind).
 */
static int check_socket(int fd)
{
	int dom = 0, type = 0;
	socklen_t l1 = sizeof(dom), l2 = sizeof(type);

	if (getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &l1) ||
	    getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &l2))
		return errno;
	return dom == AF_UNIX && type == SOCK_SEQPACKET ? 0 : EPROTOTYPE;
}

/**
 * launcher_isolate() - make the forked process the launcher
 * @sock:	its socket, kept
 * @parent:	the daemon's pid
 *
 * Exits the process on a failure: a launcher half set up serves no one.
 *
 * Return: a signalfd for SIGCHLD.
 */
static int launcher_isolate(int sock, pid_t parent)
{
	static const int quiet[] = { SIGHUP,  SIGINT,  SIGTERM,
				     SIGUSR1, SIGUSR2, SIGPIPE };
	sigset_t chld;
	int sfd;

	for (size_t i = 0; i < sizeof(quiet) / sizeof(quiet[0]); i++)
		signal(quiet[i], SIG_IGN); /* the daemon's to act on */
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_SETMASK, &chld, NULL);
	prctl(PR_SET_NAME, "smbsplice-launch", 0, 0, 0);
	if ((sock > 3 && close_range(3, (unsigned)sock - 1, 0)) ||
	    close_range((unsigned)sock + 1, ~0u, 0))
		_exit(1);
	sfd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0 || prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) ||
	    getppid() != parent)
		_exit(1);
	return sfd;
}

/**
 * launch_checked() - start the binary if only root could have put it
 *		      there, and say how it went
 * @exe:	the binary
 * @argv:	its arguments
 * @fd:		the handover socket the request brought
 * @rep:	the reply: LN_PID with the pid or errno; or LN_REFUSED with
 *		EPERM and why, for a binary the --user account could have
 *		written
 * @child:	set to the child started
 *
 * Checked at every request, not once: the file is replaced by each
 * upgrade, and so may its directories be.
 */
static void launch_checked(const char *exe, char *const argv[], int fd,
			   struct ln_msg *rep, pid_t *child)
{
	pid_t pid = -1;
	int safe;

	*rep = (struct ln_msg){ .op = LN_PID };
	safe = exesafe_check(exe, rep->why, sizeof(rep->why));
	if (safe > 0) {
		rep->op = LN_REFUSED;
		rep->err = EPERM;
		return;
	}
	/* Not to be told (missing, a loop): execve() would fail the same
	 * way, and its errno is the clearer report. */
	if (!safe)
		pid = spawn_exec(exe, argv, fd, false);
	rep->why[0] = '\0';
	rep->pid = pid > 0 ? pid : 0;
	rep->err = pid > 0 ? 0 : errno;
	if (pid > 0)
		*child = pid;
}

/**
 * launcher_answer() - read one request and answer it
 * @sock:	the launcher's socket
 * @exe:	the binary it starts
 * @argv:	its arguments
 * @child:	the child running, 0 for none; updated
 *
 * Exits the process on the hang-up of @sock.
 */
static void launcher_answer(int sock, const char *exe, char *const argv[],
			    pid_t *child)
{
	struct ln_msg m, rep = { .op = LN_REFUSED };
	int fds[LN_FDS_MAX], r;
	unsigned nfds;

	r = ln_recv(sock, &m, fds, &nfds, MSG_DONTWAIT);
	if (r == 0 || (r < 0 && errno != EAGAIN && errno != EPROTO))
		_exit(0); /* the daemon is gone */
	if (r < 0 && errno == EAGAIN)
		return;
	if (r < 0 || m.op != LN_LAUNCH || nfds != 1)
		rep.err = EINVAL;
	else if (*child)
		rep.err = EBUSY;
	else
		rep.err = check_socket(fds[0]);
	if (!rep.err)
		launch_checked(exe, argv, fds[0], &rep, child);
	for (unsigned i = 0; i < nfds; i++)
		close(fds[i]);
	ln_send(sock, &rep, -1, 0);
}

/**
 * launcher_reaped() - reap what ended, reporting the child
 * @sock:	the launcher's socket
 * @sfd:	the SIGCHLD signalfd, drained
 * @child:	the child running, 0 for none; updated
 */
static void launcher_reaped(int sock, int sfd, pid_t *child)
{
	struct signalfd_siginfo si;
	int status;
	pid_t pid;

	while (read(sfd, &si, sizeof(si)) == sizeof(si))
		;
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		struct ln_msg m = { .op = LN_EXIT,
				    .pid = pid,
				    .status = status };

		if (pid != *child)
			continue;
		*child = 0;
		ln_send(sock, &m, -1, 0);
	}
}

/**
 * launcher_main() - the launcher process, from fork() to its end
 * @sock:	its socket
 * @exe:	the binary it starts
 * @argv:	its arguments
 * @parent:	the daemon's pid
 */
static void __attribute__((noreturn))
launcher_main(int sock, const char *exe, char *const argv[], pid_t parent)
{
	int sfd = launcher_isolate(sock, parent);
	struct pollfd p[2] = { { sock, POLLIN, 0 }, { sfd, POLLIN, 0 } };
	pid_t child = 0;

	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			_exit(1);
		}
		if (p[1].revents)
			launcher_reaped(sock, sfd, &child);
		if (p[0].revents)
			launcher_answer(sock, exe, argv, &child);
	}
}

/* ---- the daemon's side -------------------------------------------------- */

/**
 * launcher_start() - fork the launcher, before the daemon gives up root
 * @ln:		filled in
 * @exe:	the binary a handover starts (launcher_self_exe())
 * @argv:	its arguments, the daemon's own
 *
 * Call it while the process is single-threaded (PR_SET_PDEATHSIG is
 * bound to the thread that forks), and only with --user.
 *
 * Return: 0, or -1 with errno set (@ln is then LAUNCHER_NONE).
 */
int launcher_start(struct launcher *ln, const char *exe, char *const argv[])
{
	pid_t parent = getpid(), pid;
	int sv[2], e;

	*ln = LAUNCHER_NONE;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return -1;
	pid = fork();
	if (!pid) {
		close(sv[0]);
		launcher_main(sv[1], exe, argv, parent);
	}
	e = errno;
	close(sv[1]);
	if (pid < 0) {
		close(sv[0]);
		errno = e;
		return -1;
	}
	ln->pid = pid;
	ln->fd = sv[0];
	return 0;
}

/**
 * wait_reply() - the launcher's reply to LN_LAUNCH
 * @ln:		the launcher
 * @rep:	set to it
 *
 * An LN_EXIT still queued from a child before is dropped: reap a child
 * before starting another (the launcher refuses while one runs).
 *
 * Return: 0, or -1 with errno set (ETIMEDOUT; ECONNRESET if gone).
 */
static int wait_reply(struct launcher *ln, struct ln_msg *rep)
{
	struct pollfd p = { ln->fd, POLLIN, 0 };
	int fds[LN_FDS_MAX], r;
	unsigned nfds;

	for (;;) {
		r = poll(&p, 1, LN_REPLY_MS);
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0)
			errno = ETIMEDOUT;
		if (r <= 0)
			return -1;
		r = ln_recv(ln->fd, rep, fds, &nfds, MSG_DONTWAIT);
		for (unsigned i = 0; i < nfds; i++)
			close(fds[i]); /* it sends none */
		if (r == 0) {
			errno = ECONNRESET;
			return -1;
		}
		if (r < 0 && errno != EAGAIN)
			return -1;
		if (r > 0 && (rep->op == LN_PID || rep->op == LN_REFUSED))
			return 0;
	}
}

/**
 * launcher_spawn() - start the new binary with @handover_fd as its 3
 * @ln:		the launcher, or LAUNCHER_NONE (direct: fork and exec here)
 * @exe:	the binary; in direct mode only, else for the line
 * @argv:	its arguments; in direct mode only
 * @handover_fd: the new process's end of the handover socketpair
 * @err:	buffer for one line saying what failed
 * @errlen:	its size
 *
 * @handover_fd stays the caller's to close.
 *
 * Return: the new process's pid, or -1 with @err set.
 */
pid_t launcher_spawn(struct launcher *ln, const char *exe, char *const argv[],
		     int handover_fd, char *err, size_t errlen)
{
	struct ln_msg m = { .op = LN_LAUNCH }, rep;
	pid_t pid;

	if (ln->fd < 0) {
		pid = spawn_exec(exe, argv, handover_fd,
				 getenv("NOTIFY_SOCKET") != NULL);
		if (pid < 0)
			snprintf(err, errlen, "cannot start %s: %s", exe,
				 strerror(errno));
		return pid;
	}
	if (ln_send(ln->fd, &m, handover_fd, MSG_DONTWAIT) ||
	    wait_reply(ln, &rep)) {
		snprintf(
			err, errlen,
			"the launcher (pid %d) %s: %s; restart smbsplice to run the new binary",
			(int)ln->pid,
			errno == ETIMEDOUT ? "did not answer" : "is gone",
			strerror(errno));
		return -1;
	}
	rep.why[sizeof(rep.why) - 1] = '\0';
	if (rep.op == LN_REFUSED && rep.err == EPERM && rep.why[0]) {
		snprintf(err, errlen,
			 "the launcher refused to start %s: %s; %s", exe,
			 rep.why, EXE_UNSAFE_HINT);
		return -1;
	}
	if (rep.op == LN_REFUSED) {
		snprintf(err, errlen, "the launcher refused the request: %s",
			 strerror(rep.err));
		return -1;
	}
	if (rep.err || rep.pid <= 0) {
		snprintf(err, errlen, "cannot start %s: %s", exe,
			 strerror(rep.err ? rep.err : EIO));
		return -1;
	}
	return rep.pid;
}

/**
 * launcher_reap() - has the child @pid ended, without waiting
 * @ln:		the launcher, or LAUNCHER_NONE (a direct child)
 * @pid:	the child, from launcher_spawn()
 * @status:	set to its wait status
 *
 * A direct child is waitpid()ed here: a caller that reaps children
 * otherwise (libev's ev_child) reads its status there instead. With the
 * launcher, its LN_EXIT report is read from @ln->fd (readable when one
 * came).
 *
 * A direct child the service manager adopted is the manager's to reap:
 * its pidfd says it ended, and *@status is then -1 (neither exited nor
 * signalled, as far as this process can know).
 *
 * Return: 1 with *@status, 0 if not yet, -1 with errno set (ECONNRESET:
 * the launcher is gone, and with it what became of the child).
 */
int launcher_reap(struct launcher *ln, pid_t pid, int *status)
{
	struct pollfd pfd = { .fd = adopted_pidfd, .events = POLLIN };
	struct ln_msg m;
	int fds[LN_FDS_MAX], r;
	unsigned nfds;
	pid_t got;

	if (ln->fd < 0 && adopted_pidfd >= 0) {
		if (poll(&pfd, 1, 0) <= 0)
			return 0;
		close(adopted_pidfd);
		adopted_pidfd = -1;
		*status = -1;
		return 1;
	}
	if (ln->fd < 0) {
		do
			got = waitpid(pid, status, WNOHANG);
		while (got < 0 && errno == EINTR);
		return got < 0 ? -1 : got == pid;
	}
	for (;;) {
		r = ln_recv(ln->fd, &m, fds, &nfds, MSG_DONTWAIT);
		for (unsigned i = 0; i < nfds; i++)
			close(fds[i]);
		if (r == 0) {
			errno = ECONNRESET;
			return -1;
		}
		if (r < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
		if (m.op == LN_EXIT && m.pid == pid) {
			*status = m.status;
			return 1;
		}
	}
}

/**
 * launcher_kill() - kill a direct child that has not ended, and reap it
 * @pid:	the child, from launcher_spawn() without a launcher
 * @status:	set to its wait status (-1: adopted, see launcher_reap())
 *
 * An adopted child is killed through its pidfd (its pid may be reused
 * once the manager has reaped it) and waited for up to a second.
 *
 * Return: 1 with *@status, 0 if it could not be seen to end.
 */
int launcher_kill(pid_t pid, int *status)
{
	struct pollfd pfd = { .fd = adopted_pidfd, .events = POLLIN };

	if (adopted_pidfd < 0) {
		kill(pid, SIGKILL);
		return waitpid(pid, status, 0) == pid;
	}
	syscall(SYS_pidfd_send_signal, adopted_pidfd, SIGKILL, NULL, 0);
	if (poll(&pfd, 1, 1000) <= 0)
		return 0;
	close(adopted_pidfd);
	adopted_pidfd = -1;
	*status = -1;
	return 1;
}

/**
 * launcher_stop() - hang up on the launcher and wait for it to end
 * @ln:	the launcher, or LAUNCHER_NONE (nothing to do)
 *
 * A child it started runs on.
 */
void launcher_stop(struct launcher *ln)
{
	if (ln->fd < 0)
		return;
	close(ln->fd);
	while (ln->pid > 0 && waitpid(ln->pid, NULL, 0) < 0 && errno == EINTR)
		;
	*ln = LAUNCHER_NONE;
}
