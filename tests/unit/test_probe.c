// SPDX-License-Identifier: GPL-2.0-or-later
/* test_probe.c - the health check's NEGOTIATE request and its judge
 *
 * The request must be one the first-frame check (smb/opening.c) takes as
 * an SMB2 NEGOTIATE, as any SMB server would; the judge must take a
 * well-formed NEGOTIATE response fed in any split and refuse each way a
 * stream can fail to be one.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "smb/opening.h"
#include "smb/probe.h"
#include "smb/wire.h"

/**
 * good_response() - a NEGOTIATE response as Samba sends one (header and
 *		     the fixed body, no security buffer)
 * @p:	buffer of at least 4 + 64 + 64 bytes
 *
 * Return: its length.
 */
static size_t good_response(uint8_t *p)
{
	size_t body = SMB2_HDR_LEN + 64;
	uint8_t *h = p + SMB_PREFIX_LEN;

	memset(p, 0, SMB_PREFIX_LEN + body);
	p[3] = (uint8_t)body;
	memcpy(h, "\xfeSMB", 4);
	h[SMB2_HDR_STRUCT_SIZE] = SMB2_HDR_LEN;
	h[SMB2_HDR_FLAGS] = SMB2_FLAG_RESPONSE;
	h[SMB2_BODY] = SMB2_NEG_RSP_BODY_SIZE;
	h[SMB2_NEG_RSP_DIALECT] = 0x02;
	h[SMB2_NEG_RSP_DIALECT + 1] = 0x03;
	return SMB_PREFIX_LEN + body;
}

/**
 * test_request_is_a_negotiate() - the request is an SMB2 NEGOTIATE
 * @state:	unused
 */
static void test_request_is_a_negotiate(void **state)
{
	uint8_t buf[256];
	const char *why = "";
	size_t n, need = 0;

	(void)state;
	assert_int_equal(smb_probe_request(buf, SMB_PROBE_REQ_LEN - 1), 0);
	n = smb_probe_request(buf, sizeof(buf));
	assert_int_equal(n, SMB_PROBE_REQ_LEN);
	assert_int_equal(smb_opening_judge(buf, n, &need, &why),
			 SMB_OPENING_SMB2);
	/* The prefix's length is the rest of the frame. */
	assert_int_equal((buf[1] << 16 | buf[2] << 8 | buf[3]),
			 n - SMB_PREFIX_LEN);
	/* Four dialects, all below 3.1.1, which would need contexts. */
	assert_int_equal(get_le16(buf + SMB_PREFIX_LEN + SMB2_BODY + 2), 4);
	for (unsigned i = 0; i < 4; i++)
		assert_true(get_le16(buf + SMB_PREFIX_LEN + SMB2_BODY + 36 +
				     2 * i) < SMB2_DIALECT_311);
}

/**
 * test_good_response_any_split() - a good answer is OK once its first
 *				    SMB_PROBE_RSP_NEED bytes are in, and
 *				    MORE before
 * @state:	unused
 */
static void test_good_response_any_split(void **state)
{
	uint8_t rsp[256];
	const char *why;
	size_t len = good_response(rsp);

	(void)state;
	for (size_t n = 0; n < SMB_PROBE_RSP_NEED; n++)
		assert_int_equal(smb_probe_judge(rsp, n, &why), SMB_PROBE_MORE);
	for (size_t n = SMB_PROBE_RSP_NEED; n <= len; n++)
		assert_int_equal(smb_probe_judge(rsp, n, &why), SMB_PROBE_OK);
}

/**
 * judge_bad() - assert a response is refused, naming @words
 * @rsp:	the response
 * @len:	its length
 * @words:	what the reason must contain
 */
static void judge_bad(const uint8_t *rsp, size_t len, const char *words)
{
	const char *why = NULL;

	assert_int_equal(smb_probe_judge(rsp, len, &why), SMB_PROBE_BAD);
	assert_non_null(why);
	assert_non_null(strstr(why, words));
}

/**
 * test_malformed_responses() - each way an answer is no working server's
 * @state:	unused
 */
static void test_malformed_responses(void **state)
{
	uint8_t rsp[256], *h = rsp + SMB_PREFIX_LEN;
	size_t len;

	(void)state;
	len = good_response(rsp);
	rsp[0] = NBT_NEGATIVE_RESPONSE;
	judge_bad(rsp, 1, "transport");

	len = good_response(rsp);
	h[0] = 0xff; /* SMB1 */
	judge_bad(rsp, len, "SMB1");

	len = good_response(rsp);
	memcpy(h, "HTTP", 4); /* a web server on the port */
	judge_bad(rsp, len, "not SMB2");

	len = good_response(rsp);
	rsp[3] = 40; /* a frame too short to be the response */
	judge_bad(rsp, 8, "too short");

	len = good_response(rsp);
	h[SMB2_HDR_STRUCT_SIZE] = 63;
	judge_bad(rsp, len, "header");

	len = good_response(rsp);
	h[SMB2_HDR_COMMAND] = SMB2_ECHO;
	judge_bad(rsp, len, "not a NEGOTIATE");

	len = good_response(rsp);
	h[SMB2_HDR_FLAGS] = 0; /* our own request echoed back */
	judge_bad(rsp, len, "request");

	len = good_response(rsp);
	h[SMB2_HDR_STATUS + 3] = 0xc0; /* an NT error status */
	judge_bad(rsp, len, "failed");

	len = good_response(rsp);
	h[SMB2_BODY] = SMB2_ERROR_BODY_SIZE;
	judge_bad(rsp, len, "body");
}

/**
 * test_request_is_not_a_response() - the probe's own request, echoed by a
 *				      backend that mirrors, is refused
 * @state:	unused
 */
static void test_request_is_not_a_response(void **state)
{
	uint8_t buf[256];
	const char *why;
	size_t n = smb_probe_request(buf, sizeof(buf));

	(void)state;
	assert_int_equal(smb_probe_judge(buf, n, &why), SMB_PROBE_BAD);
}

/**
 * main() - run the tests
 *
 * Return: the number of failures.
 */
int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request_is_a_negotiate),
		cmocka_unit_test(test_good_response_any_split),
		cmocka_unit_test(test_malformed_responses),
		cmocka_unit_test(test_request_is_not_a_response),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
