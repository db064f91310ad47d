/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_HEALTH_H
#define SMBSPLICE_HEALTH_H

#include <stddef.h>

struct lcfg;
struct proxy;

/**
 * typedef health_done_fn - how a probe's QUIC dial ends, told once, from
 *			    the main loop
 * @ctx:	the probe
 * @why:	NULL: the handshake is over and the stream open; else why
 *		the dial failed
 */
typedef void (*health_done_fn)(void *ctx, const char *why);

/**
 * struct health_quic - how a probe dials a quic: backend
 * @open:	start the dial of backend @be of the listener @cfg from the
 *		main loop; on success *@dial is the dial (for @release),
 *		*@fd the socketpair end that carries the stream once @done
 *		said NULL, and 0 is returned; else -1 with @err set
 * @release:	let go of a dial: cancelled if @done was not told yet,
 *		else it ends the stream as the socketpair's closed end says
 *		and frees itself
 *
 * quic/'s (quic/qprobe.c), given by the daemon at start: net/ is below
 * quic/ and calls it only through this.
 */
struct health_quic {
	int (*open)(struct proxy *px, const struct lcfg *cfg, unsigned be,
		    health_done_fn done, void *ctx, void **dial, int *fd,
		    char *err, size_t errlen);
	void (*release)(void *dial);
};

void health_set_quic(const struct health_quic *q);
void health_sync(struct proxy *px);
void health_stop(void);

#endif /* SMBSPLICE_HEALTH_H */
