// SPDX-License-Identifier: GPL-2.0-or-later
/* test_framer.c - the SMB framer against hand-built vectors
 *
 * Every vector is a byte stream built here field by field. Each is run
 * three ways: fed whole, fed one byte at a time, and in random splits with
 * random splice advances wherever the framer allows one. All three must end
 * in the same counters and state; one byte at a time must also splice every
 * byte of every payload at or above its threshold (nothing is read ahead),
 * and whole feeds must never splice.
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

#include "smb/framer.h"
#include "smb/login.h"
#include "smb/opening.h"

/* --- building vectors ---------------------------------------------------- */

static uint8_t vec[4 << 20];
static size_t vlen;

static void put8(uint8_t v)
{
	vec[vlen++] = v;
}

static void put16(uint16_t v)
{
	put8(v & 0xff);
	put8(v >> 8);
}

static void put32(uint32_t v)
{
	put16(v & 0xffff);
	put16(v >> 16);
}

static void put64(uint64_t v)
{
	put32((uint32_t)v);
	put32((uint32_t)(v >> 32));
}

static void putn(uint8_t v, size_t n)
{
	memset(vec + vlen, v, n);
	vlen += n;
}

static void prefix(uint8_t type, uint32_t len)
{
	put8(type);
	put8((uint8_t)(len >> 16));
	put8((uint8_t)(len >> 8));
	put8((uint8_t)len);
}

static void set_le32(size_t at, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		vec[at + i] = (uint8_t)(v >> (8 * i));
}

static void smb2_hdr(uint16_t cmd, uint32_t flags, uint32_t status,
		     uint32_t next)
{
	put32(SMB2_MAGIC);
	put16(64);
	put16(1);
	put32(status);
	put16(cmd);
	put16(1);
	put32(flags);
	put32(next);
	put64(7);  /* MessageId */
	put64(0);  /* ProcessId+TreeId or AsyncId */
	put64(99); /* SessionId */
	putn(0, 16);
}

/* A READ response: header, 17-byte body, pad to data_off, data. */
static void read_rsp(uint8_t data_off, uint32_t len, uint32_t next)
{
	size_t start = vlen;

	smb2_hdr(SMB2_READ, SMB2_FLAG_RESPONSE, 0, next);
	put16(17);
	put8(data_off);
	put8(0);
	put32(len);
	put32(0);
	put32(0);
	putn(0xee, start + data_off - vlen);
	putn(0xda, len);
}

static void read_rsp_frame(uint8_t data_off, uint32_t len)
{
	prefix(0, data_off + len);
	read_rsp(data_off, len, 0);
}

static void error_rsp(uint16_t cmd, uint32_t flags, uint32_t status,
		      uint32_t next)
{
	smb2_hdr(cmd, SMB2_FLAG_RESPONSE | flags, status, next);
	put16(9);
	put16(0);
	put32(0);
	put8(0);
}

static void write_req_frame(uint16_t data_off, uint32_t len)
{
	prefix(0, data_off + len);
	smb2_hdr(SMB2_WRITE, 0, 0, 0);
	put16(49);
	put16(data_off);
	put32(len);
	put64(0);    /* Offset */
	putn(0, 16); /* FileId */
	put32(0);    /* Channel */
	put32(0);    /* RemainingBytes */
	put16(0);
	put16(0);
	put32(0); /* Flags */
	putn(0xee, data_off - 112);
	putn(0x77, len);
}

static void simple_frame(uint16_t cmd, uint32_t flags, size_t body)
{
	prefix(0, 64 + body);
	smb2_hdr(cmd, flags, 0, 0);
	putn(0x11, body);
}

static void negotiate_rsp_caps(uint16_t dialect, uint32_t caps)
{
	prefix(0, 64 + 65 + 63);
	smb2_hdr(SMB2_NEGOTIATE, SMB2_FLAG_RESPONSE, 0, 0);
	put16(65);
	put16(1); /* SecurityMode */
	put16(dialect);
	put16(0);
	putn(0, 16);	/* ServerGuid */
	put32(caps);	/* Capabilities */
	put32(8 << 20); /* MaxTransactSize */
	put32(4 << 20); /* MaxReadSize */
	put32(2 << 20); /* MaxWriteSize */
	putn(0, 65 - 0x28 + 63 - 1);
	put8(0);
}

static void negotiate_rsp_frame(uint16_t dialect)
{
	negotiate_rsp_caps(dialect, 0x27); /* no multichannel */
}

/* An IOCTL response carrying @out bytes of output for @ctl_code. */
static void ioctl_rsp_frame(uint32_t ctl_code, uint32_t out)
{
	prefix(0, 64 + 48 + out);
	smb2_hdr(SMB2_IOCTL, SMB2_FLAG_RESPONSE, 0, 0);
	put16(49);
	put16(0);
	put32(ctl_code);
	putn(0, 16); /* FileId */
	put32(0);    /* InputOffset */
	put32(0);    /* InputCount */
	put32(112);  /* OutputOffset */
	put32(out);  /* OutputCount */
	put32(0);    /* Flags */
	put32(0);    /* Reserved2 */
	putn(0x55, out);
}

/* --- running vectors ------------------------------------------------------ */

static struct smb_thresholds th_64k = { { 65536, 65536, 65536 } };

/* What an observer saw of one message (struct smb_msg without @hdr). */
struct seen {
	enum smb_msg_kind kind;
	uint64_t frame_off;
	uint32_t frame_len, start, end, pay_start, pay_end;
	uint16_t command;
	uint32_t flags, status, hdr_len;
	uint64_t message_id, async_id;
};

#define MAX_SEEN 64

struct outcome {
	struct seen seen[MAX_SEEN];
	unsigned nseen;
	struct smb_dir_stats st;
	struct smb_stream_facts facts;
	enum smb_framer_state state;
	const char *why;
	size_t first_splice; /* stream offset of the first spliced byte */
};

/* The observer: note each message, and check that its header bytes are
 * the stream's own. */
static void observe(void *ctx, const struct smb_msg *m)
{
	struct outcome *o = ctx;
	size_t at = m->frame_off + SMB_PREFIX_LEN + m->start;
	struct seen *sn;

	if (m->hdr_len)
		assert_memory_equal(m->hdr, vec + at, m->hdr_len);
	if (o->nseen == MAX_SEEN)
		return;
	sn = &o->seen[o->nseen++]; /* zeroed, padding too: compared whole */
	sn->kind = m->kind;
	sn->frame_off = m->frame_off;
	sn->frame_len = m->frame_len;
	sn->start = m->start;
	sn->end = m->end;
	sn->pay_start = m->pay_start;
	sn->pay_end = m->pay_end;
	sn->command = m->command;
	sn->flags = m->flags;
	sn->status = m->status;
	sn->hdr_len = m->hdr_len;
	sn->message_id = m->message_id;
	sn->async_id = m->async_id;
}

/* A live handover of @f: its state saved, and restored into a framer
 * set up afresh (over a stale one's bytes), which takes its place. The
 * saved state must survive the trip unchanged. */
static void hand_over(struct smb_framer *f, const struct smb_thresholds *th,
		      struct smb_dir_stats *st, struct outcome *o)
{
	struct smb_framer_saved s, again;
	struct smb_framer g;

	memset(&s, 0x5a, sizeof(s));
	smb_framer_save(f, &s);
	memset(&g, 0xa5, sizeof(g));
	smb_framer_init(&g, th, st);
	smb_framer_observe(&g, observe, o);
	assert_int_equal(smb_framer_restore(&g, &s), 0);
	smb_framer_save(&g, &again);
	assert_memory_equal(&s, &again, sizeof(s));
	assert_int_equal(smb_framer_splice_span(&g), smb_framer_splice_span(f));
	assert_int_equal(smb_framer_skip_span(&g), smb_framer_skip_span(f));
	if (!smb_framer_opaque(f)) {
		assert_int_equal(smb_framer_copy_limit(&g),
				 smb_framer_copy_limit(f));
		assert_int_equal(smb_framer_mid_message(&g),
				 smb_framer_mid_message(f));
	}
	*f = g;
}

/* mode: 0 whole, 1 one byte at a time (splicing whenever allowed),
 * 2 random splits and random advances, 3 as 1 with a handover after
 * every step, 4 as 2 with a handover after some. */
static struct outcome drive(const struct smb_thresholds *th, int mode,
			    unsigned seed)
{
	struct smb_framer f;
	struct smb_dir_stats st = { 0 };
	static struct outcome o;
	int split = mode == 3 ? 1 : mode == 4 ? 2 : mode;

	memset(&o, 0, sizeof(o));
	o.first_splice = SIZE_MAX;
	size_t off = 0, span, k;

	srand(seed);
	smb_framer_init(&f, th, &st);
	smb_framer_observe(&f, observe, &o);
	while (off < vlen) {
		if (mode == 3 || (mode == 4 && rand() % 3 == 0))
			hand_over(&f, th, &st, &o);
		span = smb_framer_splice_span(&f);
		if (split && span) {
			k = split == 1 ? span : 1 + (size_t)rand() % span;
			if (k > vlen - off)
				k = vlen - off;
			if (o.first_splice == SIZE_MAX)
				o.first_splice = off;
			smb_framer_advance(&f, k);
		} else {
			k = split == 0 ? vlen - off
			    : split == 1
				    ? 1
				    : 1 + (size_t)rand() %
						      (rand() % 2 ? 7 : 70000);
			if (k > vlen - off)
				k = vlen - off;
			smb_framer_feed(&f, vec + off, k);
		}
		off += k;
	}
	if (mode >= 3)
		hand_over(&f, th, &st, &o);
	o.st = st;
	o.facts = f.facts;
	o.state = f.state;
	o.why = f.why;
	return o;
}

