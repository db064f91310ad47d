// SPDX-License-Identifier: GPL-2.0-or-later
/* qdial.c - a quic: backend: dial an SMB-over-QUIC server, bridge its
 *	     stream to the connection's server socket
 *
 * Theory of operation: a connection whose backend is quic:HOST:PORT gets,
 * instead of a TCP socket, one end of a socketpair(AF_UNIX, SOCK_STREAM);
 * the other end is a QUIC client's, which this file runs in the
 * worker's loop: one connected, non-blocking UDP socket per connection,
 * QUIC v1, TLS 1.3, ALPN smb, the server checked against a CA and a name
 * (quic-ca, quic-name) or a pinned certificate (quic-pin). When the
 * handshake is over the client opens its one bidirectional stream and
 * tells the connection, which starts forwarding as if its TCP connect had
 * completed; a failure (a certificate refused, the server's close) is
 * told with its reason, and the connection tries its next backend as
 * after a failed connect. The connection's --connect-timeout covers the
 * handshake: when it fires, the connection cancels the dial.
 *
 * From then on the bridge is the listener's (bridge.c) seen from the
 * other end, with the same discipline: the server's bytes wait in a ring
 * of QUIC_RWIN and its window grows only by what the socketpair took;
 * the connection's bytes are read into a ring of QUIC_SBUF, handed to
 * ngtcp2 by pointer and kept until the server acknowledges them. The
 * server's FIN shuts the socketpair for writing; end of file from it
 * sends the stream's FIN, or resets the stream if the connection ended
 * outright while the server was still sending; the server's RESET_STREAM
 * or STOP_SENDING, or a socketpair error, closes both. Once both ways
 * are over and acknowledged, the QUIC connection is closed with no
 * error. The bridge outlives the connection's interest: it is freed when
 * its QUIC connection ends.
 *
 * Datagrams: read with recvmmsg(), sent in batches of equal-sized
 * packets as one send with UDP_SEGMENT (one per packet where the kernel
 * refuses it); the buffers are the worker thread's. Timers: ngtcp2's
 * expiry in nanoseconds, set on an ev_timer as a double, not rounded.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "common/log.h"
#include "conf/options.h"
#include "io/budget.h"
#include "io/sock.h"
#include "net/dial.h"
#include "core/proxy.h"
#include "quic/qdial.h"
#include "quic/qdial-t.h"
#include "quic/quic-t.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif

/* Datagrams taken per recvmmsg(), and calls per wake. */
#define QDIAL_RECV_BATCH  32
#define QDIAL_RECV_ROUNDS 4
/* Packets written per turn before yielding to the rest of the loop. */
#define QDIAL_SEND_BURST 64
/* Descriptors a dial holds beside the connection's: its UDP socket and
 * its end of the socketpair. */
#define QDIAL_FDS 2
/* How often a dial half-closed by its connection looks whether the
 * connection has gone (ns). */
#define QDIAL_GONE_NS 1000000000ull

/**
 * struct qbufs - a worker thread's datagram buffers, shared by its dials
 *		  (one runs at a time in a loop)
 * @g:		packets of one batch, written one after another
 * @r:		reads of one recvmmsg(), each one datagram or a run the
 *		kernel coalesced (UDP_GRO); pages touched only as reads
 *		fill them
 * @iov:	their iovecs
 * @ctl:	their control buffers (a run's segment size)
 * @msgs:	its headers
 */
struct qbufs {
	uint8_t g[QUIC_GSO_SEGS * QUIC_DGRAM];
	uint8_t r[QDIAL_RECV_BATCH][SOCK_GRO_MAX];
	struct iovec iov[QDIAL_RECV_BATCH];
	union {
		char buf[SOCK_GRO_CMSG];
		struct cmsghdr align;
	} ctl[QDIAL_RECV_BATCH];
	struct mmsghdr msgs[QDIAL_RECV_BATCH];
};

static pthread_key_t bufs_key;
static pthread_once_t bufs_once = PTHREAD_ONCE_INIT;

/**
 * bufs_key_make() - the key of each thread's buffers, freed at its exit
 */
static void bufs_key_make(void)
{
	if (pthread_key_create(&bufs_key, free))
		abort(); /* only at the first dial; never seen */
}

/**
 * bufs() - the calling thread's datagram buffers, made at first use
 *
 * Made once per worker thread and kept for its life, so that no packet
 * allocates.
 *
 * Return: the buffers, or NULL if memory ran out.
 */
