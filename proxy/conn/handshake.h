/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_HANDSHAKE_H
#define SMBSPLICE_HANDSHAKE_H

#include <stdbool.h>
#include <stddef.h>

/* What the client's first frame, as far as it came, calls for. */
enum first_frame {
	FF_WAIT,   /* nothing to read after all: wait */
	FF_MORE,   /* incomplete: wait until @need bytes are queued */
	FF_DIAL,   /* an opening an SMB server answers: dial */
	FF_BAD,	   /* no SMB server answers it (see @why): reset */
	FF_CLOSED, /* the client closed (see @why) */
	FF_FAILED, /* the read failed, see @err */
};

/**
 * struct first_peek - the detail of a first_frame verdict
 * @need:	FF_MORE: bytes the verdict needs
 * @why:	FF_BAD, FF_CLOSED: what the client did
 * @err:	FF_FAILED: errno of the read
 */
struct first_peek {
	size_t need;
	const char *why;
	int err;
};

enum first_frame handshake_peek(int fd, bool any_first_frame, unsigned *peeked,
				struct first_peek *out);

#endif /* SMBSPLICE_HANDSHAKE_H */
