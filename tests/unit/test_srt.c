// SPDX-License-Identifier: GPL-2.0-or-later
/* test_srt.c - the MessageId table that pairs requests with responses:
 * add, mark sent, take; removal that keeps every other entry findable,
 * however the probes collided; growth into a larger table; and the
 * latency histograms' buckets */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "smb/hist.h"
#include "smb/srt.h"

static struct srt_table *table(uint32_t cap)
{
	struct srt_table *t = malloc(srt_size(cap));

	assert_non_null(t);
	srt_init(t, cap);
	return t;
}

static void test_add_sent_take(void **state)
{
	struct srt_table *t = table(16);
	uint64_t sent;
	uint16_t cmd;

	srt_add(t, 5, 8, 100);
	srt_add(t, 6, 9, 200);
	assert_int_equal(t->count, 2);
	assert_int_equal(t->unsent, 2);
	srt_sent(t, 150, 1111);
	assert_int_equal(t->unsent, 1);
	assert_true(srt_take(t, 5, &cmd, &sent));
	assert_int_equal(cmd, 8);
	assert_int_equal(sent, 1111);
	assert_false(srt_take(t, 5, &cmd, &sent)); /* answered once only */
	/* Answered before its last byte was written: taken, not timed. */
	assert_true(srt_take(t, 6, &cmd, &sent));
	assert_int_equal(sent, 0);
	assert_int_equal(t->count, 0);
	assert_int_equal(t->unsent, 0);
	assert_false(srt_take(t, 0xffffffffffffffffull, &cmd, &sent));
	free(t);
}

static void test_reused_id(void **state)
{
	struct srt_table *t = table(16);
	uint64_t sent;
	uint16_t cmd;

	srt_add(t, 9, 5, 10);
	srt_add(t, 9, 6, 20);
	assert_int_equal(t->count, 1);
	assert_int_equal(t->unsent, 1);
	assert_true(srt_take(t, 9, &cmd, &sent));
	assert_int_equal(cmd, 6);
	free(t);
}

/* A model: random adds and takes against a plain array, in a small table
 * so that probes collide and wrap, growing it whenever it is full. */
static void test_random_against_model(void **state)
{
	enum { N = 4096 };
	static struct {
		bool held;
		uint16_t cmd;
		uint64_t sent;
	} model[N];
	struct srt_table *t = table(4), *bigger;
	uint64_t written = 0, sent;
	uint16_t cmd;

	srand(7);
	for (int step = 0; step < 200000; step++) {
		uint64_t id = (uint64_t)rand() % N;
		int op = rand() % 3;

		if (op == 0 && !model[id].held) {
			if (srt_full(t)) {
				bigger = table(t->cap * 2);
				srt_move(bigger, t);
				free(t);
				t = bigger;
			}
			srt_add(t, id, (uint16_t)(id % 19), written + 1);
			model[id].held = true;
			model[id].cmd = (uint16_t)(id % 19);
			model[id].sent = 0;
		} else if (op == 1) {
			bool got = srt_take(t, id, &cmd, &sent);

			assert_int_equal(got, model[id].held);
			if (got) {
				assert_int_equal(cmd, model[id].cmd);
				assert_int_equal(sent, model[id].sent);
			}
			model[id].held = false;
		} else {
			written++;
			srt_sent(t, written, written * 10);
			for (int i = 0; i < N; i++)
				if (model[i].held && !model[i].sent)
					model[i].sent = written * 10;
		}
	}
	for (uint64_t id = 0; id < N; id++)
		assert_int_equal(srt_take(t, id, &cmd, &sent), model[id].held);
	assert_int_equal(t->count, 0);
	assert_int_equal(t->unsent, 0);
	free(t);
}

static void test_hist_buckets(void **state)
{
	static struct hist h;

	hist_observe(&h, 0, 1);		     /* <= 10 us */
	hist_observe(&h, 10000, 1);	     /* on a bound: that bucket */
	hist_observe(&h, 10001, 2);	     /* <= 25 us, twice */
	hist_observe(&h, 20000000000ull, 1); /* past 10 s */
	assert_int_equal(h.bucket[0], 2);
	assert_int_equal(h.bucket[1], 2);
	assert_int_equal(h.bucket[HIST_NBOUNDS], 1);
	assert_int_equal(hist_count(&h), 5);
	assert_int_equal(h.sum_ns, 10000 + 2 * 10001 + 20000000000ull);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_add_sent_take),
		cmocka_unit_test(test_reused_id),
		cmocka_unit_test(test_random_against_model),
		cmocka_unit_test(test_hist_buckets),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
