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
 *
 * A live handover carries all of it (timing_save(), timing_restore()):
 * the requests waiting, and the frames in flight with their clocks, so
 * that the new process samples each as the old one would have. The clock
 * is the machine's, the same in both.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "common/counter.h"
#include "common/monotime.h"
#include "smb/srt.h"
#include "observe/timing.h"

#define FWD_SLOTS TIMING_FWD_SLOTS
/* Requests in flight: the table's first size in slots, and the most a
 * connection times at once. */
#define SRT_FIRST	 8u
#define SRT_MAX_REQUESTS TIMING_MAX_REQUESTS
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

/**
 * timing_busy() - is anything of a connection being timed now
 * @tm:	its timing
 *
 * Return: true if a frame or a request is in flight, or responses are
 * hidden: what timing_save() would have to carry.
 */
bool timing_busy(const struct timing *tm)
{
	return tm->b || tm->srt || tm->hidden;
}

/**
 * timing_save() - write a connection's timing out, for a live handover
 * @tm:	the timing, between events
 * @s:	filled whole
 *
 * Frames in flight are carried too, oldest first, so that their forward
 * time is sampled by the new process when their last byte is written.
 */
void timing_save(const struct timing *tm, struct timing_saved *s)
{
	const struct timing_block *b = tm->b;
	const struct srt_table *t = tm->srt;

	memset(s, 0, sizeof(*s));
	s->hidden = tm->hidden;
	for (int d = 0; b && d < DIR_COUNT; d++) {
		const struct fwd_ring *r = &b->fwd[d];
		struct timing_saved_ring *o = &s->fwd[d];

		s->frame_t0[d] = b->frame_t0[d];
		o->len = r->len;
		for (unsigned i = 0; i < r->len; i++) {
			unsigned at = (r->head + i) % FWD_SLOTS;

			o->t0[i] = r->t0[at];
			o->end[i] = r->end[at];
			o->n[i] = r->n[at];
		}
	}
	/* room_for_request() keeps the count at SRT_MAX_REQUESTS at most:
	 * @req has room for every request a table can hold. */
	for (uint32_t i = 0; t && i < t->cap && s->nreq < SRT_MAX_REQUESTS;
	     i++) {
		const struct srt_entry *e = &t->e[i];

		if (!e->used)
			continue;
		s->req[s->nreq++] = (struct timing_saved_request){
			.id = e->id,
			.end = e->end,
			.sent_ns = e->sent_ns,
			.cmd = e->cmd,
			.sent = e->sent_ns != 0,
		};
	}
}

/**
 * saved_ring_ok() - is a saved ring one fwd_push() can have built
 * @r:	the ring
 *
 * timing_wrote() takes slots out oldest first while their frames end
 * within what was written: their ends must not go back. A slot stands
 * for one frame at least, and its clock was read (never 0).
 *
 * Return: true if it is.
 */
static bool saved_ring_ok(const struct timing_saved_ring *r)
{
	if (r->len > FWD_SLOTS)
		return false;
	for (unsigned i = 0; i < FWD_SLOTS; i++) {
		if (i >= r->len) {
			if (r->t0[i] || r->end[i] || r->n[i])
				return false;
		} else if (!r->n[i] || !r->t0[i] ||
			   (i && r->end[i] < r->end[i - 1])) {
			return false;
		}
	}
	return true;
}

/**
 * table_cap() - the slots a table needs to hold @n requests
 * @n:	requests, at most SRT_MAX_REQUESTS
 *
 * Return: the first size, doubled until @n fit under srt_full()'s three
 * quarters, as room_for_request() would have grown it.
 */
static uint32_t table_cap(uint32_t n)
{
	uint32_t cap = SRT_FIRST;

	while (n * 4 > cap * 3)
		cap *= 2;
	return cap;
}

/**
 * timing_restore() - continue a connection's timing from another process
 * @tm:	timing just set up by timing_init(), holding nothing
 * @s:	what timing_save() wrote in the old process
 *
 * The table and the block are lent from @tm's pool as timing_message()
 * lends them, a table larger than the first size allocated as
 * room_for_request() would. Nothing is counted: a request waiting is
 * timed by its response here, as it would have been there.
 *
 * Return: 0; -1 if @s is not a state timing can be in (a MessageId held
 * twice, a request sent at time 0, a ring out of order, more requests
 * than a table holds...) or memory ran out, @tm then holding nothing.
 */
int timing_restore(struct timing *tm, const struct timing_saved *s)
{
	bool frames = false;
	uint32_t cap;

	if (s->hidden > 1 || (s->hidden && s->nreq) ||
	    s->nreq > SRT_MAX_REQUESTS)
		return -1;
	for (int d = 0; d < DIR_COUNT; d++) {
		if (!saved_ring_ok(&s->fwd[d]))
			return -1;
		frames |= s->fwd[d].len != 0;
	}
	/* give_back() returns the block once no frame is in flight, and
	 * lend_block() clears the clocks: with no frame, none is set. */
	if (!frames && (s->frame_t0[DIR_TO_SERVER] || s->frame_t0[DIR_TO_CLIENT]))
		return -1;
	for (uint32_t i = 0; i < s->nreq; i++)
		if (s->req[i].sent > 1 ||
		    s->req[i].sent != (s->req[i].sent_ns != 0))
			return -1;
	tm->hidden = s->hidden;
	if (frames) {
		if (!lend_block(tm))
			return -1;
		for (int d = 0; d < DIR_COUNT; d++) {
			struct fwd_ring *r = &tm->b->fwd[d];

			tm->b->frame_t0[d] = s->frame_t0[d];
			r->head = 0;
			r->len = s->fwd[d].len;
			memcpy(r->t0, s->fwd[d].t0, sizeof(r->t0));
			memcpy(r->end, s->fwd[d].end, sizeof(r->end));
			memcpy(r->n, s->fwd[d].n, sizeof(r->n));
		}
	}
	if (s->nreq) {
		cap = table_cap(s->nreq);
		if (cap == SRT_FIRST) {
			if (!lend_table(tm))
				goto fail;
		} else if ((tm->srt = malloc(srt_size(cap)))) {
			srt_init(tm->srt, cap);
		} else {
			goto fail;
		}
		for (uint32_t i = 0; i < s->nreq; i++) {
			const struct timing_saved_request *q = &s->req[i];

			if (!srt_put(tm->srt, q->id, q->cmd, q->end,
				     q->sent_ns))
				goto fail;
		}
	}
	return 0;
fail:
	give_back(tm, true);
	tm->hidden = false;
	return -1;
}
