// SPDX-License-Identifier: GPL-2.0-or-later
/* test_timing.c - per-command and per-frame timing: a request is timed
 * from the write that handed its last byte on to its final response, never
 * from an interim one; frames are timed from parse to flush; the block is
 * lent only while something is in flight; the cap counts what it drops; frames
 * beyond the ring share a slot; responses the framer cannot read stop the
 * timing of requests */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "monotime.h"
#include "srt.h"
#include "timing.h"
#include "wire.h"

static struct totals tot;
static struct timing_pool pool;

/* A one-message frame of @len bytes after its prefix at stream @off. */
static struct smb_msg msg(uint64_t off, uint32_t len, uint16_t cmd,
			  uint32_t flags, uint32_t status, uint64_t id)
{
	return (struct smb_msg){ .kind = SMB_MSG_SMB2,
				 .frame_off = off,
				 .frame_len = len,
				 .end = len,
				 .command = cmd,
				 .flags = flags,
				 .status = status,
				 .message_id = id };
}

static void sleep_ms(long ms)
{
	struct timespec ts = { 0, ms * 1000000 };

	nanosleep(&ts, NULL);
}

static void setup_all(void)
{
	memset(&tot, 0, sizeof(tot));
	timing_pool_trim(&pool);
	pool.used = false;
	timing_pool_trim(&pool);
}

static void test_request_timed_to_final_response(void **state)
{
	struct timing tm;
	struct smb_msg m;
	struct hist *h = &tot.request[SMB2_READ];

	setup_all();
	timing_init(&tm, &pool, &tot);
	m = msg(0, 100, SMB2_READ, 0, 0, 42);
	timing_message(&tm, DIR_TO_SERVER, &m);
	assert_non_null(tm.b);
	timing_wrote(&tm, DIR_TO_SERVER, 104,
		     mono_ns()); /* its last byte written */
	sleep_ms(20);
	m = msg(0, 72, SMB2_READ, SMB2_FLAG_RESPONSE | SMB2_FLAG_ASYNC,
		SMB2_STATUS_PENDING, 42);
	timing_message(&tm, DIR_TO_CLIENT, &m); /* interim: not the end */
	assert_int_equal(hist_count(h), 0);
	timing_wrote(&tm, DIR_TO_CLIENT, 76, mono_ns());
	/* The request is still out: its table stays, the frame clocks go. */
	assert_null(tm.b);
	assert_non_null(tm.srt);
	assert_int_equal(tm.srt->cap, 8);
	sleep_ms(20);
	m = msg(76, 1000, SMB2_READ, SMB2_FLAG_RESPONSE | SMB2_FLAG_ASYNC, 0,
		42);
	timing_message(&tm, DIR_TO_CLIENT, &m);
	assert_int_equal(hist_count(h), 1);
	assert_true(h->sum_ns >= 40000000 && h->sum_ns < 1000000000);
	timing_wrote(&tm, DIR_TO_CLIENT, 1080, mono_ns());
	assert_null(tm.b); /* nothing in flight: given back */
	assert_null(tm.srt);
	assert_int_equal(pool.nfree, 1);
	assert_int_equal(pool.ntables, 1);
	/* Two frames to the client, one to the server, each timed. */
	assert_int_equal(hist_count(&tot.dir[DIR_TO_CLIENT].forward), 2);
	assert_int_equal(hist_count(&tot.dir[DIR_TO_SERVER].forward), 1);
	timing_end(&tm);
}

static void test_not_yet_sent_is_not_timed(void **state)
{
	struct timing tm;
	struct smb_msg m;

	setup_all();
	timing_init(&tm, &pool, &tot);
	m = msg(0, 1 << 20, SMB2_WRITE, 0, 0, 7);
	timing_message(&tm, DIR_TO_SERVER, &m);
	timing_wrote(&tm, DIR_TO_SERVER, 65536,
		     mono_ns()); /* part of it only */
	m = msg(0, 9, SMB2_WRITE, SMB2_FLAG_RESPONSE, 0xc000007f, 7);
	timing_message(&tm, DIR_TO_CLIENT, &m); /* an early error */
	assert_int_equal(hist_count(&tot.request[SMB2_WRITE]), 0);
	timing_end(&tm);
	assert_null(tm.b);
}

static void test_cancel_and_unsolicited(void **state)
{
	struct timing tm;
	struct smb_msg m;

	setup_all();
	timing_init(&tm, &pool, &tot);
	m = msg(0, 64, SMB2_CANCEL, 0, 0, 3);
	timing_message(&tm, DIR_TO_SERVER, &m);
	timing_wrote(&tm, DIR_TO_SERVER, 68, mono_ns());
	assert_null(tm.b); /* a CANCEL is never answered: not waited for */
	m = msg(0, 88, SMB2_OPLOCK_BREAK, SMB2_FLAG_RESPONSE, 0,
		0xffffffffffffffffull);
	timing_message(&tm, DIR_TO_CLIENT, &m);
	timing_wrote(&tm, DIR_TO_CLIENT, 92, mono_ns());
	assert_int_equal(hist_count(&tot.request[SMB2_OPLOCK_BREAK]), 0);
	assert_null(tm.b);
	timing_end(&tm);
}

