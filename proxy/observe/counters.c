// SPDX-License-Identifier: GPL-2.0-or-later
/* counters.c - what workers count, and how a scrape sums it
 *
 * Theory of operation: the hot path never touches a counter another thread
 * writes. Each worker counts what its connections move into its own
 * struct totals, at once, with counter_add(): a plain add, made safe to
 * read from another thread (counter.h). A scrape sums the workers' totals
 * with counters_add_totals() and hands the sums to promtext.c to write out; it
 * never walks the connections, and forwarding costs nothing extra for it.
 */
#include "config.h"

#include <stddef.h>

#include "common/counter.h"
#include "observe/counters.h"

/**
 * counters_add_totals() - add a worker's counters to a sum
 * @sum:	the sum, owned by the caller
 * @t:		the worker's counters, which it may be adding to right now
 */
void counters_add_totals(struct totals *sum, const struct totals *t)
{
	_Static_assert(sizeof(*t) % sizeof(uint64_t) == 0,
		       "struct totals holds only uint64_t counters");
	const uint64_t *from = (const uint64_t *)t;
	uint64_t *to = (uint64_t *)sum;

	for (size_t i = 0; i < sizeof(*t) / sizeof(uint64_t); i++)
		to[i] += counter_read(&from[i]);
}
