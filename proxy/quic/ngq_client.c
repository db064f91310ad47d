// SPDX-License-Identifier: GPL-2.0-or-later
/* ngq_client.c - every ngtcp2 and GnuTLS call of a quic: backend
 *
 * Theory of operation: the client's half of what ngq.c is to the
 * listener, and apart from it so that each side changes alone: ngtcp2
 * 0.12 (Debian 12's) does QUIC v1, GnuTLS 3.7 its TLS 1.3 handshake
 * through ngtcp2_crypto_gnutls, and their API changed before and at
 * ngtcp2 1.0, so this file and ngq.c are what moving to 1.x touches.
 * qdial.c hands in datagrams and times (nanoseconds of CLOCK_MONOTONIC,
 * ngtcp2's own precision) and gets back packets and the stream's bytes
 * through struct ngq_cb, as quic.c does from ngq.c.
 *
 * The client speaks TLS 1.3 and ALPN "smb" only, sends the server's name
 * as SNI (not an address: RFC 6066 3) and checks the server's
 * certificate in a GnuTLS verify function: against the CAs given (or
 * the system's trust store) and the name, or only against a pinned
 * SHA-256. A refusal keeps GnuTLS's words for the one line the dial
 * logs. When the handshake is over the client opens its one
 * bidirectional stream (MS-SMB2 2.1) and tells its owner; it lets the
 * server open none. Idle and keepalive as the listener's: 120 s, a PING
 * after 25 s of silence (or half the server's idle timeout).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>

#include "quic/ngq_client.h"

#define NGQC_IDLE		   (120 * NGTCP2_SECONDS)
#define NGQC_KEEPALIVE		   (25 * NGTCP2_SECONDS)
#define NGQC_ALPN		   "smb"
#define NGQC_ALERT_NO_APP_PROTOCOL 120

/* TLS 1.3 only; QUIC forbids the middlebox compatibility mode. */
#define NGQC_PRIORITY "NORMAL:-VERS-ALL:+VERS-TLS1.3:%DISABLE_TLS13_COMPAT_MODE"

/**
 * struct ngqc_creds - what a client's TLS session trusts and shows
 * @cred:	GnuTLS's
 */
struct ngqc_creds {
	gnutls_certificate_credentials_t cred;
};

/**
 * struct ngqc_conn - one client connection
 * @conn:	ngtcp2's
 * @tls:	GnuTLS's session
 * @ref:	how ngtcp2_crypto finds @conn from @tls
 * @ccerr:	why it closes, for the CONNECTION_CLOSE
 * @cb:		its owner's callbacks
 * @ud:		their argument
 * @secret:	the stateless reset secret of the IDs it issues
 * @sid:	its stream, -1 before the handshake is over
 * @creds:	its credentials, its own
 * @name:	the server's name, for SNI and the certificate's check
 * @pinned:	@pin replaces the check against a CA and the name
 * @pin:	the SHA-256 of the server's certificate
 * @why:	why the handshake failed, once it has, where GnuTLS said
 */
struct ngqc_conn {
	ngtcp2_conn *conn;
	gnutls_session_t tls;
	ngtcp2_crypto_conn_ref ref;
	ngtcp2_connection_close_error ccerr;
	const struct ngq_cb *cb;
	void *ud;
	uint8_t secret[NGQ_SECRET_LEN];
	int64_t sid;
	struct ngqc_creds *creds;
	char name[256];
	bool pinned;
	uint8_t pin[32];
	char why[512];
};

/**
 * get_conn() - ngtcp2_crypto's way from a TLS session to its connection
 * @ref:	&ngqc_conn.ref
 *
 * Return: the connection.
 */
static ngtcp2_conn *get_conn(ngtcp2_crypto_conn_ref *ref)
{
	return ((struct ngqc_conn *)ref->user_data)->conn;
}

/**
 * conn_of() - the connection a TLS session belongs to
 * @s:	the session
 *
 * Return: the connection.
 */