static void assert_same_counts(const struct outcome *x, const struct outcome *y)
{
	const struct smb_dir_stats *a = &x->st, *b = &y->st;
	const struct smb_stream_facts *fa = &x->facts, *fb = &y->facts;

	for (int c = 0; c < SMB_NCLASSES; c++) {
		assert_int_equal(a->payload_spliced[c] + a->payload_copied[c],
				 b->payload_spliced[c] + b->payload_copied[c]);
		assert_int_equal(a->payloads[c][0], b->payloads[c][0]);
		assert_int_equal(a->payloads[c][1], b->payloads[c][1]);
	}
	assert_memory_equal(a->commands, b->commands, sizeof(a->commands));
	assert_int_equal(a->interim, b->interim);
	assert_int_equal(a->read_errors, b->read_errors);
	assert_int_equal(fa->reads, fb->reads);
	assert_int_equal(fa->read_bytes, fb->read_bytes);
	assert_int_equal(fa->writes, fb->writes);
	assert_int_equal(fa->write_bytes, fb->write_bytes);
	assert_int_equal(a->encrypted, b->encrypted);
	assert_int_equal(a->compressed, b->compressed);
	assert_int_equal(a->smb1, b->smb1);
	assert_int_equal(a->netbios, b->netbios);
	assert_int_equal(fa->dialect, fb->dialect);
	assert_int_equal(fa->session_ok, fb->session_ok);
	/* However the bytes came, the observer saw the same messages. */
	assert_int_equal(x->nseen, y->nseen);
	assert_memory_equal(x->seen, y->seen, x->nseen * sizeof(x->seen[0]));
}

/* Run the current vector every way; return the one-byte outcome. */
static struct outcome run_all(const struct smb_thresholds *th)
{
	struct outcome whole = drive(th, 0, 0), bytewise = drive(th, 1, 0);
	struct outcome moved;

	assert_int_equal(whole.state, bytewise.state);
	assert_same_counts(&whole, &bytewise);
	for (int c = 0; c < SMB_NCLASSES; c++) {
		assert_int_equal(whole.st.payload_spliced[c], 0);
		/* Nothing read ahead: every eligible byte is spliced. */
		if (!bytewise.st.payloads[c][0])
			assert_int_equal(bytewise.st.payload_copied[c], 0);
	}
	for (unsigned seed = 1; seed <= 200; seed++) {
		struct outcome r = drive(th, 2, seed);

		assert_int_equal(r.state, whole.state);
		assert_same_counts(&r, &whole);
	}
	/* A handover at every cut point changes nothing: not a message,
	 * not a counter, not a byte that was spliced. */
	moved = drive(th, 3, 0);
	assert_same_counts(&moved, &bytewise);
	assert_memory_equal(&moved.st, &bytewise.st, sizeof(moved.st));
	assert_int_equal(moved.facts.max_read, bytewise.facts.max_read);
	assert_int_equal(moved.facts.max_write, bytewise.facts.max_write);
	assert_int_equal(moved.facts.max_transact, bytewise.facts.max_transact);
	assert_int_equal(moved.facts.signed_seen, bytewise.facts.signed_seen);
	assert_int_equal(moved.facts.encrypted_seen,
			 bytewise.facts.encrypted_seen);
	assert_int_equal(moved.facts.multichannel, bytewise.facts.multichannel);
	assert_int_equal(moved.facts.interface_list,
			 bytewise.facts.interface_list);
	assert_int_equal(moved.state, bytewise.state);
	assert_ptr_equal(moved.why, bytewise.why);
	assert_int_equal(moved.first_splice, bytewise.first_splice);
	for (unsigned seed = 1; seed <= 50; seed++) {
		struct outcome r = drive(th, 4, seed);

		assert_int_equal(r.state, whole.state);
		assert_ptr_equal(r.why, whole.why);
		assert_same_counts(&r, &whole);
	}
	return bytewise;
}

static void reset(void)
{
	vlen = 0;
}

/* --- the vectors ------------------------------------------------------------
 */

static void test_read_offset_80_spliced(void **state)
{
	struct outcome o;

	reset();
	read_rsp_frame(80, 100000);
	o = run_all(&th_64k);
	assert_int_not_equal(o.state, FR_OPAQUE);
	assert_int_equal(o.facts.reads, 1);
	assert_int_equal(o.facts.read_bytes, 100000);
	assert_int_equal(o.st.commands[SMB2_READ], 1);
	assert_int_equal(o.st.payloads[SMB_CLASS_READ][1], 1);
	assert_int_equal(o.st.payload_spliced[SMB_CLASS_READ], 100000);
	assert_int_equal(o.first_splice, 4 + 80);
}

/* Samba's bug14607 test: data at 88; the 8 bytes between are copied. */
static void test_read_offset_88(void **state)
{
	struct outcome o;

	reset();
	read_rsp_frame(88, 70000);
	o = run_all(&th_64k);
	assert_int_equal(o.st.payload_spliced[SMB_CLASS_READ], 70000);
	assert_int_equal(o.first_splice, 4 + 88);
}

/* The copy-limit hint: after a spliced READ payload, the next frame is
 * read only up to where its payload should start; a small frame in between
 * clears the hint; a gap before a spliced payload is read exactly. */
static void test_copy_limit_hint(void **state)
{
	struct smb_framer f;
	struct smb_dir_stats st = { 0 };
	size_t a, b;

	reset();
	read_rsp_frame(80, 70000);
	a = vlen;
	simple_frame(SMB2_ECHO, SMB2_FLAG_RESPONSE, 4);
	b = vlen;
	read_rsp_frame(88, 70000);
	smb_framer_init(&f, &th_64k, &st);
	assert_int_equal(smb_framer_copy_limit(&f), SIZE_MAX);
	smb_framer_feed(&f, vec, 84);
	assert_int_equal(smb_framer_splice_span(&f), 70000);
	smb_framer_advance(&f, 70000);
	assert_int_equal(smb_framer_copy_limit(&f), 84);
	smb_framer_feed(&f, vec + a, 10);
	assert_int_equal(smb_framer_copy_limit(&f), 74);
	smb_framer_feed(&f, vec + a + 10, b - a - 10);
	assert_int_equal(smb_framer_copy_limit(&f), SIZE_MAX); /* cleared */
	smb_framer_feed(&f, vec + b, 84);
	assert_int_equal(smb_framer_copy_limit(&f), 8); /* the gap to 88 */
	smb_framer_feed(&f, vec + b + 84, 8);
	assert_int_equal(smb_framer_splice_span(&f), 70000);
}

/* An interim STATUS_PENDING response between large READs keeps the hint
 * (Samba sends one before slow READs); a payload tail that is copied is
 * read no further than the next frame's payload. */
static void test_copy_limit_interim_and_tail(void **state)
{
	struct smb_framer f;
	struct smb_dir_stats st = { 0 };
	size_t a, b;

	reset();
	read_rsp_frame(80, 70000);
	a = vlen;
	prefix(0, 73);
	error_rsp(SMB2_READ, SMB2_FLAG_ASYNC, SMB2_STATUS_PENDING, 0);
	b = vlen;
	read_rsp_frame(80, 70000);
	smb_framer_init(&f, &th_64k, &st);
	smb_framer_feed(&f, vec, 84);
	smb_framer_advance(&f, 70000);
	smb_framer_feed(&f, vec + a, b - a); /* the interim response */
	assert_int_equal(st.interim, 1);
	assert_int_equal(smb_framer_copy_limit(&f), 84);
	smb_framer_feed(&f, vec + b, 84);
	smb_framer_advance(&f, 70000 - 100);
	/* 100 bytes of tail left, copied: read them and the next header. */
	assert_int_equal(smb_framer_splice_span(&f), 100);
	assert_int_equal(smb_framer_copy_limit(&f), 100 + 84);
}

static void test_read_thresholds(void **state)
{
	struct smb_thresholds off = { { SMB_THRESHOLD_OFF, 0, 0 } };
	struct outcome o;

	reset();
	read_rsp_frame(80, 65535);
	read_rsp_frame(80, 65536);
	read_rsp_frame(80, 65537);
	read_rsp_frame(80, 1);
	o = run_all(&th_64k);
	assert_int_equal(o.facts.reads, 4);
	assert_int_equal(o.st.payloads[SMB_CLASS_READ][0], 2);
	assert_int_equal(o.st.payloads[SMB_CLASS_READ][1], 2);
	assert_int_equal(o.st.payload_spliced[SMB_CLASS_READ], 65536 + 65537);
	assert_int_equal(o.st.payload_copied[SMB_CLASS_READ], 65535 + 1);

	o = run_all(&off);
	assert_int_equal(o.st.payload_spliced[SMB_CLASS_READ], 0);
}

static void test_interim_then_final(void **state)
{
	struct outcome o;

	reset();
	prefix(0, 73);
	error_rsp(SMB2_READ, SMB2_FLAG_ASYNC, SMB2_STATUS_PENDING, 0);
	read_rsp_frame(80, 70000);
	o = run_all(&th_64k);
	assert_int_equal(o.st.interim, 1);
	assert_int_equal(o.st.read_errors, 0);
	assert_int_equal(o.facts.reads, 1);
	assert_int_equal(o.st.commands[SMB2_READ], 2);
	assert_int_equal(o.st.payload_spliced[SMB_CLASS_READ], 70000);
}

static void test_read_error_body(void **state)
{
	struct outcome o;

	reset();
	prefix(0, 73);
	error_rsp(SMB2_READ, 0, 0xc0000011, 0); /* END_OF_FILE */
	o = run_all(&th_64k);
	assert_int_equal(o.st.read_errors, 1);
	assert_int_equal(o.facts.reads, 0);
	assert_int_not_equal(o.state, FR_OPAQUE);
}

