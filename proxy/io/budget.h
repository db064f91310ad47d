/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_BUDGET_H
#define SMBSPLICE_BUDGET_H

/* budget.h - a process-wide amount that workers take from and give back
 *
 * Theory of operation: a take adds first and checks after, undoing itself
 * when it went past the limit, so workers racing for the last units can
 * never pass it together, and no lock is held. Used for the descriptors
 * connections and pipes may hold (core/limits.h), for --max-pipes
 * (pipepool.h) and for the bytes moved out of stalled pipes into buffers
 * (bufpool.c).
 */

#include <stdbool.h>

/**
 * struct budget - an amount with a limit, shared by threads
 * @limit:	how much may be held at once
 * @used:	how much is held now (atomic)
 * @given:	how much was ever given back (atomic), undone reservations
 *		included: a reader that saw it move since its last look knows
 *		something was given back, even if as much was taken again
 *		meanwhile
 */
struct budget {
	long limit;
	long used;
	unsigned long given;
};

/**
 * budget_take() - reserve @n
 * @b:	the budget
 * @n:	how much
 *
 * Return: true if it fits; false leaves the budget as it was.
 */
static inline bool budget_take(struct budget *b, long n)
{
	if (__atomic_add_fetch(&b->used, n, __ATOMIC_RELAXED) <= b->limit)
		return true;
	__atomic_sub_fetch(&b->used, n, __ATOMIC_RELAXED);
	return false;
}

/**
 * budget_force() - take @n units even past the limit
 * @b:	the budget
 * @n:	how many
 *
 * For what a handover brings in: the process that held them was within
 * the same limit, and refusing them would cost a connection.
 */
static inline void budget_force(struct budget *b, long n)
{
	__atomic_add_fetch(&b->used, n, __ATOMIC_RELAXED);
}

/**
 * budget_give() - @n reserved by budget_take() is free again
 * @b:	the budget
 * @n:	how much
 */
static inline void budget_give(struct budget *b, long n)
{
	__atomic_sub_fetch(&b->used, n, __ATOMIC_RELAXED);
	__atomic_add_fetch(&b->given, (unsigned long)n, __ATOMIC_RELAXED);
}

/**
 * budget_used() - how much is held now, for a gauge
 * @b:	the budget
 *
 * Return: the amount, which other threads may be changing.
 */
static inline long budget_used(const struct budget *b)
{
	return __atomic_load_n(&b->used, __ATOMIC_RELAXED);
}

/**
 * budget_given() - how much was ever given back
 * @b:	the budget
 *
 * Return: the total, which other threads may be changing.
 */
static inline unsigned long budget_given(const struct budget *b)
{
	return __atomic_load_n(&b->given, __ATOMIC_RELAXED);
}

/**
 * budget_limit() - how much may be held at once
 * @b:	the budget
 *
 * Return: the limit, fixed before any worker starts.
 */
static inline long budget_limit(const struct budget *b)
{
	return b->limit;
}

#endif /* SMBSPLICE_BUDGET_H */