static struct qbufs *bufs(void)
{
	struct qbufs *tb;

	pthread_once(&bufs_once, bufs_key_make);
	tb = pthread_getspecific(bufs_key);
	if (!tb) {
		tb = malloc(sizeof(*tb));
		if (tb && pthread_setspecific(bufs_key, tb)) {
			free(tb);
			tb = NULL;
		}
	}
	return tb;
}

/**
 * send_batch() - send packets written one after another
 * @q:		the dial
 * @b:		the packets
 * @used:	their bytes
 * @seg:	each one's size, the last one's at most
 * @n:		how many
 *
 * A lost send is QUIC's to repair.
 */
static void send_batch(struct qdial *q, uint8_t *b, size_t used, size_t seg,
		       unsigned n)
{
	if (n > 1 && !q->no_gso) {
		if (!sock_send_gso(q->ufd, NULL, 0, b, used, seg))
			return;
		log_warn(
			"%s: the kernel refused UDP_SEGMENT (%s); sending one datagram per packet",
			q->what, strerror(errno));
		q->no_gso = true;
	}
	for (size_t at = 0; at < used; at += seg)
		while (send(q->ufd, b + at, used - at < seg ? used - at : seg,
			    0) < 0 &&
		       errno == EINTR)
			;
}

/**
 * arm_timer() - set the dial's timer to ngtcp2's next expiry
 * @q:		the dial
 * @soon:	it has more to send now: fire at once
 */
static void arm_timer(struct qdial *q, bool soon)
{
	uint64_t exp = ngq_expiry(q->b.nc), now = quic_now();

	/* Half-closed by the connection: look each second whether it has
	 * gone, for a server that never ends its side (settle()). */
	if (q->b.s_fin && !q->b.r_shut && exp > now + QDIAL_GONE_NS)
		exp = now + QDIAL_GONE_NS;
	quic_timer_arm(q->b.loop, &q->timer, exp, now, soon);
}

/**
 * write_one() - ngtcp2's next packet, into the batch buffer
 * @q:		the dial
 * @buf:	where
 * @now:	the time, ns
 *
 * Return: its length, 0 for nothing to send, -1 if the connection is to
 * be closed.
 */
static ssize_t write_one(struct qdial *q, uint8_t *buf, uint64_t now)
{
	struct iovec iov[2];
	ssize_t taken = -1, len;
	bool fin;
	int n = qbridge_next(&q->b, iov, &fin);

	len = ngq_write(q->b.nc, buf, QUIC_DGRAM, iov, n, fin, &taken, NULL,
			NULL, now);
	if (len < 0)
		return -1;
	qbridge_sent(&q->b, taken, fin);
	return len;
}

/**
 * flush() - send what the connection has to send
 * @q:	the dial
 *
 * Packets of one size go out together; a shorter one ends a batch (it
 * may be its last), a larger one starts the next.
 */
static void flush(struct qdial *q)
{
	struct qbufs *tb = bufs(); /* made by qdial_start() */
	uint64_t now = quic_now();
	size_t used = 0, seg = 0;
	unsigned n = 0;
	int i;

	for (i = 0; i < QDIAL_SEND_BURST; i++) {
		ssize_t len = write_one(q, tb->g + used, now);

		if (len < 0) {
			qbridge_end(&q->b, true);
			break;
		}
		if (!len)
			break;
		if (n && (size_t)len > seg) {
			send_batch(q, tb->g, used, seg, n);
			memmove(tb->g, tb->g + used, len);
			used = n = 0;
		}
		if (!n)
			seg = len;
		used += len;
		n++;
		if ((size_t)len < seg || n == QUIC_GSO_SEGS) {
			send_batch(q, tb->g, used, seg, n);
			used = n = 0;
		}
	}
	if (n)
		send_batch(q, tb->g, used, seg, n);
	if (q->b.dead)
		return;
	ngq_sent(q->b.nc, now);
	arm_timer(q, i == QDIAL_SEND_BURST);
}

/**
 * path() - the UDP socket's path as ngq.c takes it
 * @q:	the dial
 * @p:	filled in
 */
static void path(const struct qdial *q, struct ngq_path *p)
{
	*p = (struct ngq_path){ .local = (const struct sockaddr *)&q->local,
				.locallen = q->locallen,
				.remote = (const struct sockaddr *)&q->remote,
				.remotelen = q->remotelen };
}