static void test_write_requests(void **state)
{
	struct outcome o;

	reset();
	write_req_frame(112, 70000);
	write_req_frame(112, 100);
	write_req_frame(120, 65536);
	o = run_all(&th_64k);
	assert_int_equal(o.facts.writes, 3);
	assert_int_equal(o.facts.write_bytes, 70000 + 100 + 65536);
	assert_int_equal(o.st.payload_spliced[SMB_CLASS_WRITE], 70000 + 65536);
	assert_int_equal(o.st.payload_copied[SMB_CLASS_WRITE], 100);
	assert_int_equal(o.first_splice, 4 + 112);
}

/* CREATE + READ + CLOSE responses in one frame, padded to 8 bytes. */
static void test_compound_response(void **state)
{
	struct outcome o;
	size_t start;

	reset();
	prefix(0, 0); /* length patched below */
	start = vlen;
	smb2_hdr(SMB2_CREATE, SMB2_FLAG_RESPONSE, 0, 64 + 96);
	putn(0x33, 96);
	read_rsp(80, 70000, 80 + 70000);
	error_rsp(SMB2_CLOSE, SMB2_FLAG_RELATED, 0xc0000034, 0);
	vec[1] = (uint8_t)((vlen - start) >> 16);
	vec[2] = (uint8_t)((vlen - start) >> 8);
	vec[3] = (uint8_t)(vlen - start);
	o = run_all(&th_64k);
	assert_int_not_equal(o.state, FR_OPAQUE);
	assert_int_equal(o.st.commands[SMB2_CREATE], 1);
	assert_int_equal(o.st.commands[SMB2_READ], 1);
	assert_int_equal(o.st.commands[SMB2_CLOSE], 1);
	assert_int_equal(o.st.read_errors, 0); /* only READ bodies are read */
	assert_int_equal(o.st.payload_spliced[SMB_CLASS_READ], 70000);
}

/* A server that offers multichannel, or lists its interfaces, is noticed:
 * clients may connect around the proxy. Other IOCTLs are not, and an IOCTL
 * response too short for a CtlCode does not make the stream opaque. */
static void test_multichannel(void **state)
{
	struct outcome o;

	reset();
	negotiate_rsp_caps(0x0311, 0x2f);
	o = run_all(&th_64k);
	assert_true(o.facts.multichannel);
	assert_int_equal(o.st.multichannel, 1);
	assert_false(o.facts.interface_list);

	reset();
	ioctl_rsp_frame(0x00140204, 24); /* FSCTL_VALIDATE_NEGOTIATE_INFO */
	ioctl_rsp_frame(FSCTL_QUERY_NETWORK_INTERFACE_INFO, 152);
	simple_frame(SMB2_IOCTL, SMB2_FLAG_RESPONSE, 4);
	o = run_all(&th_64k);
	assert_int_not_equal(o.state, FR_OPAQUE);
	assert_true(o.facts.interface_list);
	assert_int_equal(o.st.interface_lists, 1);
	assert_int_equal(o.st.commands[SMB2_IOCTL], 3);
	assert_false(o.facts.multichannel);
}

static void test_negotiate_response(void **state)
{
	struct outcome o;
	char text[16];

	reset();
	negotiate_rsp_frame(0x0311);
	o = run_all(&th_64k);
	assert_int_equal(o.facts.dialect, 0x0311);
	assert_int_equal(o.facts.max_read, 4 << 20);
	assert_int_equal(o.facts.max_write, 2 << 20);
	assert_int_equal(o.facts.max_transact, 8 << 20);
	assert_false(o.facts.multichannel);
	smb_dialect_text(o.facts.dialect, text, sizeof(text));
	assert_string_equal(text, "3.1.1");
	smb_dialect_text(0x0210, text, sizeof(text));
	assert_string_equal(text, "2.1");
	smb_dialect_text(0, text, sizeof(text));
	assert_string_equal(text, "none");
}

static void test_transforms(void **state)
{
	struct outcome o;

	reset();
	prefix(0, 52 + 200000);
	put32(SMB_TRANSFORM_MAGIC);
	putn(0xcc, 48 + 200000);
	prefix(0, 52 + 100);
	put32(SMB_TRANSFORM_MAGIC);
	putn(0xcc, 48 + 100);
	prefix(0, 8 + 90000);
	put32(SMB_COMPRESS_MAGIC);
	putn(0xcd, 4 + 90000);
	o = run_all(&th_64k);
	assert_int_equal(o.st.encrypted, 2);
	assert_int_equal(o.st.compressed, 1);
	assert_int_equal(o.st.payload_spliced[SMB_CLASS_OTHER], 200000 + 90000);
	assert_int_equal(o.st.payload_copied[SMB_CLASS_OTHER], 100);
	assert_int_equal(o.first_splice, 4 + 52);
}

static void test_smb1_negotiate_then_smb2(void **state)
{
	struct outcome o;

	reset();
	prefix(0, 4 + 30);
	put32(SMB1_MAGIC);
	putn(0x72, 30);
	simple_frame(SMB2_ECHO, 0, 4);
	o = run_all(&th_64k);
	assert_int_equal(o.st.smb1, 1);
	assert_int_equal(o.st.commands[SMB2_ECHO], 1);
	assert_int_not_equal(o.state, FR_OPAQUE);
}

/* Port 139: session request, positive response, keepalive, then SMB2 in
 * NetBIOS messages, one of them with the 17th length bit set. */
static void test_netbios(void **state)
{
	struct outcome o;

	reset();
	prefix(NBT_SESSION_REQUEST, 68);
	putn(0x20, 68);
	prefix(NBT_POSITIVE_RESPONSE, 0);
	prefix(NBT_KEEPALIVE, 0);
	read_rsp_frame(80, 0x10000 - 80 + 16); /* body 0x10010: bit 16 set */
	simple_frame(SMB2_ECHO, SMB2_FLAG_RESPONSE, 4);
	o = run_all(&th_64k);
	assert_int_equal(o.st.netbios, 3); /* empty control frames count too */
	assert_int_equal(o.facts.reads, 1);
	assert_int_equal(o.st.commands[SMB2_ECHO], 1);
	assert_int_not_equal(o.state, FR_OPAQUE);
}

/* The observer is told of every message once, with where it lies in the
 * stream and its header's fields: a compound response, an interim and a
 * final async response, a NetBIOS keepalive and an encrypted frame. */
static void test_observer(void **state)
{
	struct outcome o;
	size_t start, second, interim, enc;

	reset();
	prefix(0, 0); /* length patched below */
	start = vlen;
	smb2_hdr(SMB2_CREATE, SMB2_FLAG_RESPONSE, 0, 64 + 96);
	putn(0x33, 96);
	second = vlen;
	read_rsp(80, 70000, 0);
	vec[1] = (uint8_t)((vlen - start) >> 16);
	vec[2] = (uint8_t)((vlen - start) >> 8);
	vec[3] = (uint8_t)(vlen - start);
	prefix(NBT_KEEPALIVE, 0);
	interim = vlen;
	prefix(0, 64 + 9);
	error_rsp(SMB2_READ, SMB2_FLAG_ASYNC, SMB2_STATUS_PENDING, 0);
	set_le32(interim + 4 + 32, 0xabc); /* AsyncId */
	enc = vlen;
	prefix(0, 52 + 100);
	put32(SMB_TRANSFORM_MAGIC);
	putn(0xcc, 48 + 100);
	o = run_all(&th_64k);
	assert_int_equal(o.nseen, 4);
	assert_int_equal(o.seen[0].kind, SMB_MSG_SMB2);
	assert_int_equal(o.seen[0].command, SMB2_CREATE);
	assert_int_equal(o.seen[0].frame_off, 0);
	assert_int_equal(o.seen[0].start, 0);
	assert_int_equal(o.seen[0].end, 160);
	assert_int_equal(o.seen[0].message_id, 7);
	assert_int_equal(o.seen[1].command, SMB2_READ);
	assert_int_equal(o.seen[1].start, second - start);
	assert_int_equal(o.seen[1].pay_start, second - start + 80);
	assert_int_equal(o.seen[1].pay_end, second - start + 80 + 70000);
	assert_int_equal(o.seen[1].hdr_len, SMB2_READ_RSP_DATA_LENGTH + 4);
	/* The keepalive has no length, so nothing is planned for it. */
	assert_int_equal(o.seen[2].frame_off, interim);
	assert_int_equal(o.seen[2].status, SMB2_STATUS_PENDING);
	assert_int_equal(o.seen[2].flags, SMB2_FLAG_RESPONSE | SMB2_FLAG_ASYNC);
	assert_int_equal(o.seen[2].async_id, 0xabc);
	assert_int_equal(o.seen[3].kind, SMB_MSG_ENCRYPTED);
	assert_int_equal(o.seen[3].frame_off, enc);
	assert_int_equal(o.seen[3].hdr_len, SMB2_TRANSFORM_HDR_LEN);
}

static void test_zero_length_frames_and_many_messages(void **state)
{
	struct outcome o;

	reset();
	for (int i = 0; i < 50; i++) {
		prefix(0, 0);
		simple_frame(i % SMB2_READ, i & 1, (size_t)i * 3);
	}
	o = run_all(&th_64k);
	assert_int_not_equal(o.state, FR_OPAQUE);
	assert_int_equal(o.st.commands[SMB2_NEGOTIATE], 7);
	assert_int_equal(o.st.commands[SMB2_FLUSH], 6);
}

static void test_signed_flag(void **state)
{
	struct outcome o;

	reset();
	simple_frame(SMB2_ECHO, SMB2_FLAG_SIGNED, 4);
	o = run_all(&th_64k);
	assert_true(o.facts.signed_seen);
}

