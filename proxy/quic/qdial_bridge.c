// SPDX-License-Identifier: GPL-2.0-or-later
/* qdial_bridge.c - a quic: backend's stream, bridged to the connection's
 *		    server socket
 *
 * Theory of operation: the listener's bridge (bridge.c) seen from the
 * other end, and apart from it so that each changes alone. The
 * connection's server socket is one end of a socketpair; this file owns
 * the other, and moves bytes between it and the QUIC stream with flow
 * control tied to the socketpair:
 *
 * - server to connection: stream bytes are gathered in @rbuf (a ring of
 *   QUIC_RWIN) and written into the socketpair once per batch of
 *   datagrams; the server's window (ngqc_consumed()) grows only by what
 *   the socketpair took, so the ring never holds more than the window.
 * - connection to server: bytes are read from the socketpair into @sbuf,
 *   a ring of QUIC_SBUF, and handed to ngtcp2 by pointer
 *   (qdial_bridge_iov()); they stay in place until the server
 *   acknowledges them, and reading stops while the ring is full of
 *   unacknowledged bytes. Copied once, from the socket; the packet's
 *   encryption reads them in place.
 *
 * Ends: the server's FIN shuts the socketpair for writing once its last
 * byte is in; end of file from the socketpair sends the stream's FIN, or
 * resets the stream if the connection closed outright while the server
 * was still sending (aborted()). The server's RESET_STREAM or
 * STOP_SENDING, or an error on the socketpair, ends the dial: its end
 * of the socketpair closes, and the connection behind it ends.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "quic/qdial-t.h"
#include "quic/quic-t.h"

/**
 * ring_iov() - a ring's bytes from one offset to another, as at most two
 *		pieces
 * @buf:	the ring
 * @cap:	its size, a power of 2
 * @from:	the first offset
 * @to:		the offset after the last
 * @iov:	two pieces, filled in
 *
 * Return: how many pieces.
 */
static int ring_iov(uint8_t *buf, size_t cap, uint64_t from, uint64_t to,
		    struct iovec *iov)
{
	size_t at = from & (cap - 1), n = to - from, first;

	if (!n)
		return 0;
	first = cap - at < n ? cap - at : n;
	iov[0] = (struct iovec){ buf + at, first };
	if (first == n)
		return 1;
	iov[1] = (struct iovec){ buf, n - first };
	return 2;
}

/**
 * qdial_peer_gone() - has the connection closed its end of the socketpair
 * @q:	the dial, its stream open
 *
 * Return: true if nothing is left to read what the server sends.
 */
bool qdial_peer_gone(const struct qdial *q)
{
	struct pollfd p = { .fd = q->fd, .events = POLLOUT };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLHUP);
}

/**
 * aborted() - did the connection behind the socketpair end while the
 *	       server's side of the stream was still open
 * @q:	the dial, whose socketpair just said end of file
 *
 * As bridge.c's: a connection that ends outright closes its end, which
 * poll() says as POLLHUP; one that half-closes only shuts it for writing.
 *
 * Return: true for an abort: the stream is reset, not ended.
 */
static bool aborted(const struct qdial *q)
{
	return !q->r_fin && qdial_peer_gone(q);
}

/**
 * on_rio() - the socketpair has bytes for the server
 * @loop:	the loop
 * @w:		&qdial.rio
 * @revents:	unused
 */
static void on_rio(struct ev_loop *loop, ev_io *w, int revents)
{
	struct qdial *q = w->data;
	struct iovec iov[2];
	uint64_t room = QUIC_SBUF - (q->s_tail - q->s_acked);
	ssize_t n;
	int cnt;

	if (!room) {
		ev_io_stop(loop, w); /* on_acked() restarts it */
		return;
	}
	cnt = ring_iov(q->sbuf, QUIC_SBUF, q->s_tail, q->s_acked + QUIC_SBUF,
		       iov);
	n = readv(q->fd, iov, cnt);
	if (n > 0) {
		q->s_tail += n;
	} else if (!n && !aborted(q)) {
		q->s_eof = true;
		ev_io_stop(loop, w);
	} else if (!n || (errno != EAGAIN && errno != EINTR)) {
		ngqc_reset(q->nc);
		qdial_end(q, true);
	}
	qdial_settle(q, NGQ_OK);
}

/**
 * qdial_push() - write the server's waiting bytes into the socketpair
 * @q:	the dial
 *
 * The server's window grows by what was written; what was not waits for
 * the socketpair to be writable. Once the server's FIN came and every
 * byte is in, the socketpair is shut for writing.
 */
