/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_PEEK_H
#define SMBSPLICE_PEEK_H

/* peek.h - a verdict on what a client has sent before any dial
 *
 * Theory of operation: before the backend is dialled the client's bytes
 * are only peeked at, and judged: the PROXY header under --accept-proxy
 * (pp2_sock.c), then in smb mode the first frame (handshake.c). Each look
 * ends in one of the same six outcomes, so both give them as one enum and
 * the connection (conn.c) acts on either with one mapping: wait, wait for
 * more, go on, or end with the reason the look found.
 */

#include <stddef.h>

enum peek_verdict {
	PEEK_WAIT,   /* nothing to read after all (a spurious wake): wait */
	PEEK_MORE,   /* a valid beginning: wait until @need bytes are queued */
	PEEK_OK,     /* whole and valid: the next stage */
	PEEK_BAD,    /* not what the stage takes (see @why): reset */
	PEEK_CLOSED, /* the client left before it was whole (see @why) */
	PEEK_FAILED, /* the read failed: see @err */
};

/**
 * struct peek_detail - the detail of an enum peek_verdict
 * @need:	PEEK_MORE: bytes the verdict needs, at least
 * @err:	PEEK_FAILED: errno of the read
 * @why:	PEEK_BAD, PEEK_CLOSED: what the client did
 */
struct peek_detail {
	size_t need;
	int err;
	const char *why;
};

enum peek_verdict peek_queued(int fd, void *buf, size_t len, const char *closed,
			      size_t *n, struct peek_detail *out);

#endif /* SMBSPLICE_PEEK_H */