/* --- bad input: opaque for good, never a read past the frame ---------------
 */

static void expect_opaque(const char *needle)
{
	struct outcome o = run_all(&th_64k);

	assert_int_equal(o.state, FR_OPAQUE);
	assert_non_null(o.why);
	assert_non_null(strstr(o.why, needle));
}

static void test_bad_type_byte(void **state)
{
	reset();
	prefix(0x42, 10);
	putn(0, 10);
	expect_opaque("transport");
}

static void test_truncated_frame(void **state)
{
	reset();
	prefix(0, 2);
	putn(0, 2);
	expect_opaque("too short");
}

static void test_header_past_frame(void **state)
{
	reset();
	prefix(0, 40);
	put32(SMB2_MAGIC);
	putn(0, 36);
	expect_opaque("does not fit");
}

static void test_unknown_protocol(void **state)
{
	reset();
	prefix(0, 64);
	put32(0x12345678);
	putn(0, 60);
	expect_opaque("unknown protocol id");
}

static void test_bad_structure_size(void **state)
{
	reset();
	simple_frame(SMB2_ECHO, 0, 4);
	vec[4 + 4] = 65;
	expect_opaque("StructureSize");
}

static void test_read_length_past_frame(void **state)
{
	reset();
	read_rsp_frame(80, 1000);
	set_le32(4 + 68, 1001); /* DataLength one past the frame */
	expect_opaque("past the end");
}

static void test_read_huge_length(void **state)
{
	reset();
	read_rsp_frame(80, 1000);
	set_le32(4 + 68, 0xffffffff);
	expect_opaque("past the end");
}

static void test_read_offset_inside_header(void **state)
{
	reset();
	read_rsp_frame(80, 1000);
	vec[4 + 66] = 64;
	expect_opaque("inside the header");
}

static void test_read_offset_past_frame(void **state)
{
	reset();
	read_rsp_frame(80, 1000);
	vec[4 + 66] = 250; /* 250 + 1000 > 1080 */
	expect_opaque("past the end");
}

static void test_write_offset_inside_header(void **state)
{
	reset();
	write_req_frame(112, 1000);
	vec[4 + 66] = 100;
	expect_opaque("inside the header");
}

static void test_next_command_past_frame(void **state)
{
	reset();
	prefix(0, 64 + 8);
	smb2_hdr(SMB2_ECHO, 0, 0, 4096);
	putn(0, 8);
	expect_opaque("NextCommand");
}

static void test_next_command_misaligned(void **state)
{
	reset();
	prefix(0, 64 + 8 + 64 + 4);
	smb2_hdr(SMB2_ECHO, 0, 0, 68);
	putn(0, 4);
	smb2_hdr(SMB2_ECHO, 0, 0, 0);
	putn(0, 4);
	expect_opaque("NextCommand");
}

static void test_next_command_leaves_no_room(void **state)
{
	reset();
	prefix(0, 64 + 8 + 16);
	smb2_hdr(SMB2_ECHO, 0, 0, 72);
	putn(0, 8 + 16);
	expect_opaque("no room");
}

static void test_read_body_too_short(void **state)
{
	reset();
	prefix(0, 64 + 4);
	smb2_hdr(SMB2_READ, SMB2_FLAG_RESPONSE, 0, 0);
	putn(0, 4);
	expect_opaque("shorter than its fixed body");
}

/* After going opaque the framer takes everything and never splices. */
static void test_opaque_is_final(void **state)
{
	struct smb_framer f;
	struct smb_dir_stats st = { 0 };
	uint8_t junk[100] = { 0x42 };

	reset();
	smb_framer_init(&f, &th_64k, &st);
	smb_framer_feed(&f, junk, sizeof(junk));
	assert_true(smb_framer_opaque(&f));
	read_rsp_frame(80, 100000);
	smb_framer_feed(&f, vec, vlen);
	assert_true(smb_framer_opaque(&f));
	assert_int_equal(smb_framer_splice_span(&f), 0);
	assert_int_equal(f.facts.reads, 0);
}

/* The cork rule's input: more of a message is due between its first byte
 * and its last, and not at a boundary. */
static void test_mid_message(void **state)
{
	struct smb_framer f;
	struct smb_dir_stats st = { 0 };

	reset();
	simple_frame(SMB2_ECHO, 0, 4);
	smb_framer_init(&f, &th_64k, &st);
	assert_false(smb_framer_mid_message(&f));
	smb_framer_feed(&f, vec, 2);
	assert_true(smb_framer_mid_message(&f));
	smb_framer_feed(&f, vec + 2, vlen - 3);
	assert_true(smb_framer_mid_message(&f));
	smb_framer_feed(&f, vec + vlen - 1, 1);
	assert_false(smb_framer_mid_message(&f));
}

/* What a trace record may keep of each message: SESSION_SETUP (both ways)
 * and SMB1 to their header, IOCTL to its fixed fields, compressed frames
 * to their transform header, the rest whole; never past the message. */
static void test_storable(void **state)
{
	struct smb_msg m = { .kind = SMB_MSG_SMB2, .start = 0, .end = 600 };

	(void)state;
	m.command = SMB2_SESSION_SETUP;
	assert_int_equal(smb_msg_storable(&m), SMB2_HDR_LEN);
	m.flags = SMB2_FLAG_RESPONSE;
	assert_int_equal(smb_msg_storable(&m), SMB2_HDR_LEN);
	m.command = SMB2_IOCTL;
	assert_int_equal(smb_msg_storable(&m), SMB2_HDR_LEN + 48);
	m.flags = 0;
	assert_int_equal(smb_msg_storable(&m), SMB2_HDR_LEN + 56);
	m.command = SMB2_TREE_CONNECT;
	assert_int_equal(smb_msg_storable(&m), 600);
	m.start = 120; /* a compound's second element */
	assert_int_equal(smb_msg_storable(&m), 480);
	m.command = SMB2_SESSION_SETUP;
	assert_int_equal(smb_msg_storable(&m), SMB2_HDR_LEN);
	m.end = 150; /* shorter than the header: never past the message */
	assert_int_equal(smb_msg_storable(&m), 30);
	m = (struct smb_msg){ .kind = SMB_MSG_SMB1, .end = 200 };
	assert_int_equal(smb_msg_storable(&m), SMB1_HDR_LEN);
	m.kind = SMB_MSG_COMPRESSED;
	assert_int_equal(smb_msg_storable(&m), SMB2_COMPRESS_HDR_LEN);
	m.kind = SMB_MSG_ENCRYPTED;
	assert_int_equal(smb_msg_storable(&m), 200);
}

/* --- authentication and the first frame ----------------------------------- */

#define STATUS_MORE_PROCESSING 0xc0000016u
#define STATUS_LOGON_FAILURE   0xc000006du

/* A SESSION_SETUP response with @status: header and a 9-byte body. */
/* A SESSION_SETUP response with header @flags and @sflags SessionFlags. */
static void session_setup_rsp_flags(uint32_t status, uint32_t flags,
				    uint16_t sflags)
{
	prefix(0, 64 + 9);
	smb2_hdr(SMB2_SESSION_SETUP, flags, status, 0);
	put16(9);
	put16(sflags); /* SessionFlags */
	put16(72);
	put16(0);
	put8(0);
}

/* One as a server sends it: a success is signed (a keyed session). */
static void session_setup_rsp_frame(uint32_t status)
{
	session_setup_rsp_flags(
		status, SMB2_FLAG_RESPONSE | (status ? 0 : SMB2_FLAG_SIGNED),
		0);
}

/* Only a successful SESSION_SETUP response authenticates: not an
 * intermediate or failed one, nor a request (whose Status is 0). */
static void test_session_setup_success(void **state)
{
	reset();
	negotiate_rsp_frame(0x311);
	simple_frame(SMB2_SESSION_SETUP, 0, 25); /* a request, Status 0 */
	session_setup_rsp_frame(STATUS_MORE_PROCESSING);
	session_setup_rsp_frame(STATUS_LOGON_FAILURE);
	simple_frame(SMB2_ECHO, SMB2_FLAG_RESPONSE, 4); /* success, not SS */
	assert_false(run_all(&th_64k).facts.session_ok);

	session_setup_rsp_frame(0);
	assert_true(run_all(&th_64k).facts.session_ok);
}

/* A guest or a null (anonymous) session is granted to anyone: it does
 * not authenticate, and neither does a success too short to say which. */
static void test_session_setup_guest_null(void **state)
{
	struct outcome o;

	reset();
	session_setup_rsp_flags(0, SMB2_FLAG_RESPONSE, 0x1); /* IS_GUEST */
	session_setup_rsp_flags(0, SMB2_FLAG_RESPONSE | SMB2_FLAG_SIGNED, 0x2);
	session_setup_rsp_flags(0, SMB2_FLAG_RESPONSE, 0x3);
	prefix(0, 64 + 2); /* StructureSize only, no SessionFlags */
	smb2_hdr(SMB2_SESSION_SETUP, SMB2_FLAG_RESPONSE, 0, 0);
	put16(9);
	o = run_all(&th_64k);
	assert_false(o.facts.session_ok);
	assert_int_not_equal(o.state, FR_OPAQUE);
	assert_int_equal(o.st.commands[SMB2_SESSION_SETUP], 4);

	/* ENCRYPT_DATA (0x4) is a real user's session; before 3.1.1 (here
	 * no NEGOTIATE was seen) its response need not be signed. */
	session_setup_rsp_flags(0, SMB2_FLAG_RESPONSE, 0x4);
	assert_true(run_all(&th_64k).facts.session_ok);
}

/* Samba's anonymous NTLMSSP login under 3.1.1: SessionFlags 0, but no
 * key, so unsigned; 3.0 may leave a real login's response unsigned. */
