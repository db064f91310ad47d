// SPDX-License-Identifier: GPL-2.0-or-later
/* test_ring.c - the ring writer (common/ring.c): records put by several
 * threads at once reach the sink whole and in each thread's order, and
 * every one refused is counted and reported; a full ring refuses at once
 * rather than block the producer, and says how many it refused once the
 * records before them are out; a record longer than the writer's batch
 * or the ring is refused, not queued to stop the writer; ring_flush()
 * returns once the sink has every record put before it, even while the
 * writer would gather for seconds; ring_stop() hands the sink every record
 * left and joins, and the ring opens again after it; the reopen hook runs
 * before the next batch and the idle hook when nothing comes. Every wait
 * is bounded. */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/ring.h"

#define THREADS	   4
#define PER_THREAD 20000
/* Test records: a header of their own, then @len - sizeof(hdr) bytes of
 * @fill, so that a torn or merged record shows. */
#define REC_MAX 64

struct rec_hdr {
	uint16_t len;
	uint8_t who, fill;
	uint32_t seq;
};

/**
 * struct got - what the sink and the hooks saw
 * @lock:	guards everything below
 * @gate:	signalled when @hold is cleared
 * @bytes:	every byte the sink got, in order
 * @len:	how many
 * @dropped:	the sum of the refusals the sink was told of
 * @calls:	sink calls
 * @reopens:	reopen hook calls
 * @idles:	idle hook calls
 * @events:	'S' per sink call, 'R' per reopen, in order
 * @nevents:	how many
 * @hold:	the sink waits while this is set
 * @in_sink:	the sink has been entered
 */
static struct got {
	pthread_mutex_t lock;
	pthread_cond_t gate;
	uint8_t bytes[THREADS * PER_THREAD * REC_MAX];
	size_t len;
	unsigned long dropped;
	unsigned calls, reopens, idles;
	char events[64];
	unsigned nevents;
	bool hold, in_sink;
} got = { .lock = PTHREAD_MUTEX_INITIALIZER, .gate = PTHREAD_COND_INITIALIZER };

static struct ring ring = RING_INITIALIZER;
static uint8_t buf[1 << 20], batch[1 << 16];
static long sink_sleep_ms;

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, ms % 1000 * 1000000 };

	nanosleep(&ts, NULL);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void note(char what)
{
	if (got.nevents < sizeof(got.events) - 1)
		got.events[got.nevents++] = what;
}

static void sink(void *arg, const void *p, size_t n, unsigned long dropped)
{
	(void)arg;
	pthread_mutex_lock(&got.lock);
	got.in_sink = true;
	while (got.hold)
		pthread_cond_wait(&got.gate, &got.lock);
	assert_true(got.len + n <= sizeof(got.bytes));
	memcpy(got.bytes + got.len, p, n);
	got.len += n;
	got.dropped += dropped;
	got.calls++;
	note('S');
	pthread_mutex_unlock(&got.lock);
	if (sink_sleep_ms)
		sleep_ms(sink_sleep_ms);
}

static void on_reopen(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&got.lock);
	got.reopens++;
	note('R');
	pthread_mutex_unlock(&got.lock);
}

static void on_idle(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&got.lock);
	got.idles++;
	pthread_mutex_unlock(&got.lock);
}

/* Opens the ring on @size bytes of buf and @bsize of batch, and starts
 * its writer. */
static void open_ring(size_t size, size_t bsize, unsigned gather_ms,
		      unsigned idle_ms)
{
	struct ring_cfg cfg = {
		.buf = buf,
		.size = size,
		.batch = batch,
		.batch_size = bsize,
		.thread_name = "test-ring",
		.gather_ms = gather_ms,
		.idle_ms = idle_ms,
		.sink = sink,
		.idle = on_idle,
		.reopen = on_reopen,
	};

	assert_int_equal(ring_open(&ring, &cfg), 0);
	assert_int_equal(ring_start(&ring), 0);
}

static int setup(void **state)
{
	(void)state;
	pthread_mutex_lock(&got.lock);
	got.len = got.dropped = 0;
	got.calls = got.reopens = got.idles = got.nevents = 0;
	got.hold = got.in_sink = false;
	memset(got.events, 0, sizeof(got.events));
	pthread_mutex_unlock(&got.lock);
	sink_sleep_ms = 0;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	ring_stop(&ring);
	return 0;
}

/* Puts one test record of @len bytes; returns what ring_put() did. */
static int put(uint8_t who, uint32_t seq, size_t len)
{
	uint8_t b[REC_MAX];
	struct rec_hdr h = { (uint16_t)len, who, (uint8_t)(seq * 7 + who),
			     seq };

	memcpy(b, &h, sizeof(h));
	memset(b + sizeof(h), h.fill, len - sizeof(h));
	return ring_put(&ring, b, len);
}

