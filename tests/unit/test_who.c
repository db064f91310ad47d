// SPDX-License-Identifier: GPL-2.0-or-later
/* test_who.c - a connection's view (smb/who.c), through the framer
 *
 * Every stream is built here field by field and fed to a framer three
 * ways: whole, one byte at a time, and in random splits; the view must
 * come out the same. Then hostile streams: names past their message,
 * odd and broken UTF-16, control characters, names longer than their
 * slot, bytes that pass unseen, a flood of tree connects, and carried
 * views that no process could have written.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "smb/framer.h"
#include "smb/who.h"

static uint8_t vec[1 << 20];
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

static void putb(const void *p, size_t n)
{
	memcpy(vec + vlen, p, n);
	vlen += n;
}

/**
 * frame_hdr() - a transport prefix and an SMB2 header
 * @len:	the frame's length after the prefix
 * @cmd:	command
 * @flags:	Flags
 * @status:	Status
 * @mid:	MessageId
 * @tree:	TreeId
 * @sid:	SessionId
 */
static void frame_hdr(uint32_t len, uint16_t cmd, uint32_t flags,
		      uint32_t status, uint64_t mid, uint32_t tree,
		      uint64_t sid)
{
	put8(0);
	put8((uint8_t)(len >> 16));
	put8((uint8_t)(len >> 8));
	put8((uint8_t)len);
	put32(SMB2_MAGIC);
	put16(64);
	put16(1);
	put32(status);
	put16(cmd);
	put16(1);
	put32(flags);
	put32(0);
	put64(mid);
	put32(0);
	put32(tree);
	put64(sid);
	for (int i = 0; i < 16; i++)
		put8(0);
}

/**
 * response() - a response with a small body
 * @cmd:	command
 * @status:	Status
 * @mid:	MessageId
 * @tree:	TreeId
 * @sid:	SessionId
 */
static void response(uint16_t cmd, uint32_t status, uint64_t mid, uint32_t tree,
		     uint64_t sid)
{
	frame_hdr(64 + 16, cmd, SMB2_FLAG_RESPONSE, status, mid, tree, sid);
	put16(cmd == SMB2_SESSION_SETUP ? 9 : 16);
	for (int i = 0; i < 14; i++)
		put8(0);
}

/**
 * ntlm_auth() - an NTLMSSP AUTHENTICATE, its names after a long NT
 *		 response as Samba's client writes them
 * @out:	where to write it
 * @dom:	domain bytes
 * @dlen:	how many
 * @user:	user bytes
 * @ulen:	how many
 * @flags:	NegotiateFlags
 *
 * Return: its length.
 */
static size_t ntlm_auth(uint8_t *out, const void *dom, uint16_t dlen,
			const void *user, uint16_t ulen, uint32_t flags)
{
	uint32_t pos = 72;
	size_t n = 0;
	const struct {
		uint16_t len;
		const void *p;
	} f[5] = { { 24, NULL },
		   { 300, NULL },
		   { dlen, dom },
		   { ulen, user },
		   { 0, NULL } };

	memcpy(out, "NTLMSSP\0", 8);
	out[8] = 3;
	memset(out + 9, 0, 72 - 9);
	for (int i = 0; i < 5; i++) {
		uint8_t *h = out + 12 + 8 * i;

		h[0] = (uint8_t)f[i].len;
		h[1] = (uint8_t)(f[i].len >> 8);
		h[2] = h[0];
		h[3] = h[1];
		for (int k = 0; k < 4; k++)
			h[4 + k] = (uint8_t)((pos + n) >> (8 * k));
		if (f[i].p)
			memcpy(out + pos + n, f[i].p, f[i].len);
		else
			memset(out + pos + n, 0x5a, f[i].len);
		n += f[i].len;
	}
	for (int k = 0; k < 4; k++)
		out[60 + k] = (uint8_t)(flags >> (8 * k));
	return pos + n;
}

/**
 * spnego_resp() - wrap a token as SPNEGO's negTokenResp responseToken
 * @out:	where
 * @tok:	the token
 * @n:		its length (under 64 KiB)
 *
 * Return: the wrapped length.
 */