static struct ngqc_conn *conn_of(gnutls_session_t s)
{
	ngtcp2_crypto_conn_ref *ref = gnutls_session_get_ptr(s);

	return ref->user_data;
}

/**
 * hex_text() - bytes as hex, for a line
 * @d:		the bytes
 * @n:		how many
 * @out:	buffer, 2 * @n + 1 bytes at least
 */
static void hex_text(const uint8_t *d, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", d[i]);
	out[2 * n] = 0;
}

/**
 * verify_pin() - is the server's certificate the pinned one
 * @k:		the connection
 * @s:		its session
 *
 * Return: 0, or -1 with @k->why set.
 */
static int verify_pin(struct ngqc_conn *k, gnutls_session_t s)
{
	const gnutls_datum_t *chain;
	unsigned n = 0;
	uint8_t h[32];
	char hex[65];

	chain = gnutls_certificate_get_peers(s, &n);
	if (!chain || !n) {
		snprintf(k->why, sizeof(k->why),
			 "the server sent no certificate");
		return -1;
	}
	if (gnutls_hash_fast(GNUTLS_DIG_SHA256, chain[0].data, chain[0].size,
			     h))
		return -1;
	if (!memcmp(h, k->pin, sizeof(h)))
		return 0;
	hex_text(h, sizeof(h), hex);
	snprintf(
		k->why, sizeof(k->why),
		"the server's certificate (SHA-256 %s) is not the pinned one (quic-pin)",
		hex);
	return -1;
}

/**
 * trim() - drop the blanks that end a line GnuTLS wrote
 * @s:	the line
 */
static void trim(char *s)
{
	size_t n = strlen(s);

	while (n && (s[n - 1] == ' ' || s[n - 1] == '\n'))
		s[--n] = 0;
}

/**
 * on_verify() - GnuTLS asks whether the server's certificate is good
 * @s:	the session
 *
 * Against the pin if one is given; otherwise against the CA (quic-ca, or
 * the system's trust store) and the name (quic-name). A failure says why
 * in the connection's @why, for the one line the dial logs.
 *
 * Return: 0 to go on, -1 to fail the handshake.
 */
static int on_verify(gnutls_session_t s)
{
	struct ngqc_conn *k = conn_of(s);
	gnutls_datum_t txt;
	unsigned status = 0;
	int rv;

	if (k->pinned)
		return verify_pin(k, s);
	rv = gnutls_certificate_verify_peers3(s, k->name, &status);
	if (rv < 0) {
		snprintf(k->why, sizeof(k->why), "certificate: %s",
			 gnutls_strerror(rv));
		return -1;
	}
	if (!status)
		return 0;
	if (gnutls_certificate_verification_status_print(
		    status, GNUTLS_CRT_X509, &txt, 0) == 0) {
		snprintf(k->why, sizeof(k->why),
			 "certificate not accepted for name %.200s: %s",
			 k->name, txt.data);
		gnutls_free(txt.data);
		trim(k->why);
	} else {
		snprintf(k->why, sizeof(k->why),
			 "certificate not accepted for name %.200s", k->name);
	}
	return -1;
}

/**
 * ngqc_pin_parse() - a quic-pin's text as bytes
 * @text:	64 hex digits, colons allowed between pairs
 * @pin:	32 bytes, filled in
 *
 * Return: 0, or -1 if it is not a SHA-256.
 */
int ngqc_pin_parse(const char *text, uint8_t *pin)
{
	unsigned n = 0;

	for (const char *p = text; *p; p++) {
		unsigned v;

		if (*p == ':')
			continue;
		if (n == 64 || sscanf(p, "%1x", &v) != 1)
			return -1;
		pin[n / 2] = n % 2 ? pin[n / 2] | v : v << 4;
		n++;
	}
	return n == 64 ? 0 : -1;
}

