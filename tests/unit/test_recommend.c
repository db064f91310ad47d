// SPDX-License-Identifier: GPL-2.0-or-later
/* test_recommend.c - the advisor's histograms, shares and recommendation
 *
 * Theory of operation: histograms are filled here with payload sizes
 * chosen to sit on and beside the bin edges, and the recommendation is
 * asked for with crossovers on, between and beyond the candidate
 * thresholds. Each case of the rule (see recommend.c) is checked, and so
 * are the words and figures the report prints for it, in both forms.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "recommend.h"
#include "report.h"

static void add(struct size_hist *h, uint32_t size, unsigned times)
{
	unsigned bin = tally_size_bin(size);

	h->count[bin] += times;
	h->bytes[bin] += (uint64_t)size * times;
}

static void test_bins(void **state)
{
	assert_int_equal(tally_size_bin(1), 0);
	assert_int_equal(tally_size_bin(1023), 0);
	assert_int_equal(tally_size_bin(1024), 1);
	assert_int_equal(tally_size_bin(4095), 2);
	assert_int_equal(tally_size_bin(4096), 3);
	assert_int_equal(tally_size_bin(1u << 20), 11);
	assert_int_equal(tally_size_bin(8u << 20), 14);
	assert_int_equal(tally_size_bin((16u << 20) - 1), 14);
	for (unsigned b = 1; b < TALLY_SIZE_BINS; b++) {
		assert_int_equal(tally_size_bin(tally_bin_floor(b)), b);
		assert_int_equal(tally_size_bin(tally_bin_floor(b) - 1), b - 1);
	}
}

static void test_depth_bins(void **state)
{
	char label[24];
	static const struct {
		uint64_t depth;
		unsigned bin;
		const char *label;
	} cases[] = {
		{ 1, 0, "1" },	       { 2, 1, "2" },	     { 3, 2, "3-4" },
		{ 4, 2, "3-4" },       { 5, 3, "5-8" },	     { 16, 4, "9-16" },
		{ 17, 5, "17-32" },    { 128, 7, "65-128" }, { 129, 8, "129+" },
		{ 100000, 8, "129+" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(tally_depth_bin(cases[i].depth), cases[i].bin);
		tally_depth_label(cases[i].bin, label, sizeof(label));
		assert_string_equal(label, cases[i].label);
	}
}

static void test_share(void **state)
{
	struct size_hist h = { 0 };
	uint64_t n;

	add(&h, 4096, 10);    /* 40 KiB */
	add(&h, 65536, 4);    /* 256 KiB */
	add(&h, 1u << 20, 1); /* 1 MiB */
	add(&h, 1000, 1000);  /* small, never spliced */
	assert_true(advise_share(&h, 4096, &n) > 0.5);
	assert_int_equal(n, 15);
	assert_int_equal((uint64_t)(advise_share(&h, 8192, &n) * 1e9),
			 (uint64_t)((256.0 * 1024 + 1048576) /
				    (40960 + 262144 + 1048576 + 1000000) *
				    1e9));
	assert_int_equal(n, 5);
	advise_share(&h, 128u << 10, &n);
	assert_int_equal(n, 1);
	assert_true(advise_share(&h, 2u << 20, &n) == 0.0);
	assert_int_equal(n, 0);
	assert_true(advise_share(&h, SMB_THRESHOLD_OFF, &n) == 0.0);
}

static void test_recommend_rule(void **state)
{
	struct size_hist empty = { 0 }, h = { 0 };
	struct advice a;

	add(&h, 64u << 10, 100);
	add(&h, 8u << 20, 2);

	/* At the README's crossover: 1M, the 8 MiB READs spliced. */
	advise_threshold(&h, ADVISE_README_CROSSOVER, &a);
	assert_int_equal(a.why, ADVICE_SPLICE);
	assert_int_equal(a.threshold, 1u << 20);
	assert_int_equal(a.payloads, 2);

	/* A crossover between candidates rounds up. */
	advise_threshold(&h, 40u << 10, &a);
	assert_int_equal(a.threshold, 64u << 10);
	assert_int_equal(a.payloads, 102);
	assert_true(a.share == 1.0);

	/* Nothing reaches it: off. */
	advise_threshold(&h, (8u << 20) + 1, &a);
	assert_int_equal(a.why, ADVICE_NEVER_CHEAPER);
	assert_int_equal(a.threshold, SMB_THRESHOLD_OFF);
	memset(&h, 0, sizeof(h));
	add(&h, 64u << 10, 100);
	advise_threshold(&h, 1u << 20, &a);
	assert_int_equal(a.why, ADVICE_NOT_ENGAGED);
	assert_int_equal(a.threshold, SMB_THRESHOLD_OFF);

	/* No data: the default. */
	advise_threshold(&empty, 64u << 10, &a);
	assert_int_equal(a.why, ADVICE_NO_DATA);
	assert_int_equal(a.threshold, ADVISE_DEFAULT_THRESHOLD);

	/* Splicing never cheaper. */
	advise_threshold(&h, SMB_THRESHOLD_OFF, &a);
	assert_int_equal(a.why, ADVICE_NEVER_CHEAPER);
	assert_int_equal(a.threshold, SMB_THRESHOLD_OFF);
}

