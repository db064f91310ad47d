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

#include "quic/ngq-t.h"
#include "quic/ngq_client.h"

#define NGQC_IDLE		   (120 * NGTCP2_SECONDS)
#define NGQC_ALERT_NO_APP_PROTOCOL 120

/* A client PINGs after this long without a packet: a NAT that gives it a
 * new port mid-transfer leaves the server sending to the old one, and only
 * the client's next packet shows the server where it went (RFC 9000 9.3).
 * A client that only receives sent that packet at the 25 s keepalive: gets
 * through a NAT that moved took 29 to 72 s instead of 2, and one ended at
 * the 120 s idle timeout (test_wan_emulated). */
#define NGQC_KEEPALIVE (5 * NGTCP2_SECONDS)

/**
 * struct ngqc_creds - what a client's TLS session trusts and shows
 * @cred:	GnuTLS's
 */
struct ngqc_creds {
	gnutls_certificate_credentials_t cred;
};

/**
 * struct ngqc_side - what a client's connection has that a listener's has
 *		      not (struct ngq_conn's @cl)
 * @secret:	the stateless reset secret of the IDs it issues
 * @creds:	its credentials, its own
 * @name:	the server's name, for SNI and the certificate's check
 * @pinned:	@pin replaces the check against a CA and the name
 * @pin:	the SHA-256 of the server's certificate
 * @why:	why the handshake failed, once it has, where GnuTLS said
 */
struct ngqc_side {
	uint8_t secret[NGQ_SECRET_LEN];
	struct ngqc_creds *creds;
	char name[256];
	bool pinned;
	uint8_t pin[32];
	char why[512];
};

/**
 * conn_of() - the client side of the connection a TLS session belongs to
 * @s:	the session
 *
 * Return: its client side.
 */
static struct ngqc_side *conn_of(gnutls_session_t s)
{
	ngtcp2_crypto_conn_ref *ref = gnutls_session_get_ptr(s);

	return ((struct ngq_conn *)ref->user_data)->cl;
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
static int verify_pin(struct ngqc_side *k, gnutls_session_t s)
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
	struct ngqc_side *k = conn_of(s);
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
	struct ngq_conn *c = ud;
	int64_t sid;

	ngq_keepalive(conn, NGQC_KEEPALIVE);
	if (ngtcp2_conn_open_bidi_stream(conn, &sid, NULL)) {
		snprintf(c->cl->why, sizeof(c->cl->why),
			 "the server allows no bidirectional stream");
		return NGTCP2_ERR_CALLBACK_FAILURE;
	}
	c->sid = sid;
	return c->cb->stream_open(c->ud, sid) ? NGTCP2_ERR_CALLBACK_FAILURE : 0;
}

/**
 * tls_new() - a connection's TLS session: client, TLS 1.3, ALPN smb, SNI
 * @c:		the connection, its name set
 *
 * An address as the name is sent as no SNI (RFC 6066 3), and is checked
 * against the certificate's IP addresses.
 *
 * Return: 0, or -1.
 */
static int tls_new(struct ngq_conn *c)
{
	const char *name = c->cl->name;
	bool literal = strspn(name, "0123456789.") == strlen(name) ||
		       strchr(name, ':');

	if (ngq_tls_init(c, GNUTLS_CLIENT, c->cl->creds->cred))
		return -1;
	if (!literal &&
	    gnutls_server_name_set(c->tls, GNUTLS_NAME_DNS, name, strlen(name)))
		return -1;
	return 0;
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
static int conn_new(struct ngq_conn *c, const struct ngqc_dial *d,
		    const struct ngq_path *path, uint64_t now)
{
	ngtcp2_path p = ngq_to_path(path);
	ngtcp2_callbacks cbs = {
		.client_initial = ngtcp2_crypto_client_initial_cb,
		.handshake_completed = on_handshake,
		.recv_retry = ngtcp2_crypto_recv_retry_cb,
	};
	ngtcp2_transport_params params;
	ngtcp2_settings st;
	ngtcp2_cid dcid, scid;
	int cc = ngq_cc_algo(d->cc);

	ngq_callbacks(&cbs);
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
				   NGTCP2_PROTO_VER_V1, &cbs, &st, &params,
				   NULL, c))
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
int ngqc_connect(struct ngq_conn **out, const struct ngqc_dial *d,
		 struct ngqc_creds *cr, const struct ngq_path *path,
		 const struct ngq_cb *cb, void *ud, uint64_t now)
{
	struct ngq_conn *c = calloc(1, sizeof(*c));
	struct ngqc_side *cl = calloc(1, sizeof(*cl));

	if (!c || !cl) {
		free(c);
		free(cl);
		ngqc_creds_free(cr);
		return -1;
	}
	*c = (struct ngq_conn){
		.cb = cb, .ud = ud, .sid = -1, .cl = cl, .secret = cl->secret
	};
	cl->creds = cr;
	ngtcp2_connection_close_error_default(&c->ccerr);
	ngq_random(cl->secret, sizeof(cl->secret));
	snprintf(cl->name, sizeof(cl->name), "%s", d->name);
	cl->pinned = d->pinned;
	memcpy(cl->pin, d->pin, sizeof(cl->pin));
	if (tls_new(c) || conn_new(c, d, path, now)) {
		ngq_free(c);
		return -1;
	}
	*out = c;
	return 0;
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
void ngqc_why(struct ngq_conn *c, char *out, size_t outlen)
{
	ngtcp2_connection_close_error e;

	if (*c->cl->why) {
		snprintf(out, outlen, "%s", c->cl->why);
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
 * ngqc_side_free() - forget a connection's client side and its
 *		      credentials (ngq_free()'s)
 * @cl:	the client side
 */
void ngqc_side_free(struct ngqc_side *cl)
{
	ngqc_creds_free(cl->creds);
	free(cl);
}