/**
 * ngqc_creds_load() - what a client's TLS session trusts and shows
 * @ca:		PEM file of the CAs to trust; empty for the system's
 * @cert:	PEM file of a client certificate; empty for none
 * @key:	its key
 * @pinned:	the server is checked by pin: no CA is read
 * @out:	the credentials
 * @err:	buffer for one line saying what is wrong
 * @errlen:	its size
 *
 * Read at each dial, so that a renewed CA or client certificate applies
 * to the next connection without a reload.
 *
 * Return: 0, or -1 with @err set.
 */
int ngqc_creds_load(const char *ca, const char *cert, const char *key,
		    bool pinned, struct ngqc_creds **out, char *err,
		    size_t errlen)
{
	struct ngqc_creds *cr = calloc(1, sizeof(*cr));
	int rv;

	if (!cr || gnutls_certificate_allocate_credentials(&cr->cred)) {
		free(cr);
		snprintf(err, errlen, "quic: out of memory");
		return -1;
	}
	if (!pinned && *ca && access(ca, R_OK)) {
		snprintf(err, errlen, "quic-ca %s: %s", ca, strerror(errno));
		goto fail;
	}
	if (!pinned) {
		rv = *ca ? gnutls_certificate_set_x509_trust_file(
				   cr->cred, ca, GNUTLS_X509_FMT_PEM)
			 : gnutls_certificate_set_x509_system_trust(cr->cred);
		if (rv <= 0) {
			snprintf(
				err, errlen, "%s%s: %s",
				*ca ? "quic-ca "
				    : "no quic-ca, and the system's trust store",
				ca,
				rv ? gnutls_strerror(rv)
				   : "no certificate in it");
			goto fail;
		}
	}
	if (*cert) {
		rv = gnutls_certificate_set_x509_key_file(cr->cred, cert, key,
							  GNUTLS_X509_FMT_PEM);
		if (rv < 0) {
			snprintf(err, errlen,
				 "quic-client-cert %s / quic-client-key %s: %s",
				 cert, key, gnutls_strerror(rv));
			goto fail;
		}
	}
	gnutls_certificate_set_verify_function(cr->cred, on_verify);
	*out = cr;
	return 0;
fail:
	ngqc_creds_free(cr);
	return -1;
}

/**
 * ngqc_creds_free() - forget a client's credentials
 * @cr:	the credentials, or NULL
 */
void ngqc_creds_free(struct ngqc_creds *cr)
{
	if (!cr)
		return;
	gnutls_certificate_free_credentials(cr->cred);
	free(cr);
}

/**
 * on_handshake() - the handshake is over: keepalives as often as the
 *		    server's idle timeout needs, and the one stream opened
 * @conn:	the connection
 * @ud:		our connection
 *
 * Return: 0, or NGTCP2_ERR_CALLBACK_FAILURE if the server allows no
 * stream or the owner refuses it.
 */
static int on_handshake(ngtcp2_conn *conn, void *ud)
{
	struct ngqc_conn *c = ud;
	const ngtcp2_transport_params *p =
		ngtcp2_conn_get_remote_transport_params(conn);
	ngtcp2_duration ka = NGQC_KEEPALIVE;
	int64_t sid;

	if (p && p->max_idle_timeout && p->max_idle_timeout / 2 < ka)
		ka = p->max_idle_timeout / 2;
	ngtcp2_conn_set_keep_alive_timeout(conn, ka);
	if (ngtcp2_conn_open_bidi_stream(conn, &sid, NULL)) {
		snprintf(c->why, sizeof(c->why),
			 "the server allows no bidirectional stream");
		return NGTCP2_ERR_CALLBACK_FAILURE;
	}
	c->sid = sid;
	return c->cb->stream_open(c->ud, sid) ? NGTCP2_ERR_CALLBACK_FAILURE : 0;
}

/**
 * on_rand() - ngtcp2 asks for random bytes
 * @dest:	where
 * @len:	how many
 * @ctx:	unused
 */
static void on_rand(uint8_t *dest, size_t len, const ngtcp2_rand_ctx *ctx)
{
	ngq_random(dest, len);
}

