/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef WANEM_LINE_H
#define WANEM_LINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wan_options.h"

/**
 * struct pkt - a packet held in the line
 * @due:	when it leaves, on the monotonic clock in ns
 * @seq:	its arrival order, which breaks ties of @due
 * @slot:	where its bytes are
 * @len:	how many
 */
struct pkt {
	uint64_t due, seq;
	uint32_t slot, len;
};

/**
 * struct line - one direction's bottleneck queue and delay line
 * @mem:	@cap slots of @slot_size bytes
 * @slot_size:	the largest packet
 * @cap:	packets held at most
 * @free:	the free slots, a stack
 * @nfree:	how many
 * @heap:	the packets held, a min-heap by (@due, @seq)
 * @n:		how many
 * @fin:	when each packet still in the bottleneck is sent, a ring of
 *		@cap in arrival order
 * @fin_head:	its oldest
 * @fin_n:	how many
 * @last_finish: when the bottleneck is done with what it holds
 * @last_due:	the latest due time given
 * @seq:	arrivals so far
 */
struct line {
	unsigned char *mem;
	size_t slot_size;
	unsigned cap;
	uint32_t *free;
	unsigned nfree;
	struct pkt *heap;
	unsigned n;
	uint64_t *fin;
	unsigned fin_head, fin_n;
	uint64_t last_finish, last_due, seq;
};

/* What line_push() did with a packet. */
enum line_verdict { LINE_HELD, LINE_TAIL_DROP };

int line_init(struct line *l, unsigned cap, size_t slot_size);
void line_fini(struct line *l);
unsigned char *line_take(struct line *l, uint32_t *slot);
void line_give(struct line *l, uint32_t slot);
enum line_verdict line_push(struct line *l, const struct path_conf *pc,
			    bool reorder, int64_t jitter, uint32_t slot,
			    uint32_t len, uint64_t now);
void line_pop(struct line *l);

/**
 * line_head() - the packet due first
 * @l:	the line
 *
 * Return: it, or NULL if the line is empty.
 */
static inline const struct pkt *line_head(const struct line *l)
{
	return l->n ? &l->heap[0] : NULL;
}

/**
 * line_data() - a slot's bytes
 * @l:		the line
 * @slot:	the slot
 *
 * Return: its first byte.
 */
static inline unsigned char *line_data(const struct line *l, uint32_t slot)
{
	return l->mem + (size_t)slot * l->slot_size;
}

#endif /* WANEM_LINE_H */
