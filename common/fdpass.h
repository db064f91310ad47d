/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_FDPASS_H
#define SMBSPLICE_FDPASS_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

/* The kernel's bound on descriptors in one message (SCM_MAX_FD). */
#define FDPASS_MAX 253

/**
 * DOC: fdpass error policy
 *
 * One message and the descriptors passed with it, on an AF_UNIX
 * SOCK_SEQPACKET or SOCK_DGRAM socket, where a message goes whole or not
 * at all. The error policy, the same for every caller:
 *
 *  - EINTR is retried, on both sides; @flags is MSG_DONTWAIT or 0, and
 *    an empty non-blocking socket is EAGAIN.
 *  - Sends add MSG_NOSIGNAL: a hang-up is EPIPE, never SIGPIPE.
 *  - Receives add MSG_CMSG_CLOEXEC: every descriptor received is
 *    close-on-exec before the caller sees it.
 *  - A receive that fails keeps no descriptor: whatever arrived is closed
 *    and *nfds is 0. It fails, in this order of precedence, with
 *    EMSGSIZE for a datagram longer than the buffer (MSG_TRUNC),
 *    ETOOMANYREFS for more descriptors than @maxfds, and EMFILE when the
 *    kernel could not install them all (MSG_CTRUNC: the receiver is out
 *    of descriptors, RLIMIT_NOFILE, or a security module refused one;
 *    the control buffer always has room for FDPASS_MAX, so it is never
 *    that).
 *  - Control messages other than descriptors passed (credentials) are
 *    ignored.
 *  - A return of 0 with *nfds 0 is the peer's hang-up (EOF); on
 *    SOCK_SEQPACKET an empty datagram without descriptors reads the same,
 *    so a protocol over this never sends one.
 */

int fdpass_sendv(int sock, const struct iovec *iov, int iovcnt, const int *fds,
		 unsigned nfds, int flags);
ssize_t fdpass_recvv(int sock, const struct iovec *iov, int iovcnt, int *fds,
		     unsigned maxfds, unsigned *nfds, int flags);
int fdpass_send(int sock, const void *buf, size_t len, const int *fds,
		unsigned nfds, int flags);
ssize_t fdpass_recv(int sock, void *buf, size_t len, int *fds, unsigned maxfds,
		    unsigned *nfds, int flags);

#endif
