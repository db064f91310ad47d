// SPDX-License-Identifier: GPL-2.0-or-later
/* reassembly.c - TCP stream reassembly, per direction, with holes
 *
 * Theory of operation: each connection is found by its addresses in a
 * hash table and has two directions ("halves"). A half maps sequence
 * numbers to a 64-bit stream offset from a base: the SYN's sequence number
 * plus one when the capture saw the SYN (or the SYN-ACK, whose
 * acknowledgement number gives the client's), or the first segment's
 * otherwise (the capture joined in the middle). Offsets come from 32-bit
 * differences to the next expected byte, so sequence numbers wrap freely.
 *
 * A half delivers its stream to the consumer in order, each byte once:
 *
 *  - a segment at the next offset is delivered at once, straight from the
 *    capture's buffer; bytes it repeats (a retransmission, an overlap) are
 *    cut off first;
 *  - a segment past the next offset waits, copied, in a binary heap by
 *    offset (ties by arrival, so that the first of two segments at one
 *    offset is delivered first) until the bytes before it come: taking
 *    one in or out costs O(log n) whatever order they come in;
 *  - bytes a record did not keep (the snaplen) are delivered as a hole of
 *    kind RS_HOLE_SNAPLEN in their place;
 *  - bytes that will not come are delivered as a hole of kind
 *    RS_HOLE_LOST: once the peer has acknowledged past them (it got them;
 *    the capture did not) and kept doing so for a few of its segments (a
 *    capture on several interfaces or CPUs may write a segment a little
 *    after the ACK that answers it), once the waiting segments exceed a
 *    bound (in the direction, or in all connections together: given up
 *    on, and counted), and when the connection ends (FIN, RST, the end of
 *    the capture) with bytes before its end still missing.
 *
 * A connection ends at a RST, once both halves have delivered everything
 * up to their FIN, or at the end of the capture. A SYN on the same
 * addresses with another sequence number starts a new connection.
 *
 * What a capture holds must not decide how much memory it takes, so the
 * table is bounded too. Every connection is on one of three lists, the
 * one heard from most recently first: open ones that carried no payload
 * yet, open ones that did, and ended ones. An ended connection's consumer
 * state is gone at once (its results are folded in by close()); what is
 * left is remembered for RS_LINGER_USEC of capture time, to ignore its
 * late segments, then freed. An open connection silent for
 * RS_NEW_IDLE_USEC (no payload yet) or RS_IDLE_USEC is ended and freed.
 * And when a new connection would make more than the bound, room is made
 * at the end of the lists: the longest-ended connection goes, else the
 * least recent one without payload, else the least recent one with it,
 * ended early and counted. Every step is O(1).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "reassembly.h"

/* ACKs past a hole, with data waiting behind it, before the hole is taken
 * as lost rather than as a segment the capture wrote late. */
#define RS_ACK_PATIENCE 8u

#define RS_MIN_BUCKETS 256u

/**
 * struct rs_seg - a segment waiting for the bytes before it
 * @off:	stream offset of its first byte
 * @order:	when it came, among all segments that waited: the heap's
 *		tie-break
 * @len:	payload bytes it carried
 * @caplen:	how many of them the capture kept, held in @data
 * @data:	the bytes
 */
struct rs_seg {
	uint64_t off, order;
	uint32_t len, caplen;
	uint8_t data[];
};

/* What holding a waiting segment costs, counted against RS_OOO_TOTAL_MAX. */
#define SEG_COST(caplen)                                                       \
	(sizeof(struct rs_seg) + sizeof(struct rs_seg *) + (uint64_t)(caplen))

/**
 * struct rs_half - one direction of a connection
 * @started:	its base is known and begin() was called
 * @fin:	its FIN was seen, at @fin_off
 * @base:	the sequence number of stream offset 0
 * @next:	stream offset of the next byte to deliver
 * @fin_off:	stream offset of the FIN (the end of the data)
 * @acked:	the highest offset the peer acknowledged
 * @ooo:	segments waiting, a binary heap by offset (seg_before())
 * @ooo_bytes:	bytes they hold
 * @ooo_count:	how many there are
 * @ooo_cap:	room in @ooo
 * @strikes:	ACKs seen past the hole before the first waiting segment
 *		since it opened
 */