/* Checks every record the sink got; @last, if given, gets each thread's
 * last number, and the numbers must rise. Returns the records. */
static long check_records(long *last)
{
	struct rec_hdr h;
	long n = 0;

	for (size_t off = 0; off < got.len; off += h.len, n++) {
		assert_true(got.len - off >= sizeof(h));
		memcpy(&h, got.bytes + off, sizeof(h));
		assert_true(h.len >= sizeof(h) && h.len <= REC_MAX);
		assert_true(off + h.len <= got.len);
		assert_true(h.who < THREADS);
		assert_int_equal(h.fill, (uint8_t)(h.seq * 7 + h.who));
		for (size_t i = sizeof(h); i < h.len; i++)
			assert_int_equal(got.bytes[off + i], h.fill);
		if (last) {
			assert_true((long)h.seq > last[h.who]);
			last[h.who] = h.seq;
		}
	}
	return n;
}

static void *producer(void *arg)
{
	uint8_t who = (uint8_t)(uintptr_t)arg;
	long taken = 0;

	for (uint32_t i = 0; i < PER_THREAD; i++) {
		int r = put(who, i, sizeof(struct rec_hdr) + i % 50);

		assert_true(r == 0 || r == -ENOSPC);
		taken += !r;
		if (i % 4000 == 3999)
			sleep_ms(2); /* gaps, so the writer sleeps too */
	}
	return (void *)taken;
}

static void test_many_producers_whole_and_in_order(void **state)
{
	pthread_t t[THREADS];
	long last[THREADS], taken = 0;
	uint64_t d0 = ring_dropped(&ring);
	void *r;

	(void)state;
	open_ring(sizeof(buf), 4 << 10, 2, 0);
	for (uintptr_t i = 0; i < THREADS; i++)
		assert_int_equal(
			pthread_create(&t[i], NULL, producer, (void *)i), 0);
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], &r);
		taken += (long)r;
	}
	ring_stop(&ring);
	for (int i = 0; i < THREADS; i++)
		last[i] = -1;
	assert_int_equal(check_records(last), taken);
	assert_int_equal(taken + (long)got.dropped, THREADS * PER_THREAD);
	assert_int_equal(got.dropped, ring_dropped(&ring) - d0);
	/* however the threads ran, what fits in the ring was taken */
	assert_true(taken >= (long)(sizeof(buf) / (4 + REC_MAX)));
}

/* Waits up to a second for the sink to be entered. */
static void wait_in_sink(void)
{
	bool in = false;

	for (int i = 0; i < 100 && !in; i++) {
		pthread_mutex_lock(&got.lock);
		in = got.in_sink;
		pthread_mutex_unlock(&got.lock);
		if (!in)
			sleep_ms(10);
	}
	assert_true(in);
}

static void release_sink(void)
{
	pthread_mutex_lock(&got.lock);
	got.hold = false;
	pthread_cond_broadcast(&got.gate);
	pthread_mutex_unlock(&got.lock);
}

static void test_full_ring_drops_never_blocks(void **state)
{
	uint64_t d0 = ring_dropped(&ring);
	int queued = 0;
	double t0;

	(void)state;
	got.hold = true;
	open_ring(1024, 1024, 0, 0);
	assert_int_equal(put(0, 0, 60), 0);
	wait_in_sink(); /* the writer is stuck in the sink */
	/* 1,024 bytes hold 16 records of 60 bytes and their lengths */
	for (uint32_t i = 1; put(0, i, 60) == 0; i++)
		queued++;
	assert_int_equal(queued, 1024 / 64);
	t0 = now_s();
	for (uint32_t i = 0; i < 100000; i++)
		assert_int_equal(put(0, 100 + i, 60), -ENOSPC);
	assert_true(now_s() - t0 < 5);
	assert_int_equal(ring_dropped(&ring) - d0, 100001);
	release_sink();
	assert_int_equal(ring_flush(&ring), 0);
	/* the drops are told once the records queued before them are out */
	assert_int_equal(check_records(NULL), 1 + queued);
	assert_int_equal(got.dropped, 100001);
	/* room again: taken */
	assert_int_equal(put(0, 200000, 60), 0);
	ring_stop(&ring);
	assert_int_equal(check_records(NULL), 2 + queued);
}

