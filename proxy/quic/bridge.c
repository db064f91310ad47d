// SPDX-License-Identifier: GPL-2.0-or-later
/* bridge.c - a QUIC connection's stream, bridged to a socketpair
 *
 * Theory of operation: the client's one bidirectional stream becomes an
 * ordinary smbsplice connection: a socketpair(AF_UNIX, SOCK_STREAM) is
 * made, one end handed to accept_ops' open() as if accepted from the
 * client's UDP address, the other kept here. Bytes move both ways with
 * flow control tied to the socketpair:
 *
 * - client to backend: stream bytes are gathered in @rbuf and written into
 *   the socketpair once per batch of datagrams (one writev() for many
 *   packets); what it does not take waits there, and the client's
 *   window (ngq_consumed()) grows only by bytes the socketpair took. So
 *   @rbuf never holds more than the window, QUIC_RWIN.
 * - backend to client: bytes are read from the socketpair into @sbuf, a
 *   ring, and handed to ngtcp2 by pointer (quic_bridge_iov()); they stay
 *   in place until the client acknowledges them. Reading stops while
 *   QUIC_SBUF bytes are unacknowledged. They are copied once, from the
 *   socket into the ring; the packet's encryption reads them from there.
 *
 * Ends: the client's FIN shuts the socketpair for writing once the last
 * byte is in; end of file from the socketpair sends the stream's FIN, or
 * resets the stream if the connection behind it closed outright while
 * the client was still sending (aborted()). A
 * RESET_STREAM or STOP_SENDING from the client closes the socketpair (the
 * connection behind it ends) and the QUIC connection; a write or read
 * error on the socketpair resets the stream and closes the connection.
 * When both directions are done and acknowledged, the connection closes
 * with no error.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "common/counter.h"
#include "common/log.h"
#include "core/proxy.h"
#include "io/sock.h"
#include "net/accept.h"
#include "net/listener.h"
#include "quic/quic-t.h"
#include "quic/quic.h"

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
 * quic_bridge_iov() - the stream bytes read and not yet sent
 * @qc:		the connection
 * @iov:	two pieces, filled in
 *
 * Return: how many pieces.
 */
int quic_bridge_iov(struct qconn *qc, struct iovec *iov)
{
	if (!qc->sbuf)
		return 0;
	return ring_iov(qc->sbuf, QUIC_SBUF, qc->s_sent, qc->s_tail, iov);
}

/**
 * aborted() - did the connection behind the socketpair end while the
 *	       client's side of the stream was still open
 * @qc:	the connection, whose socketpair just said end of file
 *
 * A connection that half-closes (the backend's FIN) shuts its end for
 * writing: ours is then shut for reading only. One that ends (the
 * backend's reset, a timeout, a kill) closes its end: ours is shut both
 * ways, which poll() says as POLLHUP. If the client had not finished
 * sending, that end is an abort, and the stream is reset rather than
 * ended with a FIN that would look like a clean end.
 *
 * Return: true for an abort.
 */
static bool aborted(const struct qconn *qc)
{
	struct pollfd p = { .fd = qc->fd, .events = POLLOUT };

	return !qc->r_fin && poll(&p, 1, 0) == 1 && (p.revents & POLLHUP);
}

/**
 * on_rio() - the socketpair has bytes for the client
 * @loop:	the loop
 * @w:		&qconn.rio
 * @revents:	unused
 */
static void on_rio(struct ev_loop *loop, ev_io *w, int revents)
{
	struct qconn *qc = w->data;
	struct iovec iov[2];
	uint64_t room;
	ssize_t n;
	int cnt;

	room = QUIC_SBUF - (qc->s_tail - qc->s_acked);
	if (!room) {
		ev_io_stop(loop, w); /* on_acked() restarts it */
		return;
	}
	cnt = ring_iov(qc->sbuf, QUIC_SBUF, qc->s_tail, qc->s_acked + QUIC_SBUF,
		       iov);
	n = readv(qc->fd, iov, cnt);
	if (n > 0) {
		qc->s_tail += n;
	} else if (!n && aborted(qc)) {
		ngq_reset(qc->nc);
		quic_conn_end(qc, true);
	} else if (!n) {
		qc->s_eof = true;
		ev_io_stop(loop, w);
	} else if (errno != EAGAIN && errno != EINTR) {
		ngq_reset(qc->nc);
		quic_conn_end(qc, true);
	}
	quic_conn_settle(qc, NGQ_OK);
}

/**
 * shut_if_done() - the client's FIN came and every byte before it is in
 *		    the socketpair: shut it for writing
 * @qc:	the connection
 */
static void shut_if_done(struct qconn *qc)
{
	if (qc->r_fin && !qc->r_shut && qc->r_head == qc->r_tail) {
		shutdown(qc->fd, SHUT_WR);
		qc->r_shut = true;
	}
}

/**
 * failed() - the socketpair refused the client's bytes: the connection
 *	      behind it is gone
 * @qc:	the connection
 */
static void failed(struct qconn *qc)
{
	ngq_reset(qc->nc);
	quic_conn_end(qc, true);
}

/**
 * quic_bridge_push() - write the client's waiting bytes into the
 *			socketpair, as many as it takes
 * @qc:	the connection
 *
 * The client's window grows by what was written; what was not waits for
 * the socketpair to be writable. Called once per batch of datagrams, so
 * that one writev() carries the stream bytes of many packets.
 */