static void test_caps_count_what_they_drop(void **state)
{
	struct timing tm;
	struct smb_msg m;
	uint64_t off = 0;

	setup_all();
	timing_init(&tm, &pool, &tot);
	/* 2000 requests in 2000 frames in flight, as one read would bring
	 * them: every frame is timed, and 1024 requests. */
	for (uint64_t id = 0; id < 2000; id++) {
		m = msg(off, 64, SMB2_READ, 0, 0, id);
		timing_message(&tm, DIR_TO_SERVER, &m);
		off += 68;
	}
	assert_int_equal(tot.untimed_requests, 2000 - 1024);
	timing_wrote(&tm, DIR_TO_SERVER, off - 68,
		     mono_ns()); /* all but the last */
	assert_int_equal(hist_count(&tot.dir[DIR_TO_SERVER].forward), 1999);
	timing_wrote(&tm, DIR_TO_SERVER, off, mono_ns());
	assert_int_equal(hist_count(&tot.dir[DIR_TO_SERVER].forward), 2000);
	for (uint64_t id = 0; id < 2000; id++) {
		m = msg(id * 76, 72, SMB2_READ, SMB2_FLAG_RESPONSE, 0, id);
		timing_message(&tm, DIR_TO_CLIENT, &m);
	}
	assert_int_equal(hist_count(&tot.request[SMB2_READ]), 1024);
	timing_end(&tm);
	assert_null(tm.b);
	assert_null(tm.srt);
	/* The table grew to hold 1024: it is freed, not pooled. */
	assert_true(pool.ntables <= 1);
}

/* At the cap, a request that reuses a held MessageId replaces the old
 * one, as below the cap: its response is counted as its own command. */
static void test_reused_id_at_the_cap_is_its_own(void **state)
{
	struct timing tm;
	struct smb_msg m;
	uint64_t off = 0;

	setup_all();
	timing_init(&tm, &pool, &tot);
	for (uint64_t id = 0; id < 1024; id++, off += 68) {
		m = msg(off, 64, SMB2_CHANGE_NOTIFY, 0, 0, id);
		timing_message(&tm, DIR_TO_SERVER, &m);
	}
	m = msg(off, 64, SMB2_READ, 0, 0, 7);
	timing_message(&tm, DIR_TO_SERVER, &m);
	off += 68;
	assert_int_equal(tot.untimed_requests, 0);
	timing_wrote(&tm, DIR_TO_SERVER, off, mono_ns());
	m = msg(0, 72, SMB2_READ, SMB2_FLAG_RESPONSE, 0, 7);
	timing_message(&tm, DIR_TO_CLIENT, &m);
	assert_int_equal(hist_count(&tot.request[SMB2_READ]), 1);
	assert_int_equal(hist_count(&tot.request[SMB2_CHANGE_NOTIFY]), 0);
	/* back at the cap, a new MessageId is refused and counted */
	m = msg(off, 64, SMB2_READ, 0, 0, 5000);
	timing_message(&tm, DIR_TO_SERVER, &m);
	assert_int_equal(tot.untimed_requests, 0);
	m = msg(off + 68, 64, SMB2_READ, 0, 0, 5001);
	timing_message(&tm, DIR_TO_SERVER, &m);
	assert_int_equal(tot.untimed_requests, 1);
	timing_end(&tm);
}

/* Once the server compresses its responses, no request could be paired:
 * those waiting and those to come are counted as untimed, and the table
 * goes back, rather than filling to the cap for the connection's life.
 * Frames are still timed. */
static void test_compressed_responses_stop_request_timing(void **state)
{
	struct timing tm;
	struct smb_msg m;

	setup_all();
	timing_init(&tm, &pool, &tot);
	for (uint64_t id = 0; id < 3; id++) {
		m = msg(id * 68, 64, SMB2_READ, 0, 0, id);
		timing_message(&tm, DIR_TO_SERVER, &m);
	}
	timing_wrote(&tm, DIR_TO_SERVER, 3 * 68, mono_ns());
	assert_non_null(tm.srt);
	m = msg(0, 200, 0, 0, 0, 0);
	m.kind = SMB_MSG_COMPRESSED;
	timing_message(&tm, DIR_TO_CLIENT, &m);
	assert_null(tm.srt);
	assert_int_equal(tot.untimed_requests, 3);
	m = msg(3 * 68, 64, SMB2_READ, 0, 0, 3);
	timing_message(&tm, DIR_TO_SERVER, &m);
	assert_null(tm.srt);
	assert_int_equal(tot.untimed_requests, 4);
	timing_wrote(&tm, DIR_TO_SERVER, 4 * 68, mono_ns());
	assert_int_equal(hist_count(&tot.dir[DIR_TO_SERVER].forward), 4);
	timing_responses_hidden(&tm); /* again, as opaque: no double count */
	assert_int_equal(tot.untimed_requests, 4);
	timing_end(&tm);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request_timed_to_final_response),
		cmocka_unit_test(test_not_yet_sent_is_not_timed),
		cmocka_unit_test(test_cancel_and_unsolicited),
		cmocka_unit_test(test_caps_count_what_they_drop),
		cmocka_unit_test(test_reused_id_at_the_cap_is_its_own),
		cmocka_unit_test(test_compressed_responses_stop_request_timing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