/**
 * on_new_cid() - a connection ID of ours for the server to use
 * @conn:	the connection
 * @cid:	the ID, filled in
 * @token:	its stateless reset token, filled in
 * @len:	the length wanted
 * @ud:		our connection
 *
 * The client's socket is connected: no ID routes anything here.
 *
 * Return: 0, or NGTCP2_ERR_CALLBACK_FAILURE.
 */
static int on_new_cid(ngtcp2_conn *conn, ngtcp2_cid *cid, uint8_t *token,
		      size_t len, void *ud)
{
	struct ngqc_conn *c = ud;

	ngq_random(cid->data, len);
	cid->datalen = len;
	if (ngtcp2_crypto_generate_stateless_reset_token(token, c->secret,
							 NGQ_SECRET_LEN, cid))
		return NGTCP2_ERR_CALLBACK_FAILURE;
	return 0;
}

/**
 * on_stream_data() - in-order bytes of a stream
 * @conn:	the connection
 * @flags:	NGTCP2_STREAM_DATA_FLAG_FIN if they end it
 * @sid:	the stream
 * @offset:	unused: they come in order
 * @data:	the bytes
 * @len:	how many
 * @ud:		our connection
 * @sud:	unused
 *
 * Return: 0, or NGTCP2_ERR_CALLBACK_FAILURE.
 */
static int on_stream_data(ngtcp2_conn *conn, uint32_t flags, int64_t sid,
			  uint64_t offset, const uint8_t *data, size_t len,
			  void *ud, void *sud)
{
	struct ngqc_conn *c = ud;

	if (sid != c->sid)
		return 0; /* the server may open none: never */
	if (c->cb->stream_data(c->ud, data, len,
			       flags & NGTCP2_STREAM_DATA_FLAG_FIN))
		return NGTCP2_ERR_CALLBACK_FAILURE;
	return 0;
}

/**
 * on_acked() - the server acknowledged bytes of the stream
 * @conn:	the connection
 * @sid:	the stream
 * @offset:	unused: acknowledgements come in order
 * @len:	how many
 * @ud:		our connection
 * @sud:	unused
 *
 * Return: 0.
 */
static int on_acked(ngtcp2_conn *conn, int64_t sid, uint64_t offset,
		    uint64_t len, void *ud, void *sud)
{
	struct ngqc_conn *c = ud;

	if (sid == c->sid)
		c->cb->stream_acked(c->ud, len);
	return 0;
}

/**
 * on_reset() - the server reset the stream (RESET_STREAM)
 * @conn:	the connection
 * @sid:	the stream
 * @size:	unused
 * @code:	unused: SMB defines no application error
 * @ud:		our connection
 * @sud:	unused
 *
 * Return: 0.
 */
static int on_reset(ngtcp2_conn *conn, int64_t sid, uint64_t size,
		    uint64_t code, void *ud, void *sud)
{
	struct ngqc_conn *c = ud;

	if (sid == c->sid)
		c->cb->stream_reset(c->ud);
	return 0;
}

/**
 * on_stop_sending() - the server asked the stream's sending stopped
 * @conn:	the connection
 * @sid:	the stream
 * @code:	unused
 * @ud:		our connection
 * @sud:	unused
 *
 * Return: 0.
 */
static int on_stop_sending(ngtcp2_conn *conn, int64_t sid, uint64_t code,
			   void *ud, void *sud)
{
	return on_reset(conn, sid, 0, code, ud, sud);
}

static const ngtcp2_callbacks ngqc_callbacks = {
	.client_initial = ngtcp2_crypto_client_initial_cb,
	.recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb,
	.handshake_completed = on_handshake,
	.encrypt = ngtcp2_crypto_encrypt_cb,
	.decrypt = ngtcp2_crypto_decrypt_cb,
	.hp_mask = ngtcp2_crypto_hp_mask_cb,
	.recv_stream_data = on_stream_data,
	.acked_stream_data_offset = on_acked,
	.recv_retry = ngtcp2_crypto_recv_retry_cb,
	.rand = on_rand,
	.get_new_connection_id = on_new_cid,
	.update_key = ngtcp2_crypto_update_key_cb,
	.stream_reset = on_reset,
	.delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb,
	.delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb,
	.get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb,
	.stream_stop_sending = on_stop_sending,
	.version_negotiation = ngtcp2_crypto_version_negotiation_cb,
};

