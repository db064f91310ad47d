// SPDX-License-Identifier: GPL-2.0-or-later
/* test_bufpool.c - the copy buffer pool: lend, return, the bound on free
 * buffers, and trimming back to nothing once idle */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "io/bufpool.h"

static void test_lend_and_reuse(void **state)
{
	struct buf_pool p;
	char *a, *b;

	bufpool_init(&p, 4096, 1 << 20);
	a = bufpool_get(&p);
	assert_non_null(a);
	memset(a, 0xa5, 4096); /* the whole buffer is ours */
	assert_int_equal(p.lent, 1);
	assert_int_equal(p.allocs, 1);
	bufpool_put(&p, a);
	assert_int_equal(p.lent, 0);
	assert_int_equal(p.nfree, 1);
	b = bufpool_get(&p);
	assert_ptr_equal(b, a); /* reused, no allocation */
	assert_int_equal(p.allocs, 1);
	bufpool_put(&p, b);
	bufpool_destroy(&p);
	assert_int_equal(p.nfree, 0);
}

/* The free list keeps at most keep_bytes / size buffers: the rest of a
 * burst goes back to the allocator at once. */
static void test_keep_bound(void **state)
{
	struct buf_pool p;
	void *b[10];

	bufpool_init(&p, 4096, 3 * 4096);
	assert_int_equal(p.keep, 3);
	for (int i = 0; i < 10; i++)
		b[i] = bufpool_get(&p);
	assert_int_equal(p.lent, 10);
	for (int i = 0; i < 10; i++)
		bufpool_put(&p, b[i]);
	assert_int_equal(p.lent, 0);
	assert_int_equal(p.nfree, 3);
	bufpool_destroy(&p);
}

/* However large the buffers, two are kept. */
static void test_keep_at_least_two(void **state)
{
	struct buf_pool p;

	bufpool_init(&p, 1 << 20, 4096);
	assert_int_equal(p.keep, 2);
	bufpool_destroy(&p);
}

/* A trim frees what was not lent since the last one; a pool in use keeps
 * what it uses; an idle pool drains to nothing. */
static void test_trim_shrinks(void **state)
{
	struct buf_pool p;
	void *b[4];

	bufpool_init(&p, 4096, 1 << 20);
	for (int i = 0; i < 4; i++)
		b[i] = bufpool_get(&p);
	for (int i = 0; i < 4; i++)
		bufpool_put(&p, b[i]);
	assert_int_equal(bufpool_trim(&p), 0); /* all fresh */

	/* Two lent at once during the interval: low-water mark 2. */
	b[0] = bufpool_get(&p);
	b[1] = bufpool_get(&p);
	bufpool_put(&p, b[1]);
	bufpool_put(&p, b[0]);
	assert_int_equal(bufpool_trim(&p), 2);
	assert_int_equal(p.nfree, 2);

	/* A buffer lent across a trim is not the pool's to free; the one
	 * that stayed idle is. */
	b[0] = bufpool_get(&p);
	assert_int_equal(bufpool_trim(&p), 1);
	assert_int_equal(p.nfree, 0);
	assert_int_equal(p.lent, 1);
	bufpool_put(&p, b[0]);
	assert_int_equal(bufpool_trim(&p), 0); /* returned since the trim */
	assert_int_equal(bufpool_trim(&p), 1);
	assert_int_equal(p.nfree, 0);
	bufpool_destroy(&p);
}

/* A one-off large buffer (a stalled pipe's bytes) is counted while lent,
 * bytes included, and never kept. */
static void test_large_counted(void **state)
{
	struct buf_pool p;
	void *a, *b;

	bufpool_init(&p, 4096, 1 << 20);
	a = bufpool_get(&p);
	b = bufpool_get_large(&p, 1 << 20);
	assert_non_null(b);
	memset(b, 1, 1 << 20);
	assert_int_equal(p.lent, 2);
	assert_int_equal(p.lent_bytes, 4096 + (1 << 20));
	bufpool_put_large(&p, b, 1 << 20);
	bufpool_put(&p, a);
	assert_int_equal(p.lent, 0);
	assert_int_equal(p.lent_bytes, 0);
	assert_int_equal(p.nfree, 1); /* only the pool's own is kept */
	bufpool_destroy(&p);
}

/* Large buffers are bounded across pools: two pools sharing 3 MiB lend
 * 2 MiB and 1 MiB, refuse more (uncounted), and lend again once one is
 * given back. */
static void test_large_bound_shared(void **state)
{
	struct buf_pool p, q;
	struct budget bound = { .limit = 3 << 20 };
	void *a, *b, *c;

	bufpool_init(&p, 4096, 1 << 20);
	bufpool_init(&q, 4096, 1 << 20);
	bufpool_bound_large(&p, &bound);
	bufpool_bound_large(&q, &bound);
	a = bufpool_get_large(&p, 2 << 20);
	b = bufpool_get_large(&q, 1 << 20);
	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(bound.used, bound.limit);
	assert_null(bufpool_get_large(&q, 1));
	assert_int_equal(bound.used, bound.limit);
	assert_int_equal(q.lent, 1);
	bufpool_put_large(&p, a, 2 << 20);
	assert_int_equal(bound.limit - bound.used, 2 << 20);
	c = bufpool_get_large(&q, 2 << 20);
	assert_non_null(c);
	bufpool_put_large(&q, b, 1 << 20);
	bufpool_put_large(&q, c, 2 << 20);
	assert_int_equal(bound.used, 0);
	assert_int_equal(p.lent_bytes + q.lent_bytes, 0);
	bufpool_destroy(&p);
	bufpool_destroy(&q);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lend_and_reuse),
		cmocka_unit_test(test_keep_bound),
		cmocka_unit_test(test_keep_at_least_two),
		cmocka_unit_test(test_trim_shrinks),
		cmocka_unit_test(test_large_counted),
		cmocka_unit_test(test_large_bound_shared),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