/**
 * dial_close() - close a dial's sockets and free its buffers, once
 * @q:	the dial
 */
static void dial_close(struct qdial *q)
{
	if (q->closed)
		return;
	q->closed = true;
	ev_io_stop(q->b.loop, &q->uio);
	ev_timer_stop(q->b.loop, &q->timer);
	qbridge_close(&q->b);
	if (q->b.nc)
		ngq_free(q->b.nc);
	q->b.nc = NULL;
	close(q->ufd);
	qbridge_free(&q->b);
	budget_give(q->fds, QDIAL_FDS);
}

/**
 * dial_free() - close and free everything of a dial
 * @q:	the dial, its owner told or cancelled
 */
static void dial_free(struct qdial *q)
{
	dial_close(q);
	free(q);
}

/**
 * finish() - a dead dial: say goodbye to the server, tell the owner if
 *	      it waits, free it
 * @q:	the dial, dead
 *
 * The owner is told last, after the dial is gone, so that it may dial
 * the next backend from its callback.
 */
static void finish(struct qdial *q)
{
	qdial_done_fn done = q->done;
	void *ctx = q->ctx;
	uint8_t pkt[QUIC_DGRAM];
	char why[320];
	ssize_t len;

	if (q->b.send_close && q->b.nc) {
		len = ngq_close_pkt(q->b.nc, pkt, sizeof(pkt), quic_now());
		if (len > 0)
			while (send(q->ufd, pkt, len, 0) < 0 && errno == EINTR)
				;
	}
	if (done && *q->why)
		snprintf(why, sizeof(why), "%s", q->why);
	else if (done && q->b.nc)
		ngqc_why(q->b.nc, why, sizeof(why));
	else if (done)
		snprintf(why, sizeof(why), "the QUIC connection failed");
	if (!done && q->told && !q->released) {
		/* A quiet end (the server's FIN and close, or both ways
		 * over) while the connection still holds the dial: it lets
		 * go of it in qdial_release(), which frees the rest. */
		dial_close(q);
		return;
	}
	dial_free(q);
	if (done)
		done(ctx, why);
}

/**
 * server_gone() - the QUIC connection ended after the server's FIN: its
 *		   bytes are whole, so they are delivered and the dial then
 *		   ends quietly, as a TCP server's FIN and close would
 * @q:	the dial
 *
 * A server that closes the connection right after its stream's FIN
 * (quic-go's relay does) must not cost the connection the end of its
 * bytes, nor a reset.
 */
static void server_gone(struct qdial *q)
{
	q->gone = true;
	q->done = NULL;
	ev_io_stop(q->b.loop, &q->uio);
	ev_io_stop(q->b.loop, &q->b.rio);
	ev_timer_stop(q->b.loop, &q->timer);
}

/**
 * qdial_settle() - act on what a read, a timer or the bridge said: move
 *		    bytes, send what is due, tell the owner, or end
 * @q:		the dial, freed here if it ended
 * @s:		enum ngq_state
 */
static void qdial_settle(struct qdial *q, enum ngq_state s)
{
	if (s != NGQ_OK && q->told && q->b.r_fin && !q->gone)
		server_gone(q);
	else if (s == NGQ_CLOSE)
		qbridge_end(&q->b, true);
	else if (s != NGQ_OK)
		qbridge_end(&q->b, false);
	if (!q->b.dead)
		qbridge_push(&q->b);
	if (!q->b.dead && q->gone && q->b.r_shut)
		qbridge_end(&q->b,
			    false); /* the server's last byte is delivered */
	if (!q->b.dead && q->b.opened && q->b.s_fin &&
	    q->b.s_acked == q->b.s_tail &&
	    (q->b.r_shut || qbridge_peer_gone(&q->b))) {
		q->done = NULL; /* a clean end, nothing to tell */
		qbridge_end(&q->b,
			    true); /* over both ways, or nobody is left to
				    * read the server's: a close, no error */
	}
	if (!q->b.dead && !q->gone)
		flush(q);
	if (q->b.dead) {
		finish(q);
		return;
	}
	if (q->b.opened && !q->told && q->done) {
		q->told = true; /* last: the owner may let go of it */
		q->done(q->ctx, NULL);
	}
}

/**
 * read_run() - give ngtcp2 each datagram of one read
 * @q:		the dial
 * @p:		its path
 * @buf:	the read's bytes
 * @m:		its header: one datagram, or a run the kernel coalesced
 *		(UDP_GRO)
 *
 * Return: NGQ_OK, or the first word that is not.
 */
