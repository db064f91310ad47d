// SPDX-License-Identifier: GPL-2.0-or-later
/* stateless.c - what a QUIC listener answers without keeping state: a
 *		 Retry to a new client's first Initial, an INVALID_TOKEN
 *		 close to a forged token, a Stateless Reset to a packet of
 *		 no connection
 *
 * Theory of operation: quic.c routes a datagram that names no connection
 * here. A client Initial either brings a valid Retry token (its address
 * is proved: it makes a connection), or is answered with a Retry when
 * --quic-retry says so (always, or under auto above QUIC_RETRY_RATE new
 * Initials a second or QUIC_RETRY_HALFOPEN handshakes under way from
 * unproved addresses), or makes a connection at once. A short-header
 * packet of no connection gets a Stateless Reset, at most QUIC_RESET_RATE
 * a second. Each answer is smaller than what it answers, and nothing is
 * allocated; ngq_sec.c makes the packets.
 */
#include "config.h"

#include <string.h>

#include "common/counter.h"
#include "common/log.h"
#include "conf/options.h"
#include "net/listener.h"
#include "quic/quic-t.h"

/**
 * this_second() - a per-second count, started again in a new second
 * @w:		the count
 * @now:	the time, ns
 *
 * Return: the count of this second, to read or raise.
 */
static unsigned *this_second(struct qsecond *w, uint64_t now)
{
	uint64_t sec = now / 1000000000u;

	if (sec != w->sec) {
		w->sec = sec;
		w->n = 0;
	}
	return &w->n;
}

/**
 * retry_due() - is a client's first Initial to be answered with a Retry
 * @ql:		the listener
 * @now:	the time, ns
 *
 * Return: true under --quic-retry always, and under auto once more than
 * QUIC_RETRY_RATE new Initials came within this second, or while
 * QUIC_RETRY_HALFOPEN handshakes begun without a Retry are under way (a
 * spoofed flood's never finish).
 */
static bool retry_due(struct qlistener *ql, uint64_t now)
{
	unsigned *n;

	switch (ql->cfg->o.quic_retry) {
	case QUIC_RETRY_ALWAYS:
		return true;
	case QUIC_RETRY_OFF:
		return false;
	case QUIC_RETRY_AUTO:
		break;
	}
	n = this_second(&ql->initials, now);
	if (++*n == QUIC_RETRY_RATE + 1)
		log_rate(
			LOG_LVL_WARN,
			"listener %s: over %u new QUIC connections a second: new clients get a Retry (--quic-retry auto)",
			ql->l->name, QUIC_RETRY_RATE);
	if (ql->halfopen == QUIC_RETRY_HALFOPEN && *n <= QUIC_RETRY_RATE)
		log_rate(
			LOG_LVL_WARN,
			"listener %s: %u QUIC handshakes under way from unproved addresses: new clients get a Retry (--quic-retry auto)",
			ql->l->name, QUIC_RETRY_HALFOPEN);
	return *n > QUIC_RETRY_RATE || ql->halfopen >= QUIC_RETRY_HALFOPEN;
}

/**
 * retry_spent() - have this second's Retries all gone out
 * @ql:		the listener
 * @now:	the time, ns
 *
 * Return: true past QUIC_RETRY_MAX this second (said once a second, as
 * rate-limited lines are); else the Retry is counted.
 */
static bool retry_spent(struct qlistener *ql, uint64_t now)
{
	unsigned *n = this_second(&ql->retries, now);

	if (*n < QUIC_RETRY_MAX) {
		++*n;
		return false;
	}
	log_rate(
		LOG_LVL_WARN,
		"listener %s: over %u QUIC Retries a second: new clients' Initials are dropped until the next second (a flood?); open connections are not touched",
		ql->l->name, QUIC_RETRY_MAX);
	return true;
}

/**
 * quic_initial() - a client Initial that names no connection: a new one, or
 *	       a Retry, or nothing
 * @ql:		the listener
 * @peer:	the client
 * @peerlen:	its length
 * @pkt:	the datagram (ngq_is_initial() said yes)
 * @len:	its length
 *
 * A Retry keeps no state: the token it carries comes back with the
 * client's next Initial, which then makes the connection. The client is
 * admitted (--allow, the caps) only once its address is proved, so that
 * spoofed Initials cannot spend another address's per-source cap.
 */