struct rs_half {
	bool started, fin;
	uint32_t base;
	uint64_t next, fin_off, acked;
	struct rs_seg **ooo;
	uint64_t ooo_bytes;
	uint32_t ooo_count, ooo_cap, strikes;
};

/* The lists a connection is on, by what it is (see the theory above). */
enum rs_list {
	RS_L_NEW,   /* open, no payload yet */
	RS_L_DATA,  /* open, payload seen */
	RS_L_ENDED, /* over, remembered for its late segments */
	RS_NLISTS,  /* on none */
};

/**
 * struct rs_flow - a connection
 * @next:	next in its hash chain
 * @lprev:	the one heard from just more recently, on its list
 * @lnext:	the one heard from just less recently
 * @key:	its addresses
 * @half:	its directions, by enum rs_dir
 * @conn:	the consumer's state
 * @seen:	capture time of its last segment, or of its end once over
 * @list:	the list it is on, an enum rs_list
 * @open:	false once it ended: later segments are ignored, but a SYN
 *		starts a new connection in its place
 * @lost:	it has a lost hole (counted in rs_stats.lost_conns)
 */
struct rs_flow {
	struct rs_flow *next, *lprev, *lnext;
	struct rs_key key;
	struct rs_half half[2];
	void *conn;
	uint64_t seen;
	uint8_t list;
	bool open, lost;
};

/**
 * struct rs_lru - connections, the one heard from most recently first
 * @head:	the most recent
 * @tail:	the least recent
 */
struct rs_lru {
	struct rs_flow *head, *tail;
};

/**
 * struct rs_table - every connection of a capture
 * @ops:	the consumer
 * @ctx:	its context for open()
 * @bucket:	hash chains
 * @nbuckets:	how many (a power of two)
 * @nflows:	connections in the table
 * @max_flows:	at most
 * @lru:	every connection in the table, by enum rs_list
 * @now:	the latest capture time seen (a merged capture's times may
 *		go back)
 * @order:	segments that waited so far (rs_seg.order)
 * @ooo_total:	what all waiting segments cost (SEG_COST())
 * @st:		what was found
 */
struct rs_table {
	const struct rs_ops *ops;
	void *ctx;
	struct rs_flow **bucket;
	size_t nbuckets, nflows, max_flows;
	struct rs_lru lru[RS_NLISTS];
	uint64_t now, order, ooo_total;
	struct rs_stats st;
};

/**
 * xcalloc() - calloc() that ends the program when memory runs out
 * @n:		elements
 * @size:	size of each
 *
 * A batch tool has nothing better to do without memory.
 *
 * Return: zeroed memory.
 */
static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p)
		abort();
	return p;
}

/**
 * key_hash() - FNV-1a over a connection's addresses
 * @k:	the key, zeroed before it was filled so its padding is too
 *
 * Return: the hash.
 */
static uint64_t key_hash(const struct rs_key *k)
{
	const uint8_t *p = (const uint8_t *)k;
	uint64_t h = 0xcbf29ce484222325u;

	for (size_t i = 0; i < sizeof(*k); i++)
		h = (h ^ p[i]) * 0x100000001b3u;
	return h;
}

/**
 * seg_key() - a segment's connection, client first
 * @s:		the segment
 * @to_server:	it goes from client to server
 * @k:		filled in
 */
static void seg_key(const struct tcp_seg *s, bool to_server, struct rs_key *k)
{
	size_t alen = s->family == 4 ? 4 : 16;

	memset(k, 0, sizeof(*k));
	k->family = s->family;
	memcpy(k->addr[0], to_server ? s->src : s->dst, alen);
	memcpy(k->addr[1], to_server ? s->dst : s->src, alen);
	k->port[0] = to_server ? s->sport : s->dport;
	k->port[1] = to_server ? s->dport : s->sport;
}

/**
 * rs_new() - an empty table
 * @ops:	the consumer of the streams
 * @ctx:	passed to @ops->open
 *
 * Return: the table.
 */
struct rs_table *rs_new(const struct rs_ops *ops, void *ctx)
{
	struct rs_table *t = xcalloc(1, sizeof(*t));

	t->ops = ops;
	t->ctx = ctx;
	t->nbuckets = RS_MIN_BUCKETS;
	t->bucket = xcalloc(t->nbuckets, sizeof(*t->bucket));
	t->max_flows = RS_MAX_CONNS;
	return t;
}