static enum ngq_state read_run(struct qdial *q, const struct ngq_path *p,
			       const uint8_t *buf, const struct mmsghdr *m)
{
	size_t len = m->msg_len, seg = sock_gro_seg(&m->msg_hdr, len);
	enum ngq_state s = NGQ_OK;

	if (m->msg_hdr.msg_flags & MSG_TRUNC)
		return NGQ_OK; /* cut: a loss, which QUIC recovers */
	for (size_t at = 0; at < len && s == NGQ_OK; at += seg)
		s = ngq_read(q->b.nc, p, buf + at,
			     len - at < seg ? len - at : seg, quic_now());
	return s;
}

/**
 * on_readable() - datagrams wait on the UDP socket
 * @loop:	the loop
 * @w:		&qdial.uio
 * @revents:	unused
 *
 * Each batch is read whole before the dial is settled, so that the
 * stream bytes of many packets go into the socketpair in one write and
 * their acknowledgements out together.
 */
static void on_readable(struct ev_loop *loop, ev_io *w, int revents)
{
	struct qdial *q = w->data;
	struct qbufs *tb = bufs(); /* made by qdial_start() */
	enum ngq_state s = NGQ_OK;
	struct ngq_path p;
	int n = 0;

	path(q, &p);
	for (int k = 0; k < QDIAL_RECV_ROUNDS; k++) {
		for (unsigned i = 0; i < QDIAL_RECV_BATCH; i++) {
			tb->iov[i] = (struct iovec){ tb->r[i], SOCK_GRO_MAX };
			tb->msgs[i].msg_hdr = (struct msghdr){
				.msg_iov = &tb->iov[i],
				.msg_iovlen = 1,
				.msg_control = tb->ctl[i].buf,
				.msg_controllen = sizeof(tb->ctl[i].buf),
			};
		}
		n = recvmmsg(q->ufd, tb->msgs, QDIAL_RECV_BATCH, 0, NULL);
		if (n < 0 && errno == ECONNREFUSED && !q->b.opened) {
			/* An ICMP port unreachable: nothing listens there,
			 * as a refused TCP connect says. */
			snprintf(
				q->why, sizeof(q->why),
				"nothing listens on its UDP port (ICMP port unreachable)");
			s = NGQ_DEAD;
		}
		for (int i = 0; i < n && s == NGQ_OK; i++)
			s = read_run(q, &p, tb->r[i], &tb->msgs[i]);
		if (n < QDIAL_RECV_BATCH || s != NGQ_OK)
			break;
	}
	qdial_settle(q, s);
}

/**
 * on_timer() - the dial's timer fired
 * @loop:	the loop
 * @t:		&qdial.timer
 * @revents:	unused
 */
static void on_timer(struct ev_loop *loop, ev_timer *t, int revents)
{
	struct qdial *q = t->data;
	uint64_t now = quic_now();

	qbridge_idle(&q->b, now);
	qdial_settle(q, ngq_timeout(q->b.nc, now));
}

/**
 * on_open() - ngq_client.c: the handshake is over and the stream open
 * @ud:		the dial's bridge
 * @sid:	the stream
 *
 * The owner is told once the datagrams that brought it are read
 * (qdial_settle()), not from inside ngtcp2.
 *
 * Return: 0.
 */
static int on_open(void *ud, int64_t sid)
{
	qbridge_open(ud);
	return 0;
}

/**
 * on_reset() - ngq_client.c: the server reset the stream or asked it
 *		stopped: both ends close
 * @ud:		the dial's bridge
 */