static size_t spnego_resp(uint8_t *out, const uint8_t *tok, size_t n)
{
	size_t o = 0;

	out[o++] = 0xa1;
	out[o++] = 0x82;
	out[o++] = (uint8_t)((n + 12) >> 8);
	out[o++] = (uint8_t)(n + 12);
	out[o++] = 0x30;
	out[o++] = 0x82;
	out[o++] = (uint8_t)((n + 8) >> 8);
	out[o++] = (uint8_t)(n + 8);
	out[o++] = 0xa2;
	out[o++] = 0x82;
	out[o++] = (uint8_t)((n + 4) >> 8);
	out[o++] = (uint8_t)(n + 4);
	/* The OCTET STRING's own header is counted in [2]'s length. */
	memmove(out + o + 4, tok, n);
	out[o++] = 0x04;
	out[o++] = 0x82;
	out[o++] = (uint8_t)(n >> 8);
	out[o++] = (uint8_t)n;
	return o + n;
}

/**
 * session_request() - a SESSION_SETUP request carrying @blob
 * @mid:	MessageId
 * @blob:	security buffer
 * @n:		its length
 */
static void session_request(uint64_t mid, const uint8_t *blob, size_t n)
{
	frame_hdr((uint32_t)(64 + 24 + n), SMB2_SESSION_SETUP, 0, 0, mid, 0,
		  0x77);
	put16(25);
	put8(0);
	put8(1);
	put32(0);
	put32(0);
	put16(88);
	put16((uint16_t)n);
	put64(0);
	putb(blob, n);
}

/**
 * tree_request() - a TREE_CONNECT request for @path (ASCII, made UTF-16)
 * @mid:	MessageId
 * @path:	the path
 */
static void tree_request(uint64_t mid, const char *path)
{
	size_t n = strlen(path);

	frame_hdr((uint32_t)(64 + 8 + 2 * n), SMB2_TREE_CONNECT, 0, 0, mid, 0,
		  0x77);
	put16(9);
	put16(0);
	put16(72);
	put16((uint16_t)(2 * n));
	for (size_t i = 0; i < n; i++)
		put16((uint8_t)path[i]);
}

/* --- running a stream ------------------------------------------------------
 */

static struct smb_who who_v;
static bool who_made;

static struct smb_who *hook(void *ctx, bool create)
{
	(void)ctx;
	if (create)
		who_made = true;
	return who_made ? &who_v : NULL;
}

static const struct smb_thresholds th = { { 4096, 4096, 4096 } };

/**
 * feed() - run the stream in vec through a fresh framer
 * @mode:	0 whole, 1 a byte at a time, 2 random splits
 *
 * Return: the view it built.
 */
static struct smb_who feed(int mode)
{
	static struct smb_dir_stats st;
	struct smb_framer f;
	size_t at = 0, k;

	memset(&who_v, 0, sizeof(who_v));
	who_made = false;
	smb_framer_init(&f, &th, &st);
	smb_framer_who(&f, hook, NULL);
	while (at < vlen) {
		k = mode == 0	? vlen - at
		    : mode == 1 ? 1u
				: 1u + (size_t)(rand() % 97);
		if (k > vlen - at)
			k = vlen - at;
		smb_framer_feed(&f, vec + at, k);
		at += k;
	}
	assert_false(smb_framer_opaque(&f));
	return who_v;
}

/**
 * feed_all() - feed the three ways; all must agree
 *
 * Return: the view.
 */
static struct smb_who feed_all(void)
{
	struct smb_who a = feed(0), b = feed(1), c = feed(2);

	assert_string_equal(a.user, b.user);
	assert_string_equal(a.user, c.user);
	assert_string_equal(a.domain, b.domain);
	assert_string_equal(a.domain, c.domain);
	assert_int_equal(a.auth, b.auth);
	assert_int_equal(a.auth, c.auth);
	assert_int_equal(a.nshares, c.nshares);
	assert_int_equal(a.open_files, c.open_files);
	return a;
}