void qdial_push(struct qdial *q)
{
	struct iovec iov[2];
	int cnt;
	ssize_t n;

	if (!q->opened)
		return;
	cnt = ring_iov(q->rbuf, QUIC_RWIN, q->r_head, q->r_tail, iov);
	n = cnt ? writev(q->fd, iov, cnt) : 0;
	if (n > 0) {
		q->r_head += n;
		ngqc_consumed(q->nc, n);
	} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
		ngqc_reset(q->nc);
		qdial_end(q, true);
		return;
	}
	if (q->r_head != q->r_tail) {
		ev_io_start(q->loop, &q->wio);
		return;
	}
	ev_io_stop(q->loop, &q->wio);
	if (q->r_fin && !q->r_shut) {
		shutdown(q->fd, SHUT_WR);
		q->r_shut = true;
	}
}

/**
 * on_wio() - the socketpair has room for the server's waiting bytes
 * @loop:	the loop
 * @w:		&qdial.wio
 * @revents:	unused
 */
static void on_wio(struct ev_loop *loop, ev_io *w, int revents)
{
	qdial_settle(w->data, NGQ_OK); /* which pushes first */
}

/**
 * on_open() - ngq_client.c: the handshake is over and the stream open
 * @ud:		the dial
 * @sid:	the stream
 *
 * The owner is told once the datagrams that brought it are read
 * (qdial_settle()), not from inside ngtcp2.
 *
 * Return: 0.
 */
static int on_open(void *ud, int64_t sid)
{
	struct qdial *q = ud;

	q->opened = true;
	ev_io_start(q->loop, &q->rio);
	return 0;
}

/**
 * on_data() - ngq_client.c: in-order bytes of the stream
 * @ud:		the dial
 * @d:		the bytes
 * @n:		how many
 * @fin:	the stream ends after them
 *
 * Return: 0, or -1 if they overflow the window (ngtcp2 enforces it).
 */
static int on_data(void *ud, const uint8_t *d, size_t n, bool fin)
{
	struct qdial *q = ud;
	struct iovec iov[2];
	int cnt;

	if (q->dead)
		return 0;
	if (q->r_tail - q->r_head + n > QUIC_RWIN)
		return -1;
	cnt = ring_iov(q->rbuf, QUIC_RWIN, q->r_tail, q->r_tail + n, iov);
	if (cnt)
		memcpy(iov[0].iov_base, d, iov[0].iov_len);
	if (cnt == 2)
		memcpy(iov[1].iov_base, d + iov[0].iov_len, iov[1].iov_len);
	q->r_tail += n;
	if (fin)
		q->r_fin = true;
	return 0;
}

/**
 * on_reset() - ngq_client.c: the server reset the stream or asked it
 *		stopped: both ends close
 * @ud:		the dial
 */
static void on_reset(void *ud)
{
	struct qdial *q = ud;

	if (!q->dead)
		snprintf(q->why, sizeof(q->why),
			 "the server reset the QUIC stream");
	qdial_end(q, true);
}

/**
 * on_acked() - ngq_client.c: the server acknowledged bytes: their room
 *		is free
 * @ud:		the dial
 * @n:		how many
 */
static void on_acked(void *ud, uint64_t n)
{
	struct qdial *q = ud;

	q->s_acked += n;
	if (!q->s_eof && !q->dead)
		ev_io_start(q->loop, &q->rio);
}

/**
 * on_cid_add() - ngq_client.c: an ID to route by; a connected socket
 *		  needs none
 * @ud:		unused
 * @id:		unused
 * @len:	unused
 *
 * Return: 0.
 */
static int on_cid_add(void *ud, const uint8_t *id, size_t len)
{
	return 0;
}

/**
 * on_cid_del() - ngq_client.c: an ID retired; nothing routes by it
 * @ud:		unused
 * @id:		unused
 * @len:	unused
 */
static void on_cid_del(void *ud, const uint8_t *id, size_t len)
{
}

const struct ngq_cb qdial_cb = {
	.stream_open = on_open,
	.stream_data = on_data,
	.stream_reset = on_reset,
	.stream_acked = on_acked,
	.cid_add = on_cid_add,
	.cid_del = on_cid_del,
};

/**
 * qdial_bridge_iov() - the connection's bytes read and not yet sent
 * @q:		the dial, its stream open
 * @iov:	two pieces, filled in
 *
 * Return: how many pieces.
 */
int qdial_bridge_iov(struct qdial *q, struct iovec *iov)
{
	return ring_iov(q->sbuf, QUIC_SBUF, q->s_sent, q->s_tail, iov);
}

/**
 * qdial_bridge_init() - the watchers of a dial's end of the socketpair,
 *			 none started: the stream opens first
 * @q:	the dial, its @fd set
 */
void qdial_bridge_init(struct qdial *q)
{
	ev_io_init(&q->rio, on_rio, q->fd, EV_READ);
	q->rio.data = q;
	ev_io_init(&q->wio, on_wio, q->fd, EV_WRITE);
	q->wio.data = q;
}
