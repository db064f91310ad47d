// SPDX-License-Identifier: GPL-2.0-or-later
/* quic.c - SMB over QUIC listeners: datagrams in, connections found by
 *	    their IDs, packets out, timers
 *
 * Theory of operation (README.md has the whole): one worker serves a QUIC
 * listener's UDP socket. Each datagram is routed by its destination
 * connection ID to its connection; one that names none is a new
 * connection only if it is a well-formed client Initial of QUIC v1 from
 * an admitted client (--allow, the caps, the descriptor budget), and is
 * dropped otherwise without a byte of state. Each connection's stream is
 * bridged to a socketpair by bridge.c; every ngtcp2 and GnuTLS call is in
 * ngq.c.
 *
 * Timers: each connection has one ev_timer, set to ngtcp2's next expiry
 * in nanoseconds, converted to libev's double seconds without rounding.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/counter.h"
#include "common/log.h"
#include "conf/options.h"
#include "core/proxy.h"
#include "io/budget.h"
#include "io/sock.h"
#include "net/accept.h"
#include "net/admit.h"
#include "net/listener.h"
#include "quic/quic-t.h"
#include "quic/quic.h"

/* Batches of datagrams read per wake, so that a flood cannot starve the
 * rest of the worker. */
#define QUIC_RECV_ROUNDS 4
/* Packets written per connection per turn before yielding to others. */
#define QUIC_SEND_BURST 64

/**
 * quic_built() - was the daemon built with QUIC
 *
 * Return: true if it was.
 */
bool quic_built(void)
{
	return true;
}

/**
 * cid_hash() - a connection ID's bucket
 * @id:		its bytes (random: ours are, and a client's own only hurt
 *		that client)
 * @len:	its length
 *
 * Return: the bucket.
 */
static unsigned cid_hash(const uint8_t *id, size_t len)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < len; i++)
		h = (h ^ id[i]) * 16777619u;
	return h & (QUIC_BUCKETS - 1);
}

/**
 * cid_find() - the connection a connection ID names
 * @ql:		the listener
 * @id:		the ID
 * @len:	its length
 *
 * Return: the connection, or NULL.
 */
static struct qconn *cid_find(struct qlistener *ql, const uint8_t *id,
			      size_t len)
{
	for (struct qcid *e = ql->table[cid_hash(id, len)]; e; e = e->next)
		if (e->len == len && !memcmp(e->id, id, len))
			return e->c;
	return NULL;
}

/**
 * quic_cid_add() - route a connection ID to a connection
 * @qc:		the connection
 * @id:		the ID
 * @len:	its length
 *
 * Return: 0, or -1 if the connection's slots are full.
 */
static int quic_cid_add(struct qconn *qc, const uint8_t *id, size_t len)
{
	struct qcid **b;

	if (len > NGQ_MAX_CIDLEN)
		return -1;
	if (cid_find(qc->ql, id, len))
		return 0;
	for (unsigned i = 0; i < QUIC_CIDS; i++) {
		struct qcid *e = &qc->cids[i];

		if (e->c)
			continue;
		e->c = qc;
		e->len = len;
		memcpy(e->id, id, len);
		b = &qc->ql->table[cid_hash(id, len)];
		e->next = *b;
		*b = e;
		return 0;
	}
	return -1;
}

/**
 * cid_unlink() - take one slot out of its bucket
 * @ql:	the listener
 * @e:	the slot, in use
 */
static void cid_unlink(struct qlistener *ql, struct qcid *e)
{
	struct qcid **p = &ql->table[cid_hash(e->id, e->len)];

	while (*p && *p != e)
		p = &(*p)->next;
	if (*p)
		*p = e->next;
	e->c = NULL;
}

/**
 * quic_cid_del() - stop routing a connection ID
 * @qc:		the connection
 * @id:		the ID
 * @len:	its length
 */
static void quic_cid_del(struct qconn *qc, const uint8_t *id, size_t len)
{
	for (unsigned i = 0; i < QUIC_CIDS; i++) {
		struct qcid *e = &qc->cids[i];

		if (e->c && e->len == len && !memcmp(e->id, id, len))
			cid_unlink(qc->ql, e);
	}
}

/**
 * on_cid_add() - ngq.c: a new ID of ours, or the client's first
 * @ud:		the connection
 * @id:		the ID
 * @len:	its length
 *
 * Return: 0 or -1.
 */
