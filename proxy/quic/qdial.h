/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_QDIAL_H
#define SMBSPLICE_QDIAL_H

/* qdial.h - a quic: backend: a connection's server side dialled over
 * QUIC, its stream bridged to a socketpair whose other end is the
 * connection's server socket (proxy/quic/README.md).
 */

#include <ev.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct dial_req;
struct listen_opts;
struct proxy;
struct qdial;
struct quic_figures;

/**
 * typedef qdial_done_fn - how a dial ends, told once
 * @ctx:	the argument given to qdial_open()
 * @why:	NULL: the handshake is over and the stream open, the
 *		socketpair carries the server's bytes from now on; else
 *		why it failed (the dial is gone, close the socketpair's
 *		end), before the stream opened or after (the server reset
 *		the stream, or the QUIC connection was lost)
 */
typedef void (*qdial_done_fn)(void *ctx, const char *why);

/**
 * struct qdial_req - one QUIC dial, as a connection asks for it
 * @loop:	the worker's loop, which serves the dial and its bridge
 * @px:		the process: its namespaces, its descriptor budget (the
 *		dial holds two beside the connection's, its UDP socket and
 *		its end of the socketpair, until it is gone)
 * @here:	the namespace the calling thread sits in (its inode)
 * @dial:	the backend, as a TCP dial takes it (a quic: one)
 * @done:	told when the handshake is over or failed
 * @ctx:	its argument
 */
struct qdial_req {
	struct ev_loop *loop;
	struct proxy *px;
	ino_t here;
	const struct dial_req *dial;
	qdial_done_fn done;
	void *ctx;
};

int qdial_open(const struct qdial_req *r, struct qdial **out, int *fd,
	       char *err, size_t errlen);
void qdial_cancel(struct qdial *q);
void qdial_release(struct qdial *q);
void qdial_abort(struct qdial **qp);
int qdial_check(const struct listen_opts *lo, char *err, size_t errlen);
bool qdial_any(const struct listen_opts *lo);
bool qdial_figures(const struct qdial *q, struct quic_figures *out);

struct health_quic;
const struct health_quic *qdial_health(void);

#endif /* SMBSPLICE_QDIAL_H */