/**
 * rs_set_max_conns() - bound the connections the table follows at once
 * @t:	the table
 * @n:	the bound, at least 1 (0 is taken as 1)
 *
 * Ended connections remembered for their late segments count too; they
 * are the first to make room.
 */
void rs_set_max_conns(struct rs_table *t, size_t n)
{
	t->max_flows = n ? n : 1;
}

/**
 * lru_del() - take a connection off its list
 * @t:	the table
 * @f:	the connection, on a list or not
 */
static void lru_del(struct rs_table *t, struct rs_flow *f)
{
	struct rs_lru *l;

	if (f->list == RS_NLISTS)
		return;
	l = &t->lru[f->list];
	if (f->lprev)
		f->lprev->lnext = f->lnext;
	else
		l->head = f->lnext;
	if (f->lnext)
		f->lnext->lprev = f->lprev;
	else
		l->tail = f->lprev;
	f->lprev = f->lnext = NULL;
	f->list = RS_NLISTS;
}

/**
 * touch() - a connection was heard from now: first on list @list
 * @t:		the table
 * @f:		the connection
 * @list:	the list it belongs on, an enum rs_list
 */
static void touch(struct rs_table *t, struct rs_flow *f, enum rs_list list)
{
	struct rs_lru *l = &t->lru[list];

	lru_del(t, f);
	f->seen = t->now;
	f->list = (uint8_t)list;
	f->lnext = l->head;
	if (l->head)
		l->head->lprev = f;
	else
		l->tail = f;
	l->head = f;
}

/**
 * grow() - double the hash table, so that chains stay short
 * @t:	the table
 */
static void grow(struct rs_table *t)
{
	size_t n = t->nbuckets * 2;
	struct rs_flow **b = xcalloc(n, sizeof(*b)), *f, *next;

	for (size_t i = 0; i < t->nbuckets; i++)
		for (f = t->bucket[i]; f; f = next) {
			size_t at = key_hash(&f->key) & (n - 1);

			next = f->next;
			f->next = b[at];
			b[at] = f;
		}
	free(t->bucket);
	t->bucket = b;
	t->nbuckets = n;
}

/**
 * flow_find() - the connection with these addresses
 * @t:	the table
 * @k:	the addresses
 *
 * Return: it, or NULL.
 */
static struct rs_flow *flow_find(struct rs_table *t, const struct rs_key *k)
{
	struct rs_flow *f = t->bucket[key_hash(k) & (t->nbuckets - 1)];

	while (f && memcmp(&f->key, k, sizeof(*k)))
		f = f->next;
	return f;
}

/**
 * flow_start() - (re)start a connection: fresh halves, a new consumer state
 * @t:	the table
 * @f:	the connection, ended or new
 */
static void flow_start(struct rs_table *t, struct rs_flow *f)
{
	memset(f->half, 0, sizeof(f->half));
	touch(t, f, RS_L_NEW);
	f->open = true;
	f->lost = false;
	f->conn = t->ops->open(t->ctx, &f->key);
	t->st.conns++;
}

static void make_room(struct rs_table *t);

/**
 * flow_add() - a new connection
 * @t:	the table
 * @k:	its addresses
 *
 * Return: it, started.
 */
static struct rs_flow *flow_add(struct rs_table *t, const struct rs_key *k)
{
	struct rs_flow *f;
	size_t at;

	if (t->nflows >= t->max_flows)
		make_room(t);
	f = xcalloc(1, sizeof(*f));
	f->list = RS_NLISTS;
	if (t->nflows >= t->nbuckets * 2)
		grow(t);
	at = key_hash(k) & (t->nbuckets - 1);
	f->key = *k;
	f->next = t->bucket[at];
	t->bucket[at] = f;
	t->nflows++;
	flow_start(t, f);
	return f;
}

/**
 * seq_off() - the stream offset of a sequence number
 * @h:		the half, started
 * @seq:	the sequence number
 *
 * Taken as the nearest offset to the next expected byte, so that
 * wraparound needs no care; negative for bytes before the base.
 *
 * Return: the offset.
 */
static int64_t seq_off(const struct rs_half *h, uint32_t seq)
{
	uint32_t next_seq = h->base + (uint32_t)h->next;

	return (int64_t)h->next + (int32_t)(seq - next_seq);
}

