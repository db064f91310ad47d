// SPDX-License-Identifier: GPL-2.0-or-later
/* test_wanem.c - smbsplice-wanem's delay line, loss models and options,
 * without tun
 *
 * Theory of operation: the delay line (line.c) is driven with made-up
 * arrival times, so every due time can be checked to the nanosecond: the
 * bottleneck's serialization, the tail drop at --queue, --limit, and jitter
 * with and without reordering. The loss models (loss.c) are drawn from a
 * fixed seed many times and their rates and burst lengths checked against
 * the model's figures with wide statistical bounds. The options (options.c)
 * are parsed from argument vectors and control files written here.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "line.h"
#include "loss.h"
#include "wan_options.h"

#define MS 1000000ull
#define US 1000ull

/**
 * push() - take a slot and push a packet into the line
 * @l:		the line
 * @pc:		the direction's settings
 * @reorder:	jitter may reorder
 * @jitter:	the packet's jitter draw
 * @len:	its length
 * @now:	its arrival
 *
 * Return: what line_push() did with it.
 */
static enum line_verdict push(struct line *l, const struct path_conf *pc,
			      bool reorder, int64_t jitter, uint32_t len,
			      uint64_t now)
{
	uint32_t slot;

	assert_non_null(line_take(l, &slot));
	return line_push(l, pc, reorder, jitter, slot, len, now);
}

/**
 * pop() - pop the line's head
 * @l:		the line, not empty
 * @len:	set to the head's length, unless NULL
 *
 * Return: when the head was due.
 */
static uint64_t pop(struct line *l, uint32_t *len)
{
	const struct pkt *p = line_head(l);
	uint64_t due;

	assert_non_null(p);
	due = p->due;
	if (len)
		*len = p->len;
	line_pop(l);
	return due;
}

static void test_delay_only(void **state)
{
	struct path_conf pc = { .delay_ns = 20 * MS, .queue = 1000 };
	struct line l;

	assert_int_equal(line_init(&l, 8, 1500), 0);
	assert_int_equal(push(&l, &pc, false, 0, 100, 1000), LINE_HELD);
	assert_int_equal(push(&l, &pc, false, 0, 200, 1000), LINE_HELD);
	assert_int_equal(pop(&l, NULL), 1000 + 20 * MS);
	assert_int_equal(pop(&l, NULL), 1000 + 20 * MS);
	assert_null(line_head(&l));
	line_fini(&l);
}

