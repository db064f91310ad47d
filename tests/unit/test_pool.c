// SPDX-License-Identifier: GPL-2.0-or-later
/* test_pool.c - pipe pool accounting, on real pipes: lending, reuse, the
 * process-wide budget shared by several pools, and trimming */
#include "config.h"

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>
#include <cmocka.h>

#include "io/pipepool.h"

static void test_cap_and_reuse(void **state)
{
	struct pipe_budget b = { .pipes.limit = 2 };
	struct pipe_pool p;
	struct pipe_slot *x, *y, *z;

	pipepool_init(&p, &b, 8192);
	x = pipepool_get(&p);
	y = pipepool_get(&p);
	assert_non_null(x);
	assert_non_null(y);
	assert_int_equal(pipepool_budget_open(&b), 2);
	assert_int_equal(p.lent, 2);

	assert_null(pipepool_get(&p)); /* cap reached: caller copies */
	assert_int_equal(p.denied, 1);
	assert_int_equal(pipepool_budget_open(&b), 2);

	pipepool_put(&p, x);
	assert_int_equal(p.lent, 1);
	assert_int_equal(p.nfree, 1);
	z = pipepool_get(&p);
	assert_ptr_equal(z, x); /* reused, not recreated */
	assert_int_equal(p.created, 2);

	pipepool_put(&p, y);
	pipepool_put(&p, z);
	assert_int_equal(p.lent, 0);
	pipepool_destroy(&p);
	assert_int_equal(pipepool_budget_open(&b), 0);
	assert_int_equal(p.nfree, 0);
}

/* --max-pipes holds for the process: two workers' pools draw on one
 * budget, and a pipe one closes is room for the other. */
static void test_budget_shared(void **state)
{
	struct pipe_budget b = { .pipes.limit = 3 };
	struct pipe_pool p1, p2;
	struct pipe_slot *a, *c, *d;

	pipepool_init(&p1, &b, 8192);
	pipepool_init(&p2, &b, 8192);
	a = pipepool_get(&p1);
	c = pipepool_get(&p1);
	d = pipepool_get(&p2);
	assert_non_null(a);
	assert_non_null(c);
	assert_non_null(d);
	assert_null(pipepool_get(&p2));
	assert_int_equal(p2.denied, 1);
	assert_int_equal(pipepool_budget_open(&b), 3);
	/* A take past the limit undoes itself: nothing was given back. */
	assert_int_equal(budget_given(&b.pipes), 0);

	pipepool_drop(&p1, a);
	assert_int_equal(budget_given(&b.pipes), 1);
	a = pipepool_get(&p2);
	assert_non_null(a);
	pipepool_put(&p2, a);
	pipepool_put(&p1, c);
	pipepool_put(&p2, d);
	pipepool_destroy(&p1);
	pipepool_destroy(&p2);
	assert_int_equal(pipepool_budget_open(&b), 0);
	/* Every pipe ever closed counts, the dropped one too though another
	 * took its place at once: a worker's trim looks at this to know that
	 * memory was freed. */
	assert_int_equal(budget_given(&b.pipes), 4);
}

static void test_size_applied(void **state)
{
	struct pipe_budget b = { .pipes.limit = 1 };
	struct pipe_pool p;
	struct pipe_slot *a;

	pipepool_init(&p, &b, 8192);
	a = pipepool_get(&p);
	assert_non_null(a);
	assert_int_equal(a->cap, 8192);
	assert_int_equal(fcntl(a->wr, F_GETPIPE_SZ), 8192);
	pipepool_put(&p, a);
	pipepool_destroy(&p);
}

static void test_drop_closes(void **state)
{
	struct pipe_budget b = { .pipes.limit = 4 };
	struct pipe_pool p;
	struct pipe_slot *a;
	int rd;

	pipepool_init(&p, &b, 65536);
	a = pipepool_get(&p);
	rd = a->rd;
	assert_int_equal(write(a->wr, "x", 1), 1); /* holds a byte */
	pipepool_drop(&p, a);
	assert_int_equal(pipepool_budget_open(&b), 0);
	assert_int_equal(p.lent, 0);
	assert_int_equal(fcntl(rd, F_GETFD), -1); /* closed */
	pipepool_destroy(&p);
}

static void test_zero_cap_never_lends(void **state)
{
	struct pipe_budget b = { .pipes.limit = 0 };
	struct pipe_pool p;

	pipepool_init(&p, &b, 65536);
	assert_null(pipepool_get(&p));
	assert_int_equal(pipepool_budget_open(&b), 0);
	pipepool_destroy(&p);
}

/* A trim closes the free pipes that were not lent since the last trim,
 * coldest first, and keeps the ones in use. */
static void test_trim_closes_idle_pipes(void **state)
{
	struct pipe_budget b = { .pipes.limit = 8 };
	struct pipe_pool p;
	struct pipe_slot *s[4];
	int rd3;

	pipepool_init(&p, &b, 8192);
	for (int i = 0; i < 4; i++)
		s[i] = pipepool_get(&p);
	rd3 = s[3]->rd;
	for (int i = 0; i < 4; i++)
		pipepool_put(&p, s[i]); /* free list: 3 2 1 0 */
	/* All four are new since the last trim: none sat idle for a whole
	 * interval yet. */
	assert_int_equal(pipepool_trim(&p), 0);
	assert_int_equal(p.nfree, 4);

	/* One pipe is lent and returned during the interval: the low-water
	 * mark is 3, so three were idle throughout. */
	s[3] = pipepool_get(&p);
	pipepool_put(&p, s[3]);
	assert_int_equal(pipepool_trim(&p), 3);
	assert_int_equal(p.nfree, 1);
	assert_int_equal(pipepool_budget_open(&b), 1);
	assert_int_equal(p.free->rd, rd3); /* the hot one stayed */

	/* A whole idle interval later, the pool is empty. */
	assert_int_equal(pipepool_trim(&p), 1);
	assert_int_equal(p.nfree, 0);
	assert_int_equal(pipepool_budget_open(&b), 0);
	assert_int_equal(fcntl(rd3, F_GETFD), -1);
	pipepool_destroy(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cap_and_reuse),
		cmocka_unit_test(test_budget_shared),
		cmocka_unit_test(test_size_applied),
		cmocka_unit_test(test_drop_closes),
		cmocka_unit_test(test_zero_cap_never_lends),
		cmocka_unit_test(test_trim_closes_idle_pipes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
