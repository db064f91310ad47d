// SPDX-License-Identifier: GPL-2.0-or-later
/* pp2_sock.c - a PROXY protocol v2 header on a connection's sockets
 *
 * Theory of operation: on a listener with --accept-proxy the stream
 * opens with a header (pp2.c parses it) naming the client a
 * gateway speaks for. It is only peeked at, at most PP2_SOCK_MAX bytes,
 * until it is whole; then exactly its length is read, so the first byte
 * left in the kernel is the client's own (and in smb mode the first-frame
 * check, handshake.c, starts there). A header never whole, or not a
 * header, is never read at all: conn.c resets it, and no byte of it
 * reaches a backend.
 *
 * With --send-proxy a backend connection opens with a header made here,
 * before any of the client's bytes: the client's address and the one it
 * connected to.
 *
 * This file reads and writes sockets and gives a verdict; conn.c acts on
 * it, under --handshake-timeout, as it does for the first frame.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <sys/socket.h>

#include "pp2/pp2_sock.h"
#include "io/sock.h"

/**
 * need_of() - how many bytes a header that is not whole needs
 * @buf:	what has come of it
 * @n:		how much, fewer than the header's length
 *
 * Return: the fixed part's length until it has come, then the whole
 * header's, from its length field (bytes 14 and 15, big-endian).
 */
static size_t need_of(const uint8_t *buf, size_t n)
{
	if (n < PP2_FIXED_LEN)
		return PP2_FIXED_LEN;
	return PP2_FIXED_LEN + ((size_t)buf[14] << 8 | buf[15]);
}

/**
 * pp2_sock_read() - read the PROXY header, if it is whole
 * @fd:		the client's socket
 * @peeked:	bytes seen at the last look, updated
 * @out:	the verdict's detail
 * @info:	PEEK_OK: what the header said
 *
 * Return: PEEK_OK once the header is read, exactly: the next byte is the
 * client's own; PEEK_MORE while it is a valid beginning; PEEK_BAD if it
 * is no PROXY v2 header; PEEK_CLOSED, PEEK_FAILED or PEEK_WAIT as the
 * socket says.
 */
enum peek_verdict pp2_sock_read(int fd, unsigned *peeked,
				struct peek_detail *out, struct pp2_info *info)
{
	uint8_t buf[PP2_SOCK_MAX];
	enum peek_verdict got;
	enum pp2_result r;
	ssize_t taken;
	size_t n;
	bool stale;

	got = peek_queued(fd, buf, sizeof(buf),
			  "client closed before sending its PROXY header", &n,
			  out);
	if (got != PEEK_MORE)
		return got;
	r = pp2_parse(buf, (size_t)n, sizeof(buf), info, &out->why);
	if (r == PP2_ERROR)
		return PEEK_BAD;
	if (r == PP2_NEED_MORE) {
		/* Woken with nothing new: the peer closed, or a spurious
		 * wake. */
		stale = (size_t)n <= *peeked;
		*peeked = (unsigned)n;
		out->need = need_of(buf, (size_t)n);
		if (stale && sock_peer_shut(fd)) {
			out->why =
				"client closed in the middle of its PROXY header";
			return PEEK_CLOSED;
		}
		return PEEK_MORE;
	}
	/* Peeked whole, so this reads it all. */
	taken = recv(fd, buf, info->len, 0);
	if (taken != (ssize_t)info->len) {
		out->err = taken < 0 ? errno : EIO;
		return PEEK_FAILED;
	}
	*peeked = 0;
	return PEEK_OK;
}

/**
 * pp2_sock_send() - open a backend connection with a PROXY header
 * @srv_fd:	the backend socket, just connected
 * @cli_fd:	the client's socket, whose own address is the destination
 * @client:	the client's address (the header's, under --accept-proxy)
 *
 * The socket's send buffer is empty, so a header of a few dozen bytes
 * goes whole; a short write is nevertheless an error, never a header cut
 * short that the backend would take for the start of the stream.
 *
 * Return: 0, or -1 with errno.
 */
int pp2_sock_send(int srv_fd, int cli_fd, const struct sockaddr *client)
{
	uint8_t hdr[PP2_BUILD_MAX];
	struct sockaddr_storage dst;
	socklen_t dlen = sizeof(dst);
	ssize_t n;
	int len;

	if (getsockname(cli_fd, (struct sockaddr *)&dst, &dlen))
		return -1;
	len = pp2_build(hdr, sizeof(hdr), client, (struct sockaddr *)&dst);
	if (len < 0)
		return -1;
	do
		n = send(srv_fd, hdr, (size_t)len, MSG_NOSIGNAL | MSG_MORE);
	while (n < 0 && errno == EINTR);
	if (n == len)
		return 0;
	if (n >= 0)
		errno = EAGAIN; /* short: the header cannot be finished */
	return -1;
}