static void on_reset(void *ud)
{
	struct qdial *q = QBRIDGE_OWNER(ud, struct qdial);

	if (!q->b.dead)
		snprintf(q->why, sizeof(q->why),
			 "the server reset the QUIC stream");
	qbridge_end(&q->b, true);
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

/* What the dial's QUIC side tells this file and bridge.c. */
static const struct ngq_cb qdial_cb = {
	.stream_open = on_open,
	.stream_data = qbridge_data,
	.stream_reset = on_reset,
	.stream_acked = qbridge_acked,
	.cid_add = on_cid_add,
	.cid_del = on_cid_del,
};

/**
 * on_settle() - bridge.c: act on what the bridge did
 * @b:	the dial's bridge
 */
static void on_settle(struct qbridge *b)
{
	qdial_settle(QBRIDGE_OWNER(b, struct qdial), NGQ_OK);
}

static const struct qbridge_ops qdial_bridge_ops = { .settle = on_settle };

/**
 * backend_host() - the HOST of a backend's quic:HOST:PORT, the default
 *		    name its certificate must carry
 * @text:	the backend as given
 * @out:	buffer for the host, without brackets
 * @outlen:	its size
 */
static void backend_host(const char *text, char *out, size_t outlen)
{
	const char *h = !strncmp(text, "quic:", 5) ? text + 5 : text;
	const char *colon = strrchr(h, ':');
	size_t n = colon ? (size_t)(colon - h) : strlen(h);

	if (n >= 2 && h[0] == '[' && h[n - 1] == ']') {
		h++;
		n -= 2;
	}
	if (n >= outlen)
		n = outlen - 1;
	memcpy(out, h, n);
	out[n] = 0;
}

/**
 * dial_new() - a dial's memory, sockets and watchers, no QUIC yet
 * @r:		the request
 * @udp:	its UDP socket
 * @fd:		the connection's end of the socketpair, filled in
 * @err:	buffer for one line saying why not
 * @errlen:	its size
 *
 * Return: the dial, or NULL with @err set and errno kept (EMFILE and
 * ENFILE among them); @udp is closed then.
 */
static struct qdial *dial_new(const struct qdial_req *r, int udp, int *fd,
			      char *err, size_t errlen)
{
	const struct listen_opts *lo = r->dial->lo;
	unsigned be = r->dial->be;
	struct qdial *q = calloc(1, sizeof(*q));
	int sv[2], e;

	if (!q || qbridge_rings(&q->b) ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
		       sv)) {
		e = errno;
		snprintf(err, errlen, "no memory or socket for a QUIC dial: %s",
			 strerror(e));
		if (q)
			qbridge_free(&q->b);
		free(q);
		close(udp);
		errno = e;
		return NULL;
	}
	qbridge_init(&q->b, r->loop, &qdial_bridge_ops);
	q->fds = &r->px->limits.fds;
	q->done = r->done;
	q->ctx = r->ctx;
	q->ufd = udp;
	sock_gro_on(udp); /* without, a read is one datagram: slower, no less */
	qbridge_set_fd(&q->b, sv[0]);
	*fd = sv[1];
	snprintf(q->what, sizeof(q->what), "listener %s: backend %s", lo->name,
		 lo->backend[be].text);
	q->locallen = sizeof(q->local);
	getsockname(q->ufd, (struct sockaddr *)&q->local, &q->locallen);
	memcpy(&q->remote, &lo->backend[be].addr, lo->backend[be].len);
	q->remotelen = lo->backend[be].len;
	ev_io_init(&q->uio, on_readable, q->ufd, EV_READ);
	q->uio.data = q;
	ev_timer_init(&q->timer, on_timer, 0., 0.);
	q->timer.data = q;
	return q;
}

/**
 * dial_quic() - a dial's TLS credentials and QUIC connection
 * @q:		the dial
 * @lo:		the listener's settings: the files to read
 * @d:		what to dial and how to check the server
 * @err:	buffer for one line saying why not
 * @errlen:	its size
 *
 * Return: 0, or -1 with @err set (@q->b.nc is NULL then).
 */
static int dial_quic(struct qdial *q, const struct listen_opts *lo,
		     const struct ngqc_dial *d, char *err, size_t errlen)
{
	struct ngqc_creds *cr;
	struct ngq_path p;

	if (ngqc_creds_load(lo->quic_ca, lo->quic_client_cert,
			    lo->quic_client_key, d->pinned, &cr, err, errlen))
		return -1;
	path(q, &p);
	if (ngqc_connect(&q->b.nc, d, cr, &p, &qdial_cb, &q->b, quic_now())) {
		q->b.nc = NULL;
		snprintf(err, errlen, "QUIC: no memory for a connection");
		return -1;
	}
	return 0;
}

/**
 * dial_start() - dial a quic: backend: its first Initial goes out now
 * @r:		the request
 * @udp:	its UDP socket, the dial's from here on
 * @out:	the dial
 * @fd:		the connection's end of the socketpair
 * @err:	buffer for one line saying why not
 * @errlen:	its size
 *
 * Return: as qdial_open().
 */
