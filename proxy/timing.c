// SPDX-License-Identifier: GPL-2.0-or-later
/* timing.c - how long the server takes per SMB2 command, and how long
 *	      smbsplice holds each frame
 *
 * Theory of operation: the framer tells this file of every message as its
 * header is parsed (timing_message()), and the pump tells it after every
 * write that moved bytes, with how many a direction has written in all
 * (timing_wrote()): every frame that ends at or before that count is
 * fully handed to the kernel, even when the write ended blocked midway
 * through the next one.
 *
 *   forward: a frame's clock starts when its header is parsed, in the read
 *	that brought its first bytes (headers are read whole unless a read
 *	ends inside one), and stops at the write that hands its last byte on.
 *	A direction's frames in flight wait in a small ring, oldest first;
 *	when one read brings more frames than the ring holds (a client
 *	pipelining 64 READs), neighbours from that read share a slot and
 *	the clock of the first of them, started nanoseconds before theirs.
 *   request: a request waits in a table keyed by MessageId (srt.c) from
 *	its parse; the write that hands its last byte to the server stamps
 *	it sent, and the parse of its final response takes it out and
 *	counts the difference into its command's histogram.
 *
 * The frame clocks live in a block lent from the worker's pool while a
 * frame is in flight, and given back as soon as none is: an idle SMB
 * session, the common case, holds none. The request table is lent apart,
 * smallest first, for a request can wait for hours (a CHANGE_NOTIFY is
 * answered when something changes) and should not keep the rest: such a
 * session holds a table of 8 slots, 280 bytes. Past the table's cap,
 * requests are not timed and are counted as such rather than making it
 * grow without bound. The clock is CLOCK_MONOTONIC through the vDSO: no
 * system call.
 */
#include "config.h"

#include <stdlib.h>

#include "counter.h"
#include "monotime.h"
#include "srt.h"
#include "timing.h"

/* Frames in flight one direction may time at once. */
#define FWD_SLOTS 16
/* Requests in flight: the table's first size in slots, and the most a
 * connection times at once (servers grant up to 8192 credits; a pipeline
 * that deep is timed in part). */
#define SRT_FIRST	 8u
#define SRT_MAX_REQUESTS 1024u
/* Spare blocks a worker keeps between trims. */
#define POOL_KEEP 32

/**
 * struct fwd_ring - frames of one direction not yet fully written
 * @t0:		when the first frame of each slot was parsed (ns)
 * @end:	stream offset just past the last frame of each slot
 * @n:		frames in each slot
 * @head:	oldest slot
 * @len:	slots in use
 */
struct fwd_ring {
	uint64_t t0[FWD_SLOTS], end[FWD_SLOTS];
	uint32_t n[FWD_SLOTS];
	unsigned head, len;
};

/**
 * struct timing_block - a connection's frame clocks while frames are in
 *			 flight
 * @next:	the pool's free list
 * @fwd:	frames in flight, per direction
 * @frame_t0:	when the current frame of each direction was parsed
 */
struct timing_block {
	struct timing_block *next;
	struct fwd_ring fwd[DIR_COUNT];
	uint64_t frame_t0[DIR_COUNT];
};

/**
 * timing_init() - a connection starts with nothing in flight
 * @tm:		its timing
 * @pool:	the worker's pool
 * @tot:	the listener's counters in this worker
 */
void timing_init(struct timing *tm, struct timing_pool *pool,
		 struct totals *tot)
{
	tm->b = NULL;
	tm->srt = NULL;
	tm->pool = pool;
	tm->tot = tot;
	tm->hidden = false;
}

/**
 * lend_block() - the connection's frame clocks, lent if it has none
 * @tm:	the timing
 *
 * Return: the block, or NULL if memory ran out.
 */
static struct timing_block *lend_block(struct timing *tm)
{
	struct timing_pool *p = tm->pool;
	struct timing_block *b = tm->b;

	if (b)
		return b;
	b = p->free;
	if (b) {
		p->free = b->next;
		p->nfree--;
		p->used = true;
	} else if (!(b = malloc(sizeof(*b)))) {
		return NULL;
	}
	/* A zero clock times nothing (count_response()), should a frame's
	 * later element ever come without its first having been seen. */
	for (int d = 0; d < DIR_COUNT; d++) {
		b->fwd[d].head = b->fwd[d].len = 0;
		b->frame_t0[d] = 0;
	}
	tm->b = b;
	return b;
}

/**
 * lend_table() - the connection's request table, lent if it has none
 * @tm:	the timing
 *
 * Return: the table, or NULL if memory ran out.
 */