static void test_session_setup_unsigned(void **state)
{
	reset();
	negotiate_rsp_frame(0x311);
	session_setup_rsp_flags(0, SMB2_FLAG_RESPONSE, 0);
	assert_false(run_all(&th_64k).facts.session_ok);
	session_setup_rsp_flags(0, SMB2_FLAG_RESPONSE | SMB2_FLAG_SIGNED, 0);
	assert_true(run_all(&th_64k).facts.session_ok);

	reset();
	negotiate_rsp_frame(0x300);
	session_setup_rsp_flags(0, SMB2_FLAG_RESPONSE, 0);
	assert_true(run_all(&th_64k).facts.session_ok);
}

/* Authenticated for good: an encrypted stream or a failed later session
 * setup (a re-authentication, a binding) changes nothing. */
static void test_session_ok_stays(void **state)
{
	struct outcome o;

	reset();
	session_setup_rsp_frame(0);
	prefix(0, 52 + 100);
	put32(SMB_TRANSFORM_MAGIC);
	putn(0x5a, 48 + 100);
	session_setup_rsp_frame(STATUS_LOGON_FAILURE);
	o = run_all(&th_64k);
	assert_true(o.facts.session_ok);
	assert_int_equal(o.st.encrypted, 1);
	assert_int_not_equal(o.state, FR_OPAQUE);
}

/* --- anonymous logins: the request's NTLMSSP AUTHENTICATE -------------- */

/* A security buffer under construction, apart from vec[]. */
static uint8_t blob[1024];
static uint32_t blen;

static void bput(const void *p, uint32_t n)
{
	assert_true(n <= sizeof(blob) - blen);
	if (n) /* memcpy() takes no NULL, even for nothing */
		memcpy(blob + blen, p, n);
	blen += n;
}

static void bput16(uint16_t v)
{
	uint8_t b[2] = { v & 0xff, v >> 8 };

	bput(b, 2);
}

/* A raw NTLMSSP AUTHENTICATE (MS-NLMP 2.2.1.3) with these field lengths,
 * each field's bytes after the 64-byte fixed part (0xcc: not to be read). */
static void ntlmssp_auth_msg(uint16_t lm, uint16_t nt, uint16_t user,
			     uint32_t type)
{
	static const uint8_t zero[8];
	const uint16_t lens[6] = { lm, nt, 6 /* domain */, user, 4, 16 };
	uint32_t at = 64, start = blen;

	bput("NTLMSSP", 8);
	bput16((uint16_t)type);
	bput16(0);
	for (int i = 0; i < 6; i++) {
		bput16(lens[i]);
		bput16(lens[i]);
		bput16((uint16_t)at);
		bput16(0);
		at += lens[i];
	}
	bput("\x15\x82\x08\x62", 4); /* NegotiateFlags */
	bput(zero, 4);
	while (blen < start + at)
		bput("\xcc", 1);
}

/* A DER tag and length, in the long form with @long_len bytes if set (or
 * if the length needs it: two bytes). */
static void der(uint8_t tag, uint32_t len, int long_len)
{
	uint8_t b[6];
	int k = 0;

	b[k++] = tag;
	if (!long_len && len >= 0x80)
		long_len = 2;
	if (!long_len) {
		b[k++] = (uint8_t)len;
	} else {
		b[k++] = DER_LEN_LONG | long_len;
		for (int i = long_len - 1; i >= 0; i--)
			b[k++] = (uint8_t)(len >> (8 * i));
	}
	bput(b, (uint32_t)k);
}

/* Wrap blob[from..blen) as a negTokenResp's responseToken, after @pre
 * (other fields of the SEQUENCE, already DER) of @pre_len bytes. */
static void spnego_wrap(uint32_t from, const uint8_t *pre, uint32_t pre_len,
			int long_len)
{
	uint8_t tok[sizeof(blob)];
	uint32_t n = blen - from, hl;

	if (!long_len && n + pre_len + 8 >= 0x80)
		long_len = 2; /* DER's short form ends at 127 */
	hl = long_len ? 2 + long_len : 2;
	uint32_t seq = pre_len + 2 * hl + n;

	memcpy(tok, blob + from, n);
	blen = from;
	der(SPNEGO_NEG_TOKEN_RESP, seq + hl, long_len);
	der(DER_SEQUENCE, seq, long_len);
	bput(pre, pre_len);
	der(SPNEGO_RESPONSE_TOKEN, hl + n, long_len);
	der(DER_OCTET_STRING, n, long_len);
	bput(tok, n);
}

static enum smb_login judge_blob(void)
{
	uint32_t n = blen < SMB2_SESS_REQ_WINDOW ? blen : SMB2_SESS_REQ_WINDOW;

	return smb_login_blob(blob, n, n == blen);
}

/* negState accept-incomplete, supportedMech NTLMSSP: what a client may
 * send before its responseToken, in DER order. */
static const uint8_t neg_fields[] = {
	0xa0, 0x03, 0x0a, 0x01, 0x01, 0xa1, 0x0c, 0x06, 0x0a, 0x2b,
	0x06, 0x01, 0x04, 0x01, 0x82, 0x37, 0x02, 0x02, 0x0a,
};

/* smbclient -N's last leg through Samba 4.17 (SMB 3.0), as captured, and
 * its first try, which names the Unix user with no NT response. */
static const char samba_anon_hex[] =
	"a16e306ca26a04684e544c4d5353500003000000000000005800000000000000"
	"580000000000000058000000000000005800000000000000580000001000100058"
	"000000158a0062060100000000000f995d1a714fed955c2ce3bfd80a2ef7c418cb"
	"82be6d3a51419baa6a781d273a57";
static const char samba_named_hex[] =
	"a181a33081a0a281890481864e544c4d5353500003000000000000005800000000"
	"000000580000001200120058000000080008006a0000000400040072000000100010"
	"007600000015820062060100000000000f664981d07149bfb50b372b721c1b705b";

static void blob_hex(const char *hex)
{
	blen = 0;
	for (; hex[0] && hex[1]; hex += 2) {
		unsigned v;

		sscanf(hex, "%2x", &v);
		blob[blen++] = (uint8_t)v;
	}
}

/* The window's verdicts: raw and in SPNEGO, short and long DER lengths,
 * with fields before the token; an NT response or an LM one longer than
 * Z(1) is a named login; a user name without either is not (Samba takes
 * a name of NULs as empty, and no credential goes without a response);
 * anything else is not NTLMSSP's. */
static void test_login_blob(void **state)
{
	blob_hex(samba_anon_hex);
	assert_int_equal(judge_blob(), SMB_LOGIN_ANONYMOUS);
	blob_hex(samba_named_hex); /* a name, no response: Samba refuses it */
	assert_int_equal(judge_blob(), SMB_LOGIN_ANONYMOUS);

	for (int wrap = 0; wrap < 4; wrap++) {
		static const struct {
			uint16_t lm, nt, user;
			enum smb_login want;
		} c[] = {
			{ 0, 0, 0, SMB_LOGIN_ANONYMOUS },
			{ 1, 0, 0, SMB_LOGIN_ANONYMOUS },
			{ 24, 0, 0, SMB_LOGIN_NAMED },
			{ 0, 0, 8, SMB_LOGIN_ANONYMOUS },
			{ 0, 24, 0, SMB_LOGIN_NAMED },
			{ 24, 300, 8, SMB_LOGIN_NAMED },
		};

		for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
			blen = 0;
			ntlmssp_auth_msg(c[i].lm, c[i].nt, c[i].user, 3);
			if (wrap == 1)
				spnego_wrap(0, NULL, 0, 0);
			else if (wrap == 2)
				spnego_wrap(0, neg_fields, sizeof(neg_fields),
					    2);
			else if (wrap == 3)
				spnego_wrap(0, neg_fields, sizeof(neg_fields),
					    4);
			assert_int_equal(judge_blob(), c[i].want);
		}
	}
}

/* Two responseTokens in one negTokenResp, a named one first: Samba takes
 * the last, so what follows a named token beyond a mechListMIC's worth
 * is a token hidden from the window. A named token with a MIC after it
 * is named. */
static void test_login_two_tokens(void **state)
{
	static const uint8_t mic[] = { 0xa3, 0x12, 0x04, 0x10, 1,  2, 3,
				       4,    5,	   6,	 7,    8,  9, 10,
				       11,   12,   13,	 14,   15, 16 };
	uint8_t named[256], anon[256];
	uint32_t nl, al;

	(void)state;
	blen = 0;
	ntlmssp_auth_msg(0, 24, 8, 3);
	nl = blen;
	memcpy(named, blob, nl);
	blen = 0;
	ntlmssp_auth_msg(0, 0, 0, 3);
	al = blen;
	memcpy(anon, blob, al);

	blen = 0;
	der(SPNEGO_NEG_TOKEN_RESP, 2 * 3 + (nl + 6) + (al + 6), 1);
	der(DER_SEQUENCE, (nl + 6) + (al + 6), 1);
	der(SPNEGO_RESPONSE_TOKEN, nl + 3, 1);
	der(DER_OCTET_STRING, nl, 1);
	bput(named, nl);
	der(SPNEGO_RESPONSE_TOKEN, al + 3, 1);
	der(DER_OCTET_STRING, al, 1);
	bput(anon, al);
	assert_int_equal(judge_blob(), SMB_LOGIN_HIDDEN);

	blen = 0;
	der(SPNEGO_NEG_TOKEN_RESP, 3 + (nl + 6) + sizeof(mic), 1);
	der(DER_SEQUENCE, (nl + 6) + sizeof(mic), 1);
	der(SPNEGO_RESPONSE_TOKEN, nl + 3, 1);
	der(DER_OCTET_STRING, nl, 1);
	bput(named, nl);
	bput(mic, sizeof(mic));
	assert_int_equal(judge_blob(), SMB_LOGIN_NAMED);
}