static void test_rate_and_tail_drop(void **state)
{
	/* 100 Mbit/s: 1500 bytes take 120 us. */
	struct path_conf pc = { .delay_ns = 5 * MS,
				.rate_bps = 100e6,
				.queue = 3 };
	struct line l;
	uint32_t len;

	assert_int_equal(line_init(&l, 16, 1500), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(push(&l, &pc, false, 0, 1500, 0), LINE_HELD);
	/* The fourth finds three in the bottleneck: dropped, slot back. */
	assert_int_equal(push(&l, &pc, false, 0, 1500, 0), LINE_TAIL_DROP);
	assert_int_equal(l.nfree, 16 - 3);
	/* Once the first is sent, there is room for one. */
	assert_int_equal(push(&l, &pc, false, 0, 1500, 120 * US), LINE_HELD);
	assert_int_equal(push(&l, &pc, false, 0, 1500, 120 * US),
			 LINE_TAIL_DROP);
	for (int i = 1; i <= 4; i++) {
		assert_int_equal(pop(&l, &len), i * 120 * US + 5 * MS);
		assert_int_equal(len, 1500);
	}
	/* An idle bottleneck starts sending at the arrival. */
	assert_int_equal(push(&l, &pc, false, 0, 750, 10 * MS), LINE_HELD);
	assert_int_equal(pop(&l, NULL), 10 * MS + 60 * US + 5 * MS);
	line_fini(&l);
}

static void test_jitter_order(void **state)
{
	struct path_conf pc = { .delay_ns = 10 * MS,
				.jitter_ns = 5 * MS,
				.queue = 1000 };
	struct line l;

	assert_int_equal(line_init(&l, 8, 1500), 0);
	/* Without --reorder, a later packet drawn early waits its turn. */
	push(&l, &pc, false, 4 * MS, 100, 0);
	push(&l, &pc, false, -4 * MS, 100, 1 * MS);
	assert_int_equal(pop(&l, NULL), 14 * MS);
	assert_int_equal(pop(&l, NULL), 14 * MS);
	line_fini(&l);

	/* With it, it overtakes; ties leave in arrival order. */
	assert_int_equal(line_init(&l, 8, 1500), 0);
	push(&l, &pc, true, 4 * MS, 1, 0);
	push(&l, &pc, true, -4 * MS, 2, 1 * MS);
	push(&l, &pc, true, 0, 3, 4 * MS);
	push(&l, &pc, true, 0, 4, 4 * MS);
	uint32_t len;

	assert_int_equal(pop(&l, &len), 7 * MS);
	assert_int_equal(len, 2);
	assert_int_equal(pop(&l, &len), 14 * MS);
	assert_int_equal(len, 1);
	assert_int_equal(pop(&l, &len), 14 * MS);
	assert_int_equal(len, 3);
	assert_int_equal(pop(&l, &len), 14 * MS);
	assert_int_equal(len, 4);
	line_fini(&l);

	/* Jitter never takes a packet out before it is sent. */
	assert_int_equal(line_init(&l, 8, 1500), 0);
	pc.delay_ns = 1 * MS;
	push(&l, &pc, true, -5 * MS, 1, 3 * MS);
	assert_int_equal(pop(&l, NULL), 3 * MS);
	line_fini(&l);
}

static void test_limit(void **state)
{
	struct path_conf pc = { .delay_ns = 1 * MS, .queue = 4 };
	struct line l;
	uint32_t slot;

	assert_int_equal(line_init(&l, 4, 1500), 0);
	for (int i = 0; i < 4; i++)
		push(&l, &pc, false, 0, 100, 0);
	assert_null(line_take(&l, &slot));
	pop(&l, NULL);
	assert_non_null(line_take(&l, &slot));
	line_give(&l, slot);
	line_fini(&l);
}

static void test_random_loss(void **state)
{
	struct path_conf pc = { .loss = 0.1 };
	unsigned n = 200000, lost = 0;
	struct rng r;
	bool bad = false;

	rng_seed(&r, 1);
	for (unsigned i = 0; i < n; i++)
		lost += loss_draw(&r, &pc, &bad) == LOSS_RANDOM;
	/* Mean 20000, sigma 134: 5 sigma either way. */
	assert_in_range(lost, 20000 - 670, 20000 + 670);

	pc.loss = 1;
	for (unsigned i = 0; i < 1000; i++)
		assert_int_equal(loss_draw(&r, &pc, &bad), LOSS_RANDOM);
	pc.loss = 0;
	for (unsigned i = 0; i < 1000; i++)
		assert_int_equal(loss_draw(&r, &pc, &bad), LOSS_KEEP);
}

static void test_burst_loss(void **state)
{
	struct path_conf pc = {
		.burst = { .on = true, .p = 0.02, .r = 0.25, .h = 1, .k = 0 }
	};
	unsigned n = 200000, lost = 0, runs = 0;
	bool bad = false, prev = false;
	struct rng r;

	rng_seed(&r, 2);
	for (unsigned i = 0; i < n; i++) {
		bool l = loss_draw(&r, &pc, &bad) == LOSS_BURST;

		lost += l;
		runs += l && !prev;
		prev = l;
	}
	/* 7.4% lost, in runs of 1/R = 4 on average. */
	assert_in_range(lost, n * 0.064, n * 0.084);
	assert_in_range(lost * 100 / runs, 360, 440);
}

static void test_jitter_draw(void **state)
{
	int64_t lo = 0, hi = 0;
	struct rng r;

	rng_seed(&r, 3);
	assert_int_equal(jitter_draw(&r, 0), 0);
	for (int i = 0; i < 100000; i++) {
		int64_t j = jitter_draw(&r, 1000);

		assert_in_range(j + 1000, 0, 2000);
		lo = j < lo ? j : lo;
		hi = j > hi ? j : hi;
	}
	assert_true(lo < -990 && hi > 990);
}

/**
 * parse() - smbsplice-wanem's command line from one string
 * @c:		the settings
 * @line:	the options, split at spaces
 *
 * Return: what wan_options_parse() said.
 */
static enum wan_opt_result parse(struct wan_conf *c, const char *line)
{
	static char buf[512];
	char *argv[32] = { "smbsplice-wanem" };
	int argc = 1;

	snprintf(buf, sizeof(buf), "%s", line);
	for (char *t = strtok(buf, " "); t && argc < 31; t = strtok(NULL, " "))
		argv[argc++] = t;
	return wan_options_parse(argc, argv, c);
}

static void test_options(void **state)
{
	static struct wan_conf c;

	assert_int_equal(parse(&c, "--a ns1:wan0 --b /proc/1/ns/net:wan1 "
				   "--delay 20/30.5 --loss=1 --rate 100 "
				   "--burst 1,30/off --queue 50 --mtu 9000"),
			 WAN_RUN);
	assert_string_equal(c.ns[0], "/run/netns/ns1");
	assert_string_equal(c.ifname[0], "wan0");
	assert_string_equal(c.ns[1], "/proc/1/ns/net");
	assert_string_equal(c.ifname[1], "wan1");
	assert_int_equal(c.dir[DIR_AB].delay_ns, 20 * MS);
	assert_int_equal(c.dir[DIR_BA].delay_ns, 30500 * US);
	assert_true(c.dir[DIR_AB].loss == 0.01 && c.dir[DIR_BA].loss == 0.01);
	assert_true(c.dir[DIR_AB].rate_bps == 100e6);
	assert_true(c.dir[DIR_AB].burst.on && !c.dir[DIR_BA].burst.on);
	assert_true(c.dir[DIR_AB].burst.p == 0.01 &&
		    c.dir[DIR_AB].burst.r == 0.3 &&
		    c.dir[DIR_AB].burst.h == 1 && c.dir[DIR_AB].burst.k == 0);
	assert_int_equal(c.dir[DIR_BA].queue, 50);
	/* 64 MiB of 9000-byte slots. */
	assert_int_equal(c.limit, (64u << 20) / 9000);

	/* A seed as the log prints it, to the last digit. */
	assert_int_equal(parse(&c, "--a :x --b :y --seed 18446744073709551615"),
			 WAN_RUN);
	assert_true(c.seeded && c.seed == UINT64_MAX);
	assert_int_equal(parse(&c, "--a :x --b :y --seed -1"), WAN_EXIT_USAGE);

	assert_int_equal(parse(&c, "--a :x --b :y"), WAN_RUN);
	assert_string_equal(c.ns[0], "");
	assert_int_equal(c.limit, 8192);
	assert_int_equal(c.dir[DIR_AB].queue, 1000);

	assert_int_equal(parse(&c, "--a :x --b :x"), WAN_EXIT_USAGE);
	assert_int_equal(parse(&c, "--a :x --b :y --delay 1/2/3"),
			 WAN_EXIT_USAGE);
	assert_int_equal(parse(&c, "--a :x --b :y --loss 101"), WAN_EXIT_USAGE);
	assert_int_equal(parse(&c, "--a :x --b :y --mtu 70000"),
			 WAN_EXIT_USAGE);
	assert_int_equal(parse(&c, "--a :x --b :y --queue 0"), WAN_EXIT_USAGE);
	assert_int_equal(parse(&c, "--a :x --b :y --delay"), WAN_EXIT_USAGE);
	assert_int_equal(parse(&c, "--a :x --b :y --reorder=1"),
			 WAN_EXIT_USAGE);
	assert_int_equal(parse(&c, "--a :x --b :y x"), WAN_EXIT_USAGE);
}

/**
 * write_file() - a control file with @text in it
 * @path:	where
 * @text:	what
 */
static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_control(void **state)
{
	static struct wan_conf base, out;
	char path[] = "/tmp/test_wanem.XXXXXX", err[256];
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	close(fd);
	/* The default queue shrinks to a smaller --limit. */
	assert_int_equal(parse(&base, "--a :x --b :y --delay 10 --limit 100"),
			 WAN_RUN);
	assert_int_equal(base.dir[DIR_BA].queue, 100);

	write_file(path, "# cut\nloss 100 --rate=50/60\n  jitter 1\n");
	assert_int_equal(
		wan_options_control(path, &base, &out, err, sizeof(err)), 0);
	assert_true(out.dir[DIR_AB].loss == 1 && out.dir[DIR_BA].loss == 1);
	assert_true(out.dir[DIR_AB].rate_bps == 50e6 &&
		    out.dir[DIR_BA].rate_bps == 60e6);
	assert_int_equal(out.dir[DIR_BA].delay_ns, 10 * MS);
	assert_int_equal(out.dir[DIR_BA].jitter_ns, 1 * MS);

	/* Empty: the command line again. */
	write_file(path, "");
	assert_int_equal(
		wan_options_control(path, &base, &out, err, sizeof(err)), 0);
	assert_true(out.dir[DIR_AB].loss == 0 && out.dir[DIR_AB].rate_bps == 0);
	assert_int_equal(out.dir[DIR_AB].delay_ns, 10 * MS);

	/* Refused, and @out untouched. */
	out.dir[DIR_AB].loss = 0.5;
	write_file(path, "mtu 9000\n");
	assert_int_equal(
		wan_options_control(path, &base, &out, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "--mtu is fixed at start"));
	write_file(path, "queue 101\n");
	assert_int_equal(
		wan_options_control(path, &base, &out, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "exceeds --limit 100"));
	write_file(path, "delay\n");
	assert_int_equal(
		wan_options_control(path, &base, &out, err, sizeof(err)), -1);
	assert_true(out.dir[DIR_AB].loss == 0.5);

	unlink(path);
	assert_int_equal(
		wan_options_control(path, &base, &out, err, sizeof(err)), -1);
	assert_non_null(strstr(err, "No such file"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_delay_only),
		cmocka_unit_test(test_rate_and_tail_drop),
		cmocka_unit_test(test_jitter_order),
		cmocka_unit_test(test_limit),
		cmocka_unit_test(test_random_loss),
		cmocka_unit_test(test_burst_loss),
		cmocka_unit_test(test_jitter_draw),
		cmocka_unit_test(test_options),
		cmocka_unit_test(test_control),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