static void test_record_too_long_refused(void **state)
{
	static uint8_t big[2048];
	uint64_t d0 = ring_dropped(&ring);

	(void)state;
	/* put before the ring is open: refused, not counted */
	assert_int_equal(put(1, 0, 40), -EPIPE);
	open_ring(1024, 256, 0, 0);
	assert_int_equal(ring_put(&ring, big, 257), -EMSGSIZE);
	assert_int_equal(ring_dropped(&ring) - d0, 1);
	assert_int_equal(put(1, 1, REC_MAX), 0);
	ring_stop(&ring);
	/* longer than the ring itself, though the batch would hold it */
	open_ring(1024, 2048, 0, 0);
	assert_int_equal(ring_put(&ring, big, 1021), -EMSGSIZE);
	assert_int_equal(ring_put(&ring, big, 2048), -EMSGSIZE);
	assert_int_equal(put(1, 2, 40), 0);
	ring_stop(&ring);
	assert_int_equal(put(1, 3, 40), -EPIPE);
	assert_int_equal(ring_dropped(&ring) - d0, 3);
	assert_int_equal(check_records(NULL), 2);
	assert_int_equal(got.dropped, 3);
}

static void test_flush_waits_for_what_came_before(void **state)
{
	double t0;

	(void)state;
	/* a writer that would gather for 10 s, and a slow sink */
	sink_sleep_ms = 2;
	open_ring(64 << 10, 1024, 10000, 0);
	assert_int_equal(ring_flush(&ring), 0); /* nothing queued */
	t0 = now_s();
	for (uint32_t round = 0; round < 3; round++) {
		for (uint32_t i = 0; i < 100; i++)
			assert_int_equal(put(2, round * 100 + i, 40), 0);
		assert_int_equal(ring_flush(&ring), 0);
		pthread_mutex_lock(&got.lock);
		assert_int_equal(got.len, (round + 1) * 100 * 40);
		pthread_mutex_unlock(&got.lock);
	}
	assert_true(now_s() - t0 < 5);
	ring_stop(&ring);
	assert_int_equal(check_records(NULL), 300);
}

static void test_flush_without_a_writer(void **state)
{
	struct ring_cfg cfg = { .buf = buf,
				.size = 1024,
				.batch = batch,
				.batch_size = 1024,
				.sink = sink };

	(void)state;
	assert_int_equal(ring_open(&ring, &cfg), 0);
	assert_int_equal(ring_open(&ring, &cfg), -EBUSY);
	assert_int_equal(ring_flush(&ring), 0);
	assert_int_equal(put(3, 0, 40), 0);
	assert_int_equal(ring_flush(&ring), -EPIPE);
	/* stopped without a writer: what was queued is let go */
	ring_stop(&ring);
	assert_int_equal(got.calls, 0);
	open_ring(1024, 1024, 0, 0);
	ring_stop(&ring);
	assert_int_equal(got.calls, 0);
}

static void test_stop_drains_and_joins(void **state)
{
	double t0;

	(void)state;
	for (int run = 0; run < 2; run++) {
		open_ring(64 << 10, 1024, 10000, 0);
		for (uint32_t i = 0; i < 1000; i++)
			assert_int_equal(put(0, run * 1000 + i, 48), 0);
		t0 = now_s();
		ring_stop(&ring); /* cuts the 10 s gathering short */
		assert_true(now_s() - t0 < 5);
		assert_int_equal(put(0, 5000, 48), -EPIPE);
		assert_int_equal(check_records(NULL), (run + 1) * 1000);
	}
	ring_stop(&ring); /* stopped already: nothing happens */
}

static void test_reopen_and_idle_hooks(void **state)
{
	unsigned idles = 0;

	(void)state;
	open_ring(64 << 10, 1024, 0, 20);
	assert_int_equal(put(0, 0, 40), 0);
	assert_int_equal(ring_flush(&ring), 0);
	ring_reopen(&ring);
	assert_int_equal(put(0, 1, 40), 0);
	assert_int_equal(ring_flush(&ring), 0);
	for (int i = 0; i < 100 && !idles; i++) {
		sleep_ms(10);
		pthread_mutex_lock(&got.lock);
		idles = got.idles;
		pthread_mutex_unlock(&got.lock);
	}
	assert_true(idles > 0);
	ring_stop(&ring);
	assert_int_equal(got.reopens, 1);
	/* the reopen came after the first record and before the second */
	assert_string_equal(got.events, "SRS");
	assert_int_equal(check_records(NULL), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_many_producers_whole_and_in_order, setup,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_full_ring_drops_never_blocks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_record_too_long_refused,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_flush_waits_for_what_came_before, setup, teardown),
		cmocka_unit_test_setup_teardown(test_flush_without_a_writer,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_stop_drains_and_joins,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_reopen_and_idle_hooks,
						setup, teardown),
	};

	alarm(120); /* a hang is a failure, not a stuck build */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