/* What is not an NTLMSSP AUTHENTICATE is left to the server's flags. */
static void test_login_blob_other(void **state)
{
	/* NEGOTIATE and CHALLENGE legs are not logins. */
	blen = 0;
	ntlmssp_auth_msg(0, 0, 0, 1);
	assert_int_equal(judge_blob(), SMB_LOGIN_OTHER);
	spnego_wrap(0, NULL, 0, 0);
	assert_int_equal(judge_blob(), SMB_LOGIN_OTHER);
	/* Another mechanism's token (NegoEx), or Kerberos' negTokenInit. */
	blen = 0;
	bput("NEGOEXTS", 8);
	bput("\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0",
	     30);
	spnego_wrap(0, NULL, 0, 0);
	assert_int_equal(judge_blob(), SMB_LOGIN_OTHER);
	blob_hex("6082012c06062b0601050502a0820120");
	assert_int_equal(judge_blob(), SMB_LOGIN_OTHER);
}

/* A token the window cannot reach in a buffer longer than the window. */
static void test_login_blob_hidden(void **state)
{
	/* A 128-byte supportedMech (Samba 4.17 let such a client in, see
	 * test_preauth.py), or a mechListMIC first: the token is past the
	 * window, hidden, never a login. */
	static const uint8_t tags[][2] = { { 0xa1, DER_OBJECT_ID },
					   { 0xa3, DER_OCTET_STRING } };
	uint8_t pre[6 + 128];

	for (size_t i = 0; i < 2; i++) {
		memcpy(pre,
		       (uint8_t[]){ tags[i][0], 0x81, 0x83, tags[i][1], 0x81,
				    0x80 },
		       6);
		memset(pre + 6, 0x2b, 128);
		blen = 0;
		ntlmssp_auth_msg(0, 0, 0, 3);
		spnego_wrap(0, pre, sizeof(pre), 2);
		assert_true(blen > SMB2_SESS_REQ_WINDOW);
		assert_int_equal(judge_blob(), SMB_LOGIN_HIDDEN);
		/* A named login hidden so is taken as anonymous too. */
		blen = 0;
		ntlmssp_auth_msg(24, 300, 8, 3);
		spnego_wrap(0, pre, sizeof(pre), 2);
		assert_int_equal(judge_blob(), SMB_LOGIN_HIDDEN);
	}
	/* Token inside the window, its fixed fields cut by the window. */
	blen = 0;
	ntlmssp_auth_msg(0, 0, 0, 3);
	memset(pre, 0, 70);
	pre[0] = 0xa1, pre[1] = 68;
	spnego_wrap(0, pre, 70, 0);
	assert_int_equal(judge_blob(), SMB_LOGIN_HIDDEN);
	/* A length no DER writes: 0x80 (indefinite), 0x85 (five bytes). */
	blob_hex("a18030");
	blen = SMB2_SESS_REQ_WINDOW, memset(blob + 3, 0, blen - 3);
	blob[4] = 0xa3, blob[5] = 0x85;
	assert_int_equal(smb_login_blob(blob, blen, false), SMB_LOGIN_HIDDEN);
}

/* Truncated or garbage, with the whole buffer seen: what the server
 * refuses is nobody's login, and no input reads outside the window
 * (run under the sanitizers). */
static void test_login_blob_truncated(void **state)
{
	blen = 0;
	ntlmssp_auth_msg(0, 0, 0, 3);
	for (uint32_t n = 0; n < NTLMSSP_AUTH_PARSED; n++)
		assert_int_equal(smb_login_blob(blob, n, true),
				 SMB_LOGIN_OTHER);
	spnego_wrap(0, NULL, 0, 0);
	for (uint32_t n = 0; n < 4 + NTLMSSP_AUTH_PARSED; n++)
		assert_int_equal(smb_login_blob(blob, n, true),
				 SMB_LOGIN_OTHER);
	blob_hex("a1053003a20104");
	assert_int_equal(judge_blob(), SMB_LOGIN_OTHER);
	blob_hex("a10530030a0104ffffffffffff");
	assert_int_equal(judge_blob(), SMB_LOGIN_OTHER);
	srand(7);
	for (int i = 0; i < 20000; i++) {
		blen = 1 + (uint32_t)rand() % SMB2_SESS_REQ_WINDOW;
		for (uint32_t j = 0; j < blen; j++)
			blob[j] = (uint8_t)rand();
		blob[0] = i % 2 ? SPNEGO_NEG_TOKEN_RESP : blob[0];
		(void)smb_login_blob(blob, blen, i % 3 == 0);
	}
}

/* A SESSION_SETUP request with MessageId @mid carrying blob[0..blen). */
static void session_setup_req_frame(uint64_t mid)
{
	prefix(0, 64 + 24 + blen);
	smb2_hdr(SMB2_SESSION_SETUP, 0, 0, 0);
	for (int i = 0; i < 8; i++)
		vec[vlen - 40 + i] = (uint8_t)(mid >> (8 * i));
	put16(25);
	put8(0);
	put8(1); /* SecurityMode */
	put32(1);
	put32(0);
	put16(88);
	put16((uint16_t)blen);
	put64(0);
	memcpy(vec + vlen, blob, blen);
	vlen += blen;
}

/* A response to @mid: @status, SessionFlags 0, unsigned (SMB 3.0). */
static void session_setup_rsp_mid(uint64_t mid, uint32_t status, uint32_t flags)
{
	session_setup_rsp_flags(status, SMB2_FLAG_RESPONSE | flags, 0);
	for (int i = 0; i < 8; i++)
		vec[vlen - 9 - 40 + i] = (uint8_t)(mid >> (8 * i));
}

static void anon_blob(void)
{
	blen = 0;
	ntlmssp_auth_msg(0, 0, 0, 3);
	spnego_wrap(0, neg_fields, sizeof(neg_fields), 0);
}

static void named_blob(void)
{
	blen = 0;
	ntlmssp_auth_msg(24, 300, 8, 3);
	spnego_wrap(0, NULL, 0, 2);
}

/* Before 3.1.1 Samba answers an anonymous NTLMSSP login with a success
 * whose SessionFlags are 0: its request says anonymous, and it is no
 * login. A later real login on the connection, pipelined or not, is. */
static void test_session_setup_anonymous_request(void **state)
{
	struct outcome o;

	reset();
	negotiate_rsp_frame(0x300);
	anon_blob();
	session_setup_req_frame(2);
	session_setup_rsp_mid(2, 0, 0);
	o = run_all(&th_64k);
	assert_false(o.facts.session_ok);
	assert_int_not_equal(o.state, FR_OPAQUE);
	/* The observer is shown the fixed body only: the buffer is wiped. */
	assert_int_equal(o.seen[1].command, SMB2_SESSION_SETUP);
	assert_int_equal(o.seen[1].hdr_len, SMB2_SESS_REQ_FIXED);
	/* Signed, which no anonymous session can be: its request wins. */
	session_setup_req_frame(3);
	session_setup_rsp_mid(3, 0, SMB2_FLAG_SIGNED);
	assert_false(run_all(&th_64k).facts.session_ok);

	/* Pipelined: anonymous 5 and named 6 sent, answered 5 then 6. */
	anon_blob();
	session_setup_req_frame(5);
	named_blob();
	session_setup_req_frame(6);
	session_setup_rsp_mid(5, 0, 0);
	assert_false(run_all(&th_64k).facts.session_ok);
	session_setup_rsp_mid(6, 0, 0);
	assert_true(run_all(&th_64k).facts.session_ok);

	/* Answered the other way round; an interim response first. */
	reset();
	anon_blob();
	session_setup_req_frame(8);
	named_blob();
	session_setup_req_frame(9);
	session_setup_rsp_mid(8, SMB2_STATUS_PENDING, SMB2_FLAG_ASYNC);
	session_setup_rsp_mid(8, 0, 0);
	assert_false(run_all(&th_64k).facts.session_ok);
	session_setup_rsp_mid(9, 0, 0);
	assert_true(run_all(&th_64k).facts.session_ok);

	/* A named login that failed, then an anonymous one on the same
	 * MessageId space: only the anonymous success, no login. */
	reset();
	named_blob();
	session_setup_req_frame(2);
	session_setup_rsp_mid(2, STATUS_LOGON_FAILURE, 0);
	anon_blob();
	session_setup_req_frame(4);
	session_setup_rsp_mid(4, 0, 0);
	assert_false(run_all(&th_64k).facts.session_ok);
}

/* More anonymous requests pending than the ledger holds: the connection
 * stops counting logins at all, rather than forget one. */
static void test_session_setup_anonymous_flood(void **state)
{
	reset();
	anon_blob();
	for (uint64_t mid = 10; mid < 10 + SMB_ANON_PENDING; mid++)
		session_setup_req_frame(mid);
	named_blob();
	session_setup_req_frame(20);
	session_setup_rsp_mid(20, 0, 0);
	assert_true(run_all(&th_64k).facts.session_ok);

	reset();
	anon_blob();
	for (uint64_t mid = 10; mid <= 10 + SMB_ANON_PENDING; mid++)
		session_setup_req_frame(mid);
	named_blob();
	session_setup_req_frame(20);
	session_setup_rsp_mid(20, 0, 0);
	assert_false(run_all(&th_64k).facts.session_ok);
}

/* Paired as the proxy pairs them: the client's framer notes, the
 * server's decides; a client stream gone opaque vouches for nothing. */
