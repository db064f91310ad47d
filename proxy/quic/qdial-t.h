/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_QDIAL_T_H
#define SMBSPLICE_QDIAL_T_H

/* qdial-t.h - a quic: backend's dial, for qdial.c alone. */

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "quic/bridge-t.h"
#include "quic/ngq_client.h"

struct budget;

/**
 * struct qdial - one QUIC client connection and its stream's bridge
 * @b:		its stream's bridge to the socketpair (bridge.c, the
 *		listener's too), the QUIC connection and the worker's loop;
 *		@b.opened once the handshake is over and the stream open
 * @fds:	the descriptor budget it holds QDIAL_FDS of
 * @done:	told once how the dial ends (qdial_done_fn); NULL once told
 *		(or cancelled)
 * @ctx:	its argument
 * @what:	the backend, for lines
 * @ufd:	the UDP socket, connected
 * @uio:	@ufd readable
 * @local:	its address
 * @locallen:	its length
 * @remote:	the server's
 * @remotelen:	its length
 * @timer:	ngtcp2's next expiry
 * @told:	the owner was told the stream is open; from then on
 *		@done is told only of a failure (the server's reset, a
 *		lost connection), so that the owner resets its client
 * @gone:	the QUIC connection ended after the server's FIN: the rest
 *		of the server's bytes go into the socketpair, then the dial
 *		ends
 * @no_gso:	the kernel refused UDP_SEGMENT: one send per packet
 * @released:	the owner let go of it (qdial_release()): nobody holds
 *		a pointer to it, and it is freed when it ends
 * @closed:	it ended while the owner still held it: its sockets and
 *		buffers are gone, and qdial_release() frees what is left
 * @why:	why the dial failed, where ngq_client.c cannot say (the
 *		socket's error); empty for its reason
 */
struct qdial {
	struct qbridge b;
	struct budget *fds;
	void (*done)(void *ctx, const char *why);
	void *ctx;
	char what[160];
	int ufd;
	ev_io uio;
	struct sockaddr_storage local, remote;
	socklen_t locallen, remotelen;
	ev_timer timer;
	bool told, gone, no_gso;
	bool released, closed;
	char why[160];
};

#endif /* SMBSPLICE_QDIAL_T_H */
