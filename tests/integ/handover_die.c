// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * handover_die.c - an LD_PRELOAD object for test_handover_fail.py: the
 * process it is loaded into dies (SIGKILL) at the moment it sends a
 * HO_TAKEN message on the handover socket.
 *
 * Theory of operation: a new smbsplice started by a handover finds the
 * socket to its predecessor in SMBSPLICE_HANDOVER_FD. It receives the
 * image and every descriptor, builds its connections, then sends TAKEN;
 * only then may the old process let go. This object lets the test kill
 * the new process after it has received everything but before TAKEN goes
 * out: the case where the old process must go on with every connection.
 * The descriptor number is read at load time (the daemon may unset the
 * variable once it has read it). send(), sendto(), sendmsg(), write()
 * and writev() are wrapped, whichever the daemon sends with; each looks
 * at the first bytes of a message on that descriptor only, struct
 * ho_msg_head { u32 type; u32 len; }, HO_TAKEN being 5.
 * SIGKILL rather than abort(): no core file, no handler (a sanitizer's)
 * runs, nothing is flushed: the process just stops, as a crash would.
 * Just before, it creates the file named by HANDOVER_DIE_MARK (if set),
 * so that the test knows the process got as far as TAKEN.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#define HO_TAKEN 5

static int ho_fd = -1;
static char mark[4096];

/**
 * load() - note the handover descriptor before the daemon runs.
 */
__attribute__((constructor)) static void load(void)
{
	const char *v = getenv("SMBSPLICE_HANDOVER_FD");
	const char *m = getenv("HANDOVER_DIE_MARK");

	if (v && *v)
		ho_fd = atoi(v);
	if (m && strlen(m) < sizeof(mark))
		strcpy(mark, m);
}

/**
 * die_if_taken() - stop the process if @buf, about to go out on @fd, is a
 * HO_TAKEN message on the handover socket.
 * @fd: the descriptor written to
 * @buf: the first bytes of the message
 * @len: how many bytes @buf holds
 */
static void die_if_taken(int fd, const void *buf, size_t len)
{
	uint32_t type;

	if (fd != ho_fd || ho_fd < 0 || len < sizeof(type) || !buf)
		return;
	memcpy(&type, buf, sizeof(type));
	if (type != HO_TAKEN)
		return;
	/* The test checks this file: it died here, not of something else. */
	if (*mark) {
		int m = open(mark, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (m >= 0)
			close(m);
	}
	kill(getpid(), SIGKILL);
}

/**
 * send() - the C library's, after die_if_taken().
 */
ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	static ssize_t (*real)(int, const void *, size_t, int);

	if (!real)
		real = dlsym(RTLD_NEXT, "send");
	die_if_taken(fd, buf, len);
	return real(fd, buf, len, flags);
}

/**
 * sendmsg() - the C library's, after die_if_taken() on the first iovec.
 */
ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	static ssize_t (*real)(int, const struct msghdr *, int);

	if (!real)
		real = dlsym(RTLD_NEXT, "sendmsg");
	if (msg && msg->msg_iovlen > 0 && msg->msg_iov)
		die_if_taken(fd, msg->msg_iov[0].iov_base,
			     msg->msg_iov[0].iov_len);
	return real(fd, msg, flags);
}

/**
 * write() - the C library's, after die_if_taken().
 */
ssize_t write(int fd, const void *buf, size_t len)
{
	static ssize_t (*real)(int, const void *, size_t);

	if (!real)
		real = dlsym(RTLD_NEXT, "write");
	die_if_taken(fd, buf, len);
	return real(fd, buf, len);
}

/**
 * sendto() - the C library's, after die_if_taken().
 */
ssize_t sendto(int fd, const void *buf, size_t len, int flags,
	       const struct sockaddr *to, socklen_t tolen)
{
	static ssize_t (*real)(int, const void *, size_t, int,
			       const struct sockaddr *, socklen_t);

	if (!real)
		real = dlsym(RTLD_NEXT, "sendto");
	die_if_taken(fd, buf, len);
	return real(fd, buf, len, flags, to, tolen);
}

/**
 * writev() - the C library's, after die_if_taken() on the first iovec.
 */
ssize_t writev(int fd, const struct iovec *iov, int iovcnt)
{
	static ssize_t (*real)(int, const struct iovec *, int);

	if (!real)
		real = dlsym(RTLD_NEXT, "writev");
	if (iov && iovcnt > 0)
		die_if_taken(fd, iov[0].iov_base, iov[0].iov_len);
	return real(fd, iov, iovcnt);
}