/**
 * half_start() - a direction's base is known: tell the consumer
 * @t:		the table
 * @f:		the connection
 * @d:		the direction
 * @base:	sequence number of its first byte
 * @at_start:	@base is the stream's real start (from a SYN)
 */
static void half_start(struct rs_table *t, struct rs_flow *f, enum rs_dir d,
		       uint32_t base, bool at_start)
{
	struct rs_half *h = &f->half[d];

	h->started = true;
	h->base = base;
	if (!at_start)
		t->st.midstream++;
	t->ops->begin(f->conn, d, at_start);
}

/**
 * declare_lost() - the bytes up to @upto will not come: a lost hole
 * @t:		the table
 * @f:		the connection
 * @d:		the direction
 * @upto:	stream offset past the hole, beyond the next byte
 */
static void declare_lost(struct rs_table *t, struct rs_flow *f, enum rs_dir d,
			 uint64_t upto)
{
	struct rs_half *h = &f->half[d];
	uint64_t n = upto - h->next;

	t->ops->hole(f->conn, d, n, RS_HOLE_LOST);
	t->st.lost_bytes += n;
	t->st.lost_holes++;
	if (!f->lost) {
		f->lost = true;
		t->st.lost_conns++;
	}
	h->next = upto;
}

/**
 * deliver() - pass on the new bytes of a segment that reaches the next byte
 * @t:		the table
 * @f:		the connection
 * @d:		the direction
 * @off:	the segment's stream offset, at most the next byte's
 * @data:	its captured bytes
 * @caplen:	how many
 * @len:	its payload length, ending past the next byte
 *
 * What the record lacks past @caplen is a snaplen hole.
 */
static void deliver(struct rs_table *t, struct rs_flow *f, enum rs_dir d,
		    uint64_t off, const uint8_t *data, uint32_t caplen,
		    uint32_t len)
{
	struct rs_half *h = &f->half[d];
	uint64_t skip = h->next - off;
	uint64_t from = skip > caplen ? skip : caplen;

	t->st.dup_bytes += skip;
	h->strikes = 0; /* the stream moves on: a new hole starts afresh */
	if (skip < caplen)
		t->ops->data(f->conn, d, data + skip, caplen - skip);
	if (len > from) {
		t->ops->hole(f->conn, d, len - from, RS_HOLE_SNAPLEN);
		t->st.snapped_bytes += len - from;
	}
	h->next = off + len;
}

/**
 * seg_before() - does a waiting segment come before another
 * @a:	one
 * @b:	the other
 *
 * By offset, and of two at one offset the one that came first, as a list
 * sorted on arrival would have them.
 *
 * Return: true if @a comes first.
 */
static bool seg_before(const struct rs_seg *a, const struct rs_seg *b)
{
	return a->off < b->off || (a->off == b->off && a->order < b->order);
}

/**
 * ooo_first() - the first waiting segment of a direction
 * @h:	the half
 *
 * Return: it, or NULL if none waits.
 */
static struct rs_seg *ooo_first(const struct rs_half *h)
{
	return h->ooo_count ? h->ooo[0] : NULL;
}

/**
 * ooo_push() - add a segment to a direction's heap
 * @h:	the half
 * @s:	the segment
 */
static void ooo_push(struct rs_half *h, struct rs_seg *s)
{
	uint32_t i = h->ooo_count, up;

	if (h->ooo_count == h->ooo_cap) {
		uint32_t cap = h->ooo_cap ? h->ooo_cap * 2 : 8;
		struct rs_seg **a = realloc(h->ooo, cap * sizeof(*a));

		if (!a)
			abort();
		h->ooo = a;
		h->ooo_cap = cap;
	}
	h->ooo_count++;
	for (; i; i = up) {
		up = (i - 1) / 2;
		if (!seg_before(s, h->ooo[up]))
			break;
		h->ooo[i] = h->ooo[up];
	}
	h->ooo[i] = s;
}

/**
 * ooo_pop() - take the first segment off a direction's heap
 * @h:	the half, with a segment waiting
 *
 * Return: the segment.
 */
static struct rs_seg *ooo_pop(struct rs_half *h)
{
	struct rs_seg *first = h->ooo[0], *last = h->ooo[--h->ooo_count];
	uint32_t i = 0, c;