static void test_size_text(void **state)
{
	char b[16];

	advise_size_text(1u << 20, b, sizeof(b));
	assert_string_equal(b, "1M");
	advise_size_text(8u << 20, b, sizeof(b));
	assert_string_equal(b, "8M");
	advise_size_text(64u << 10, b, sizeof(b));
	assert_string_equal(b, "64K");
	advise_size_text(1536u << 10, b, sizeof(b));
	assert_string_equal(b, "1536K");
	advise_size_text(1000, b, sizeof(b));
	assert_string_equal(b, "1000");
	advise_size_text(0, b, sizeof(b));
	assert_string_equal(b, "0");
	advise_size_text(SMB_THRESHOLD_OFF, b, sizeof(b));
	assert_string_equal(b, "off");
}

/* The report says which basis it used, in both forms. */
static void test_report_basis(void **state)
{
	static struct capture cap;
	static struct walk w;
	static struct calibration cal;
	struct rs_stats rs = { 0 };
	uint16_t ports[] = { 445, 139 };
	struct report r = { 0 };
	char *text;
	size_t len;
	FILE *f;

	cap.format = "pcap";
	cap.linktype = DLT_EN10MB;
	walk_init(&w);
	add(&w.tally.read, 8u << 20, 3);
	w.tally.smb_conns = 1;
	r.path = "x.pcap";
	r.cap = &cap;
	r.rs = &rs;
	r.w = &w;
	r.ports = ports;
	r.nports = 2;
	r.crossover = ADVISE_README_CROSSOVER;
	advise_threshold(&w.tally.read, r.crossover, &r.read);
	advise_threshold(&w.tally.write, r.crossover, &r.write);

	f = open_memstream(&text, &len);
	report_text(f, &r);
	fclose(f);
	assert_non_null(strstr(
		text,
		"based on the README's measured defaults (loopback, 2 cores)"));
	assert_non_null(strstr(text, "--read-threshold 1M"));
	assert_non_null(strstr(
		text,
		"splices 100.0% of READ payload bytes (3 of 3 payloads)"));
	assert_non_null(strstr(text, "--write-threshold 1M"));
	assert_non_null(strstr(text, "no WRITE data in this capture"));
	assert_non_null(
		strstr(text, "SMB on TCP port 445 or 139: 1 connection\n"));
	free(text);

	/* An encrypted session: nothing to be seen, and it says why. */
	w.tally.frames[RS_TO_CLIENT][TALLY_ENCRYPTED].count = 1200;
	f = open_memstream(&text, &len);
	report_text(f, &r);
	fclose(f);
	assert_non_null(strstr(
		text, "no WRITE data to be seen: 1,200 frames are encrypted"));
	assert_non_null(strstr(text, "(encrypted)"));
	free(text);
	w.tally.frames[RS_TO_CLIENT][TALLY_ENCRYPTED].count = 0;

	cal.n = 1;
	cal.pt[0].size = 4096;
	cal.crossover = 256u << 10;
	cal.seconds = 2.5;
	r.cal = &cal;
	r.crossover = cal.crossover;
	advise_threshold(&w.tally.read, r.crossover, &r.read);
	f = open_memstream(&text, &len);
	report_json(f, &r);
	fclose(f);
	assert_non_null(strstr(text, "\"read_threshold\": \"256K\""));
	assert_non_null(strstr(text, "\"basis\": \"calibrated\""));
	assert_non_null(strstr(
		text, "this host's own measurement (--calibrate, 2.5 s)"));
	assert_non_null(strstr(
		text,
		"\"sizes\": {\"8M\": {\"count\": 3, \"bytes\": 25165824}}"));
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bins),
		cmocka_unit_test(test_depth_bins),
		cmocka_unit_test(test_share),
		cmocka_unit_test(test_recommend_rule),
		cmocka_unit_test(test_size_text),
		cmocka_unit_test(test_report_basis),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