static int on_cid_add(void *ud, const uint8_t *id, size_t len)
{
	return quic_cid_add(QBRIDGE_OWNER(ud, struct qconn), id, len);
}

/**
 * on_cid_del() - ngq.c: an ID retired
 * @ud:		the connection
 * @id:		the ID
 * @len:	its length
 */
static void on_cid_del(void *ud, const uint8_t *id, size_t len)
{
	quic_cid_del(QBRIDGE_OWNER(ud, struct qconn), id, len);
}

/**
 * on_migrated() - ngq.c: a path of the client's is validated
 * @ud:		the connection
 * @to:		the path's client address
 * @tolen:	its length
 *
 * ngtcp2 may validate one new path more than once (it probes again when
 * the path's packets change); a migration is counted once per address.
 */
static void on_migrated(void *ud, const struct sockaddr *to, size_t tolen)
{
	struct qconn *qc = QBRIDGE_OWNER(ud, struct qconn);

	if (tolen == qc->pathlen && !memcmp(to, &qc->path, tolen))
		return;
	if (tolen > sizeof(qc->path))
		tolen = sizeof(qc->path);
	memcpy(&qc->path, to, tolen);
	qc->pathlen = tolen;
	counter_add(&qc->ql->qst->migrations, 1);
}

/**
 * on_cert_denied() - ngq.c: the client's certificate was refused
 * @ud:		the connection
 * @why:	its SHA-256, its issuer and the rule
 */
static void on_cert_denied(void *ud, const char *why)
{
	struct qconn *qc = QBRIDGE_OWNER(ud, struct qconn);
	char text[64];

	counter_add(&qc->ql->qst->certs_denied, 1);
	sock_addr_text((struct sockaddr *)&qc->peer, text, sizeof(text));
	log_rate(LOG_LVL_WARN, "quic %s: listener %s: %s: refused", text,
		 qc->ql->l->name, why);
}

/* What a connection's QUIC side tells this file, stream.c and bridge.c. */
static const struct ngq_cb quic_cb = {
	.stream_open = quic_stream_open,
	.stream_data = qbridge_data,
	.stream_reset = quic_stream_reset,
	.stream_acked = qbridge_acked,
	.cid_add = on_cid_add,
	.cid_del = on_cid_del,
	.migrated = on_migrated,
	.cert_denied = on_cert_denied,
};

/**
 * conn_path() - a datagram's path as ngq.c takes it
 * @qc:		the connection (its listener's address, its client's)
 * @p:		filled in
 */
static void conn_path(const struct qconn *qc, struct ngq_path *p)
{
	*p = (struct ngq_path){ .local =
					(const struct sockaddr *)&qc->ql->local,
				.locallen = qc->ql->locallen,
				.remote = (const struct sockaddr *)&qc->peer,
				.remotelen = qc->peerlen };
}

/**
 * arm_timer() - set a connection's timer to ngtcp2's next expiry
 * @qc:		the connection
 * @soon:	it has more to send now (its burst ran out): fire at once
 */
static void arm_timer(struct qconn *qc, bool soon)
{
	uint64_t exp = ngq_expiry(qc->b.nc);

	if (qc->done_at && qc->done_at < exp)
		exp = qc->done_at;
	if (!qc->b.opened && qc->open_by < exp)
		exp = qc->open_by;
	quic_timer_arm(qc->b.loop, &qc->timer, exp, quic_now(), soon);
}

/**
 * quic_conn_flush() - send what a connection has to send
 * @qc:	the connection
 *
 * Stream bytes go from the bridge's ring straight into packets; ngtcp2
 * keeps pointers into the ring until they are acknowledged.
 */