	if (!h->ooo_count)
		return first;
	while ((c = 2 * i + 1) < h->ooo_count) {
		if (c + 1 < h->ooo_count &&
		    seg_before(h->ooo[c + 1], h->ooo[c]))
			c++;
		if (!seg_before(h->ooo[c], last))
			break;
		h->ooo[i] = h->ooo[c];
		i = c;
	}
	h->ooo[i] = last;
	return first;
}

/**
 * ooo_free() - free a direction's heap and the segments in it
 * @h:	the half
 *
 * Once none waits, so that what a direction holds is what waits in it.
 */
static void ooo_free(struct rs_half *h)
{
	for (uint32_t i = 0; i < h->ooo_count; i++)
		free(h->ooo[i]);
	free(h->ooo);
	h->ooo = NULL;
	h->ooo_count = h->ooo_cap = 0;
	h->ooo_bytes = 0;
}

/**
 * drain() - deliver the waiting segments the stream has now reached
 * @t:	the table
 * @f:	the connection
 * @d:	the direction
 */
static void drain(struct rs_table *t, struct rs_flow *f, enum rs_dir d)
{
	struct rs_half *h = &f->half[d];
	struct rs_seg *s;

	while ((s = ooo_first(h)) && s->off <= h->next) {
		ooo_pop(h);
		h->ooo_bytes -= s->caplen;
		t->ooo_total -= SEG_COST(s->caplen);
		if (s->off + s->len > h->next)
			deliver(t, f, d, s->off, s->data, s->caplen, s->len);
		else
			t->st.dup_bytes += s->len;
		free(s);
	}
	if (!h->ooo_count)
		ooo_free(h);
}

/**
 * wait_segment() - keep a segment that came before the bytes it follows
 * @t:		the table
 * @f:		the connection
 * @d:		the direction
 * @off:	its stream offset, past the next byte
 * @s:		the segment
 *
 * If too much is waiting, in this direction or in all connections, the
 * first hole of this direction is given up on: taken as lost. Then at
 * most one segment more than the bound waits, however the capture
 * orders them.
 */
static void wait_segment(struct rs_table *t, struct rs_flow *f, enum rs_dir d,
			 uint64_t off, const struct tcp_seg *s)
{
	struct rs_half *h = &f->half[d];
	struct rs_seg *n = xcalloc(1, sizeof(*n) + s->caplen);

	n->off = off;
	n->order = t->order++;
	n->len = s->len;
	n->caplen = s->caplen;
	memcpy(n->data, s->data, s->caplen);
	ooo_push(h, n);
	h->ooo_bytes += s->caplen;
	t->ooo_total += SEG_COST(s->caplen);
	t->st.ooo_segments++;
	if (h->ooo_bytes > RS_OOO_MAX_BYTES || h->ooo_count > RS_OOO_MAX_SEGS ||
	    t->ooo_total > RS_OOO_TOTAL_MAX) {
		t->st.given_up++;
		declare_lost(t, f, d, ooo_first(h)->off);
		drain(t, f, d);
	}
}

/**
 * seg_data() - take in a segment's payload
 * @t:	the table
 * @f:	the connection
 * @d:	the direction, started
 * @s:	the segment, with payload
 */
static void seg_data(struct rs_table *t, struct rs_flow *f, enum rs_dir d,
		     const struct tcp_seg *s)
{
	struct rs_half *h = &f->half[d];
	uint32_t seq = s->seq + (s->flags & TCP_F_SYN ? 1 : 0);
	int64_t off = seq_off(h, seq);

	if (off + (int64_t)s->len <= (int64_t)h->next) {
		t->st.dup_bytes += s->len;
		return;
	}
	if (off <= (int64_t)h->next) {
		deliver(t, f, d, (uint64_t)off, s->data, s->caplen, s->len);
		drain(t, f, d);
	} else {
		wait_segment(t, f, d, (uint64_t)off, s);
	}
}

/**
 * note_ack() - the peer acknowledged bytes of direction @d up to @ack
 * @t:		the table
 * @f:		the connection
 * @d:		the direction acknowledged
 * @ack:	the acknowledgement number
 *
 * The peer has every byte it acknowledges. Bytes before it that the
 * capture lacks, while later ones wait, will not come: they are lost, once
 * RS_ACK_PATIENCE ACKs have said so.
 */