static uint8_t tok[8192], blob[8192];

/**
 * login() - a named NTLMSSP login, wrapped in SPNEGO or not, answered
 * @dom:	domain bytes
 * @dlen:	how many
 * @user:	user bytes
 * @ulen:	how many
 * @flags:	NegotiateFlags
 * @spnego:	wrap it
 */
static void login(const void *dom, uint16_t dlen, const void *user,
		  uint16_t ulen, uint32_t flags, bool spnego)
{
	size_t n = ntlm_auth(tok, dom, dlen, user, ulen, flags);

	vlen = 0;
	if (spnego)
		n = spnego_resp(blob, tok, n);
	else
		memcpy(blob, tok, n);
	session_request(5, blob, n);
	response(SMB2_SESSION_SETUP, 0, 5, 0, 0x1122334455667788ull);
}

/**
 * u16() - an ASCII string as UTF-16LE
 * @s:		the string
 * @out:	room for twice its length
 *
 * Return: the bytes.
 */
static uint16_t u16(const char *s, uint8_t *out)
{
	size_t n = strlen(s);

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = (uint8_t)s[i];
		out[2 * i + 1] = 0;
	}
	return (uint16_t)(2 * n);
}

/* --- tests ------------------------------------------------------------------
 */

static void test_ntlmssp_names(void **state)
{
	uint8_t d[64], u[64];
	uint16_t dl = u16("WORKGROUP", d), ul = u16("alice", u);
	struct smb_who w;

	(void)state;
	for (int spnego = 0; spnego < 2; spnego++) {
		login(d, dl, u, ul, NTLMSSP_NEGOTIATE_UNICODE, spnego);
		w = feed_all();
		assert_int_equal(w.auth, SMB_WHO_NTLMSSP);
		assert_string_equal(w.user, "alice");
		assert_string_equal(w.domain, "WORKGROUP");
		assert_true(w.session_id == 0x1122334455667788ull);
	}
	/* The OEM form: a byte a character; what is not ASCII is '?'. */
	login("DOM", 3, "b\xe9n", 3, 0, true);
	w = feed_all();
	assert_string_equal(w.user, "b?n");
	assert_string_equal(w.domain, "DOM");
}

static void test_name_only_on_its_answer(void **state)
{
	uint8_t u[16];
	uint16_t ul = u16("bob", u);
	size_t n = ntlm_auth(tok, "", 0, u, ul, NTLMSSP_NEGOTIATE_UNICODE);
	struct smb_who w;

	(void)state;
	/* A failed login, then a success to another MessageId: the name of
	 * the first is nobody's. */
	vlen = 0;
	session_request(5, tok, n);
	response(SMB2_SESSION_SETUP, 0xc000006du, 5, 0, 9);
	w = feed_all();
	assert_int_equal(w.auth, SMB_WHO_NONE);
	assert_int_equal(w.session_id, 0);
	vlen = 0;
	session_request(5, tok, n);
	response(SMB2_SESSION_SETUP, 0, 6, 0, 9);
	w = feed_all();
	assert_int_equal(w.auth, SMB_WHO_UNKNOWN);
	assert_string_equal(w.user, "");
	assert_int_equal(w.session_id, 9);
}

static void test_hostile_utf16(void **state)
{
	/* Lone surrogates, a pair, control characters, an odd length. */
	static const uint8_t u[] = { 0x00, 0xd8, 'a',  0,    0x00, 0xdc,
				     0x3d, 0xd8, 0x00, 0xde, 0x1b, 0,
				     '[',  0,	 0x85, 0,    'z' };
	struct smb_who w;

	(void)state;
	login("D\0", 2, u, sizeof(u), NTLMSSP_NEGOTIATE_UNICODE, true);
	w = feed_all();
	assert_int_equal(w.auth, SMB_WHO_NTLMSSP);
	assert_string_equal(w.user, "\xef\xbf\xbd"
				    "a"
				    "\xef\xbf\xbd"
				    "\xf0\x9f\x98\x80"
				    "?[?"
				    "\xef\xbf\xbd");
	for (const char *p = w.user; *p; p++)
		assert_true((unsigned char)*p >= 0x20 && *p != 0x7f);
}