static void quic_conn_flush(struct qconn *qc)
{
	struct qlistener *ql = qc->ql;
	struct sockaddr_storage to;
	struct qbatch b = { 0 };
	struct iovec iov[2];
	uint64_t now = quic_now();
	int i;

	for (i = 0; i < QUIC_SEND_BURST; i++) {
		bool fin;
		int n = qbridge_next(&qc->b, iov, &fin);
		size_t tolen = sizeof(to), cap;
		uint8_t *buf = quic_batch_room(ql, &b, &cap);
		ssize_t taken = -1, len;

		len = ngq_write(qc->b.nc, buf, cap, iov, n, fin, &taken,
				(struct sockaddr *)&to, &tolen, now);
		if (len < 0) {
			quic_conn_end(qc, true);
			break;
		}
		qbridge_sent(&qc->b, taken, fin);
		if (!len)
			break;
		quic_batch_add(ql, &b, len, (struct sockaddr *)&to, tolen);
	}
	if (b.n)
		quic_batch_send(ql, &b);
	if (qc->b.dead)
		return;
	ngq_sent(qc->b.nc, now);
	arm_timer(qc, i == QUIC_SEND_BURST);
}

/**
 * conn_free() - forget a connection: its IDs, its bridge, its budget
 * @qc:		the connection
 * @close:	the datagram that carried our CONNECTION_CLOSE, or NULL
 * @closelen:	its length, or 0
 */
static void conn_free(struct qconn *qc, const uint8_t *close, size_t closelen)
{
	struct qlistener *ql = qc->ql;
	struct acceptor *acc = ql->qh->acc;

	ev_timer_stop(acc->loop, &qc->timer);
	quic_proved(qc);
	for (unsigned i = 0; i < QUIC_CIDS; i++)
		if (qc->cids[i].c) {
			quic_gone(ql, qc->cids[i].id, qc->cids[i].len, close,
				  closelen);
			cid_unlink(ql, &qc->cids[i]);
		}
	qbridge_close(&qc->b);
	if (!qc->b.opened) {
		/* The stream never became a connection: what it would have
		 * taken over is given back here. */
		limits_release(&acc->px->limits, &qc->key,
			       ql->cfg->o.mode == MODE_SMB);
		acc->ops->unreserve(acc->host);
	}
	budget_give(&acc->px->limits.fds, 1);
	if (qc->b.nc)
		ngq_free(qc->b.nc);
	qbridge_free(&qc->b);
	*qc->prev = qc->next;
	if (qc->next)
		qc->next->prev = qc->prev;
	counter_sub(&ql->st.active, 1);
	free(qc);
	if (ql->draining && !ql->conns)
		ev_timer_start(acc->loop, &ql->reap);
}

/**
 * quic_proved() - a connection begun without a Retry no longer counts as
 *		   a handshake under way from an unproved address
 * @qc:	the connection: its client opened its stream (it got our
 *	packets, so its address is its own), or it is freed
 */
void quic_proved(struct qconn *qc)
{
	if (!qc->unproved)
		return;
	qc->unproved = false;
	qc->ql->halfopen--;
}

/**
 * quic_conn_end() - mark a connection to end, saying so to the client or
 *		     not
 * @qc:		the connection
 * @send_close:	send a CONNECTION_CLOSE (ngq.c chooses the code)
 *
 * Only marked: it may be inside an ngq.c callback. quic_conn_settle()
 * sends the close and frees it, at once, without the closing period's
 * lingering: a late packet of the client then finds nothing and is
 * dropped, and the client, which had the close, ends too.
 */
void quic_conn_end(struct qconn *qc, bool send_close)
{
	qbridge_end(&qc->b, send_close);
}

/**
 * no_stream() - the client opened no stream in time: end its connection
 * @qc:	the connection
 */
static void no_stream(struct qconn *qc)
{
	char text[64];

	sock_addr_text((struct sockaddr *)&qc->peer, text, sizeof(text));
	log_rate(
		LOG_LVL_WARN,
		"quic %s: listener %s: no stream within %gs (--handshake-timeout): closed",
		text, qc->ql->l->name, qc->ql->cfg->o.handshake_timeout);
	quic_conn_end(qc, true);
}

/**
 * quic_conn_settle() - act on what a connection's read, timer or bridge
 *			said: send what is due, or end it
 * @qc:		the connection, freed here if it ended
 * @s:		enum ngq_state
 */