/**
 * tls_new() - a connection's TLS session: client, TLS 1.3, ALPN smb, SNI
 * @c:		the connection, its name set
 *
 * An address as the name is sent as no SNI (RFC 6066 3), and is checked
 * against the certificate's IP addresses.
 *
 * Return: 0, or -1.
 */
static int tls_new(struct ngqc_conn *c)
{
	gnutls_datum_t alpn = { .data = (unsigned char *)NGQC_ALPN,
				.size = strlen(NGQC_ALPN) };
	bool literal = strspn(c->name, "0123456789.") == strlen(c->name) ||
		       strchr(c->name, ':');

	if (gnutls_init(&c->tls, GNUTLS_CLIENT | GNUTLS_NO_END_OF_EARLY_DATA))
		return -1;
	c->ref.get_conn = get_conn;
	c->ref.user_data = c;
	gnutls_session_set_ptr(c->tls, &c->ref);
	if (gnutls_priority_set_direct(c->tls, NGQC_PRIORITY, NULL) ||
	    ngtcp2_crypto_gnutls_configure_client_session(c->tls) ||
	    gnutls_credentials_set(c->tls, GNUTLS_CRD_CERTIFICATE,
				   c->creds->cred) ||
	    gnutls_alpn_set_protocols(c->tls, &alpn, 1, GNUTLS_ALPN_MANDATORY))
		return -1;
	if (!literal && gnutls_server_name_set(c->tls, GNUTLS_NAME_DNS, c->name,
					       strlen(c->name)))
		return -1;
	return 0;
}

/**
 * cc_algo() - ngtcp2's congestion control by its name
 * @name:	reno, cubic, bbr or bbr2; empty for cubic
 *
 * Return: the algorithm, or -1 for a name ngtcp2 does not have.
 */
static int cc_algo(const char *name)
{
	static const char *const names[] = {
		[NGTCP2_CC_ALGO_RENO] = "reno",
		[NGTCP2_CC_ALGO_CUBIC] = "cubic",
		[NGTCP2_CC_ALGO_BBR] = "bbr",
		[NGTCP2_CC_ALGO_BBR2] = "bbr2",
	};

	if (!*name)
		return NGTCP2_CC_ALGO_CUBIC;
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i]))
			return (int)i;
	return -1;
}

/**
 * ngqc_cc_known() - is a congestion control name one QUIC has here
 * @name:	the name; empty for the default
 *
 * Return: true if ngqc_connect() takes it.
 */
bool ngqc_cc_known(const char *name)
{
	return cc_algo(name) >= 0;
}

/**
 * conn_new() - ngtcp2's client connection, with its settings and the
 *		transport parameters it offers
 * @c:		the connection, its TLS session made
 * @d:		what to dial
 * @path:	the UDP socket's two addresses
 * @now:	the time, ns
 *
 * The server may open no stream; the window is @d->window both for the
 * stream and the connection. The connection's --connect-timeout bounds
 * the handshake, not ngtcp2's own.
 *
 * Return: 0, or -1.
 */