static int dial_start(const struct qdial_req *r, int udp, struct qdial **out,
		      int *fd, char *err, size_t errlen)
{
	const struct listen_opts *lo = r->dial->lo;
	struct ngqc_dial d = { .cc = lo->cc[SIDE_BACKEND],
			       .window = QUIC_RWIN,
			       .pinned = *lo->quic_pin };
	struct qdial *q;
	char name[256];

	if (!budget_take(&r->px->limits.fds, QDIAL_FDS)) {
		close(udp);
		errno = EMFILE;
		snprintf(err, errlen, "out of descriptors");
		return -1;
	}
	q = dial_new(r, udp, fd, err, errlen);
	if (!q) {
		budget_give(&r->px->limits.fds, QDIAL_FDS);
		return -1;
	}
	if (*lo->quic_name)
		snprintf(name, sizeof(name), "%s", lo->quic_name);
	else
		backend_host(lo->backend[r->dial->be].text, name, sizeof(name));
	d.name = name;
	if (d.pinned)
		ngqc_pin_parse(lo->quic_pin, d.pin); /* checked at start */
	if (dial_quic(q, lo, &d, err, errlen)) {
		close(*fd);
		q->done = NULL;
		dial_free(q);
		errno = EINVAL;
		return -1;
	}
	ev_io_start(q->b.loop, &q->uio);
	flush(q); /* the first Initial */
	if (q->b.dead) {
		snprintf(err, errlen,
			 "QUIC: the first Initial could not be made");
		close(*fd);
		q->done = NULL;
		finish(q);
		errno = EIO;
		return -1;
	}
	*out = q;
	return 0;
}

/**
 * qdial_open() - dial a quic: backend for a connection
 * @r:		the request
 * @out:	the dial, for qdial_cancel() until @r->done is told
 * @fd:		the connection's end of the socketpair, its server socket
 * @err:	buffer for one line saying why not
 * @errlen:	its size
 *
 * A UDP socket connected to the backend is made where a TCP one would be
 * (dial_udp_from()); the files (quic-ca, the client certificate) are
 * read. The owner is told later, from the loop, never from here.
 *
 * Return: 0, or -1 with @err set and errno (EMFILE or ENFILE when
 * descriptors ran out: try again).
 */
int qdial_open(const struct qdial_req *r, struct qdial **out, int *fd,
	       char *err, size_t errlen)
{
	int udp;

	if (!bufs()) {
		snprintf(err, errlen, "no memory for QUIC's datagram buffers");
		errno = ENOMEM;
		return -1;
	}
	if (dial_udp_from(r->px, r->here, r->dial, &udp)) {
		int e = errno; /* EMFILE is tried again */

		snprintf(
			err, errlen, "UDP socket: %s",
			e == EOPNOTSUPP
				? "a quic: backend in another network namespace under --user is not supported"
				: strerror(e));
		errno = e;
		return -1;
	}
	return dial_start(r, udp, out, fd, err, errlen);
}

/**
 * qdial_cancel() - the connection gives up a dial it was told nothing of
 *		    yet (its --connect-timeout, its end)
 * @q:	the dial, or NULL; freed here
 *
 * The server is told with a CONNECTION_CLOSE, so that it holds nothing.
 */
void qdial_cancel(struct qdial *q)
{
	if (!q)
		return;
	q->done = NULL;
	q->b.dead = true;
	q->b.send_close = true;
	finish(q);
}

/**
 * qdial_release() - the connection ends: let go of its dial
 * @q:	the dial, or NULL
 *
 * A dial still in its handshake is cancelled. One whose stream is open
 * runs on alone, to deliver what the connection wrote last and to end
 * the stream as the socketpair says (a FIN, or a reset if the connection
 * ended outright); it tells nobody any more, and frees itself when it
 * ends. One that already ended quietly (dial_close()) is freed here.
 */
void qdial_release(struct qdial *q)
{
	if (!q)
		return;
	if (!q->told) {
		qdial_cancel(q);
	} else if (q->closed) {
		free(q); /* it ended quietly before the connection did */
	} else {
		q->done = NULL;
		q->released = true;
	}
}

/**
 * qdial_abort() - the connection ends because the daemon stops: close the
 *		   dial now, telling the server, and free it
 * @qp:	the dial, or NULL; NULL afterwards
 *
 * A released dial (qdial_release()) runs on in the worker's loop, which a
 * stop leaves for good: it would be freed by nobody, and the server,
 * told nothing, would keep the connection (an SMB session and its open
 * files) until its idle timeout, where a TCP backend's socket is reset.
 */