static void test_long_names_cut(void **state)
{
	static uint8_t u[0xfffe], d[600];
	struct smb_who w;

	(void)state;
	for (size_t i = 0; i < sizeof(u); i += 2) {
		u[i] = 0xe9; /* é: two bytes of UTF-8 each */
		u[i + 1] = 0;
	}
	for (size_t i = 0; i < sizeof(d); i += 2) {
		d[i] = 'x';
		d[i + 1] = 0;
	}
	login(d, sizeof(d), u, 6000, NTLMSSP_NEGOTIATE_UNICODE, true);
	w = feed_all();
	assert_int_equal(strlen(w.user), SMB_WHO_USER_MAX - 2);
	assert_int_equal(strlen(w.domain), SMB_WHO_DOMAIN_MAX - 1);
	for (size_t i = 0; i < strlen(w.user); i += 2)
		assert_memory_equal(w.user + i, "\xc3\xa9", 2);
}

static void test_names_past_message(void **state)
{
	uint8_t u[16];
	uint16_t ul = u16("eve", u);
	size_t n = ntlm_auth(tok, "", 0, u, ul, NTLMSSP_NEGOTIATE_UNICODE);
	struct smb_who w;

	(void)state;
	/* UserNameBufferOffset past the buffer, then a length past it. */
	for (int k = 0; k < 2; k++) {
		memset(tok + 40, k ? 0 : 0xff, 4);
		if (k) {
			tok[36] = tok[37] = 0xff;
			tok[40] = 72;
		}
		vlen = 0;
		session_request(5, tok, n);
		response(SMB2_SESSION_SETUP, 0, 5, 0, 3);
		w = feed_all();
		assert_int_equal(w.auth, SMB_WHO_UNKNOWN);
		assert_string_equal(w.user, "");
	}
}

static void test_unseen_bytes(void **state)
{
	static struct smb_dir_stats st;
	struct smb_framer f;
	uint8_t u[16];
	uint16_t ul = u16("carol", u);
	size_t n = ntlm_auth(tok, "", 0, u, ul, NTLMSSP_NEGOTIATE_UNICODE);

	(void)state;
	vlen = 0;
	session_request(5, tok, n);
	memset(&who_v, 0, sizeof(who_v));
	who_made = false;
	smb_framer_init(&f, &th, &st);
	smb_framer_who(&f, hook, NULL);
	/* The framer is told 290 bytes passed unseen (as the advisor does
	 * for bytes a capture lacks), the name's first among them: the name
	 * is not known. */
	smb_framer_feed(&f, vec, 200);
	assert_true(smb_framer_skip_span(&f) >= 290);
	smb_framer_advance(&f, 290);
	smb_framer_feed(&f, vec + 490, vlen - 490);
	vlen = 0;
	response(SMB2_SESSION_SETUP, 0, 5, 0, 3);
	smb_framer_feed(&f, vec, vlen);
	assert_int_equal(who_v.auth, SMB_WHO_UNKNOWN);
	assert_string_equal(who_v.user, "");
}