static struct srt_table *lend_table(struct timing *tm)
{
	struct timing_pool *p = tm->pool;
	struct srt_table *t = tm->srt;

	if (t)
		return t;
	t = p->tables;
	if (t) {
		p->tables = t->next;
		p->ntables--;
		p->used = true;
	} else if (!(t = malloc(srt_size(SRT_FIRST)))) {
		return NULL;
	}
	srt_init(t, SRT_FIRST);
	tm->srt = t;
	return t;
}

/**
 * keep_table() - put a table of the first size in the pool, or free it
 * @p:	the pool
 * @t:	the table
 */
static void keep_table(struct timing_pool *p, struct srt_table *t)
{
	if (t->cap != SRT_FIRST || p->ntables >= POOL_KEEP) {
		free(t);
		return;
	}
	t->next = p->tables;
	p->tables = t;
	p->ntables++;
}

/**
 * give_back() - return what no longer holds anything in flight
 * @tm:		the timing
 * @force:	return everything (the connection ends)
 */
static void give_back(struct timing *tm, bool force)
{
	struct timing_block *b = tm->b;
	struct timing_pool *p = tm->pool;

	if (tm->srt && (force || !tm->srt->count)) {
		keep_table(p, tm->srt);
		tm->srt = NULL;
	}
	if (!b || (!force &&
		   (b->fwd[DIR_TO_SERVER].len || b->fwd[DIR_TO_CLIENT].len)))
		return;
	tm->b = NULL;
	if (p->nfree >= POOL_KEEP) {
		free(b);
		return;
	}
	b->next = p->free;
	p->free = b;
	p->nfree++;
}

/**
 * fwd_push() - a frame's clock starts
 * @r:		its direction's ring
 * @t0:		now
 * @end:	stream offset just past the frame
 *
 * A full ring means this read brought many frames: the two newest slots,
 * filled in this same read, become one, and this frame takes the last.
 * The newest frame stays alone, for it may be a header whose payload is
 * still to come, and the others must not wait for that.
 */
static void fwd_push(struct fwd_ring *r, uint64_t t0, uint64_t end)
{
	unsigned i, a, b;

	if (r->len == FWD_SLOTS) {
		a = (r->head + r->len - 2) % FWD_SLOTS;
		b = (r->head + r->len - 1) % FWD_SLOTS;
		r->end[a] = r->end[b];
		r->n[a] += r->n[b];
		r->len--;
	}
	i = (r->head + r->len) % FWD_SLOTS;
	r->t0[i] = t0;
	r->end[i] = end;
	r->n[i] = 1;
	r->len++;
}

/**
 * room_for_request() - make sure the table can take one more request
 * @tm:	the timing
 * @id:	its MessageId
 *
 * At the cap, a request that reuses the MessageId of one still held
 * (against the protocol) takes its slot, as srt_add() does below the cap:
 * left in place, the old request would be paired with the new one's
 * response. Once the responses are hidden (timing_responses_hidden()),
 * no request is taken.
 *
 * Return: true if it can, having lent or grown it if need be.
 */
static bool room_for_request(struct timing *tm, uint64_t id)
{
	struct srt_table *t = tm->hidden ? NULL : lend_table(tm), *bigger;
	uint64_t sent;
	uint16_t cmd;

	if (t && t->count >= SRT_MAX_REQUESTS && !srt_take(t, id, &cmd, &sent))
		t = NULL;
	else if (t && srt_full(t)) {
		bigger = malloc(srt_size(t->cap * 2));
		if (bigger) {
			srt_init(bigger, t->cap * 2);
			srt_move(bigger, t);
			keep_table(tm->pool, t);
			tm->srt = bigger;
		}
		t = bigger;
	}
	if (!t)
		counter_add(&tm->tot->untimed_requests, 1);
	return t != NULL;
}

/**
 * count_response() - a final response: its request's time goes in
 * @tm:		the timing
 * @m:		the response
 * @t:		when its frame's header was parsed
 */
static void count_response(struct timing *tm, const struct smb_msg *m,
			   uint64_t t)
{
	uint64_t sent;
	uint16_t cmd;

	if (!tm->srt || !srt_take(tm->srt, m->message_id, &cmd, &sent) ||
	    !sent || t < sent)
		return;
	hist_observe(
		&tm->tot->request[cmd < SMB2_NCOMMANDS ? cmd : SMB2_NCOMMANDS],
		t - sent, 1);
}

/**
 * timing_message() - the framer has parsed a message's header
 * @tm:	the connection's timing
 * @d:	the direction it travels
 * @m:	the message
 */