static void test_session_setup_paired(void **state)
{
	struct smb_dir_stats st = { 0 };
	struct smb_framer up, down;
	size_t req_len;

	for (int opaque = 0; opaque < 2; opaque++) {
		smb_framer_init(&up, &th_64k, &st);
		smb_framer_init(&down, &th_64k, &st);
		smb_framer_pair(&down, &up);
		reset();
		anon_blob();
		session_setup_req_frame(2);
		if (opaque)
			put32(0x00ffffff); /* no SMB server reads this */
		req_len = vlen;
		session_setup_rsp_mid(2, 0, 0);
		smb_framer_feed(&up, vec, req_len);
		assert_int_equal(smb_framer_opaque(&up), opaque);
		smb_framer_feed(&down, vec + req_len, vlen - req_len);
		assert_false(down.facts.session_ok);
		assert_false(up.facts.session_ok);
		assert_int_equal(up.anon.n, 0); /* answered */
		/* A named login's success: a login, unless the client's
		 * stream went unread. */
		reset();
		named_blob();
		session_setup_req_frame(3);
		smb_framer_feed(&up, vec, vlen);
		reset();
		session_setup_rsp_mid(3, 0, 0);
		smb_framer_feed(&down, vec, vlen);
		assert_int_equal(down.facts.session_ok, !opaque);
	}
}

/* An SMB1 header: protocol id, command, status, flags, the rest zero. */
static void smb1_frame(uint8_t cmd, uint32_t status, uint8_t flags, size_t body)
{
	prefix(0, SMB1_HDR_LEN + body);
	put32(SMB1_MAGIC);
	put8(cmd);
	put32(status);
	put8(flags);
	putn(0, SMB1_HDR_LEN - 10 + body);
}

/* An SMB1 SESSION_SETUP_ANDX success reply, WordCount 4, with @action. */
static void smb1_ss_reply(uint16_t action)
{
	prefix(0, SMB1_HDR_LEN + 1 + 8 + 2 + 10);
	put32(SMB1_MAGIC);
	put8(SMB1_COM_SESSION_SETUP_ANDX);
	put32(0);
	put8(SMB1_FLAGS_REPLY);
	putn(0, SMB1_HDR_LEN - 10);
	put8(4);	 /* WordCount */
	put32(0x0000ff); /* AndXCommand none, reserved, offset */
	put16(action);
	put16(0);  /* SecurityBlobLength */
	put16(10); /* ByteCount */
	putn(0, 10);
}

/* A session carried in SMB1 authenticates with SESSION_SETUP_ANDX. */
static void test_smb1_session_setup(void **state)
{
	struct outcome o;

	reset();
	smb1_frame(SMB1_COM_NEGOTIATE, 0, SMB1_FLAGS_REPLY, 40);
	smb1_frame(SMB1_COM_SESSION_SETUP_ANDX, 0, 0, 20); /* request */
	smb1_frame(SMB1_COM_SESSION_SETUP_ANDX, STATUS_MORE_PROCESSING,
		   SMB1_FLAGS_REPLY, 20);
	o = run_all(&th_64k);
	assert_false(o.facts.session_ok);
	assert_int_equal(o.st.smb1, 3);
	assert_int_not_equal(o.state, FR_OPAQUE);

	/* A success whose Action says guest is not a login. */
	smb1_ss_reply(SMB1_ACTION_GUEST);
	/* Nor one too short for its Action word. */
	smb1_frame(SMB1_COM_SESSION_SETUP_ANDX, 0, SMB1_FLAGS_REPLY, 3);
	o = run_all(&th_64k);
	assert_false(o.facts.session_ok);
	assert_int_not_equal(o.state, FR_OPAQUE);

	smb1_ss_reply(0);
	o = run_all(&th_64k);
	assert_true(o.facts.session_ok);
	/* What the observer is shown of an SMB1 frame: its parsed header. */
	assert_int_equal(o.seen[0].kind, SMB_MSG_SMB1);
	assert_int_equal(o.seen[0].hdr_len, SMB1_HDR_PARSED);
}

/* smb_opening_judge() on vec[0..vlen), fed as it would arrive: every
 * shorter prefix of the stream must say MORE, and ask for no more than
 * the frame. Return: the verdict on the whole, and its complaint. */
static enum smb_opening judge(const char **why)
{
	size_t need = 0;

	for (size_t n = 0; n < vlen; n++) {
		enum smb_opening v = smb_opening_judge(vec, n, &need, why);

		if (v == SMB_OPENING_BAD)
			return v; /* refused as soon as the prefix said so */
		assert_int_equal(v, SMB_OPENING_MORE);
		assert_true(need > n && need <= vlen);
	}
	*why = NULL;
	return smb_opening_judge(vec, vlen, &need, why);
}

/* An SMB2 NEGOTIATE request with @dialects dialects. */
static void negotiate_req_frame(unsigned dialects)
{
	prefix(0, 64 + 36 + 2 * dialects);
	smb2_hdr(SMB2_NEGOTIATE, 0, 0, 0);
	put16(36);
	put16((uint16_t)dialects);
	putn(0, 32);
	for (unsigned i = 0; i < dialects; i++)
		put16((uint16_t)(0x202 + i));
}

static void test_opening_smb2_negotiate(void **state)
{
	const char *why;
	size_t need;

	reset();
	negotiate_req_frame(5);
	assert_int_equal(judge(&why), SMB_OPENING_SMB2);
	/* Bytes after the frame (none are expected) change nothing. */
	put8(0);
	assert_int_equal(smb_opening_judge(vec, vlen, &need, &why),
			 SMB_OPENING_SMB2);

	reset();
	negotiate_req_frame((SMB_OPENING_MAX - 4 - 100) / 2); /* the longest */
	assert_int_equal(vlen, SMB_OPENING_MAX);
	assert_int_equal(judge(&why), SMB_OPENING_SMB2);
}

static void test_opening_smb1_negotiate(void **state)
{
	const char *why;

	reset();
	smb1_frame(SMB1_COM_NEGOTIATE, 0, 0x18, 3 + 12);
	assert_int_equal(judge(&why), SMB_OPENING_SMB1);
}

static void test_opening_netbios(void **state)
{
	const char *why;

	reset();
	prefix(NBT_SESSION_REQUEST, 68);
	put8(0x20);
	putn('E', 32);
	put8(0);
	put8(0x20);
	putn('F', 32);
	put8(0);
	assert_int_equal(judge(&why), SMB_OPENING_NETBIOS);

	reset();
	prefix(NBT_SESSION_REQUEST, 4);
	put32(0x01020304); /* no encoded name */
	assert_int_equal(judge(&why), SMB_OPENING_BAD);
	assert_non_null(strstr(why, "called name"));

	reset();
	put8(NBT_SESSION_REQUEST);
	put8(2); /* a reserved flag bit */
	put8(0);
	put8(68);
	assert_int_equal(judge(&why), SMB_OPENING_BAD);
}

/* Whatever else a client opens with is refused, and as early as its
 * bytes allow: a bad prefix or a promise of a long frame at 4 bytes. */
static void test_opening_refused(void **state)
{
	static const struct {
		const char *bytes;
		size_t len;
		const char *why;
	} cases[] = {
		{ "GET / HTTP/1.0\r\n\r\n", 18, "bad type byte" },
		{ "\x85\0\0\0", 4, "bad type byte" }, /* a keepalive */
		{ "\0\0\0\0", 4, "unknown protocol id" },
		{ "\0\xff\xff\xff", 4, "longer than any NEGOTIATE" },
		{ "\0\0\x10\0", 4, "longer than any NEGOTIATE" },
		{ "\0\0\0\x06\0hello", 10, "unknown protocol id" },
		{ "\0\0\0\x04\xfdSMB", 8, "unknown protocol id" },
	};
	const char *why;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		reset();
		memcpy(vec, cases[i].bytes, cases[i].len);
		vlen = cases[i].len;
		assert_int_equal(judge(&why), SMB_OPENING_BAD);
		assert_non_null(strstr(why, cases[i].why));
	}

	reset();
	simple_frame(SMB2_ECHO, 0, 36); /* SMB2, but not a NEGOTIATE */
	assert_int_equal(judge(&why), SMB_OPENING_BAD);
	reset();
	negotiate_rsp_frame(0x311); /* a response */
	assert_int_equal(judge(&why), SMB_OPENING_BAD);
	reset();
	simple_frame(SMB2_NEGOTIATE, 0, 20); /* body too short */
	assert_int_equal(judge(&why), SMB_OPENING_BAD);
	reset();
	smb1_frame(SMB1_COM_SESSION_SETUP_ANDX, 0, 0, 20);
	assert_int_equal(judge(&why), SMB_OPENING_BAD);
	assert_non_null(strstr(why, "SMB1"));
	reset();
	smb1_frame(SMB1_COM_NEGOTIATE, 0, SMB1_FLAGS_REPLY, 20);
	assert_int_equal(judge(&why), SMB_OPENING_BAD);
}

/* --- live handover: what a restore refuses -------------------------------
 */

/* Every reason has its own text, and only "not opaque" has none. */
static void test_opaque_reasons_named(void **state)
{
	assert_null(smb_opaque_text[SMB_WHY_NONE]);
	for (int i = SMB_WHY_NONE + 1; i < SMB_WHY_COUNT; i++) {
		assert_non_null(smb_opaque_text[i]);
		for (int j = 1; j < i; j++)
			assert_string_not_equal(smb_opaque_text[i],
						smb_opaque_text[j]);
	}
}

/* A refused restore leaves the framer as smb_framer_init() made it. */
static void refused(const struct smb_framer_saved *s)
{
	struct smb_dir_stats st = { 0 };
	struct smb_framer f, fresh;

	memset(&f, 0, sizeof(f));
	memset(&fresh, 0, sizeof(fresh));
	smb_framer_init(&f, &th_64k, &st);
	smb_framer_init(&fresh, &th_64k, &st);
	assert_int_equal(smb_framer_restore(&f, s), -1);
	assert_memory_equal(&f, &fresh, sizeof(f));
}