static void note_ack(struct rs_table *t, struct rs_flow *f, enum rs_dir d,
		     uint32_t ack)
{
	struct rs_half *h = &f->half[d];
	int64_t off;

	if (!h->started)
		return;
	off = seq_off(h, ack);
	if (off > (int64_t)h->acked)
		h->acked = (uint64_t)off;
	if (h->ooo_count && h->acked > h->next &&
	    ++h->strikes >= RS_ACK_PATIENCE) {
		uint64_t first = ooo_first(h)->off;

		declare_lost(t, f, d, h->acked < first ? h->acked : first);
		drain(t, f, d);
	}
}

/**
 * half_flush() - the connection ends: deliver what waits, holes and all
 * @t:	the table
 * @f:	the connection
 * @d:	the direction
 *
 * The stream ends at its FIN; without one, at what the peer acknowledged
 * (which may count a FIN the capture lacks as one lost byte).
 */
static void half_flush(struct rs_table *t, struct rs_flow *f, enum rs_dir d)
{
	struct rs_half *h = &f->half[d];
	struct rs_seg *s;
	uint64_t end;

	if (!h->started)
		return;
	while ((s = ooo_first(h))) {
		if (s->off > h->next)
			declare_lost(t, f, d, s->off);
		drain(t, f, d);
	}
	end = h->fin ? h->fin_off : h->acked;
	if (end > h->next)
		declare_lost(t, f, d, end);
}

/**
 * flow_end() - a connection is over: flush both halves, tell the consumer
 * @t:	the table
 * @f:	the connection, open
 */
static void flow_end(struct rs_table *t, struct rs_flow *f)
{
	half_flush(t, f, RS_TO_SERVER);
	half_flush(t, f, RS_TO_CLIENT);
	t->ops->close(f->conn);
	f->conn = NULL;
	f->open = false;
	touch(t, f, RS_L_ENDED);
}

/**
 * flow_free() - forget a connection
 * @t:	the table
 * @f:	the connection, ended
 */
static void flow_free(struct rs_table *t, struct rs_flow *f)
{
	struct rs_flow **p = &t->bucket[key_hash(&f->key) & (t->nbuckets - 1)];

	while (*p != f)
		p = &(*p)->next;
	*p = f->next;
	lru_del(t, f);
	t->nflows--;
	free(f);
}

/**
 * make_room() - forget one connection, so that another fits the bound
 * @t:	the table, with a connection in it
 *
 * The one that ended longest ago, if any; else the least recently heard
 * from without payload, else with payload, which is ended early and
 * counted (its results are folded in as they stand).
 */
static void make_room(struct rs_table *t)
{
	struct rs_flow *f = t->lru[RS_L_ENDED].tail;

	if (!f) {
		f = t->lru[RS_L_NEW].tail ? t->lru[RS_L_NEW].tail
					  : t->lru[RS_L_DATA].tail;
		t->st.evicted++;
		flow_end(t, f);
	}
	flow_free(t, f);
}

/**
 * expire() - forget connections whose time is up, at the ends of the lists
 * @t:	the table, its clock just moved
 *
 * Each list is in the order its connections were last heard from, so
 * only its end need be looked at.
 */
static void expire(struct rs_table *t)
{
	static const uint64_t idle[RS_NLISTS] = {
		[RS_L_NEW] = RS_NEW_IDLE_USEC,
		[RS_L_DATA] = RS_IDLE_USEC,
		[RS_L_ENDED] = RS_LINGER_USEC,
	};
	struct rs_flow *f;

	for (int l = 0; l < RS_NLISTS; l++)
		while ((f = t->lru[l].tail) && t->now - f->seen > idle[l]) {
			if (f->open) {
				t->st.idle_ended += l == RS_L_DATA;
				flow_end(t, f);
			}
			flow_free(t, f);
		}
}

/**
 * half_done() - has a direction delivered everything up to its FIN
 * @h:	the half
 *
 * Return: true if so.
 */
static bool half_done(const struct rs_half *h)
{
	return h->fin && h->next >= h->fin_off && !h->ooo_count;
}

/**
 * new_syn() - a SYN from the client that starts another connection
 * @f:	the connection with these addresses
 * @s:	the SYN
 *
 * Return: true when @f must end and start again: it ended, or its client
 * stream began at another sequence number (not a retransmitted SYN).
 */