void timing_message(struct timing *tm, enum dir_index d,
		    const struct smb_msg *m)
{
	struct timing_block *b = lend_block(tm);

	if (!b)
		return;
	if (m->start == 0) { /* a frame's first message: its clock starts */
		b->frame_t0[d] = mono_ns();
		fwd_push(&b->fwd[d], b->frame_t0[d], smb_msg_frame_end(m));
	}
	switch (srt_role_of(m)) {
	case SRT_REQUEST:
		if (d == DIR_TO_SERVER && room_for_request(tm, m->message_id))
			srt_add(tm->srt, m->message_id, m->command,
				smb_msg_frame_end(m));
		break;
	case SRT_RESPONSE:
		if (d == DIR_TO_CLIENT)
			count_response(tm, m, b->frame_t0[d]);
		break;
	case SRT_NONE:
		/* A compressed response hides its header, and so which
		 * request it answers. */
		if (d == DIR_TO_CLIENT && m->kind == SMB_MSG_COMPRESSED)
			timing_responses_hidden(tm);
		break;
	}
	give_back(tm, false);
}

/**
 * timing_responses_hidden() - the server's responses can no longer be read
 * @tm:	the connection's timing
 *
 * Once the server compresses its responses, or their direction is
 * forwarded opaque, no request in the table would ever be taken out: it
 * would fill to the cap and hold it for the connection's life. So the
 * requests waiting, and every request from now on, are counted as not
 * timed, and the table goes back. Frames are still timed.
 */
void timing_responses_hidden(struct timing *tm)
{
	if (tm->hidden)
		return;
	tm->hidden = true;
	if (tm->srt) {
		counter_add(&tm->tot->untimed_requests, tm->srt->count);
		keep_table(tm->pool, tm->srt);
		tm->srt = NULL;
	}
}

/**
 * timing_wrote() - a direction handed bytes to the kernel
 * @tm:		the connection's timing
 * @d:		the direction
 * @written:	bytes it has written so far
 * @at:		when the writes that moved the last of them began
 *		(mono_ns()): the moment they were handed to the kernel, give
 *		or take the system call
 *
 * Frames and requests that end at or before @written are out; the rest
 * wait for a later call.
 */
void timing_wrote(struct timing *tm, enum dir_index d, uint64_t written,
		  uint64_t at)
{
	struct timing_block *b = tm->b;
	struct fwd_ring *r;

	if (b) {
		r = &b->fwd[d];
		while (r->len && r->end[r->head] <= written) {
			hist_observe(&tm->tot->dir[d].forward,
				     at - r->t0[r->head], r->n[r->head]);
			r->head = (r->head + 1) % FWD_SLOTS;
			r->len--;
		}
	}
	if (d == DIR_TO_SERVER && tm->srt && tm->srt->unsent)
		srt_sent(tm->srt, written, at);
	give_back(tm, false);
}

/**
 * timing_end() - the connection ends: what is in flight is not timed
 * @tm:	its timing
 */
void timing_end(struct timing *tm)
{
	give_back(tm, true);
}

/**
 * timing_pool_trim() - free the spare blocks if none was needed lately
 * @pool:	the worker's pool
 *
 * Called every few seconds, so that a burst of connections leaves no
 * memory behind, while a busy worker keeps its spares.
 */
void timing_pool_trim(struct timing_pool *pool)
{
	struct timing_block *b;
	struct srt_table *t;

	if (pool->used) {
		pool->used = false;
		return;
	}
	while ((b = pool->free)) {
		pool->free = b->next;
		free(b);
	}
	while ((t = pool->tables)) {
		pool->tables = t->next;
		free(t);
	}
	pool->nfree = pool->ntables = 0;
}

/**
 * timing_outstanding() - the requests a connection waits on, for the
 *			  control socket
 * @tm:		the timing
 * @cmd:	set to the command of the oldest one sent to the server
 * @sent_ns:	set to when it was sent (mono_ns()), 0 if none was
 *
 * Read in the worker's thread, between events: the table is the one the
 * responses are paired in, so what it says is exact, not sampled.
 *
 * Return: the requests not yet answered (those past the table's cap are
 * not timed, and not counted).
 */
unsigned timing_outstanding(const struct timing *tm, uint16_t *cmd,
			    uint64_t *sent_ns)
{
	const struct srt_table *t = tm->srt;

	*cmd = 0;
	*sent_ns = 0;
	if (!t)
		return 0;
	for (uint32_t i = 0; i < t->cap; i++) {
		const struct srt_entry *e = &t->e[i];

		if (e->used && e->sent_ns &&
		    (!*sent_ns || e->sent_ns < *sent_ns)) {
			*sent_ns = e->sent_ns;
			*cmd = e->cmd;
		}
	}
	return t->count;
}
