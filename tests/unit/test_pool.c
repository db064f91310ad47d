// SPDX-License-Identifier: GPL-2.0-or-later
/* test_pool.c - pipe pool accounting, on real pipes */
#include "config.h"

#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>
#include <cmocka.h>

#include "pipepool.h"

static void test_cap_and_reuse(void **state)
{
	struct pipe_pool p;
	struct pipe_slot *a, *b, *c;

	pool_init(&p, 2, 8192);
	a = pool_get(&p);
	b = pool_get(&p);
	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(p.open, 2);
	assert_int_equal(p.lent, 2);

	assert_null(pool_get(&p)); /* cap reached: caller copies */
	assert_int_equal(p.denied, 1);

	pool_put(&p, a);
	assert_int_equal(p.lent, 1);
	c = pool_get(&p);
	assert_ptr_equal(c, a); /* reused, not recreated */
	assert_int_equal(p.created, 2);

	pool_put(&p, b);
	pool_put(&p, c);
	assert_int_equal(p.lent, 0);
	pool_destroy(&p);
	assert_int_equal(p.open, 0);
}

static void test_size_applied(void **state)
{
	struct pipe_pool p;
	struct pipe_slot *a;

	pool_init(&p, 1, 8192);
	a = pool_get(&p);
	assert_non_null(a);
	assert_int_equal(a->cap, 8192);
	assert_int_equal(fcntl(a->wr, F_GETPIPE_SZ), 8192);
	pool_put(&p, a);
	pool_destroy(&p);
}

static void test_drop_closes(void **state)
{
	struct pipe_pool p;
	struct pipe_slot *a;
	int rd;

	pool_init(&p, 4, 65536);
	a = pool_get(&p);
	rd = a->rd;
	assert_int_equal(write(a->wr, "x", 1), 1); /* holds a byte */
	pool_drop(&p, a);
	assert_int_equal(p.open, 0);
	assert_int_equal(p.lent, 0);
	assert_int_equal(fcntl(rd, F_GETFD), -1); /* closed */
	pool_destroy(&p);
}

static void test_zero_cap_never_lends(void **state)
{
	struct pipe_pool p;

	pool_init(&p, 0, 65536);
	assert_null(pool_get(&p));
	assert_int_equal(p.open, 0);
	pool_destroy(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cap_and_reuse),
		cmocka_unit_test(test_size_applied),
		cmocka_unit_test(test_drop_closes),
		cmocka_unit_test(test_zero_cap_never_lends),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
