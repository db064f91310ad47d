// SPDX-License-Identifier: GPL-2.0-or-later
/* peek.c - the first look at a client's queued bytes
 *
 * Theory of operation: both looks before a dial (the PROXY header,
 * pp2_sock.c, and the first frame, handshake.c) begin alike: peek at what
 * is queued, without taking it, and turn the socket's answer into a
 * verdict when there is nothing to judge yet. Only then does each judge
 * the bytes its own way.
 */
#include "config.h"

#include <errno.h>
#include <sys/socket.h>

#include "io/peek.h"

/**
 * peek_queued() - peek at what a client has queued
 * @fd:		the client's socket
 * @buf:	where the bytes are copied, left queued on the socket
 * @len:	how many at most
 * @closed:	the reason a client that left before a byte is given
 * @n:		set to how many were copied
 * @out:	the verdict's detail, cleared here
 *
 * Return: PEEK_MORE if there are bytes to judge (@n of them); else
 * PEEK_WAIT (a spurious wake or a signal), PEEK_FAILED (@out->err) or
 * PEEK_CLOSED (@out->why is @closed).
 */
enum peek_verdict peek_queued(int fd, void *buf, size_t len, const char *closed,
			      size_t *n, struct peek_detail *out)
{
	ssize_t r = recv(fd, buf, len, MSG_PEEK);

	*out = (struct peek_detail){ 0 };
	*n = 0;
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return PEEK_WAIT;
	if (r < 0) {
		out->err = errno;
		return PEEK_FAILED;
	}
	if (r == 0) {
		out->why = closed;
		return PEEK_CLOSED;
	}
	*n = (size_t)r;
	return PEEK_MORE;
}