static bool new_syn(const struct rs_flow *f, const struct tcp_seg *s)
{
	const struct rs_half *h = &f->half[RS_TO_SERVER];

	return !f->open || (h->started && h->base != s->seq + 1);
}

/**
 * seg_flags() - act on a segment's SYN, ACK and FIN
 * @t:	the table
 * @f:	the connection
 * @d:	the segment's direction
 * @s:	the segment
 */
static void seg_flags(struct rs_table *t, struct rs_flow *f, enum rs_dir d,
		      const struct tcp_seg *s)
{
	struct rs_half *h = &f->half[d];

	if (s->flags & TCP_F_SYN) {
		if (!h->started)
			half_start(t, f, d, s->seq + 1, true);
		/* The SYN-ACK acknowledges the client's SYN: its stream
		 * starts there even when the capture missed the SYN. */
		if (d == RS_TO_CLIENT && s->flags & TCP_F_ACK &&
		    !f->half[RS_TO_SERVER].started)
			half_start(t, f, RS_TO_SERVER, s->ack, true);
	}
	if (s->flags & TCP_F_ACK)
		note_ack(t, f, d == RS_TO_SERVER ? RS_TO_CLIENT : RS_TO_SERVER,
			 s->ack);
	if (s->len && !h->started)
		half_start(t, f, d, s->seq, false);
	if (s->flags & TCP_F_FIN && h->started && !h->fin) {
		uint32_t end = s->seq + (s->flags & TCP_F_SYN ? 1 : 0) + s->len;
		int64_t off = seq_off(h, end);

		h->fin = true;
		h->fin_off = off > 0 ? (uint64_t)off : 0;
	}
}

/**
 * rs_segment() - take in one TCP segment of a connection
 * @t:		the table
 * @s:		the segment
 * @to_server:	it goes from client to server
 */
void rs_segment(struct rs_table *t, const struct tcp_seg *s, bool to_server)
{
	enum rs_dir d = to_server ? RS_TO_SERVER : RS_TO_CLIENT;
	bool client_syn =
		to_server && s->flags & TCP_F_SYN && !(s->flags & TCP_F_ACK);
	struct rs_key k;
	struct rs_flow *f;

	if (s->usec > t->now)
		t->now = s->usec;
	seg_key(s, to_server, &k);
	f = flow_find(t, &k);
	if (!f) {
		/* A bare ACK, FIN or RST of a connection never seen to
		 * carry anything starts nothing. */
		if (!s->len && !(s->flags & TCP_F_SYN))
			return;
		f = flow_add(t, &k);
	} else if (client_syn && new_syn(f, s)) {
		if (f->open)
			flow_end(t, f);
		flow_start(t, f);
	} else if (!f->open) {
		t->st.late_segments += s->len != 0;
		expire(t);
		return;
	}
	touch(t, f, s->len || f->list == RS_L_DATA ? RS_L_DATA : RS_L_NEW);
	seg_flags(t, f, d, s);
	if (s->len)
		seg_data(t, f, d, s);
	if (s->flags & TCP_F_RST ||
	    (half_done(&f->half[0]) && half_done(&f->half[1])))
		flow_end(t, f);
	expire(t);
}

/**
 * rs_finish() - the capture is over: end every open connection
 * @t:	the table
 */
void rs_finish(struct rs_table *t)
{
	for (size_t i = 0; i < t->nbuckets; i++)
		for (struct rs_flow *f = t->bucket[i]; f; f = f->next)
			if (f->open)
				flow_end(t, f);
}

/**
 * rs_free() - free the table, its connections ended by rs_finish()
 * @t:	the table, or NULL
 *
 * Segments still waiting in a connection not ended are freed with it.
 */
void rs_free(struct rs_table *t)
{
	struct rs_flow *f, *next;

	if (!t)
		return;
	for (size_t i = 0; i < t->nbuckets; i++)
		for (f = t->bucket[i]; f; f = next) {
			next = f->next;
			ooo_free(&f->half[0]);
			ooo_free(&f->half[1]);
			free(f);
		}
	free(t->bucket);
	free(t);
}

/**
 * rs_stats() - what reassembly found so far
 * @t:	the table
 *
 * Return: its counters.
 */
const struct rs_stats *rs_stats(const struct rs_table *t)
{
	return &t->st;
}
