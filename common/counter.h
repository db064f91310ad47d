/* SPDX-License-Identifier: GPL-2.0-or-later */
/* counter.h - single-writer counters that any thread may read
 *
 * Every counter has one owner: the thread whose connections it counts.
 * The owner adds with a plain load and store, and the metrics thread reads
 * whenever a scrape comes. Both go through relaxed atomic accesses, so the
 * read is never torn and the program has no data race, yet the add costs
 * what a plain increment costs (no locked instruction): this is the
 * kernel's READ_ONCE/WRITE_ONCE pattern for per-CPU statistics.
 */
#ifndef SMBSPLICE_COUNTER_H
#define SMBSPLICE_COUNTER_H

#include <stdint.h>

/**
 * counter_add() - add to a counter this thread owns
 * @c:	the counter
 * @n:	the amount
 */
static inline void counter_add(uint64_t *c, uint64_t n)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + n,
			 __ATOMIC_RELAXED);
}

/**
 * counter_sub() - take from a gauge this thread owns
 * @c:	the gauge, a counter that also goes down
 * @n:	the amount, at most its value
 */
static inline void counter_sub(uint64_t *c, uint64_t n)
{
	__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) - n,
			 __ATOMIC_RELAXED);
}

/**
 * counter_read() - read a counter, from any thread
 * @c:	the counter
 *
 * Return: its value at some recent moment.
 */
static inline uint64_t counter_read(const uint64_t *c)
{
	return __atomic_load_n(c, __ATOMIC_RELAXED);
}

#endif /* SMBSPLICE_COUNTER_H */
