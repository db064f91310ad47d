/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_BRIDGE_T_H
#define SMBSPLICE_BRIDGE_T_H

/* bridge-t.h - a QUIC stream bridged to a socketpair, for either end (a
 * listener's connection, quic-t.h; a quic: backend's dial, qdial-t.h),
 * and ngtcp2's clock on an ev_timer; for those and bridge.c alone.
 */

#include <ev.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "quic/ngq.h"

/* Bytes of the stream kept for the peer until it acknowledges them, and
 * the window it may send ahead into the socketpair (powers of 2): a
 * window per round trip is the most a stream moves, and while a lost
 * packet is sent again the bytes after it wait in both. 4 MiB holds a
 * 100 Mbit/s, 40 ms path at 1 % loss to the TCP pair's rate (1 MiB gave
 * 0.6 of it, 2 MiB 0.9; docs/benchmarks.md). Their pages are given back
 * when the stream has been quiet for QUIC_LEND_NS (qbridge_idle()). */
#define QUIC_SBUF (4u << 20)
#define QUIC_RWIN (4u << 20)
/* How long a stream's rings must have moved nothing before their pages
 * go back to the kernel, at the connection's next timer (ngtcp2's: a
 * keepalive PING's at the latest). */
#define QUIC_LEND_NS 1000000000ull

struct qbridge;

/**
 * struct qbridge_ops - what the bridge asks of the connection it is in
 * @settle:	act on what the bridge did (bytes read, room made, an end
 *		marked): push, send, or free the connection
 */
struct qbridge_ops {
	void (*settle)(struct qbridge *b);
};

/**
 * struct qbridge - a QUIC connection's one stream and the socketpair end
 *		    it is bridged to, the same for a listener's connection
 *		    (the peer is the client) and a dial (the peer is the
 *		    server)
 * @loop:	the worker's loop
 * @ops:	its connection's
 * @nc:		the QUIC connection (ngq.c)
 * @fd:		our end of the socketpair, -1 before it is made
 * @rio:	@fd readable: bytes for the peer
 * @wio:	@fd writable: room for the peer's bytes
 * @sbuf:	bytes for the peer: read from @fd, sent, kept until
 *		acknowledged (QUIC_SBUF); NULL before the rings are made
 * @s_acked:	stream offset the peer acknowledged
 * @s_sent:	stream offset handed to ngtcp2
 * @s_tail:	stream offset read from @fd
 * @rbuf:	the peer's bytes that @fd did not take yet (QUIC_RWIN)
 * @r_head:	offset written to @fd
 * @r_tail:	offset received
 * @s_eof:	@fd said end of file: the stream's FIN is due
 * @s_fin:	the FIN went out
 * @r_fin:	the peer's FIN came
 * @r_shut:	and @fd was shut for writing after the last byte
 * @opened:	the stream is open and @fd carries it
 * @dead:	to be freed once the callback that found it returns
 * @send_close:	and a CONNECTION_CLOSE sent first
 * @moved:	bytes entered a ring since the last timer (qbridge_idle())
 * @touched:	the rings hold pages: bytes passed since they were given
 *		back
 * @quiet_since: the first timer that found nothing moved, ns
 */
struct qbridge {
	struct ev_loop *loop;
	const struct qbridge_ops *ops;
	struct ngq_conn *nc;
	int fd;
	ev_io rio, wio;
	uint8_t *sbuf;
	uint64_t s_acked, s_sent, s_tail;
	uint8_t *rbuf;
	uint64_t r_head, r_tail;
	bool s_eof, s_fin, r_fin, r_shut;
	bool opened, dead, send_close;
	bool moved, touched;
	uint64_t quiet_since;
};

/* The connection a bridge is the member @b of. */
#define QBRIDGE_OWNER(bp, type) ((type *)((char *)(bp)-offsetof(type, b)))

/* bridge.c */
void qbridge_init(struct qbridge *b, struct ev_loop *loop,
		  const struct qbridge_ops *ops);
int qbridge_rings(struct qbridge *b);
void qbridge_set_fd(struct qbridge *b, int fd);
void qbridge_open(struct qbridge *b);
int qbridge_data(void *ud, const uint8_t *d, size_t n, bool fin);
void qbridge_acked(void *ud, uint64_t n);
int qbridge_next(struct qbridge *b, struct iovec *iov, bool *fin);
void qbridge_sent(struct qbridge *b, ssize_t taken, bool fin);
void qbridge_push(struct qbridge *b);
bool qbridge_done(const struct qbridge *b);
bool qbridge_peer_gone(const struct qbridge *b);
void qbridge_end(struct qbridge *b, bool send_close);
void qbridge_close(struct qbridge *b);
void qbridge_free(struct qbridge *b);
void qbridge_idle(struct qbridge *b, uint64_t now);
uint64_t quic_now(void);
void quic_timer_arm(struct ev_loop *loop, ev_timer *t, uint64_t exp,
		    uint64_t now, bool soon);

#endif /* SMBSPLICE_BRIDGE_T_H */
