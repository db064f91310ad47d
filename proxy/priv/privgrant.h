/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_PRIVGRANT_H
#define SMBSPLICE_PRIVGRANT_H

/* The privileged helper's wire (requests and replies) and what it grants
 * them from: the daemon's side (privhelper.c) and the helper's checks
 * (privgrant.c) share these. */

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "conf/options.h"

/* A request's op. The numbers are the wire's: each is spelt out, so that
 * no rename or reordering moves one. */
enum priv_op {
	PRIV_OP_BACKEND = 1,
	PRIV_OP_LISTEN = 2,
	PRIV_OP_RELOAD = 3,
	PRIV_OP_COMMIT = 4,
	PRIV_OP_ABORT = 5,
};

/* The configurations requests are granted from (struct allowed). */
enum { SET_CANDIDATE, SET_RUNNING, SET_PREVIOUS, NSETS };

/**
 * struct ph_req - one request
 * @seq:	its number, echoed in the reply
 * @op:		enum priv_op
 * @family:	PRIV_OP_BACKEND: the socket's address family
 * @mptcp:	IPPROTO_MPTCP rather than TCP
 * @transparent: PRIV_OP_BACKEND: IP_TRANSPARENT, bound to the address of the
 *		client socket that comes with the request
 * @listener:	PRIV_OP_BACKEND: the name of the listener asking (names are
 *		unique in a configuration, where indexes shift between the
 *		sets); only that listener is checked
 * @netns:	the namespace's path as configured; "" for the process's own
 * @addr:	PRIV_OP_LISTEN: the address to listen on
 * @addrlen:	its length
 */
struct ph_req {
	uint32_t seq, op;
	int32_t family;
	uint8_t mptcp, transparent;
	char listener[OPT_NAME_LEN];
	char netns[OPT_PATH_LEN];
	struct sockaddr_storage addr;
	uint32_t addrlen;
};

/**
 * struct ph_rep - one reply
 * @seq:	the request's number
 * @err:	0 if a descriptor comes with it (PRIV_OP_RELOAD: none), or
 *		an errno
 * @msg:	PRIV_OP_RELOAD: why the configuration was refused
 */
struct ph_rep {
	uint32_t seq;
	int32_t err;
	char msg[256];
};

/**
 * struct allowed - one configuration the helper grants requests from
 * @cfg:	as the helper read it
 * @ns:		the namespaces it names, opened by the helper, per listener
 *		and side; -1 for the process's own
 * @expires:	SET_PREVIOUS: mono_ns() past which it is dropped; 0 never
 */
struct allowed {
	struct config *cfg;
	int ns[CONFIG_MAX_LISTENERS][SIDE_COUNT];
	uint64_t expires;
};

/**
 * struct grant - what privgrant_find() found a request allowed by
 * @lo:		the listener
 * @ns:		the namespace to serve it in (netns_home() for "")
 * @peer:	a transparent PRIV_OP_BACKEND: the client's address, to bind to
 * @peerlen:	its length
 */
struct grant {
	const struct listen_opts *lo;
	int ns;
	struct sockaddr_storage peer;
	socklen_t peerlen;
};

void privgrant_free(struct allowed *a);
int privgrant_open(struct allowed *a, char *err, size_t errlen);
int privgrant_find(struct allowed set[NSETS], const struct ph_req *r,
		   int client, struct grant *g);
int privgrant_reload(struct allowed set[NSETS], int argc, char **argv,
		     bool inherited, char *msg, size_t msglen);
int privgrant_commit(struct allowed set[NSETS]);
int privgrant_abort(struct allowed set[NSETS]);

#endif /* SMBSPLICE_PRIVGRANT_H */