void quic_conn_settle(struct qconn *qc, enum ngq_state s)
{
	uint8_t buf[QUIC_DGRAM];
	ssize_t len;

	if (s == NGQ_CLOSE)
		quic_conn_end(qc, true);
	else if (s != NGQ_OK)
		quic_conn_end(qc, false);
	if (!qc->b.dead)
		qbridge_push(&qc->b);
	if (!qc->b.dead && !qc->b.opened && quic_now() >= qc->open_by)
		no_stream(qc);
	if (!qc->b.dead && qbridge_done(&qc->b)) {
		uint64_t now = quic_now();

		if (!qc->done_at)
			qc->done_at = now + QUIC_LINGER_NS;
		else if (now >= qc->done_at)
			quic_conn_end(qc, true);
	}
	if (!qc->b.dead)
		quic_conn_flush(qc);
	if (!qc->b.dead)
		return;
	len = qc->b.send_close && qc->b.nc
		      ? ngq_close_pkt(qc->b.nc, buf, sizeof(buf), quic_now())
		      : 0;
	if (len > 0)
		quic_udp_send(qc->ql, buf, len, (struct sockaddr *)&qc->peer,
			      qc->peerlen);
	conn_free(qc, buf, len > 0 ? (size_t)len : 0);
}

/**
 * on_timer() - a connection's timer fired
 * @loop:	the loop
 * @t:		&qconn.timer
 * @revents:	unused
 */
static void on_timer(struct ev_loop *loop, ev_timer *t, int revents)
{
	struct qconn *qc = t->data;
	uint64_t now = quic_now();

	qbridge_idle(&qc->b, now);
	quic_conn_settle(qc, ngq_timeout(qc->b.nc, now));
}

/**
 * settle_batch() - settle every connection the batch's datagrams reached
 * @ql:	the listener
 */
static void settle_batch(struct qlistener *ql)
{
	for (unsigned i = 0; i < ql->ndirty; i++) {
		struct qconn *qc = ql->dirty[i];
		enum ngq_state s = qc->pend;

		qc->dirty = false;
		qc->pend = NGQ_OK;
		quic_conn_settle(qc, s);
	}
	ql->ndirty = 0;
}

/**
 * mark() - a datagram of the batch reached a connection: settle it once
 *	    the batch is read
 * @qc:		the connection
 * @s:		what ngq_read() said; the first word that is not NGQ_OK
 *		stands
 */
static void mark(struct qconn *qc, enum ngq_state s)
{
	struct qlistener *ql = qc->ql;

	if (qc->pend == NGQ_OK)
		qc->pend = s;
	if (qc->dirty)
		return;
	if (ql->ndirty == QUIC_RECV_BATCH)
		settle_batch(ql);
	qc->dirty = true;
	ql->dirty[ql->ndirty++] = qc;
}

/**
 * admit() - may this client begin a connection, and take its budget
 * @ql:		the listener
 * @peer:	the client
 * @key:	its key for the caps, set
 *
 * Return: true if admitted; its admission and three descriptors (the
 * socketpair's two, the backend's) are then held.
 */
static bool admit(struct qlistener *ql, const struct sockaddr *peer,
		  struct source_key *key)
{
	struct acceptor *acc = ql->qh->acc;
	struct lstats *st = &ql->l->st[acc->id];
	const struct listen_opts *lo = &ql->cfg->o;
	char why[160], text[64];
	enum admit a;

	a = admit_client(acc->px, lo, peer, true, key, why, sizeof(why));
	if (a != ADMIT_OK) {
		counter_add(a == ADMIT_DENIED ? &st->denied : &st->refused[a],
			    1);
		goto refuse;
	}
	if (!acc->ops->reserve(acc->host)) {
		snprintf(why, sizeof(why), "out of descriptors");
		goto release;
	}
	if (!budget_take(&acc->px->limits.fds, 1)) {
		/* budget_take() undid itself: only the reserve is given
		 * back, or the budget would drift below what is held. */
		acc->ops->unreserve(acc->host);
		snprintf(why, sizeof(why), "out of descriptors");
		goto release;
	}
	return true;
release:
	limits_release(&acc->px->limits, key, lo->mode == MODE_SMB);
refuse:
	counter_add(&ql->st.refused, 1);
	sock_addr_text(peer, text, sizeof(text));
	log_rate(LOG_LVL_WARN, "quic %s refused by listener %s: %s", text,
		 ql->l->name, why);
	return false;
}

/**
 * quic_conn_new() - a client's first Initial: a new connection
 * @ql:		the listener
 * @peer:	the client
 * @peerlen:	its length
 * @pkt:	the datagram
 * @len:	its length
 * @rt:		what its valid Retry token said, or NULL for none
 */
