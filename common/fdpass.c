// SPDX-License-Identifier: GPL-2.0-or-later
/* fdpass.c - descriptors passed over AF_UNIX sockets (SCM_RIGHTS)
 *
 * Theory of operation: the daemon hands descriptors to and from its
 * privileged helper (privhelper.c), its launcher (launcher.c) and the
 * process that takes over (howire.c). Each used to build its own
 * msghdr and walk its own cmsgs, and each had its own idea of what a
 * truncated control buffer or one descriptor too many meant, which is
 * where descriptors leak. This file is the one place that does it, with
 * the one policy fdpass.h writes down.
 *
 * Receiving is where the care goes. The control buffer always has room
 * for FDPASS_MAX descriptors (the kernel's SCM_MAX_FD, no sender can send
 * more in one message) and a credentials message besides, whatever the
 * caller asked for: so the kernel never truncates for want of room, every
 * descriptor sent is installed here, and can be closed here. The
 * caller's smaller room is enforced after, by closing. A MSG_CTRUNC is
 * then always the kernel failing to install a descriptor, which is
 * worth its own errno (EMFILE: what to raise). Nothing that arrived
 * survives a failed call, so a caller that fails never has to clean up.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "common/fdpass.h"

/* Room for every descriptor a message can carry, and for the credentials
 * a receiver with SO_PASSCRED gets ahead of them, so that a full message
 * to such a receiver is not mistaken for one it had no slots for. */
#define FDPASS_CMSG_ROOM                                                       \
	(CMSG_SPACE(FDPASS_MAX * sizeof(int)) +                                \
	 CMSG_SPACE(sizeof(struct ucred)))

/**
 * fdpass_sendv() - send one message, and descriptors with it
 * @sock:	an AF_UNIX SOCK_SEQPACKET or SOCK_DGRAM socket
 * @iov:	the message, in pieces
 * @iovcnt:	how many pieces
 * @fds:	the descriptors, or NULL; they stay the caller's (the
 *		receiver gets duplicates)
 * @nfds:	how many, at most FDPASS_MAX
 * @flags:	MSG_DONTWAIT, or 0; MSG_NOSIGNAL is added
 *
 * Return: 0 when the whole message went, or -1 with errno set: EINVAL for
 * @nfds over FDPASS_MAX, EIO for a message that went in part (a stream
 * socket, which this is not for), sendmsg()'s otherwise (EINTR never).
 */
int fdpass_sendv(int sock, const struct iovec *iov, int iovcnt, const int *fds,
		 unsigned nfds, int flags)
{
	union {
		char buf[CMSG_SPACE(FDPASS_MAX * sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr m = { .msg_iov = (struct iovec *)iov,
			    .msg_iovlen = (size_t)iovcnt };
	size_t total = 0;
	ssize_t n;

	if (nfds > FDPASS_MAX) {
		errno = EINVAL;
		return -1;
	}
	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	if (nfds) {
		struct cmsghdr *c;

		memset(u.buf, 0, sizeof(u.buf));
		m.msg_control = u.buf;
		m.msg_controllen = CMSG_SPACE(nfds * sizeof(int));
		c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, nfds * sizeof(int));
	}
	do
		n = sendmsg(sock, &m, flags | MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	if ((size_t)n != total) {
		errno = EIO;
		return -1;
	}
	return 0;
}

/**
 * take_fds() - the descriptors a received message brought, into the
 *		caller's room
 * @m:		the message recvmsg() filled
 * @fds:	the room
 * @maxfds:	its size
 * @nfds:	set to how many were put there
 *
 * Those that do not fit are closed at once: they were installed all the
 * same, and no caller could hold them.
 *
 * Return: true if any did not fit.
 */
static bool take_fds(struct msghdr *m, int *fds, unsigned maxfds,
		     unsigned *nfds)
{
	bool over = false;

	*nfds = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
		size_t k;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k; i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(fd));
			if (*nfds < maxfds) {
				fds[(*nfds)++] = fd;
			} else {
				close(fd);
				over = true;
			}
		}
	}
	return over;
}

/**
 * fdpass_recvv() - receive one message, and the descriptors with it
 * @sock:	an AF_UNIX SOCK_SEQPACKET or SOCK_DGRAM socket
 * @iov:	where the message goes, in pieces
 * @iovcnt:	how many pieces
 * @fds:	room for the descriptors (made O_CLOEXEC), or NULL
 * @maxfds:	its size; a message with more is refused
 * @nfds:	set to how many came (0 on every failure)
 * @flags:	MSG_DONTWAIT, or 0; MSG_CMSG_CLOEXEC is added
 *
 * Return: the message's length, 0 with *@nfds 0 on hang-up, or -1 with
 * errno set and every descriptor that came closed: EMSGSIZE (longer than
 * @iov), ETOOMANYREFS (more descriptors than @maxfds), EMFILE (not all
 * could be installed), recvmsg()'s otherwise (EAGAIN; EINTR never).
 */
ssize_t fdpass_recvv(int sock, const struct iovec *iov, int iovcnt, int *fds,
		     unsigned maxfds, unsigned *nfds, int flags)
{
	union {
		char buf[FDPASS_CMSG_ROOM];
		struct cmsghdr align;
	} u;
	struct msghdr m;
	bool over;
	ssize_t n;
	int err;

	*nfds = 0;
	do {
		m = (struct msghdr){ .msg_iov = (struct iovec *)iov,
				     .msg_iovlen = (size_t)iovcnt,
				     .msg_control = u.buf,
				     .msg_controllen = sizeof(u.buf) };
		n = recvmsg(sock, &m, flags | MSG_CMSG_CLOEXEC);
	} while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	over = take_fds(&m, fds, maxfds, nfds);
	err = m.msg_flags & MSG_TRUNC	 ? EMSGSIZE
	      : over			 ? ETOOMANYREFS
	      : m.msg_flags & MSG_CTRUNC ? EMFILE
					 : 0;
	if (!err)
		return n;
	for (unsigned i = 0; i < *nfds; i++)
		close(fds[i]);
	*nfds = 0;
	errno = err;
	return -1;
}

/**
 * fdpass_send() - fdpass_sendv() of one buffer
 * @sock:	an AF_UNIX SOCK_SEQPACKET or SOCK_DGRAM socket
 * @buf:	the message
 * @len:	its length (0 is a message too, but reads as a hang-up)
 * @fds:	the descriptors, or NULL
 * @nfds:	how many, at most FDPASS_MAX
 * @flags:	MSG_DONTWAIT, or 0
 *
 * Return: as fdpass_sendv().
 */
int fdpass_send(int sock, const void *buf, size_t len, const int *fds,
		unsigned nfds, int flags)
{
	struct iovec iov = { (void *)buf, len };

	return fdpass_sendv(sock, &iov, 1, fds, nfds, flags);
}

/**
 * fdpass_recv() - fdpass_recvv() into one buffer
 * @sock:	an AF_UNIX SOCK_SEQPACKET or SOCK_DGRAM socket
 * @buf:	where the message goes
 * @len:	its size
 * @fds:	room for the descriptors, or NULL
 * @maxfds:	its size
 * @nfds:	set to how many came
 * @flags:	MSG_DONTWAIT, or 0
 *
 * Return: as fdpass_recvv().
 */
ssize_t fdpass_recv(int sock, void *buf, size_t len, int *fds, unsigned maxfds,
		    unsigned *nfds, int flags)
{
	struct iovec iov = { buf, len };

	return fdpass_recvv(sock, &iov, 1, fds, maxfds, nfds, flags);
}