void quic_bridge_push(struct qconn *qc)
{
	struct ev_loop *loop = qc->ql->qh->acc->loop;
	struct iovec iov[2];
	int cnt;
	ssize_t n;

	if (qc->fd < 0)
		return;
	cnt = ring_iov(qc->rbuf, QUIC_RWIN, qc->r_head, qc->r_tail, iov);
	n = cnt ? writev(qc->fd, iov, cnt) : 0;
	if (n > 0) {
		qc->r_head += n;
		ngq_consumed(qc->nc, n);
	} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
		failed(qc);
		return;
	}
	if (qc->r_head != qc->r_tail) {
		ev_io_start(loop, &qc->wio);
		return;
	}
	ev_io_stop(loop, &qc->wio);
	shut_if_done(qc);
}

/**
 * on_wio() - the socketpair has room for the client's waiting bytes
 * @loop:	the loop
 * @w:		&qconn.wio
 * @revents:	unused
 */
static void on_wio(struct ev_loop *loop, ev_io *w, int revents)
{
	quic_conn_settle(w->data, NGQ_OK); /* which pushes first */
}

/**
 * quic_bridge_init() - a new connection's bridge, with no stream yet
 * @qc:	the connection
 */
void quic_bridge_init(struct qconn *qc)
{
	ev_io_init(&qc->rio, on_rio, -1, EV_READ);
	qc->rio.data = qc;
	ev_io_init(&qc->wio, on_wio, -1, EV_WRITE);
	qc->wio.data = qc;
}

/**
 * quic_bridge_open() - ngq.c: the client opened its stream
 * @ud:		the connection
 * @sid:	the stream
 *
 * The socketpair is made, and one end becomes the client side of an
 * smbsplice connection: from here on that connection holds the
 * admission and two of the three descriptors taken at the Initial.
 *
 * Return: 0, or -1 to refuse the stream (a second one, or no memory).
 */
int quic_bridge_open(void *ud, int64_t sid)
{
	struct qconn *qc = ud;
	struct qlistener *ql = qc->ql;
	struct acceptor *acc = ql->qh->acc;
	int sv[2];

	if (qc->opened || qc->dead)
		return -1;
	qc->sbuf = malloc(QUIC_SBUF + QUIC_RWIN);
	if (!qc->sbuf ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
		       sv)) {
		log_rate(LOG_LVL_ERR,
			 "quic: no memory or socket for a stream: %s",
			 strerror(errno));
		quic_conn_end(qc, true);
		return -1;
	}
	qc->rbuf = qc->sbuf + QUIC_SBUF;
	qc->fd = sv[0];
	ev_io_set(&qc->rio, qc->fd, EV_READ);
	ev_io_set(&qc->wio, qc->fd, EV_WRITE);
	ev_io_start(acc->loop, &qc->rio);
	qc->opened = true;
	counter_add(&ql->st.streams, 1);
	counter_add(&ql->l->st[acc->id].accepted, 1);
	acc->ops->open(acc->host, ql->l, ql->cfg, sv[1],
		       (struct sockaddr *)&qc->peer, &qc->key);
	return 0;
}

/**
 * quic_bridge_data() - ngq.c: in-order bytes of the stream
 * @ud:		the connection
 * @d:		the bytes
 * @n:		how many
 * @fin:	the stream ends after them
 *
 * Return: 0, or -1 if they overflow the window (ngtcp2 enforces it, so
 * never).
 */
int quic_bridge_data(void *ud, const uint8_t *d, size_t n, bool fin)
{
	struct qconn *qc = ud;
	struct iovec iov[2];
	int cnt;

	if (qc->fd < 0 || qc->dead)
		return 0;
	if (qc->r_tail - qc->r_head + n > QUIC_RWIN)
		return -1;
	cnt = ring_iov(qc->rbuf, QUIC_RWIN, qc->r_tail, qc->r_tail + n, iov);
	if (cnt)
		memcpy(iov[0].iov_base, d, iov[0].iov_len);
	if (cnt == 2)
		memcpy(iov[1].iov_base, d + iov[0].iov_len, iov[1].iov_len);
	qc->r_tail += n;
	if (fin)
		qc->r_fin = true;
	return 0;
}

/**
 * quic_bridge_reset() - ngq.c: the client reset the stream or asked it
 *			 stopped: the connection behind it ends, and so does
 *			 the QUIC connection
 * @ud:		the connection
 */
void quic_bridge_reset(void *ud)
{
	quic_conn_end(ud, true);
}

/**
 * quic_bridge_acked() - ngq.c: the client acknowledged bytes
 * @ud:		the connection
 * @n:		how many
 *
 * Their room in the ring is free again: reading resumes.
 */
void quic_bridge_acked(void *ud, uint64_t n)
{
	struct qconn *qc = ud;

	qc->s_acked += n;
	if (qc->fd >= 0 && !qc->s_eof && !qc->dead)
		ev_io_start(qc->ql->qh->acc->loop, &qc->rio);
}

/**
 * quic_bridge_done() - is the stream over both ways, all acknowledged
 * @qc:	the connection
 *
 * Return: true if the connection can close with no error.
 */
bool quic_bridge_done(const struct qconn *qc)
{
	return qc->opened && qc->s_fin && qc->s_acked == qc->s_tail &&
	       qc->r_shut;
}

/**
 * quic_bridge_close() - close the socketpair's end and free the rings
 * @qc:	the connection
 *
 * The connection behind it reads end of file, or an error if bytes it
 * had not taken were waiting, and ends.
 */
void quic_bridge_close(struct qconn *qc)
{
	struct ev_loop *loop = qc->ql->qh->acc->loop;

	ev_io_stop(loop, &qc->rio);
	ev_io_stop(loop, &qc->wio);
	if (qc->fd >= 0)
		close(qc->fd);
	qc->fd = -1;
}

/**
 * quic_bridge_free() - free the rings, once ngtcp2 holds no pointer into
 *			them
 * @qc:	the connection
 */
void quic_bridge_free(struct qconn *qc)
{
	free(qc->sbuf);
	qc->sbuf = qc->rbuf = NULL;
}
