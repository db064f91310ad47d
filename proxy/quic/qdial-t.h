/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_QDIAL_T_H
#define SMBSPLICE_QDIAL_T_H

/* qdial-t.h - a quic: backend's dial, for qdial.c and qdial_bridge.c
 * alone.
 */

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "quic/ngq_client.h"

struct budget;

/**
 * struct qdial - one QUIC client connection and its stream's bridge
 * @loop:	the worker's loop
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
 * @nc:		the QUIC connection (ngq_client.c)
 * @timer:	ngtcp2's next expiry
 * @fd:		our end of the socketpair
 * @rio:	@fd readable: bytes for the server
 * @wio:	@fd writable: room for the server's bytes
 * @sbuf:	the connection's bytes: read, sent, kept until acknowledged
 * @s_acked:	stream offset the server acknowledged
 * @s_sent:	stream offset handed to ngtcp2
 * @s_tail:	stream offset read from @fd
 * @rbuf:	the server's bytes that @fd did not take yet
 * @r_head:	offset written to @fd
 * @r_tail:	offset received
 * @s_eof:	@fd said end of file: the FIN is due
 * @s_fin:	the FIN went out
 * @r_fin:	the server's FIN came
 * @r_shut:	and @fd was shut for writing after the last byte
 * @opened:	the handshake is over and the stream open
 * @told:	and the owner was told so; from then on @done is told only
 *		of a failure (the server's reset, a lost connection), so
 *		that the owner resets its client
 * @gone:	the QUIC connection ended after the server's FIN: the rest
 *		of the server's bytes go into the socketpair, then the dial
 *		ends
 * @dead:	to be freed once the callback that found it returns
 * @send_close:	and a CONNECTION_CLOSE sent first
 * @no_gso:	the kernel refused UDP_SEGMENT: one send per packet
 * @released:	the owner let go of it (qdial_release()): nobody holds
 *		a pointer to it, and it is freed when it ends
 * @closed:	it ended while the owner still held it: its sockets and
 *		buffers are gone, and qdial_release() frees what is left
 * @why:	why the dial failed, where ngq_client.c cannot say (the
 *		socket's error); empty for its reason
 */
struct qdial {
	struct ev_loop *loop;
	struct budget *fds;
	void (*done)(void *ctx, const char *why);
	void *ctx;
	char what[160];
	int ufd;
	ev_io uio;
	struct sockaddr_storage local, remote;
	socklen_t locallen, remotelen;
	struct ngqc_conn *nc;
	ev_timer timer;
	int fd;
	ev_io rio, wio;
	uint8_t *sbuf;
	uint64_t s_acked, s_sent, s_tail;
	uint8_t *rbuf;
	uint64_t r_head, r_tail;
	bool s_eof, s_fin, r_fin, r_shut;
	bool opened, told, gone, dead, send_close, no_gso;
	bool released, closed;
	char why[160];
};

/* qdial_bridge.c */
extern const struct ngq_cb qdial_cb;
void qdial_bridge_init(struct qdial *q);
int qdial_bridge_iov(struct qdial *q, struct iovec *iov);
void qdial_push(struct qdial *q);
bool qdial_peer_gone(const struct qdial *q);

/* qdial.c */
void qdial_end(struct qdial *q, bool send_close);
void qdial_settle(struct qdial *q, enum ngq_state s);

#endif /* SMBSPLICE_QDIAL_T_H */