void qdial_abort(struct qdial **qp)
{
	struct qdial *q = *qp;

	if (!q)
		return;
	*qp = NULL;
	q->done = NULL;
	q->released = true; /* finish() frees it, even if told */
	q->b.dead = true;
	q->b.send_close = true;
	finish(q);
}

/**
 * qdial_figures() - a dial's QUIC figures, for ctl
 * @q:		the dial, or NULL
 * @out:	filled in
 *
 * Return: true if its QUIC connection is still there to ask.
 */
bool qdial_figures(const struct qdial *q, struct quic_figures *out)
{
	if (!q || q->closed || !q->b.nc)
		return false;
	ngq_info(q->b.nc, out);
	return true;
}

/**
 * qdial_any() - has a listener a quic: backend
 * @lo:	its settings
 *
 * Return: true if one of its backends is dialled over QUIC.
 */
bool qdial_any(const struct listen_opts *lo)
{
	for (unsigned i = 0; i < lo->nbackends; i++)
		if (lo->backend_quic[i])
			return true;
	return false;
}

/**
 * check_options() - what a listener with a quic: backend may not have
 * @lo:		its settings
 * @err:	buffer for one line saying what
 * @errlen:	its size
 *
 * Return: 0, or -1 with @err set.
 */
static int check_options(const struct listen_opts *lo, char *err, size_t errlen)
{
	uint8_t pin[32];
	const char *no = NULL;

	if (lo->transparent)
		no = "transparent";
	else if (lo->mptcp[SIDE_BACKEND])
		no = "mptcp backend";
	if (no) {
		snprintf(err, errlen,
			 "listener %s: %s does not apply to a quic: backend",
			 lo->name, no);
		return -1;
	}
	if (*lo->quic_pin && *lo->quic_ca) {
		snprintf(err, errlen,
			 "listener %s: give quic-ca or quic-pin, not both",
			 lo->name);
		return -1;
	}
	if (*lo->quic_pin && ngqc_pin_parse(lo->quic_pin, pin)) {
		snprintf(
			err, errlen,
			"listener %s: quic-pin %s: expected the certificate's SHA-256 as 64 hex digits (openssl x509 -noout -fingerprint -sha256)",
			lo->name, lo->quic_pin);
		return -1;
	}
	if (!ngq_cc_known(lo->cc[SIDE_BACKEND])) {
		snprintf(
			err, errlen,
			"listener %s: congestion %s: a quic: backend takes reno, cubic, bbr or bbr2",
			lo->name, lo->cc[SIDE_BACKEND]);
		return -1;
	}
	if (!*lo->quic_client_cert != !*lo->quic_client_key) {
		snprintf(
			err, errlen,
			"listener %s: quic-client-cert and quic-client-key go together",
			lo->name);
		return -1;
	}
	return 0;
}

/**
 * qdial_check() - can a listener's quic: backends be dialled as
 *		   configured
 * @lo:		its settings
 * @err:	buffer for one line saying why not
 * @errlen:	its size
 *
 * The CA and client certificate files are read here, at start, --check
 * and reload, so that a missing or bad file is one line then rather than
 * a reset client later. Options meant for a quic: backend without one
 * are refused too, as the listener's quic-cert without quic: is.
 *
 * Return: 0, or -1 with @err set.
 */
int qdial_check(const struct listen_opts *lo, char *err, size_t errlen)
{
	struct ngqc_creds *cr;
	char why[400];

	if (!qdial_any(lo)) {
		if (!*lo->quic_name && !*lo->quic_ca && !*lo->quic_pin &&
		    !*lo->quic_client_cert && !*lo->quic_client_key)
			return 0;
		snprintf(
			err, errlen,
			"listener %s: quic-name, quic-ca, quic-pin and quic-client-* need a QUIC backend (backend = quic:HOST:PORT)",
			lo->name);
		return -1;
	}
	if (check_options(lo, err, errlen))
		return -1;
	if (ngqc_creds_load(lo->quic_ca, lo->quic_client_cert,
			    lo->quic_client_key, *lo->quic_pin, &cr, why,
			    sizeof(why))) {
		snprintf(err, errlen, "listener %s: %s", lo->name, why);
		return -1;
	}
	ngqc_creds_free(cr);
	return 0;
}