static int conn_new(struct ngqc_conn *c, const struct ngqc_dial *d,
		    const struct ngq_path *path, uint64_t now)
{
	ngtcp2_path p = {
		.local = { .addr = (ngtcp2_sockaddr *)path->local,
			   .addrlen = path->locallen },
		.remote = { .addr = (ngtcp2_sockaddr *)path->remote,
			    .addrlen = path->remotelen },
	};
	ngtcp2_transport_params params;
	ngtcp2_settings st;
	ngtcp2_cid dcid, scid;
	int cc = cc_algo(d->cc);

	dcid.datalen = NGQ_SCID_LEN;
	ngq_random(dcid.data, dcid.datalen);
	scid.datalen = NGQ_SCID_LEN;
	ngq_random(scid.data, scid.datalen);
	ngtcp2_settings_default(&st);
	st.initial_ts = now;
	st.cc_algo = cc < 0 ? NGTCP2_CC_ALGO_CUBIC : cc;
	st.handshake_timeout = UINT64_MAX;
	ngtcp2_transport_params_default(&params);
	params.initial_max_streams_bidi = 0;
	params.initial_max_streams_uni = 0;
	params.initial_max_stream_data_bidi_local = d->window;
	params.initial_max_data = d->window;
	params.max_idle_timeout = NGQC_IDLE;
	if (ngtcp2_conn_client_new(&c->conn, &dcid, &scid, &p,
				   NGTCP2_PROTO_VER_V1, &ngqc_callbacks, &st,
				   &params, NULL, c))
		return -1;
	ngtcp2_conn_set_tls_native_handle(c->conn, c->tls);
	return 0;
}

/**
 * ngqc_connect() - start a client connection: its first Initial is due
 *		    (ngqc_write())
 * @out:	the connection
 * @d:		what to dial and how to check the server
 * @cr:		its credentials (ngqc_creds_load()), its own from here on,
 *		even on failure
 * @path:	the UDP socket's two addresses
 * @cb:		what the connection tells its owner: stream_open() when the
 *		handshake is over and the stream open; cid_add() and
 *		cid_del() are not called
 * @ud:		their argument
 * @now:	the time, ns
 *
 * Return: 0, or -1 (nothing is left of it).
 */
int ngqc_connect(struct ngqc_conn **out, const struct ngqc_dial *d,
		 struct ngqc_creds *cr, const struct ngq_path *path,
		 const struct ngq_cb *cb, void *ud, uint64_t now)
{
	struct ngqc_conn *c = calloc(1, sizeof(*c));

	if (!c) {
		ngqc_creds_free(cr);
		return -1;
	}
	c->cb = cb;
	c->ud = ud;
	c->sid = -1;
	c->creds = cr;
	ngtcp2_connection_close_error_default(&c->ccerr);
	ngq_random(c->secret, sizeof(c->secret));
	snprintf(c->name, sizeof(c->name), "%s", d->name);
	c->pinned = d->pinned;
	memcpy(c->pin, d->pin, sizeof(c->pin));
	if (tls_new(c) || conn_new(c, d, path, now)) {
		ngqc_free(c);
		return -1;
	}
	*out = c;
	return 0;
}

/**
 * ngqc_read() - a datagram from the server
 * @c:		the connection
 * @path:	its addresses
 * @pkt:	the datagram
 * @len:	its length
 * @now:	the time, ns
 *
 * Return: enum ngq_state.
 */
enum ngq_state ngqc_read(struct ngqc_conn *c, const struct ngq_path *path,
			 const uint8_t *pkt, size_t len, uint64_t now)
{
	ngtcp2_path p = {
		.local = { .addr = (ngtcp2_sockaddr *)path->local,
			   .addrlen = path->locallen },
		.remote = { .addr = (ngtcp2_sockaddr *)path->remote,
			    .addrlen = path->remotelen },
	};
	int rv;

	/* ngtcp2 takes an empty datagram for a caller's error and the
	 * connection would end (INTERNAL_ERROR): one forged from the
	 * server's address is dropped, as garbage is. */
	if (!len)
		return NGQ_OK;
	rv = ngtcp2_conn_read_pkt(c->conn, &p, NULL, pkt, len, now);
	switch (rv) {
	case 0:
		return NGQ_OK;
	case NGTCP2_ERR_DRAINING:
		return NGQ_DRAIN;
	case NGTCP2_ERR_DROP_CONN:
		return NGQ_DEAD;
	case NGTCP2_ERR_CRYPTO:
		ngtcp2_connection_close_error_set_transport_error_tls_alert(
			&c->ccerr, ngtcp2_conn_get_tls_alert(c->conn), NULL, 0);
		return NGQ_CLOSE;
	default:
		ngtcp2_connection_close_error_set_transport_error_liberr(
			&c->ccerr, rv, NULL, 0);
		return NGQ_CLOSE;
	}
}