void quic_conn_new(struct qlistener *ql, const struct sockaddr *peer,
		   socklen_t peerlen, const uint8_t *pkt, size_t len,
		   const struct ngq_retry *rt)
{
	struct qconn *qc;
	struct ngq_path p;
	struct source_key key;

	if (!admit(ql, peer, &key))
		return;
	qc = calloc(1, sizeof(*qc));
	if (!qc) {
		log_rate(LOG_LVL_ERR, "quic: out of memory for a connection");
		limits_release(&ql->qh->acc->px->limits, &key,
			       ql->cfg->o.mode == MODE_SMB);
		ql->qh->acc->ops->unreserve(ql->qh->acc->host);
		budget_give(&ql->qh->acc->px->limits.fds, 1);
		return;
	}
	qc->ql = ql;
	qc->key = key;
	qc->open_by =
		quic_now() + (uint64_t)(ql->cfg->o.handshake_timeout * 1e9);
	memcpy(&qc->peer, peer, peerlen);
	qc->peerlen = peerlen;
	memcpy(&qc->path, peer, peerlen);
	qc->pathlen = peerlen;
	ev_timer_init(&qc->timer, on_timer, 0., 0.);
	qc->timer.data = qc;
	qbridge_init(&qc->b, ql->qh->acc->loop, &quic_bridge_ops);
	qc->next = ql->conns;
	if (qc->next)
		qc->next->prev = &qc->next;
	qc->prev = &ql->conns;
	ql->conns = qc;
	counter_add(&ql->st.active, 1);
	conn_path(qc, &p);
	if (ngq_accept(&qc->b.nc, ql->creds, ql->secret, &p, pkt, len,
		       &(struct ngq_tune){
			       QUIC_RWIN, ql->cfg->o.cc[SIDE_CLIENT],
			       (uint8_t)(ql->l->quic_base + ql->qh->acc->id) },
		       rt, &quic_cb, &qc->b, quic_now())) {
		qc->b.nc = NULL;
		conn_free(qc, NULL, 0);
		return;
	}
	counter_add(&ql->st.handshakes, 1);
	counter_add(&ql->qst->handshakes, 1);
	if (!rt) {
		qc->unproved = true;
		ql->halfopen++;
	}
	mark(qc, ngq_read(qc->b.nc, &p, pkt, len, quic_now()));
}

/**
 * route() - hand one datagram to its connection, or make one, or drop it
 * @ql:		the listener
 * @buf:	the datagram
 * @len:	its length
 * @peer:	where it came from
 * @peerlen:	its length
 */
static void route(struct qlistener *ql, const uint8_t *buf, size_t len,
		  const struct sockaddr *peer, socklen_t peerlen)
{
	uint8_t out[QUIC_DGRAM];
	const uint8_t *dcid;
	struct ngq_path p;
	struct qconn *qc;
	size_t dcidlen;
	ssize_t n;

	switch (ngq_peek(buf, len, &dcid, &dcidlen)) {
	case NGQ_GARBAGE:
		counter_add(&ql->st.dropped, 1);
		return;
	case NGQ_VERSION:
		counter_add(&ql->st.dropped, 1);
		n = ngq_version_pkt(buf, len, out, sizeof(out));
		if (n > 0)
			quic_answer(ql, out, n, peer, peerlen);
		return;
	case NGQ_PACKET:
		break;
	}
	qc = cid_find(ql, dcid, dcidlen);
	if (!qc && quic_gone_answer(ql, dcid, dcidlen, len, peer, peerlen)) {
		counter_add(&ql->st.dropped, 1);
		return;
	}
	if (!qc) {
		if (!ql->draining && !ql->held && ngq_is_initial(buf, len)) {
			quic_initial(ql, peer, peerlen, buf, len);
			return;
		}
		counter_add(&ql->st.dropped, 1);
		quic_stateless_reset(ql, buf, len, peer, peerlen);
		return;
	}
	memcpy(&qc->peer, peer, peerlen);
	qc->peerlen = peerlen;
	conn_path(qc, &p);
	mark(qc, ngq_read(qc->b.nc, &p, buf, len, quic_now()));
}

/**
 * route_read() - route each datagram of a batch's read @i (one, or a run
 *		  the kernel coalesced from one sender)
 * @ql:		the listener
 * @i:		the read
 *
 * Return: how many datagrams it held.
 */
