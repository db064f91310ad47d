// SPDX-License-Identifier: GPL-2.0-or-later
/* line.c - one direction's bottleneck and delay line, in fixed memory
 *
 * Theory of operation: a packet is read straight into a slot of a fixed
 * pool (cap slots of MTU bytes, allocated once; no allocation per packet)
 * and stays there until it is written out or dropped. Each packet gets,
 * when it arrives, the time it is due to leave, and the line is a min-heap
 * of held packets by that time; the event loop writes out the head when
 * its time comes and sleeps until then.
 *
 * The due time models netem behind tbf, as on a real path: first the
 * bottleneck, then the propagation delay.
 *
 *  - The bottleneck (--rate) sends one packet at a time at the rate, so a
 *    packet is done at finish = max(arrival, previous finish) + len*8/rate.
 *    It holds at most --queue packets, the one being sent included: those
 *    whose finish is still ahead, counted from a ring of finish times in
 *    arrival order (they are increasing, so the ring's expired head is
 *    popped in O(1)). A packet arriving at a full queue is dropped at the
 *    tail, which is what makes a TCP sender find the rate.
 *  - Then the delay: due = finish + delay + jitter draw, and never before
 *    finish. Without --reorder, due = max(due, the latest due given), so
 *    jitter stretches gaps but packets keep their order (and dues only
 *    grow, which makes each heap insertion O(1)); with it, a packet may
 *    overtake another, as netem's jitter does.
 *
 * Settings changed by a reload apply to packets that arrive after it;
 * packets held keep the due times they were given.
 */
#include "config.h"

#include <stdlib.h>

#include "line.h"

/**
 * line_init() - allocate a line's memory
 * @l:		the line
 * @cap:	packets held at most
 * @slot_size:	bytes per packet at most
 *
 * The pool is touched only as it is used, so a large --limit costs
 * address space rather than memory until packets fill it.
 *
 * Return: 0, or -1 if the memory cannot be had.
 */
int line_init(struct line *l, unsigned cap, size_t slot_size)
{
	*l = (struct line){ .slot_size = slot_size, .cap = cap };
	l->mem = malloc((size_t)cap * slot_size);
	l->free = calloc(cap, sizeof(*l->free));
	l->heap = calloc(cap, sizeof(*l->heap));
	l->fin = calloc(cap, sizeof(*l->fin));
	if (!l->mem || !l->free || !l->heap || !l->fin) {
		line_fini(l);
		return -1;
	}
	for (unsigned i = 0; i < cap; i++)
		l->free[i] = cap - 1 - i;
	l->nfree = cap;
	return 0;
}

/**
 * line_fini() - free a line's memory
 * @l:	the line
 */
void line_fini(struct line *l)
{
	free(l->mem);
	free(l->free);
	free(l->heap);
	free(l->fin);
	*l = (struct line){ 0 };
}

/**
 * line_take() - a free slot to read a packet into
 * @l:		the line
 * @slot:	set to the slot
 *
 * Return: its bytes, or NULL if the line holds --limit packets.
 */
unsigned char *line_take(struct line *l, uint32_t *slot)
{
	if (!l->nfree)
		return NULL;
	*slot = l->free[--l->nfree];
	return line_data(l, *slot);
}

/**
 * line_give() - return a slot that holds no packet
 * @l:		the line
 * @slot:	from line_take()
 */
void line_give(struct line *l, uint32_t slot)
{
	l->free[l->nfree++] = slot;
}

/**
 * before() - heap order
 * @a:	a packet
 * @b:	another
 *
 * Return: @a leaves before @b.
 */
static inline bool before(const struct pkt *a, const struct pkt *b)
{
	return a->due < b->due || (a->due == b->due && a->seq < b->seq);
}

/**
 * line_push() - give an arrived packet its due time, or drop it
 * @l:		the line
 * @pc:		the direction's settings
 * @reorder:	jitter may reorder
 * @jitter:	this packet's jitter draw, in ns
 * @slot:	from line_take(), holding the packet
 * @len:	its length
 * @now:	the arrival time
 *
 * Return: LINE_HELD, or LINE_TAIL_DROP with @slot given back.
 */
enum line_verdict line_push(struct line *l, const struct path_conf *pc,
			    bool reorder, int64_t jitter, uint32_t slot,
			    uint32_t len, uint64_t now)
{
	uint64_t finish = now, due;
	struct pkt p;
	unsigned i;

	while (l->fin_n && l->fin[l->fin_head] <= now) {
		l->fin_head = (l->fin_head + 1) % l->cap;
		l->fin_n--;
	}
	if (pc->rate_bps > 0) {
		if (l->fin_n >= pc->queue) {
			line_give(l, slot);
			return LINE_TAIL_DROP;
		}
		finish = l->last_finish > now ? l->last_finish : now;
		finish += (uint64_t)((double)len * 8e9 / pc->rate_bps);
		l->last_finish = finish;
		l->fin[(l->fin_head + l->fin_n++) % l->cap] = finish;
	}
	due = finish + pc->delay_ns;
	if (jitter < 0 && (uint64_t)-jitter > due - finish)
		due = finish;
	else
		due += (uint64_t)jitter;
	if (!reorder && due < l->last_due)
		due = l->last_due;
	if (due > l->last_due)
		l->last_due = due;

	p = (struct pkt){
		.due = due, .seq = l->seq++, .slot = slot, .len = len
	};
	for (i = l->n++; i && before(&p, &l->heap[(i - 1) / 2]);
	     i = (i - 1) / 2)
		l->heap[i] = l->heap[(i - 1) / 2];
	l->heap[i] = p;
	return LINE_HELD;
}

/**
 * line_pop() - remove the head, freeing its slot
 * @l:	the line, not empty
 */
void line_pop(struct line *l)
{
	struct pkt last;
	unsigned i = 0, c;

	line_give(l, l->heap[0].slot);
	last = l->heap[--l->n];
	while ((c = 2 * i + 1) < l->n) {
		if (c + 1 < l->n && before(&l->heap[c + 1], &l->heap[c]))
			c++;
		if (!before(&l->heap[c], &last))
			break;
		l->heap[i] = l->heap[c];
		i = c;
	}
	l->heap[i] = last;
}
