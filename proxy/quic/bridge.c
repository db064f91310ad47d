// SPDX-License-Identifier: GPL-2.0-or-later
/* bridge.c - a QUIC stream bridged to a socketpair, at either end
 *
 * Theory of operation: the one bidirectional stream of a QUIC connection
 * becomes an ordinary smbsplice socket: a socketpair(AF_UNIX,
 * SOCK_STREAM) whose other end is a connection's client socket (a quic:
 * listener's connection, quic.c: the peer is the client) or its server
 * socket (a quic: backend's dial, qdial.c: the peer is the server). The
 * two ends differ in how the stream opens and how a reset is told; how
 * bytes move is the same, and is this file's, for both (struct qbridge,
 * embedded in both connections), so that the two cannot drift apart.
 * Bytes move both ways with flow control tied to the socketpair:
 *
 * - peer to socketpair: stream bytes are gathered in @rbuf and written
 *   into the socketpair once per batch of datagrams (one writev() for
 *   many packets); what it does not take waits there, and the peer's
 *   window (ngq_consumed()) grows only by bytes the socketpair took. So
 *   @rbuf never holds more than the window, QUIC_RWIN.
 * - socketpair to peer: bytes are read from the socketpair into @sbuf, a
 *   ring, and handed to ngtcp2 by pointer (qbridge_next()); they stay in
 *   place until the peer acknowledges them. Reading stops while
 *   QUIC_SBUF bytes are unacknowledged. They are copied once, from the
 *   socket into the ring; the packet's encryption reads them from there.
 *
 * Ends: the peer's FIN shuts the socketpair for writing once the last
 * byte is in; end of file from the socketpair sends the stream's FIN, or
 * resets the stream if the connection behind it closed outright while
 * the peer was still sending (aborted()). A write or read error on the
 * socketpair resets the stream and ends the QUIC connection. What ends
 * a connection is only marked here (qbridge_end()); its owner's settle()
 * acts on it, outside ngtcp2's callbacks.
 *
 * Timers: ngtcp2's expiry is in nanoseconds of CLOCK_MONOTONIC, and both
 * ends set their ev_timer to it as a double (quic_timer_arm()), not
 * rounded to milliseconds.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "quic/bridge-t.h"

/**
 * quic_now() - the time for ngtcp2
 *
 * Return: CLOCK_MONOTONIC, ns.
 */
uint64_t quic_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/**
 * quic_timer_arm() - set a connection's timer to its next expiry
 * @loop:	the loop
 * @t:		the timer
 * @exp:	when, ns of quic_now(); UINT64_MAX for never
 * @now:	the time, ns
 * @soon:	it has more to send now (its burst ran out): fire at once
 */
void quic_timer_arm(struct ev_loop *loop, ev_timer *t, uint64_t exp,
		    uint64_t now, bool soon)
{
	double after;

	ev_timer_stop(loop, t);
	if (soon)
		after = 0.;
	else if (exp == UINT64_MAX)
		return;
	else
		after = exp > now ? (double)(exp - now) / 1e9 : 0.;
	ev_timer_set(t, after, 0.);
	ev_timer_start(loop, t);
}

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
 * qbridge_next() - the bytes read from the socketpair and not yet sent,
 *		    and whether the FIN is due after them
 * @b:		the bridge
 * @iov:	two pieces, filled in
 * @fin:	set if the FIN is due
 *
 * Return: how many pieces.
 */
int qbridge_next(struct qbridge *b, struct iovec *iov, bool *fin)
{
	*fin = b->opened && b->s_eof && !b->s_fin;
	if (!b->opened || !b->sbuf)
		return 0;
	return ring_iov(b->sbuf, QUIC_SBUF, b->s_sent, b->s_tail, iov);
}

/**
 * qbridge_sent() - ngtcp2 took bytes of qbridge_next()'s into a packet
 * @b:		the bridge
 * @taken:	how many; -1 for no stream frame (a FIN alone is 0)
 * @fin:	the FIN was offered with them
 */
void qbridge_sent(struct qbridge *b, ssize_t taken, bool fin)
{
	if (taken > 0)
		b->s_sent += taken;
	if (fin && taken >= 0 && b->s_sent == b->s_tail)
		b->s_fin = true;
}

/**
 * qbridge_peer_gone() - has the connection behind the socketpair closed
 *			 its end
 * @b:	the bridge, its stream open
 *
 * A connection that half-closes (a FIN) shuts its end for writing: ours
 * is then shut for reading only. One that ends (a reset, a timeout, a
 * kill) closes its end: ours is shut both ways, which poll() says as
 * POLLHUP.
 *
 * Return: true if nothing is left to read what the peer sends.
 */