static unsigned route_read(struct qlistener *ql, int i)
{
	const struct msghdr *h = &ql->msgs[i].msg_hdr;
	size_t len = ql->msgs[i].msg_len, seg = quic_udp_seg(ql, i);
	unsigned n;

	if ((h->msg_flags & MSG_TRUNC) || !len) {
		counter_add(&ql->st.datagrams, 1);
		counter_add(&ql->st.dropped, 1);
		return 1;
	}
	for (size_t at = 0; at < len; at += seg)
		route(ql, ql->rbufs[i] + at, len - at < seg ? len - at : seg,
		      (struct sockaddr *)&ql->peers[i], h->msg_namelen);
	n = (unsigned)((len + seg - 1) / seg);
	counter_add(&ql->st.datagrams, n);
	return n;
}

/**
 * on_readable() - datagrams wait on a listener's socket
 * @loop:	the loop
 * @io:		&qlistener.io
 * @revents:	unused
 */
static void on_readable(struct ev_loop *loop, ev_io *io, int revents)
{
	struct qlistener *ql = io->data;
	/* Datagrams, not reads, per wake: with UDP_GRO a read may hold 64,
	 * and a sender of coalesced bursts must not hold the worker's TCP
	 * connections up longer than uncoalesced ones would. */
	unsigned left = QUIC_RECV_ROUNDS * QUIC_RECV_BATCH;

	while (left) {
		int n = quic_udp_recv(ql);

		if (n < 0)
			log_rate(LOG_LVL_ERR, "quic recvmmsg: %s",
				 strerror(errno));
		if (n <= 0)
			return;
		for (int i = 0; i < n; i++) {
			unsigned got = route_read(ql, i);

			left -= got < left ? got : left;
		}
		quic_answers_flush(ql);
		settle_batch(ql);
		if (n < QUIC_RECV_BATCH)
			return;
	}
}

/**
 * on_reap() - a draining listener's last connection has ended
 * @loop:	the loop
 * @t:		&qlistener.reap
 * @revents:	unused
 */
static void on_reap(struct ev_loop *loop, ev_timer *t, int revents)
{
	struct qlistener *ql = t->data;
	struct quic_host *qh = ql->qh;

	if (ql->conns)
		return;
	quic_remove(ql);
	if (!qh->list && qh->drained)
		qh->drained(qh->ctx);
}

/**
 * quic_host_init() - a worker's QUIC side, with no listener yet
 * @qh:		the worker's
 * @acc:	its acceptor: where streams become connections
 * @drained:	called when the last draining QUIC listener has gone
 * @ctx:	its argument
 */
void quic_host_init(struct quic_host *qh, struct acceptor *acc,
		    void (*drained)(void *ctx), void *ctx)
{
	*qh = (struct quic_host){ .acc = acc, .drained = drained, .ctx = ctx };
}

/**
 * quic_add() - serve a QUIC listener's socket in this worker
 * @qh:		the worker's QUIC side
 * @l:		the listener, whose reference the worker now holds
 * @fd:		its UDP socket, the worker's now
 *
 * Return: true, or false if it could not (logged; socket and reference
 * given back).
 */
bool quic_add(struct quic_host *qh, struct listener *l, int fd)
{
	struct qlistener *ql = calloc(1, sizeof(*ql));
	const struct listen_opts *o = &l->cfg->o;
	char err[512];

	if (!ql || quic_creds_load(o, &ql->creds, err, sizeof(err))) {
		log_err("listener %s: %s", l->name, ql ? err : "out of memory");
		free(ql);
		close(fd);
		listener_put(l);
		return false;
	}
	ql->qh = qh;
	ql->l = l;
	ql->cfg = l->cfg;
	listener_cfg_get(ql->cfg);
	ql->fd = fd;
	quic_udp_gro(ql);
	ql->locallen = sizeof(ql->local);
	getsockname(fd, (struct sockaddr *)&ql->local, &ql->locallen);
	if (ngq_reset_secret(o->quic_key, ql->secret)) {
		log_warn(
			"listener %s: quic-key %s: cannot derive the stateless reset secret: a random one serves this process alone",
			l->name, o->quic_key);
		ngq_random(ql->secret, sizeof(ql->secret));
	}
	ngq_random(ql->token_secret, sizeof(ql->token_secret));
	ql->qst = &l->counters->quic[qh->acc->id];
	ev_io_init(&ql->io, on_readable, fd, EV_READ);
	ql->io.data = ql;
	ev_timer_init(&ql->reap, on_reap, 0., 0.);
	ql->reap.data = ql;
	ev_io_start(qh->acc->loop, &ql->io);
	ql->next = qh->list;
	qh->list = ql;
	return true;
}