static void test_kerberos_and_anonymous(void **state)
{
	/* SPNEGO negTokenInit, Kerberos (Microsoft's OID) first, an AP-REQ
	 * as mechToken. */
	static const uint8_t krb[] = {
		0x60, 0x30, 0x06, 0x06, 0x2b, 0x06, 0x01, 0x05, 0x05, 0x02,
		0xa0, 0x26, 0x30, 0x24, 0xa0, 0x0d, 0x30, 0x0b, 0x06, 0x09,
		0x2a, 0x86, 0x48, 0x82, 0xf7, 0x12, 0x01, 0x02, 0x02, 0xa2,
		0x13, 0x04, 0x11, 0x60, 0x0f, 0x06, 0x09, 0x2a, 0x86, 0x48,
		0x86, 0xf7, 0x12, 0x01, 0x02, 0x02, 0x01, 0x00, 0x6e, 0x00,
	};
	size_t n;
	struct smb_who w;

	(void)state;
	vlen = 0;
	session_request(7, krb, sizeof(krb));
	response(SMB2_SESSION_SETUP, 0, 7, 0, 42);
	w = feed_all();
	assert_int_equal(w.auth, SMB_WHO_KERBEROS);
	assert_string_equal(smb_who_auth_text(w.auth), "kerberos");
	assert_int_equal(w.session_id, 42);
	/* Another mechanism first: not Kerberos. */
	memcpy(blob, krb, sizeof(krb));
	blob[28] = 0x0a;
	vlen = 0;
	session_request(7, blob, sizeof(krb));
	response(SMB2_SESSION_SETUP, 0, 7, 0, 42);
	assert_int_equal(feed_all().auth, SMB_WHO_UNKNOWN);
	/* No user, no NT response: anonymous. */
	n = ntlm_auth(tok, "", 0, "", 0, NTLMSSP_NEGOTIATE_UNICODE);
	tok[20] = tok[21] = tok[22] = tok[23] = 0;
	tok[12] = tok[14] = 0;
	vlen = 0;
	session_request(8, tok, n);
	response(SMB2_SESSION_SETUP, 0, 8, 0, 43);
	assert_int_equal(feed_all().auth, SMB_WHO_ANONYMOUS);
}

static void test_shares_and_files(void **state)
{
	uint8_t u[16];
	uint16_t ul = u16("dave", u);
	size_t n = ntlm_auth(tok, "", 0, u, ul, NTLMSSP_NEGOTIATE_UNICODE);
	struct smb_who w;

	(void)state;
	vlen = 0;
	session_request(1, tok, n);
	response(SMB2_SESSION_SETUP, 0, 1, 0, 3);
	tree_request(2, "\\\\server\\homes");
	response(SMB2_TREE_CONNECT, 0, 2, 11, 3);
	tree_request(3, "noslash");
	response(SMB2_TREE_CONNECT, 0, 3, 12, 3);
	tree_request(4, "\\\\server\\refused");
	response(SMB2_TREE_CONNECT, 0xc00000ccu, 4, 0, 3);
	/* A thousand more: four slots, the rest counted. */
	for (uint32_t i = 0; i < 1000; i++) {
		tree_request(100 + i, "\\\\s\\many");
		response(SMB2_TREE_CONNECT, 0, 100 + i, 1000 + i, 3);
	}
	response(SMB2_TREE_DISCONNECT, 0, 5000, 12, 3);
	response(SMB2_TREE_DISCONNECT, 0, 5001, 99999, 3);
	for (int i = 0; i < 3; i++)
		response(SMB2_CREATE, 0, 6000 + i, 11, 3);
	response(SMB2_CREATE, 0xc0000034u, 6010, 11, 3);
	response(SMB2_CLOSE, 0, 6011, 11, 3);
	for (int i = 0; i < 5; i++) /* more closes than opens */
		response(SMB2_CLOSE, 0, 6020 + i, 11, 3);
	response(SMB2_CREATE, 0, 6030, 11, 3);
	w = feed_all();
	assert_string_equal(w.user, "dave");
	/* homes, noslash, many, many; 998 counted; noslash left, then a
	 * tree not listed. */
	assert_int_equal(w.nshares, SMB_WHO_SHARES - 1);
	assert_string_equal(w.share[0], "homes");
	assert_string_equal(w.share[1], "many");
	assert_int_equal(w.tree_id[1], 1001);
	assert_int_equal(w.more_shares, 997);
	assert_int_equal(w.open_files, 1);
}

static void test_sealed(void **state)
{
	struct smb_who w;

	(void)state;
	vlen = 0;
	session_request(1, (const uint8_t *)"\x60\x00", 2);
	put8(0);
	put8(0);
	put8(0);
	put8(52 + 32);
	put32(SMB_TRANSFORM_MAGIC);
	for (int i = 0; i < 40; i++)
		put8(0);
	put64(0xabcdef);
	for (int i = 0; i < 32; i++)
		put8(0xee);
	w = feed_all();
	assert_true(w.sealed);
	assert_int_equal(w.sealed_id, 0xabcdef);
}