void quic_initial(struct qlistener *ql, const struct sockaddr *peer,
		  socklen_t peerlen, const uint8_t *pkt, size_t len)
{
	uint8_t out[QUIC_DGRAM];
	uint64_t now = quic_now();
	struct ngq_retry rt;
	ssize_t n;

	switch (ngq_token(pkt, len, ql->token_secret, peer, peerlen, &rt,
			  now)) {
	case NGQ_TOKEN_RETRY:
		quic_conn_new(ql, peer, peerlen, pkt, len, &rt);
		return;
	case NGQ_TOKEN_BAD:
		counter_add(&ql->st.dropped, 1);
		n = ngq_bad_token_pkt(pkt, len, out, sizeof(out));
		if (n > 0)
			quic_answer(ql, out, n, peer, peerlen);
		return;
	case NGQ_TOKEN_NONE:
		break;
	}
	if (!retry_due(ql, now)) {
		quic_conn_new(ql, peer, peerlen, pkt, len, NULL);
		return;
	}
	if (retry_spent(ql, now)) {
		counter_add(&ql->st.dropped, 1);
		return;
	}
	n = ngq_retry_pkt(pkt, len, ql->token_secret, peer, peerlen, out,
			  sizeof(out), now);
	if (n > 0) {
		quic_answer(ql, out, n, peer, peerlen);
		counter_add(&ql->qst->retries, 1);
	}
}

/**
 * gone_slot() - where an ID of ours is kept once its connection closed
 * @ql:		the listener
 * @id:		the ID, NGQ_SCID_LEN bytes
 *
 * Our IDs are random bytes after the first, which names the worker's
 * socket (io/reuseport.h) and is the same for all of a worker's: the
 * next ones spread them evenly. A slot is a cache line, not a queue: an
 * ID whose slot another took gets silence, or a reset, as a closed
 * connection did before it was kept.
 *
 * Return: the slot.
 */
static struct qgone *gone_slot(struct qlistener *ql, const uint8_t *id)
{
	uint32_t h;

	memcpy(&h, id + 1, sizeof(h));
	return &ql->gone[h & (QUIC_GONE - 1)];
}

/**
 * quic_gone() - a connection ID of ours whose connection was just freed:
 *		 its closing period begins
 * @ql:		the listener
 * @id:		the ID
 * @len:	its length (only ours, NGQ_SCID_LEN, are kept: a client's
 *		own names only its Initials)
 * @close:	the datagram that carried our CONNECTION_CLOSE, or NULL
 * @closelen:	its length, or 0
 */
void quic_gone(struct qlistener *ql, const uint8_t *id, size_t len,
	       const uint8_t *close, size_t closelen)
{
	struct qgone *g;

	if (len != NGQ_SCID_LEN)
		return;
	g = gone_slot(ql, id);
	memcpy(g->id, id, len);
	g->until = quic_now() + QUIC_GONE_NS;
	g->seen = 0;
	g->closelen = close && closelen <= QUIC_CLOSE_KEEP ? closelen : 0;
	if (g->closelen)
		memcpy(g->close, close, closelen);
}

/**
 * quic_gone_answer() - a packet for a connection closed lately: our close
 *			again, now and then (RFC 9000 10.2.1)
 * @ql:		the listener
 * @dcid:	the packet's destination ID
 * @dcidlen:	its length
 * @len:	the packet's length
 * @peer:	its sender
 * @peerlen:	its length
 *
 * A client whose copy of our CONNECTION_CLOSE was lost would otherwise
 * wait out its idle timeout. The 1st, 2nd, 4th, 8th... packet is
 * answered, with the same datagram: never one per packet, and never
 * more than three times the packet's bytes (RFC 9000 8.1: the sender's
 * address is not validated; whoever knows the ID may forge it).
 *
 * Return: true if @dcid was such a connection's: the packet makes no
 * connection and gets no reset.
 */
bool quic_gone_answer(struct qlistener *ql, const uint8_t *dcid, size_t dcidlen,
		      size_t len, const struct sockaddr *peer,
		      socklen_t peerlen)
{
	struct qgone *g;

	if (dcidlen != NGQ_SCID_LEN)
		return false;
	g = gone_slot(ql, dcid);
	if (g->until <= quic_now() || memcmp(g->id, dcid, NGQ_SCID_LEN))
		return false;
	g->seen++;
	if (g->closelen && g->closelen <= 3 * len && !(g->seen & (g->seen - 1)))
		quic_answer(ql, g->close, g->closelen, peer, peerlen);
	return true;
}

/**
 * quic_stateless_reset() - a short-header packet that names no connection:
 *		       tell its sender the connection is gone
 * @ql:		the listener
 * @pkt:	the packet
 * @len:	its length
 * @peer:	its sender
 * @peerlen:	its length
 *
 * At most QUIC_RESET_RATE a second, and never as long as the packet
 * (ngq_reset_pkt()). A packet for a connection closed lately never comes
 * here: quic_gone_answer() is asked first.
 */
void quic_stateless_reset(struct qlistener *ql, const uint8_t *pkt, size_t len,
			  const struct sockaddr *peer, socklen_t peerlen)
{
	unsigned *sent = this_second(&ql->resets, quic_now());
	uint8_t out[64];
	ssize_t n;

	if (*sent >= QUIC_RESET_RATE)
		return;
	n = ngq_reset_pkt(pkt, len, ql->secret, out, sizeof(out));
	if (n <= 0)
		return;
	++*sent;
	quic_answer(ql, out, n, peer, peerlen);
	counter_add(&ql->qst->resets, 1);
}