/**
 * quic_find() - the worker's handle on a QUIC listener
 * @qh:	the worker's QUIC side
 * @l:	the listener
 *
 * Return: the handle, or NULL if the worker does not serve it.
 */
struct qlistener *quic_find(struct quic_host *qh, const struct listener *l)
{
	for (struct qlistener *ql = qh->list; ql; ql = ql->next)
		if (ql->l == l)
			return ql;
	return NULL;
}

/**
 * quic_set_cfg() - a reload: new streams start with new settings, and new
 *		    connections with the certificate read again
 * @ql:		the worker's QUIC listener
 * @cfg:	the settings, whose reference the worker now holds
 *
 * The files are read again even where their names did not change, since
 * a renewed certificate is written over the old one; reload.c checked
 * them already. Should they fail here, new connections keep the old
 * certificate, with one line. Connections open keep theirs to their end.
 */
void quic_set_cfg(struct qlistener *ql, struct lcfg *cfg)
{
	struct ngq_creds *cr;
	char err[512];

	listener_cfg_put(ql->cfg);
	ql->cfg = cfg;
	if (quic_creds_load(&cfg->o, &cr, err, sizeof(err))) {
		log_warn(
			"listener %s: %s; new connections keep the old certificate",
			ql->l->name, err);
		return;
	}
	ngq_creds_free(ql->creds);
	ql->creds = cr;
}

/**
 * quic_remove() - stop serving a QUIC listener: its connections end
 * @ql:	the listener in this worker, unlinked and freed here
 *
 * A QUIC connection lives in this process's memory and cannot outlive
 * its socket: each is closed (the client is told) and its stream's
 * connection ends. Carrying them across a reload or an upgrade is
 * issue 33's.
 */
void quic_remove(struct qlistener *ql)
{
	struct quic_host *qh = ql->qh;
	struct qlistener **link = &qh->list;

	while (*link != ql)
		link = &(*link)->next;
	*link = ql->next;
	ev_io_stop(qh->acc->loop, &ql->io);
	ev_timer_stop(qh->acc->loop, &ql->reap);
	while (ql->conns) {
		quic_conn_end(ql->conns, true);
		quic_conn_settle(ql->conns, NGQ_OK);
	}
	close(ql->fd);
	ngq_creds_free(ql->creds);
	listener_cfg_put(ql->cfg);
	listener_put(ql->l);
	free(ql);
}

/**
 * quic_drain() - take no new connection on a QUIC listener; remove it
 *		  when its last connection has ended
 * @ql:	the listener in this worker
 *
 * A QUIC connection needs its listener's socket to the end, so a drain
 * (SIGTERM) or a reload that removes the listener keeps the socket open
 * for the connections it has, as a TCP listener's connections run on
 * without it. New clients' Initials are dropped meanwhile.
 */
void quic_drain(struct qlistener *ql)
{
	ql->draining = true;
	if (!ql->conns)
		quic_remove(ql);
}

/**
 * quic_hold() - take no new connection on a QUIC listener, or again
 * @ql:		the listener in this worker
 * @hold:	true to stop (ctl drain), false to resume
 *
 * New clients' Initials are dropped meanwhile, as if nothing listened;
 * the connections open run on, as a held TCP listener's do.
 */
void quic_hold(struct qlistener *ql, bool hold)
{
	ql->held = hold;
}

/**
 * quic_drain_all() - drain every QUIC listener of a worker
 * @qh:	the worker's QUIC side
 */
void quic_drain_all(struct quic_host *qh)
{
	struct qlistener *next;

	for (struct qlistener *ql = qh->list; ql; ql = next) {
		next = ql->next;
		quic_drain(ql);
	}
}

/**
 * quic_remove_all() - stop serving every QUIC listener of a worker
 * @qh:	the worker's QUIC side
 */
void quic_remove_all(struct quic_host *qh)
{
	while (qh->list)
		quic_remove(qh->list);
}