/* The state after the first @n bytes of the vector. */
static struct smb_framer_saved saved_at(size_t n)
{
	struct smb_dir_stats st = { 0 };
	struct smb_framer_saved s;
	struct smb_framer f;

	smb_framer_init(&f, &th_64k, &st);
	smb_framer_feed(&f, vec, n);
	smb_framer_save(&f, &s);
	return s;
}

/* A ledger the framer could not have written: a flag that is not 0 or
 * 1, more ids than it holds, an id past its count. */
static void test_restore_refuses_bad_ledgers(void **state)
{
	struct smb_dir_stats st = { 0 };
	struct smb_framer_saved ok, s;
	struct smb_framer f;

	reset();
	read_rsp_frame(80, 100000);
	ok = saved_at(34);
	s = ok, s.anon_blind = 2;
	refused(&s);
	s = ok, s.anon_n = SMB_ANON_PENDING + 1;
	refused(&s);
	s = ok, s.anon_ids[0] = 7;
	refused(&s);
	/* One it could have: restored as written. */
	s = ok, s.anon_n = 1, s.anon_ids[0] = 7, s.anon_blind = 1;
	smb_framer_init(&f, &th_64k, &st);
	assert_int_equal(smb_framer_restore(&f, &s), 0);
	assert_int_equal(f.anon.n, 1);
	assert_int_equal(f.anon.ids[0], 7);
	assert_true(f.anon.blind);
}

static void test_restore_refuses_bad_states(void **state)
{
	struct smb_framer_saved ok, s;

	reset();
	read_rsp_frame(80, 100000);
	/* In the header (FR_HEADER, 30 of 64 bytes held). */
	ok = saved_at(34);
	assert_int_equal(ok.state, FR_HEADER);
	s = ok, s.held = s.want; /* the step would have run */
	refused(&s);
	s = ok, s.want = SMB_HOLD_MAX + 1; /* past @hold */
	refused(&s);
	s = ok, s.want = 40; /* no step waits for 40 */
	refused(&s);
	s = ok, s.pos++; /* pos and held disagree */
	refused(&s);
	s = ok, s.elem_end = s.frame_len + 1; /* past the frame */
	refused(&s);
	s = ok, s.frame_len = 1u << 24; /* no prefix says so */
	refused(&s);
	s = ok, s.hold[40] = 1; /* bytes past @held */
	refused(&s);
	s = ok, s.hold[0] = 0xfd; /* no SMB2 header, then */
	refused(&s);
	s = ok, s.state = FR_OPAQUE + 1;
	refused(&s);
	s = ok, s.why = SMB_WHY_BAD_TYPE; /* reason, not opaque */
	refused(&s);
	s = ok, s.pay_class = SMB_NCLASSES;
	refused(&s);
	s = ok, s.session_ok = 2;
	refused(&s);
	/* In the body wait: the header held must be what asked for it. */
	ok = saved_at(4 + 66);
	assert_int_equal(ok.state, FR_HEADER);
	assert_int_equal(ok.want, SMB2_READ_RSP_DATA_LENGTH + 4);
	s = ok, s.hold[SMB2_HDR_COMMAND] = SMB2_ECHO;
	refused(&s);
	s = ok, s.hold[SMB2_HDR_STRUCT_SIZE] = 63;
	refused(&s);
	s = ok, s.hold[SMB2_HDR_NEXT] = 72; /* but the frame is its end */
	refused(&s);
	/* In the payload (FR_SKIP). */
	ok = saved_at(4 + 80 + 10);
	assert_int_equal(ok.state, FR_SKIP);
	s = ok, s.pos = s.elem_end; /* skip_done() would have run */
	refused(&s);
	s = ok, s.pay_end = s.elem_end + 1;
	refused(&s);
	s = ok, s.pay_start = s.pay_end + 1;
	refused(&s);
	s = ok, s.pay_start = s.pay_end, s.pos = s.pay_end - 1;
	refused(&s); /* splicing nothing */
	s = ok, s.elem_start = s.pos + 1;
	refused(&s);
	/* Between frames (FR_PREFIX). */
	ok = saved_at(0);
	s = ok, s.want = 64;
	refused(&s);
	s = ok, s.lead = SMB_PREFIX_LEN + (1u << 24);
	refused(&s);
	/* Opaque: it must say why, with a reason there is. */
	ok = saved_at(0);
	s = ok, s.state = FR_OPAQUE;
	refused(&s);
	s.why = SMB_WHY_COUNT;
	refused(&s);
	s.why = SMB_WHY_COUNT - 1;
	{
		struct smb_dir_stats st = { 0 };
		struct smb_framer f;

		smb_framer_init(&f, &th_64k, &st);
		assert_int_equal(smb_framer_restore(&f, &s), 0);
		assert_string_equal(f.why, smb_opaque_text[SMB_WHY_COUNT - 1]);
	}
}

/* Saved states with random bytes changed: whatever a restore accepts,
 * the framer then walks any stream within its bounds (the sanitizer
 * build catches a read or write past them). */
static void test_restore_mutated_states_stay_sound(void **state)
{
	static const size_t cuts[] = { 2, 4 + 10, 4 + 64, 4 + 70, 4 + 200 };
	struct smb_dir_stats st = { 0 };
	struct smb_framer_saved s;
	struct smb_framer f;
	uint8_t junk[512];
	unsigned accepted = 0;

	reset();
	read_rsp_frame(80, 100000);
	srand(19);
	for (unsigned round = 0; round < 20000; round++) {
		s = saved_at(cuts[round % 5]);
		for (unsigned k = 0; k < 1 + round % 3; k++)
			((uint8_t *)&s)[rand() % sizeof(s)] = (uint8_t)rand();
		smb_framer_init(&f, &th_64k, &st);
		if (smb_framer_restore(&f, &s))
			continue;
		accepted++;
		for (int step = 0; step < 8; step++) {
			size_t n = 1 + (size_t)rand() % sizeof(junk);

			for (size_t i = 0; i < n; i++)
				junk[i] = (uint8_t)rand();
			if (smb_framer_splice_span(&f) && rand() % 2)
				smb_framer_advance(&f,
						   smb_framer_splice_span(&f));
			else
				smb_framer_feed(&f, junk, n);
			assert_true(f.held <= f.want);
			assert_true(f.want <= SMB_HOLD_MAX);
			if (f.state == FR_SKIP)
				assert_true(f.pos < f.elem_end &&
					    f.elem_end <= f.frame_len);
		}
	}
	assert_true(accepted > 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_offset_80_spliced),
		cmocka_unit_test(test_read_offset_88),
		cmocka_unit_test(test_read_thresholds),
		cmocka_unit_test(test_copy_limit_hint),
		cmocka_unit_test(test_copy_limit_interim_and_tail),
		cmocka_unit_test(test_interim_then_final),
		cmocka_unit_test(test_read_error_body),
		cmocka_unit_test(test_write_requests),
		cmocka_unit_test(test_compound_response),
		cmocka_unit_test(test_negotiate_response),
		cmocka_unit_test(test_multichannel),
		cmocka_unit_test(test_transforms),
		cmocka_unit_test(test_smb1_negotiate_then_smb2),
		cmocka_unit_test(test_netbios),
		cmocka_unit_test(test_observer),
		cmocka_unit_test(test_zero_length_frames_and_many_messages),
		cmocka_unit_test(test_signed_flag),
		cmocka_unit_test(test_bad_type_byte),
		cmocka_unit_test(test_truncated_frame),
		cmocka_unit_test(test_header_past_frame),
		cmocka_unit_test(test_unknown_protocol),
		cmocka_unit_test(test_bad_structure_size),
		cmocka_unit_test(test_read_length_past_frame),
		cmocka_unit_test(test_read_huge_length),
		cmocka_unit_test(test_read_offset_inside_header),
		cmocka_unit_test(test_read_offset_past_frame),
		cmocka_unit_test(test_write_offset_inside_header),
		cmocka_unit_test(test_next_command_past_frame),
		cmocka_unit_test(test_next_command_misaligned),
		cmocka_unit_test(test_next_command_leaves_no_room),
		cmocka_unit_test(test_read_body_too_short),
		cmocka_unit_test(test_opaque_is_final),
		cmocka_unit_test(test_mid_message),
		cmocka_unit_test(test_storable),
		cmocka_unit_test(test_session_setup_success),
		cmocka_unit_test(test_session_setup_guest_null),
		cmocka_unit_test(test_session_setup_unsigned),
		cmocka_unit_test(test_session_ok_stays),
		cmocka_unit_test(test_login_blob),
		cmocka_unit_test(test_login_two_tokens),
		cmocka_unit_test(test_login_blob_other),
		cmocka_unit_test(test_login_blob_hidden),
		cmocka_unit_test(test_login_blob_truncated),
		cmocka_unit_test(test_session_setup_anonymous_request),
		cmocka_unit_test(test_session_setup_anonymous_flood),
		cmocka_unit_test(test_session_setup_paired),
		cmocka_unit_test(test_smb1_session_setup),
		cmocka_unit_test(test_opening_smb2_negotiate),
		cmocka_unit_test(test_opening_smb1_negotiate),
		cmocka_unit_test(test_opening_netbios),
		cmocka_unit_test(test_opening_refused),
		cmocka_unit_test(test_opaque_reasons_named),
		cmocka_unit_test(test_restore_refuses_bad_states),
		cmocka_unit_test(test_restore_refuses_bad_ledgers),
		cmocka_unit_test(test_restore_mutated_states_stay_sound),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