bool qbridge_peer_gone(const struct qbridge *b)
{
	struct pollfd p = { .fd = b->fd, .events = POLLOUT };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLHUP);
}

/**
 * qbridge_end() - mark the connection to end, saying so to the peer or not
 * @b:		the bridge
 * @send_close:	send a CONNECTION_CLOSE (ngq.c chooses the code)
 *
 * Only marked: it may be inside an ngq.c callback; the owner's settle()
 * sends the close and frees it.
 */
void qbridge_end(struct qbridge *b, bool send_close)
{
	if (b->dead)
		return;
	b->dead = true;
	b->send_close = send_close;
}

/**
 * failed() - the socketpair failed: reset the stream, end the connection
 * @b:	the bridge
 */
static void failed(struct qbridge *b)
{
	ngq_reset(b->nc);
	qbridge_end(b, true);
}

/**
 * on_rio() - the socketpair has bytes for the peer
 * @loop:	the loop
 * @w:		&qbridge.rio
 * @revents:	unused
 *
 * End of file while the peer's side is still open (aborted: the
 * connection behind ended outright) resets the stream rather than
 * ending it with a FIN that would look like a clean end.
 */
static void on_rio(struct ev_loop *loop, ev_io *w, int revents)
{
	struct qbridge *b = w->data;
	struct iovec iov[2];
	uint64_t room = QUIC_SBUF - (b->s_tail - b->s_acked);
	ssize_t n;
	int cnt;

	if (!room) {
		ev_io_stop(loop, w); /* qbridge_acked() restarts it */
		return;
	}
	cnt = ring_iov(b->sbuf, QUIC_SBUF, b->s_tail, b->s_acked + QUIC_SBUF,
		       iov);
	n = readv(b->fd, iov, cnt);
	if (n > 0) {
		b->s_tail += n;
		b->moved = true;
	} else if (!n && (b->r_fin || !qbridge_peer_gone(b))) {
		b->s_eof = true;
		ev_io_stop(loop, w);
	} else if (!n || (errno != EAGAIN && errno != EINTR)) {
		failed(b);
	}
	b->ops->settle(b);
}

/**
 * qbridge_push() - write the peer's waiting bytes into the socketpair,
 *		    as many as it takes
 * @b:	the bridge
 *
 * The peer's window grows by what was written; what was not waits for
 * the socketpair to be writable. Called once per batch of datagrams, so
 * that one writev() carries the stream bytes of many packets. Once the
 * peer's FIN came and every byte is in, the socketpair is shut for
 * writing.
 */
void qbridge_push(struct qbridge *b)
{
	struct iovec iov[2];
	int cnt;
	ssize_t n;

	if (b->fd < 0 || !b->opened)
		return;
	cnt = ring_iov(b->rbuf, QUIC_RWIN, b->r_head, b->r_tail, iov);
	n = cnt ? writev(b->fd, iov, cnt) : 0;
	if (n > 0) {
		b->r_head += n;
		ngq_consumed(b->nc, n);
	} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
		failed(b);
		return;
	}
	if (b->r_head != b->r_tail) {
		ev_io_start(b->loop, &b->wio);
		return;
	}
	ev_io_stop(b->loop, &b->wio);
	if (b->r_fin && !b->r_shut) {
		shutdown(b->fd, SHUT_WR);
		b->r_shut = true;
	}
}

/**
 * on_wio() - the socketpair has room for the peer's waiting bytes
 * @loop:	the loop
 * @w:		&qbridge.wio
 * @revents:	unused
 */
static void on_wio(struct ev_loop *loop, ev_io *w, int revents)
{
	struct qbridge *b = w->data;

	b->ops->settle(b); /* which pushes first */
}

/**
 * qbridge_init() - a new connection's bridge: no socketpair, no rings,
 *		    no stream yet
 * @b:		the bridge
 * @loop:	the worker's loop
 * @ops:	its connection's
 */
void qbridge_init(struct qbridge *b, struct ev_loop *loop,
		  const struct qbridge_ops *ops)
{
	b->loop = loop;
	b->ops = ops;
	b->fd = -1;
	ev_io_init(&b->rio, on_rio, -1, EV_READ);
	b->rio.data = b;
	ev_io_init(&b->wio, on_wio, -1, EV_WRITE);
	b->wio.data = b;
}

/**
 * qbridge_rings() - make the bridge's two rings, one mapping
 * @b:	the bridge
 *
 * Mapped, not allocated: their pages are touched only as bytes pass, and
 * go back to the kernel when the stream is quiet (qbridge_idle()).
 *
 * Return: 0, or -1 with errno set.
 */
