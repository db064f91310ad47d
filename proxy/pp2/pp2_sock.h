/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_PP2_SOCK_H
#define SMBSPLICE_PP2_SOCK_H

#include <stddef.h>
#include <sys/socket.h>

#include "pp2/pp2.h"

/* The longest PROXY header taken, TLVs included: HAProxy's and the cloud
 * load balancers' are a few hundred bytes; a longer one is refused, so a
 * gateway cannot make a connection hold more than this while it waits. */
#define PROXYHDR_MAX 1024

enum proxyhdr_verdict {
	PH_WAIT,   /* nothing to read after all (a spurious wake) */
	PH_FAILED, /* recv() failed: see @err */
	PH_CLOSED, /* the peer left before the header was whole */
	PH_BAD,	   /* not a valid PROXY v2 header: see @why */
	PH_MORE,   /* a valid beginning: wait for @need bytes */
	PH_OK,	   /* read, exactly: see @info */
};

/**
 * struct proxyhdr_peek - what proxyhdr_read() found
 * @need:	PH_MORE: bytes the header needs, at least
 * @err:	PH_FAILED: errno
 * @why:	PH_CLOSED, PH_BAD: what was wrong
 * @info:	PH_OK: what the header said
 */
struct proxyhdr_peek {
	size_t need;
	int err;
	const char *why;
	struct pp2_info info;
};

enum proxyhdr_verdict proxyhdr_read(int fd, unsigned *peeked,
				    struct proxyhdr_peek *out);
int proxyhdr_send(int srv_fd, int cli_fd, const struct sockaddr *client);

#endif /* SMBSPLICE_PP2_SOCK_H */