static void test_saved(void **state)
{
	struct smb_who w = { 0 }, back;
	struct smb_who_saved s, bad;

	(void)state;
	smb_who_save(NULL, &s);
	assert_int_equal(s.present, 0);
	w.session_id = 5;
	w.auth = SMB_WHO_NTLMSSP;
	strcpy(w.user, "u\xc3\xa9");
	strcpy(w.domain, "D");
	strcpy(w.share[0], "s");
	w.tree_id[0] = 4;
	w.nshares = 1;
	w.open_files = 3;
	smb_who_save(&w, &s);
	assert_int_equal(smb_who_restore(&back, &s), 0);
	assert_string_equal(back.user, "u\xc3\xa9");
	assert_int_equal(back.open_files, 3);
	assert_string_equal(back.share[0], "s");
	/* What no view holds: no NUL, a control character, a byte after
	 * the NUL, a share past @nshares, a flag of 2. */
	bad = s;
	memset(bad.user, 'a', sizeof(bad.user));
	assert_int_equal(smb_who_restore(&back, &bad), -1);
	bad = s;
	bad.domain[0] = '\n';
	assert_int_equal(smb_who_restore(&back, &bad), -1);
	bad = s;
	bad.user[10] = 'x';
	assert_int_equal(smb_who_restore(&back, &bad), -1);
	bad = s;
	strcpy(bad.share[2], "x");
	assert_int_equal(smb_who_restore(&back, &bad), -1);
	bad = s;
	bad.sealed = 2;
	assert_int_equal(smb_who_restore(&back, &bad), -1);
	bad = s;
	bad.nshares = SMB_WHO_SHARES + 1;
	assert_int_equal(smb_who_restore(&back, &bad), -1);
}

/* A user an admin names: with or without the domain, letters in any
 * case; never a session NTLMSSP did not name. */
static void test_user_is(void **state)
{
	struct smb_who w = { 0 };

	(void)state;
	assert_false(smb_who_user_is(NULL, "alice"));
	strcpy(w.user, "Alice");
	strcpy(w.domain, "EAST");
	assert_false(smb_who_user_is(&w, "alice")); /* no session setup */
	w.auth = SMB_WHO_NTLMSSP;
	assert_true(smb_who_user_is(&w, "alice"));
	assert_true(smb_who_user_is(&w, "east\\ALICE"));
	assert_false(smb_who_user_is(&w, "WEST\\alice"));
	assert_false(smb_who_user_is(&w, "EAS\\alice"));
	assert_false(smb_who_user_is(&w, "\\alice")); /* an empty domain */
	assert_false(smb_who_user_is(&w, "alic"));
	assert_false(smb_who_user_is(&w, "alicex"));
	assert_false(smb_who_user_is(&w, ""));
	assert_false(smb_who_user_is(&w, "EAST\\"));
	w.domain[0] = 0;
	assert_true(smb_who_user_is(&w, "\\alice"));
	w.auth = SMB_WHO_KERBEROS;
	assert_false(smb_who_user_is(&w, "alice"));
	w.auth = SMB_WHO_NTLMSSP;
	w.user[0] = 0;
	assert_false(smb_who_user_is(&w, ""));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ntlmssp_names),
		cmocka_unit_test(test_name_only_on_its_answer),
		cmocka_unit_test(test_hostile_utf16),
		cmocka_unit_test(test_long_names_cut),
		cmocka_unit_test(test_names_past_message),
		cmocka_unit_test(test_unseen_bytes),
		cmocka_unit_test(test_kerberos_and_anonymous),
		cmocka_unit_test(test_shares_and_files),
		cmocka_unit_test(test_sealed),
		cmocka_unit_test(test_saved),
		cmocka_unit_test(test_user_is),
	};

	srand(31);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