/**
 * ngqc_write() - the connection's next packet, with stream bytes if any
 * @c:		the connection
 * @buf:	where to write it
 * @cap:	its size (a datagram's)
 * @iov:	the stream's bytes not yet sent; they must stay where they are
 *		until acknowledged: ngtcp2 keeps pointers, not copies
 * @iovcnt:	how many pieces (2 at most)
 * @fin:	the stream ends after them
 * @taken:	how many of them went into the packet; -1 if no stream frame
 *		did (a FIN alone is 0)
 * @now:	the time, ns
 *
 * The socket is connected: the packet goes to the server.
 *
 * Return: the packet's length, 0 for nothing to send now, or -1 if the
 * connection is to be closed (ngqc_close_pkt()).
 */
ssize_t ngqc_write(struct ngqc_conn *c, uint8_t *buf, size_t cap,
		   const struct iovec *iov, int iovcnt, bool fin,
		   ssize_t *taken, uint64_t now)
{
	ngtcp2_vec v[2];
	ngtcp2_ssize n, nd = -1;
	int64_t sid = c->sid;
	uint32_t fl = fin ? NGTCP2_WRITE_STREAM_FLAG_FIN : 0;

	if (iovcnt > 2)
		iovcnt = 2;
	for (int i = 0; i < iovcnt; i++)
		v[i] = (ngtcp2_vec){ iov[i].iov_base, iov[i].iov_len };
	if (sid < 0 || (!iovcnt && !fin))
		sid = -1, iovcnt = 0, fl = 0;
	n = ngtcp2_conn_writev_stream(c->conn, NULL, NULL, buf, cap, &nd, fl,
				      sid, v, iovcnt, now);
	if (n == NGTCP2_ERR_STREAM_DATA_BLOCKED ||
	    n == NGTCP2_ERR_STREAM_SHUT_WR || n == NGTCP2_ERR_STREAM_NOT_FOUND)
		n = ngtcp2_conn_writev_stream(c->conn, NULL, NULL, buf, cap,
					      &nd, 0, -1, NULL, 0, now);
	if (n < 0) {
		ngtcp2_connection_close_error_set_transport_error_liberr(
			&c->ccerr, (int)n, NULL, 0);
		return -1;
	}
	*taken = nd;
	return n;
}

/**
 * ngqc_sent() - the packets ngqc_write() gave are out: pacing counts
 *		 from now
 * @c:		the connection
 * @now:	the time, ns
 */
void ngqc_sent(struct ngqc_conn *c, uint64_t now)
{
	ngtcp2_conn_update_pkt_tx_time(c->conn, now);
}

/**
 * ngqc_close_pkt() - the CONNECTION_CLOSE that ends a connection
 * @c:		the connection
 * @buf:	where to write it
 * @cap:	its size
 * @now:	the time, ns
 *
 * Why is what ngqc_read(), ngqc_write() or ngqc_timeout() found; if
 * nothing went wrong (the connection behind it ended, or gave up), an
 * application close with no error.
 *
 * Return: its length, or 0 if none can be sent.
 */
ssize_t ngqc_close_pkt(struct ngqc_conn *c, uint8_t *buf, size_t cap,
		       uint64_t now)
{
	ngtcp2_ssize n;

	if (ngtcp2_conn_is_in_closing_period(c->conn) ||
	    ngtcp2_conn_is_in_draining_period(c->conn))
		return 0;
	if (c->ccerr.type ==
		    NGTCP2_CONNECTION_CLOSE_ERROR_CODE_TYPE_TRANSPORT &&
	    !c->ccerr.error_code)
		ngtcp2_connection_close_error_set_application_error(&c->ccerr,
								    0, NULL, 0);
	n = ngtcp2_conn_write_connection_close(c->conn, NULL, NULL, buf, cap,
					       &c->ccerr, now);
	return n < 0 ? 0 : n;
}

/**
 * ngqc_expiry() - when the connection's next timer is due
 * @c:	the connection
 *
 * Return: the time, ns, or UINT64_MAX for none.
 */
