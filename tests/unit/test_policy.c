// SPDX-License-Identifier: GPL-2.0-or-later
/* test_policy.c - pump choice and cork decisions for unframed traffic */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "io/policy.h"

static void test_starts_copying(void **state)
{
	struct flow_policy p = { .splice_ok = true };

	assert_int_equal(flow_pump(&p), PUMP_COPY);
}

static void test_full_copy_read_switches_to_splice(void **state)
{
	struct flow_policy p = { .splice_ok = true };

	policy_after_read(&p, PUMP_COPY, 1000, 16384);
	assert_int_equal(flow_pump(&p), PUMP_COPY);
	policy_after_read(&p, PUMP_COPY, 16384, 16384);
	assert_int_equal(flow_pump(&p), PUMP_SPLICE);
}

static void test_small_splice_read_switches_back(void **state)
{
	struct flow_policy p = { .splice_ok = true, .splicing = true };

	policy_after_read(&p, PUMP_SPLICE, FLOW_SPLICE_MIN, 65536);
	assert_int_equal(flow_pump(&p), PUMP_SPLICE);
	policy_after_read(&p, PUMP_SPLICE, FLOW_SPLICE_MIN - 1, 65536);
	assert_int_equal(flow_pump(&p), PUMP_COPY);
}

static void test_splice_disabled(void **state)
{
	struct flow_policy p = { .splice_ok = false };

	policy_after_read(&p, PUMP_COPY, 16384, 16384);
	assert_int_equal(flow_pump(&p), PUMP_COPY);
}

static void test_more_only_after_full_read(void **state)
{
	assert_true(flow_more_due(8192, 8192));
	assert_false(flow_more_due(8191, 8192));
	assert_false(flow_more_due(1, 65536));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_starts_copying),
		cmocka_unit_test(test_full_copy_read_switches_to_splice),
		cmocka_unit_test(test_small_splice_read_switches_back),
		cmocka_unit_test(test_splice_disabled),
		cmocka_unit_test(test_more_only_after_full_read),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