int qbridge_rings(struct qbridge *b)
{
	void *m = mmap(NULL, QUIC_SBUF + QUIC_RWIN, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED)
		return -1;
	b->sbuf = m;
	b->rbuf = b->sbuf + QUIC_SBUF;
	return 0;
}

/**
 * qbridge_idle() - the connection's timer fired: give the rings' pages
 *		    back if the stream has been quiet long enough
 * @b:		the bridge
 * @now:	the time, ns
 *
 * A mapped drive's session is idle for hours after a transfer, and would
 * hold up to both rings' worth of pages for nothing. Once nothing has
 * entered either ring for QUIC_LEND_NS, every byte sent is acknowledged
 * and every byte received delivered, the pages are dropped; the next
 * bytes touch fresh zero pages. Called from timers only, never per
 * packet, so a busy stream pays one flag per batch.
 */
void qbridge_idle(struct qbridge *b, uint64_t now)
{
	if (b->moved) {
		b->moved = false;
		b->touched = true;
		b->quiet_since = now;
		return;
	}
	if (!b->touched || !b->sbuf || now - b->quiet_since < QUIC_LEND_NS ||
	    b->s_acked != b->s_tail || b->r_head != b->r_tail)
		return;
	madvise(b->sbuf, QUIC_SBUF + QUIC_RWIN, MADV_DONTNEED);
	b->touched = false;
}

/**
 * qbridge_set_fd() - our end of the socketpair, the bridge's from here on
 * @b:	the bridge
 * @fd:	the socket, non-blocking
 */
void qbridge_set_fd(struct qbridge *b, int fd)
{
	b->fd = fd;
	ev_io_set(&b->rio, fd, EV_READ);
	ev_io_set(&b->wio, fd, EV_WRITE);
}

/**
 * qbridge_open() - the stream is open: bytes move from now on
 * @b:	the bridge, its rings and socketpair made
 */
void qbridge_open(struct qbridge *b)
{
	b->opened = true;
	ev_io_start(b->loop, &b->rio);
}

/**
 * qbridge_data() - ngq.c: in-order bytes of the stream (struct ngq_cb's
 *		    stream_data, for both ends)
 * @ud:		the bridge
 * @d:		the bytes
 * @n:		how many
 * @fin:	the stream ends after them
 *
 * Return: 0, or -1 if they overflow the window (ngtcp2 enforces it, so
 * never).
 */
int qbridge_data(void *ud, const uint8_t *d, size_t n, bool fin)
{
	struct qbridge *b = ud;
	struct iovec iov[2];
	int cnt;

	if (b->fd < 0 || b->dead)
		return 0;
	if (b->r_tail - b->r_head + n > QUIC_RWIN)
		return -1;
	cnt = ring_iov(b->rbuf, QUIC_RWIN, b->r_tail, b->r_tail + n, iov);
	if (cnt)
		memcpy(iov[0].iov_base, d, iov[0].iov_len);
	if (cnt == 2)
		memcpy(iov[1].iov_base, d + iov[0].iov_len, iov[1].iov_len);
	b->r_tail += n;
	b->moved = b->moved || n;
	if (fin)
		b->r_fin = true;
	return 0;
}

/**
 * qbridge_acked() - ngq.c: the peer acknowledged bytes (struct ngq_cb's
 *		     stream_acked, for both ends)
 * @ud:		the bridge
 * @n:		how many
 *
 * Their room in the ring is free again: reading resumes.
 */
void qbridge_acked(void *ud, uint64_t n)
{
	struct qbridge *b = ud;

	b->s_acked += n;
	if (b->fd >= 0 && !b->s_eof && !b->dead)
		ev_io_start(b->loop, &b->rio);
}

/**
 * qbridge_done() - is the stream over both ways, all acknowledged
 * @b:	the bridge
 *
 * Return: true if the connection can close with no error.
 */
bool qbridge_done(const struct qbridge *b)
{
	return b->opened && b->s_fin && b->s_acked == b->s_tail && b->r_shut;
}

/**
 * qbridge_close() - close the socketpair's end
 * @b:	the bridge
 *
 * The connection behind it reads end of file, or an error if bytes it
 * had not taken were waiting, and ends.
 */
void qbridge_close(struct qbridge *b)
{
	ev_io_stop(b->loop, &b->rio);
	ev_io_stop(b->loop, &b->wio);
	if (b->fd >= 0)
		close(b->fd);
	b->fd = -1;
}

/**
 * qbridge_free() - free the rings, once ngtcp2 holds no pointer into them
 * @b:	the bridge
 */
void qbridge_free(struct qbridge *b)
{
	if (b->sbuf)
		munmap(b->sbuf, QUIC_SBUF + QUIC_RWIN);
	b->sbuf = b->rbuf = NULL;
}