uint64_t ngqc_expiry(struct ngqc_conn *c)
{
	return ngtcp2_conn_get_expiry(c->conn);
}

/**
 * ngqc_timeout() - the connection's timer is due
 * @c:		the connection
 * @now:	the time, ns
 *
 * Return: NGQ_OK (write what is due), NGQ_DEAD (idle: it ends silently)
 * or NGQ_CLOSE.
 */
enum ngq_state ngqc_timeout(struct ngqc_conn *c, uint64_t now)
{
	int rv = ngtcp2_conn_handle_expiry(c->conn, now);

	if (!rv)
		return NGQ_OK;
	if (rv == NGTCP2_ERR_IDLE_CLOSE)
		return NGQ_DEAD;
	ngtcp2_connection_close_error_set_transport_error_liberr(&c->ccerr, rv,
								 NULL, 0);
	return NGQ_CLOSE;
}

/**
 * ngqc_consumed() - bytes of the stream were taken: the server may send
 *		     as many more
 * @c:	the connection
 * @n:	how many
 */
void ngqc_consumed(struct ngqc_conn *c, size_t n)
{
	if (c->sid >= 0)
		ngtcp2_conn_extend_max_stream_offset(c->conn, c->sid, n);
	ngtcp2_conn_extend_max_offset(c->conn, n);
}

/**
 * ngqc_reset() - reset the stream both ways (RESET_STREAM, STOP_SENDING)
 * @c:	the connection
 */
void ngqc_reset(struct ngqc_conn *c)
{
	if (c->sid >= 0)
		ngtcp2_conn_shutdown_stream(c->conn, c->sid, 0);
}

/**
 * close_text() - what the server's CONNECTION_CLOSE said, in words
 * @e:		its error
 * @out:	buffer for the words
 * @outlen:	its size
 *
 * Return: true if the server sent one with an error.
 */
static bool close_text(const ngtcp2_connection_close_error *e, char *out,
		       size_t outlen)
{
	bool transport =
		e->type == NGTCP2_CONNECTION_CLOSE_ERROR_CODE_TYPE_TRANSPORT;

	if (transport &&
	    e->error_code == NGTCP2_CRYPTO_ERROR + NGQC_ALERT_NO_APP_PROTOCOL) {
		snprintf(out, outlen,
			 "the server does not speak ALPN smb (TLS alert 120)");
		return true;
	}
	if (transport && !e->error_code)
		return false;
	snprintf(out, outlen,
		 "the server closed the connection (%s error 0x%llx%s%.*s)",
		 transport ? "transport" : "application",
		 (unsigned long long)e->error_code, e->reasonlen ? ": " : "",
		 (int)e->reasonlen, (const char *)e->reason);
	return true;
}

/**
 * ngqc_why() - why a connection failed, in words
 * @c:		the connection
 * @out:	buffer for the words
 * @outlen:	its size
 *
 * The certificate's complaint if there was one; else what the server
 * said in its CONNECTION_CLOSE; else ngtcp2's error.
 */
void ngqc_why(struct ngqc_conn *c, char *out, size_t outlen)
{
	ngtcp2_connection_close_error e;

	if (*c->why) {
		snprintf(out, outlen, "%s", c->why);
		return;
	}
	ngtcp2_conn_get_connection_close_error(c->conn, &e);
	if (close_text(&e, out, outlen))
		return;
	if (c->ccerr.error_code)
		snprintf(out, outlen, "QUIC error 0x%llx",
			 (unsigned long long)c->ccerr.error_code);
	else
		snprintf(out, outlen, "the QUIC connection failed");
}

/**
 * ngqc_free() - forget a connection and its credentials
 * @c:	the connection
 */
void ngqc_free(struct ngqc_conn *c)
{
	if (c->conn)
		ngtcp2_conn_del(c->conn);
	if (c->tls)
		gnutls_deinit(c->tls);
	ngqc_creds_free(c->creds);
	free(c);
}
