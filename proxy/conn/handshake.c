// SPDX-License-Identifier: GPL-2.0-or-later
/* handshake.c - judging a client by its first frame, before any dial
 *
 * Theory of operation: an SMB client always speaks first, and with a
 * NEGOTIATE (or, on port 139, a session request), so in smb mode the
 * backend is not dialled until the client's whole first frame has arrived
 * and smb_opening_judge() says it is one: a flood of empty or garbage
 * connections costs the server nothing (Samba forks one smbd per
 * connection). The frame is only peeked at, at most SMB_OPENING_MAX
 * bytes, and stays in the kernel for the client-to-server direction.
 *
 * This file reads the socket and gives a verdict; conn.c acts on it (it
 * waits with a receive low-water mark, dials, or resets) and keeps the
 * --handshake-timeout. A client that half-closes mid-frame gets the FIN
 * direct TCP would have given it: the bytes it sent are read for real
 * first, since closing a socket with unread data sends a reset.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include "conn/handshake.h"
#include "smb/opening.h"
#include "io/sock.h"
#include "smb/wire.h"

/**
 * netbios_port() - did the client dial the NetBIOS session port
 * @fd:	the client's socket
 *
 * The accepted socket's own address is the port the client dialled, with
 * socket activation and --transparent alike. Asked only of a client that
 * opened with a session request.
 *
 * Return: true for port 139.
 */
static bool netbios_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	in_port_t port;

	if (getsockname(fd, (struct sockaddr *)&ss, &len))
		return false;
	port = ss.ss_family == AF_INET6
		       ? ((struct sockaddr_in6 *)&ss)->sin6_port
		       : ((struct sockaddr_in *)&ss)->sin_port;
	return ntohs(port) == NBT_SESSION_PORT;
}

/**
 * handshake_peek() - judge what the client has sent so far
 * @fd:			the client's socket
 * @any_first_frame:	--first-frame any: the first byte is enough
 * @peeked:		bytes seen at the last look, updated
 * @out:		the verdict's detail
 *
 * A client that leaves before its first frame is complete never reaches
 * the server; nor does one whose frame is not an SMB opening.
 *
 * Return: what the first frame, as far as it came, calls for: PEEK_OK
 * for an opening an SMB server answers (dial), PEEK_MORE while it is
 * incomplete, PEEK_BAD if no SMB server answers it; PEEK_CLOSED,
 * PEEK_FAILED or PEEK_WAIT as the socket says.
 */
enum peek_verdict handshake_peek(int fd, bool any_first_frame, unsigned *peeked,
				 struct peek_detail *out)
{
	uint8_t buf[SMB_OPENING_MAX];
	size_t want = any_first_frame ? 1 : sizeof(buf);
	enum peek_verdict got;
	enum smb_opening v;
	size_t n;
	bool stale;

	got = peek_queued(fd, buf, want, "client closed before sending a byte",
			  &n, out);
	if (got != PEEK_MORE)
		return got;
	if (any_first_frame)
		return PEEK_OK;
	v = smb_opening_judge(buf, (size_t)n, &out->need, &out->why);
	if (v == SMB_OPENING_NETBIOS && !netbios_port(fd)) {
		v = SMB_OPENING_BAD;
		out->why = "NetBIOS session request on a port other than 139";
	}
	if (v == SMB_OPENING_BAD)
		return PEEK_BAD;
	if (v != SMB_OPENING_MORE)
		return PEEK_OK;
	/* Woken with nothing new: the client closed, or a spurious wake. */
	stale = (size_t)n <= *peeked;
	*peeked = (unsigned)n;
	if (stale && sock_peer_shut(fd)) {
		/* smbd would have read them and seen the end: the close that
		 * follows must be a FIN, not a reset for unread data. */
		if (recv(fd, buf, sizeof(buf), 0) < 0 && errno != EAGAIN &&
		    errno != EINTR) {
			out->err = errno;
			return PEEK_FAILED;
		}
		out->why = "client closed in the middle of its first frame";
		return PEEK_CLOSED;
	}
	return PEEK_MORE;
}
