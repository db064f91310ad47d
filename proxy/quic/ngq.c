// SPDX-License-Identifier: GPL-2.0-or-later
/* ngq.c - every ngtcp2 and GnuTLS call of the daemon
 *
 * Theory of operation: ngtcp2 0.12 (what Debian 12 ships) does QUIC v1's
 * packets, loss recovery and flow control; GnuTLS 3.7 does its TLS 1.3
 * handshake through ngtcp2_crypto_gnutls. Their API changed before and
 * at ngtcp2 1.0, so they are called here and nowhere else: quic.c hands
 * in datagrams and times (nanoseconds of CLOCK_MONOTONIC, ngtcp2's own
 * precision) and gets back packets to send and the stream's bytes
 * through struct ngq_cb.
 *
 * The server speaks TLS 1.3 only and ALPN "smb" only: a client offering
 * no "smb" is refused with the no_application_protocol alert (120), as
 * a QUIC CONNECTION_CLOSE of CRYPTO_ERROR 0x178. Each connection allows
 * the client one bidirectional stream and no unidirectional one: SMB
 * over QUIC uses one (MS-SMB2 2.1), and nothing else is served.
 *
 * Idle: a connection with no packet for NGQ_IDLE seconds ends (the
 * transport parameter; the smaller of both ends' applies). While it is
 * otherwise silent, a PING goes out every NGQ_KEEPALIVE seconds, or every
 * half of the client's own idle timeout if that is shorter (set once the
 * handshake has told it), which the client acknowledges: so an SMB
 * session idle for hours (a mapped drive) keeps its connection and its
 * NAT binding (home routers forget UDP after 30 s to 2 min), and a client
 * that vanished is found within the idle timeout.
 */
#include "config.h"

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/socket.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>
#include <ngtcp2/ngtcp2_crypto_gnutls.h>

#include "quic/ngq.h"

#define NGQ_IDLE		  (120 * NGTCP2_SECONDS)
#define NGQ_KEEPALIVE		  (25 * NGTCP2_SECONDS)
#define NGQ_ALPN		  "smb"
#define NGQ_ALERT_NO_APP_PROTOCOL 120

/* TLS 1.3 only; QUIC forbids the middlebox compatibility mode. */
#define NGQ_PRIORITY "NORMAL:-VERS-ALL:+VERS-TLS1.3:%DISABLE_TLS13_COMPAT_MODE"

/**
 * struct ngq_creds - a listener's certificate and key
 * @cred:	GnuTLS's
 * @refs:	the listener's 1 while current, and one per connection whose
 *		TLS session uses them: a reload that rereads the files
 *		leaves connections on the old ones to their end
 * @access:	the client certificates allowed and denied, NULL when none
 *		is asked for (ngq_creds_client_auth())
 */
struct ngq_creds {
	gnutls_certificate_credentials_t cred;
	unsigned refs;
	struct ngq_access *access;
};

struct ngq_access;
static void access_free(struct ngq_access *a);
static int client_auth_session(gnutls_session_t tls,
			       const struct ngq_creds *cr);

/**
 * struct ngq_conn - one QUIC connection
 * @conn:	ngtcp2's
 * @tls:	GnuTLS's session
 * @ref:	how ngtcp2_crypto finds @conn from @tls
 * @ccerr:	why it closes, for the CONNECTION_CLOSE
 * @cb:		its owner's callbacks
 * @ud:		their argument
 * @secret:	the listener's stateless reset secret
 * @sid:	the stream served, -1 before the client opens it
 * @bad_alpn:	the client offered no "smb"
 * @creds:	the certificate its session uses (a reference)
 * @alert:	the TLS alert its handshake fails with, 0 for GnuTLS's own
 *		(a client certificate refused: 49, access_denied)
 * @no_cert:	a client that sent no certificate was counted
 */
struct ngq_conn {
	ngtcp2_conn *conn;
	gnutls_session_t tls;
	ngtcp2_crypto_conn_ref ref;
	ngtcp2_connection_close_error ccerr;
	const struct ngq_cb *cb;
	void *ud;
	const uint8_t *secret;
	int64_t sid;
	bool bad_alpn;
	struct ngq_creds *creds;
	uint8_t alert;
	bool no_cert;
};

/**
 * file_readable() - say which of the two files cannot be read
 * @what:	the option's name
 * @path:	the file
 * @err:	buffer for the line
 * @errlen:	its size
 *
 * Return: 0, or -1 with @err set.
 */
static int file_readable(const char *what, const char *path, char *err,
			 size_t errlen)
{
	if (!*path) {
		snprintf(err, errlen, "%s is required on a quic listener",
			 what);
		return -1;
	}
	if (access(path, R_OK)) {
		snprintf(err, errlen, "%s %s: %s", what, path, strerror(errno));
		return -1;
	}
	return 0;
}

/**
 * ngq_creds_load() - read a listener's certificate chain and key
 * @cert:	PEM file of the chain, the server's first
 * @key:	PEM file of its private key
 * @out:	the credentials
 * @err:	buffer for one line saying what is wrong
 * @errlen:	its size
 *
 * A key that is not the certificate's is refused here, at start and at
 * --check, not at the first client's handshake.
 *
 * Return: 0, or -1 with @err set.
 */
int ngq_creds_load(const char *cert, const char *key, struct ngq_creds **out,
		   char *err, size_t errlen)
{
	struct ngq_creds *cr;
	int rv;

	if (file_readable("quic-cert", cert, err, errlen) ||
	    file_readable("quic-key", key, err, errlen))
		return -1;
	cr = calloc(1, sizeof(*cr));
	if (!cr || gnutls_certificate_allocate_credentials(&cr->cred)) {
		free(cr);
		snprintf(err, errlen, "quic: out of memory");
		return -1;
	}
	rv = gnutls_certificate_set_x509_key_file(cr->cred, cert, key,
						  GNUTLS_X509_FMT_PEM);
	if (rv < 0) {
		snprintf(
			err, errlen,
			rv == GNUTLS_E_CERTIFICATE_KEY_MISMATCH
				? "quic-key %s is not the key of quic-cert %s: %s"
				: "quic-cert %2$s / quic-key %1$s: %3$s",
			key, cert, gnutls_strerror(rv));
		ngq_creds_free(cr);
		return -1;
	}
	cr->refs = 1;
	*out = cr;
	return 0;
}

/**
 * ngq_creds_free() - drop a reference to a certificate; the last frees it
 * @cr:	the credentials, or NULL
 *
 * Connections and credentials live in one worker: no atomics.
 */
void ngq_creds_free(struct ngq_creds *cr)
{
	if (!cr || --cr->refs > 0)
		return;
	gnutls_certificate_free_credentials(cr->cred);
	access_free(cr->access);
	free(cr);
}

/**
 * ngq_random() - random bytes, from GnuTLS's generator
 * @out:	where
 * @len:	how many
 */
void ngq_random(uint8_t *out, size_t len)
{
	if (gnutls_rnd(GNUTLS_RND_RANDOM, out, len))
		abort(); /* no randomness: no safe connection ID either */
}

/**
 * ngq_peek() - what a datagram is, and its destination connection ID
 * @pkt:	the datagram
 * @len:	its length
 * @dcid:	the ID
 * @dcidlen:	its length
 *
 * Return: enum ngq_kind.
 */
enum ngq_kind ngq_peek(const uint8_t *pkt, size_t len, const uint8_t **dcid,
		       size_t *dcidlen)
{
	ngtcp2_version_cid vc;
	int rv = ngtcp2_pkt_decode_version_cid(&vc, pkt, len, NGQ_SCID_LEN);

	if (rv == NGTCP2_ERR_VERSION_NEGOTIATION)
		return NGQ_VERSION;
	if (rv)
		return NGQ_GARBAGE;
	*dcid = vc.dcid;
	*dcidlen = vc.dcidlen;
	return NGQ_PACKET;
}

/**
 * ngq_version_pkt() - the Version Negotiation answer to a datagram of a
 *		       version we do not speak
 * @pkt:	the datagram (ngq_peek() said NGQ_VERSION)
 * @len:	its length
 * @out:	where to write the answer
 * @cap:	its size
 *
 * Return: the answer's length, or -1 if none is due.
 */
ssize_t ngq_version_pkt(const uint8_t *pkt, size_t len, uint8_t *out,
			size_t cap)
{
	uint32_t sv[] = { NGTCP2_PROTO_VER_V1 };
	ngtcp2_version_cid vc;
	uint8_t r;
	ngtcp2_ssize n;

	if (ngtcp2_pkt_decode_version_cid(&vc, pkt, len, NGQ_SCID_LEN) !=
		    NGTCP2_ERR_VERSION_NEGOTIATION ||
	    len < NGTCP2_MAX_UDP_PAYLOAD_SIZE)
		return -1; /* RFC 9000 6.1: only to a full-sized Initial */
	ngq_random(&r, 1);
	n = ngtcp2_pkt_write_version_negotiation(
		out, cap, r, vc.scid, vc.scidlen, vc.dcid, vc.dcidlen, sv, 1);
	return n < 0 ? -1 : n;
}

/**
 * ngq_is_initial() - could a datagram open a connection
 * @pkt:	the datagram
 * @len:	its length
 *
 * Return: true for a well-formed client Initial of a version we speak,
 * padded to 1200 bytes as RFC 9000 demands; nothing else makes state.
 */
bool ngq_is_initial(const uint8_t *pkt, size_t len)
{
	ngtcp2_pkt_hd hd;

	return ngtcp2_accept(&hd, pkt, len) == 0;
}

/**
 * get_conn() - ngtcp2_crypto's way from a TLS session to its connection
 * @ref:	&ngq_conn.ref
 *
 * Return: the connection.
 */
static ngtcp2_conn *get_conn(ngtcp2_crypto_conn_ref *ref)
{
	return ((struct ngq_conn *)ref->user_data)->conn;
}

/**
 * on_client_hello() - refuse a client that offers no "smb"
 * @s:		the session
 * @htype:	unused
 * @when:	unused
 * @incoming:	unused
 * @msg:	unused
 *
 * Return: 0, or GNUTLS_E_NO_APPLICATION_PROTOCOL to fail the handshake.
 */
static int on_client_hello(gnutls_session_t s, unsigned htype, unsigned when,
			   unsigned incoming, const gnutls_datum_t *msg)
{
	ngtcp2_crypto_conn_ref *ref = gnutls_session_get_ptr(s);
	struct ngq_conn *c = ref->user_data;
	gnutls_datum_t p;

	if (!gnutls_alpn_get_selected_protocol(s, &p) &&
	    p.size == strlen(NGQ_ALPN) && !memcmp(p.data, NGQ_ALPN, p.size))
		return 0;
	c->bad_alpn = true;
	return GNUTLS_E_NO_APPLICATION_PROTOCOL;
}

/**
 * tls_new() - a connection's TLS session: server, TLS 1.3, ALPN smb
 * @c:		the connection
 * @cr:		the listener's certificate
 *
 * Return: 0, or -1.
 */
static int tls_new(struct ngq_conn *c, struct ngq_creds *cr)
{
	gnutls_datum_t alpn = { .data = (unsigned char *)NGQ_ALPN,
				.size = strlen(NGQ_ALPN) };

	if (gnutls_init(&c->tls, GNUTLS_SERVER | GNUTLS_NO_END_OF_EARLY_DATA))
		return -1;
	c->creds = cr;
	cr->refs++;
	c->ref.get_conn = get_conn;
	c->ref.user_data = c;
	gnutls_session_set_ptr(c->tls, &c->ref);
	if (gnutls_priority_set_direct(c->tls, NGQ_PRIORITY, NULL) ||
	    ngtcp2_crypto_gnutls_configure_server_session(c->tls) ||
	    gnutls_credentials_set(c->tls, GNUTLS_CRD_CERTIFICATE, cr->cred) ||
	    gnutls_alpn_set_protocols(c->tls, &alpn, 1,
				      GNUTLS_ALPN_MANDATORY) ||
	    client_auth_session(c->tls, cr))
		return -1;
	gnutls_handshake_set_hook_function(c->tls,
					   GNUTLS_HANDSHAKE_CLIENT_HELLO,
					   GNUTLS_HOOK_POST, on_client_hello);
	return 0;
}

/**
 * on_handshake() - the handshake is over: the client's idle timeout is
 *		    known, and keepalives come often enough for it
 * @conn:	the connection
 * @ud:		our connection
 *
 * Return: 0.
 */
static int on_handshake(ngtcp2_conn *conn, void *ud)
{
	const ngtcp2_transport_params *p =
		ngtcp2_conn_get_remote_transport_params(conn);
	ngtcp2_duration ka = NGQ_KEEPALIVE;

	if (p && p->max_idle_timeout && p->max_idle_timeout / 2 < ka)
		ka = p->max_idle_timeout / 2;
	ngtcp2_conn_set_keep_alive_timeout(conn, ka);
	return 0;
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
 * on_new_cid() - ngtcp2 wants another connection ID of ours to offer
 * @conn:	the connection
 * @cid:	the ID, filled in
 * @token:	its stateless reset token, filled in
 * @len:	the length wanted
 * @ud:		our connection
 *
 * Return: 0, or NGTCP2_ERR_CALLBACK_FAILURE.
 */
static int on_new_cid(ngtcp2_conn *conn, ngtcp2_cid *cid, uint8_t *token,
		      size_t len, void *ud)
{
	struct ngq_conn *c = ud;

	ngq_random(cid->data, len);
	cid->datalen = len;
	if (ngtcp2_crypto_generate_stateless_reset_token(token, c->secret,
							 NGQ_SECRET_LEN, cid) ||
	    c->cb->cid_add(c->ud, cid->data, cid->datalen))
		return NGTCP2_ERR_CALLBACK_FAILURE;
	return 0;
}

/**
 * on_remove_cid() - one of our connection IDs is retired
 * @conn:	the connection
 * @cid:	the ID
 * @ud:		our connection
 *
 * Return: 0.
 */
static int on_remove_cid(ngtcp2_conn *conn, const ngtcp2_cid *cid, void *ud)
{
	struct ngq_conn *c = ud;

	c->cb->cid_del(c->ud, cid->data, cid->datalen);
	return 0;
}

/**
 * on_stream_open() - the client opened a stream
 * @conn:	the connection
 * @sid:	its ID
 * @ud:		our connection
 *
 * Return: 0.
 */
static int on_stream_open(ngtcp2_conn *conn, int64_t sid, void *ud)
{
	struct ngq_conn *c = ud;

	if (c->sid < 0 && ngtcp2_is_bidi_stream(sid) &&
	    !c->cb->stream_open(c->ud, sid))
		c->sid = sid;
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
 * A stream other than the one served is refused, and its bytes credited
 * back so that they do not shrink the connection's window.
 *
 * Return: 0, or NGTCP2_ERR_CALLBACK_FAILURE.
 */
static int on_stream_data(ngtcp2_conn *conn, uint32_t flags, int64_t sid,
			  uint64_t offset, const uint8_t *data, size_t len,
			  void *ud, void *sud)
{
	struct ngq_conn *c = ud;

	if (sid != c->sid) {
		ngtcp2_conn_extend_max_offset(conn, len);
		ngtcp2_conn_shutdown_stream(conn, sid, 0);
		return 0;
	}
	if (c->cb->stream_data(c->ud, data, len,
			       flags & NGTCP2_STREAM_DATA_FLAG_FIN))
		return NGTCP2_ERR_CALLBACK_FAILURE;
	return 0;
}

/**
 * on_acked() - the client acknowledged bytes of a stream
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
	struct ngq_conn *c = ud;

	if (sid == c->sid)
		c->cb->stream_acked(c->ud, len);
	return 0;
}

/**
 * on_reset() - the client reset the stream (RESET_STREAM)
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
	struct ngq_conn *c = ud;

	if (sid == c->sid)
		c->cb->stream_reset(c->ud);
	return 0;
}

/**
 * on_stop_sending() - the client asked the stream's sending stopped
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

/**
 * on_path_validation() - a new path of the client's was validated
 * @conn:	the connection
 * @flags:	unused (a server has no preferred address here)
 * @path:	the path
 * @res:	whether it answered our PATH_CHALLENGE
 * @ud:		our connection
 *
 * A server validates a path only when the client's packets come from a
 * new address or port (RFC 9000 9): each success is a migration, and
 * ngtcp2 sends from then on to the new address (ngq_write()'s @to).
 *
 * Return: 0.
 */
static int on_path_validation(ngtcp2_conn *conn, uint32_t flags,
			      const ngtcp2_path *path,
			      ngtcp2_path_validation_result res, void *ud)
{
	struct ngq_conn *c = ud;

	if (res == NGTCP2_PATH_VALIDATION_RESULT_SUCCESS && c->cb->migrated)
		c->cb->migrated(c->ud);
	return 0;
}

static const ngtcp2_callbacks ngq_callbacks = {
	.recv_client_initial = ngtcp2_crypto_recv_client_initial_cb,
	.recv_crypto_data = ngtcp2_crypto_recv_crypto_data_cb,
	.handshake_completed = on_handshake,
	.encrypt = ngtcp2_crypto_encrypt_cb,
	.decrypt = ngtcp2_crypto_decrypt_cb,
	.hp_mask = ngtcp2_crypto_hp_mask_cb,
	.recv_stream_data = on_stream_data,
	.acked_stream_data_offset = on_acked,
	.stream_open = on_stream_open,
	.rand = on_rand,
	.get_new_connection_id = on_new_cid,
	.remove_connection_id = on_remove_cid,
	.update_key = ngtcp2_crypto_update_key_cb,
	.stream_reset = on_reset,
	.delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb,
	.delete_crypto_cipher_ctx = ngtcp2_crypto_delete_crypto_cipher_ctx_cb,
	.get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb,
	.stream_stop_sending = on_stop_sending,
	.version_negotiation = ngtcp2_crypto_version_negotiation_cb,
	.path_validation = on_path_validation,
};

/**
 * to_path() - an ngtcp2 path from ours
 * @p:	ours
 *
 * Return: ngtcp2's, pointing at the same addresses.
 */
static ngtcp2_path to_path(const struct ngq_path *p)
{
	return (ngtcp2_path){
		.local = { .addr = (ngtcp2_sockaddr *)p->local,
			   .addrlen = p->locallen },
		.remote = { .addr = (ngtcp2_sockaddr *)p->remote,
			    .addrlen = p->remotelen },
	};
}

/**
 * conn_params() - the transport parameters a connection offers
 * @p:		filled in
 * @hd:		the client's first Initial
 * @scid:	our first connection ID
 * @secret:	the stateless reset secret
 * @window:	bytes the client may send ahead of what is taken
 *
 * Return: 0, or -1.
 */
static int conn_params(ngtcp2_transport_params *p, const ngtcp2_pkt_hd *hd,
		       const ngtcp2_cid *scid, const uint8_t *secret,
		       size_t window)
{
	ngtcp2_transport_params_default(p);
	p->initial_max_streams_bidi = 1;
	p->initial_max_streams_uni = 0;
	p->initial_max_stream_data_bidi_remote = window;
	p->initial_max_data = window;
	p->max_idle_timeout = NGQ_IDLE;
	p->original_dcid = hd->dcid;
	p->stateless_reset_token_present = 1;
	return ngtcp2_crypto_generate_stateless_reset_token(
		p->stateless_reset_token, secret, NGQ_SECRET_LEN, scid);
}

/**
 * retried_params() - a connection whose client answered our Retry
 * @p:		its transport parameters, whose IDs are set here
 * @st:		its settings: the token, which tells ngtcp2 that the
 *		client's address is validated (no amplification limit)
 * @hd:		the client's Initial, which carried the token
 * @rt:		what the token said
 *
 * RFC 9000 7.3: the client checks that original_destination_connection_id
 * is its first Initial's and retry_source_connection_id the Retry's.
 *
 * Return: 0.
 */
static int retried_params(ngtcp2_transport_params *p, ngtcp2_settings *st,
			  const ngtcp2_pkt_hd *hd, const struct ngq_retry *rt)
{
	ngtcp2_cid_init(&p->original_dcid, rt->odcid, rt->odcidlen);
	p->retry_scid = hd->dcid;
	p->retry_scid_present = 1;
	st->token = hd->token;
	return 0;
}

/**
 * ngq_accept() - a new connection from a client's first Initial
 * @out:	the connection
 * @cr:		the listener's certificate
 * @secret:	its stateless reset secret (NGQ_SECRET_LEN bytes, kept)
 * @path:	the datagram's addresses
 * @pkt:	the datagram; ngq_is_initial() said yes
 * @len:	its length
 * @window:	bytes the client may send ahead of what ngq_consumed()
 *		gave back
 * @rt:		what its valid Retry token said (ngq_token()), or NULL if
 *		it brought none
 * @cb:		what the connection tells its owner
 * @ud:		their argument
 * @now:	the time, ns
 *
 * The client's ID and ours are given to @cb->cid_add(); the datagram is
 * not read yet (ngq_read() it).
 *
 * Return: 0, or -1 (nothing is left of it).
 */
int ngq_accept(struct ngq_conn **out, struct ngq_creds *cr,
	       const uint8_t *secret, const struct ngq_path *path,
	       const uint8_t *pkt, size_t len, size_t window,
	       const struct ngq_retry *rt, const struct ngq_cb *cb, void *ud,
	       uint64_t now)
{
	struct ngq_conn *c = calloc(1, sizeof(*c));
	ngtcp2_path p = to_path(path);
	ngtcp2_transport_params params;
	ngtcp2_settings st;
	ngtcp2_pkt_hd hd;
	ngtcp2_cid scid;

	if (!c || ngtcp2_accept(&hd, pkt, len))
		goto fail;
	*c = (struct ngq_conn){
		.cb = cb, .ud = ud, .secret = secret, .sid = -1
	};
	ngtcp2_connection_close_error_default(&c->ccerr);
	scid.datalen = NGQ_SCID_LEN;
	ngq_random(scid.data, scid.datalen);
	ngtcp2_settings_default(&st);
	st.initial_ts = now;
	st.cc_algo = NGTCP2_CC_ALGO_CUBIC;
	if (conn_params(&params, &hd, &scid, secret, window) ||
	    (rt && retried_params(&params, &st, &hd, rt)) || tls_new(c, cr) ||
	    ngtcp2_conn_server_new(&c->conn, &hd.scid, &scid, &p, hd.version,
				   &ngq_callbacks, &st, &params, NULL, c))
		goto fail;
	ngtcp2_conn_set_tls_native_handle(c->conn, c->tls);
	if (cb->cid_add(ud, scid.data, scid.datalen) ||
	    cb->cid_add(ud, hd.dcid.data, hd.dcid.datalen))
		goto fail;
	*out = c;
	return 0;
fail:
	if (c)
		ngq_free(c);
	return -1;
}

static uint8_t client_auth_alert(struct ngq_conn *c, uint8_t alert);

/**
 * ngq_read() - a datagram for a connection
 * @c:		the connection
 * @path:	its addresses
 * @pkt:	the datagram
 * @len:	its length
 * @now:	the time, ns
 *
 * Return: enum ngq_state.
 */
enum ngq_state ngq_read(struct ngq_conn *c, const struct ngq_path *path,
			const uint8_t *pkt, size_t len, uint64_t now)
{
	ngtcp2_path p = to_path(path);
	int rv = ngtcp2_conn_read_pkt(c->conn, &p, NULL, pkt, len, now);
	uint8_t alert;

	switch (rv) {
	case 0:
		return NGQ_OK;
	case NGTCP2_ERR_DRAINING:
		return NGQ_DRAIN;
	case NGTCP2_ERR_DROP_CONN:
	case NGTCP2_ERR_RETRY:
		return NGQ_DEAD;
	case NGTCP2_ERR_CRYPTO:
		alert = ngtcp2_conn_get_tls_alert(c->conn);
		if (c->bad_alpn || ngtcp2_conn_get_tls_error(c->conn) ==
					   GNUTLS_E_NO_APPLICATION_PROTOCOL)
			alert = NGQ_ALERT_NO_APP_PROTOCOL;
		alert = client_auth_alert(c, alert);
		ngtcp2_connection_close_error_set_transport_error_tls_alert(
			&c->ccerr, alert, NULL, 0);
		return NGQ_CLOSE;
	default:
		ngtcp2_connection_close_error_set_transport_error_liberr(
			&c->ccerr, rv, NULL, 0);
		return NGQ_CLOSE;
	}
}

/**
 * ngq_write() - the connection's next packet, with stream bytes if any
 * @c:		the connection
 * @buf:	where to write it
 * @cap:	its size (a datagram's)
 * @iov:	the stream's bytes not yet sent; they must stay where they are
 *		until acknowledged: ngtcp2 keeps pointers, not copies
 * @iovcnt:	how many pieces
 * @fin:	the stream ends after them
 * @taken:	how many of them went into the packet; -1 if no stream frame
 *		did (a FIN alone is 0)
 * @to:		the address to send it to
 * @tolen:	in: its room; out: its length
 * @now:	the time, ns
 *
 * Return: the packet's length, 0 for nothing to send now, or -1 if the
 * connection is to be closed (ngq_close_pkt()).
 */
ssize_t ngq_write(struct ngq_conn *c, uint8_t *buf, size_t cap,
		  const struct iovec *iov, int iovcnt, bool fin, ssize_t *taken,
		  struct sockaddr *to, size_t *tolen, uint64_t now)
{
	ngtcp2_vec v[4];
	ngtcp2_path_storage ps;
	ngtcp2_ssize n, nd = -1;
	int64_t sid = c->sid;
	uint32_t fl = fin ? NGTCP2_WRITE_STREAM_FLAG_FIN : 0;

	for (int i = 0; i < iovcnt && i < 4; i++)
		v[i] = (ngtcp2_vec){ iov[i].iov_base, iov[i].iov_len };
	if (sid < 0 || (!iovcnt && !fin))
		sid = -1, iovcnt = 0;
	ngtcp2_path_storage_zero(&ps);
	n = ngtcp2_conn_writev_stream(c->conn, &ps.path, NULL, buf, cap, &nd,
				      fl, sid, v, iovcnt < 4 ? iovcnt : 4, now);
	if (n == NGTCP2_ERR_STREAM_DATA_BLOCKED ||
	    n == NGTCP2_ERR_STREAM_SHUT_WR || n == NGTCP2_ERR_STREAM_NOT_FOUND)
		n = ngtcp2_conn_writev_stream(c->conn, &ps.path, NULL, buf, cap,
					      &nd, 0, -1, NULL, 0, now);
	if (n < 0) {
		ngtcp2_connection_close_error_set_transport_error_liberr(
			&c->ccerr, (int)n, NULL, 0);
		return -1;
	}
	*taken = nd;
	if (n && ps.path.remote.addrlen <= *tolen) {
		memcpy(to, ps.path.remote.addr, ps.path.remote.addrlen);
		*tolen = ps.path.remote.addrlen;
	}
	return n;
}

/**
 * ngq_sent() - the packets ngq_write() gave are out: pacing counts from now
 * @c:		the connection
 * @now:	the time, ns
 */
void ngq_sent(struct ngq_conn *c, uint64_t now)
{
	ngtcp2_conn_update_pkt_tx_time(c->conn, now);
}

/**
 * ngq_close_pkt() - the CONNECTION_CLOSE that ends a connection
 * @c:		the connection
 * @buf:	where to write it
 * @cap:	its size
 * @now:	the time, ns
 *
 * Why is what ngq_read(), ngq_write() or ngq_timeout() found; if nothing
 * went wrong (the SMB connection behind it ended), an application close
 * with no error.
 *
 * Return: its length, or 0 if none can be sent (still in the handshake's
 * first flight, or closing already).
 */
ssize_t ngq_close_pkt(struct ngq_conn *c, uint8_t *buf, size_t cap,
		      uint64_t now)
{
	ngtcp2_path_storage ps;
	ngtcp2_ssize n;

	if (ngtcp2_conn_is_in_closing_period(c->conn) ||
	    ngtcp2_conn_is_in_draining_period(c->conn))
		return 0;
	if (c->ccerr.type ==
		    NGTCP2_CONNECTION_CLOSE_ERROR_CODE_TYPE_TRANSPORT &&
	    !c->ccerr.error_code)
		ngtcp2_connection_close_error_set_application_error(&c->ccerr,
								    0, NULL, 0);
	ngtcp2_path_storage_zero(&ps);
	n = ngtcp2_conn_write_connection_close(c->conn, &ps.path, NULL, buf,
					       cap, &c->ccerr, now);
	return n < 0 ? 0 : n;
}

/**
 * ngq_expiry() - when the connection's next timer is due
 * @c:	the connection
 *
 * Return: the time, ns, or UINT64_MAX for none.
 */
uint64_t ngq_expiry(struct ngq_conn *c)
{
	return ngtcp2_conn_get_expiry(c->conn);
}

/**
 * ngq_timeout() - the connection's timer is due
 * @c:		the connection
 * @now:	the time, ns
 *
 * Return: NGQ_OK (write what is due), NGQ_DEAD (idle: it ends silently)
 * or NGQ_CLOSE.
 */
enum ngq_state ngq_timeout(struct ngq_conn *c, uint64_t now)
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
 * ngq_drain_ns() - how long a closed connection lingers
 * @c:	the connection
 *
 * Return: three probe timeouts, as RFC 9000 10.2 says, ns.
 */
uint64_t ngq_drain_ns(struct ngq_conn *c)
{
	return 3 * ngtcp2_conn_get_pto(c->conn);
}

/**
 * ngq_consumed() - bytes of the stream were taken: the client may send
 *		    as many more
 * @c:	the connection
 * @n:	how many
 */
void ngq_consumed(struct ngq_conn *c, size_t n)
{
	if (c->sid >= 0)
		ngtcp2_conn_extend_max_stream_offset(c->conn, c->sid, n);
	ngtcp2_conn_extend_max_offset(c->conn, n);
}

/**
 * ngq_reset() - reset the stream both ways (RESET_STREAM, STOP_SENDING)
 * @c:	the connection
 */
void ngq_reset(struct ngq_conn *c)
{
	if (c->sid >= 0)
		ngtcp2_conn_shutdown_stream(c->conn, c->sid, 0);
}

/**
 * ngq_info() - a connection's state, for ctl
 * @c:		the connection
 * @out:	filled in
 */
void ngq_info(struct ngq_conn *c, struct ngq_info *out)
{
	ngtcp2_conn_stat cs;

	ngtcp2_conn_get_conn_stat(c->conn, &cs);
	out->version = ngtcp2_conn_get_negotiated_version(c->conn);
	out->rtt_ns = cs.smoothed_rtt;
	out->cwnd = cs.cwnd;
	out->in_flight = cs.bytes_in_flight;
}

/**
 * ngq_free() - forget a connection
 * @c:	the connection
 */
void ngq_free(struct ngq_conn *c)
{
	if (c->conn)
		ngtcp2_conn_del(c->conn);
	if (c->tls)
		gnutls_deinit(c->tls);
	ngq_creds_free(c->creds);
	free(c);
}

/*
 * Address validation (RFC 9000 8.1): a Retry answers a client's first
 * Initial with a token, sealed with a secret of the listener's (AEAD, in
 * ngtcp2_crypto), that binds the client's address, the ID its Initial
 * named and the time. A client that sends its Initial again with the
 * token has proved it receives at that address: only then is any state
 * kept for it. A flood of Initials from spoofed addresses costs one
 * small datagram each (a Retry is smaller than the 1200-byte Initial
 * that asks for it: no amplification).
 */

/* How long a Retry token is good for: a round trip and a margin. */
#define NGQ_RETRY_TTL (10 * NGTCP2_SECONDS)

/**
 * ngq_token() - does a client's Initial carry a valid Retry token of ours
 * @pkt:	the datagram (ngq_is_initial() said yes)
 * @len:	its length
 * @secret:	the listener's token secret, NGQ_SECRET_LEN bytes
 * @peer:	where it came from
 * @peerlen:	its length
 * @rt:		filled in for NGQ_TOKEN_RETRY
 * @now:	the time, ns
 *
 * A token that is not a Retry token (a NEW_TOKEN one: we issue none) is
 * as none, as RFC 9000 8.1.3 allows.
 *
 * Return: enum ngq_token.
 */
enum ngq_token ngq_token(const uint8_t *pkt, size_t len, const uint8_t *secret,
			 const struct sockaddr *peer, size_t peerlen,
			 struct ngq_retry *rt, uint64_t now)
{
	ngtcp2_pkt_hd hd;
	ngtcp2_cid odcid;

	if (ngtcp2_accept(&hd, pkt, len) || !hd.token.len ||
	    hd.token.base[0] != NGTCP2_CRYPTO_TOKEN_MAGIC_RETRY)
		return NGQ_TOKEN_NONE;
	if (ngtcp2_crypto_verify_retry_token(
		    &odcid, hd.token.base, hd.token.len, secret, NGQ_SECRET_LEN,
		    hd.version, (const ngtcp2_sockaddr *)peer,
		    (ngtcp2_socklen)peerlen, &hd.dcid, NGQ_RETRY_TTL, now))
		return NGQ_TOKEN_BAD;
	memcpy(rt->odcid, odcid.data, odcid.datalen);
	rt->odcidlen = odcid.datalen;
	return NGQ_TOKEN_RETRY;
}

/**
 * ngq_bad_token_pkt() - the close that answers an Initial whose Retry
 *			 token failed
 * @pkt:	the Initial (ngq_token() said NGQ_TOKEN_BAD)
 * @len:	its length
 * @out:	where to write the close
 * @cap:	its size
 *
 * RFC 9000 8.1.2: the client will not take another Retry, so it is told
 * at once (INVALID_TOKEN) rather than left to time out; no state is made,
 * and the close is smaller than the Initial.
 *
 * Return: its length, or -1.
 */
ssize_t ngq_bad_token_pkt(const uint8_t *pkt, size_t len, uint8_t *out,
			  size_t cap)
{
	ngtcp2_pkt_hd hd;
	ngtcp2_ssize n;

	if (ngtcp2_accept(&hd, pkt, len))
		return -1;
	n = ngtcp2_crypto_write_connection_close(out, cap, hd.version, &hd.scid,
						 &hd.dcid, NGTCP2_INVALID_TOKEN,
						 NULL, 0);
	return n < 0 ? -1 : n;
}

/**
 * ngq_retry_pkt() - the Retry that answers a client's first Initial
 * @pkt:	the Initial (ngq_is_initial() said yes)
 * @len:	its length
 * @secret:	the listener's token secret, NGQ_SECRET_LEN bytes
 * @peer:	the client's address, bound into the token
 * @peerlen:	its length
 * @out:	where to write the Retry
 * @cap:	its size
 * @now:	the time, ns
 *
 * The Retry names a new ID of ours (NGQ_SCID_LEN random bytes), which the
 * client's next Initial is sent to; it is routed only once that Initial
 * has made a connection.
 *
 * Return: the Retry's length, or -1.
 */
ssize_t ngq_retry_pkt(const uint8_t *pkt, size_t len, const uint8_t *secret,
		      const struct sockaddr *peer, size_t peerlen, uint8_t *out,
		      size_t cap, uint64_t now)
{
	uint8_t token[NGTCP2_CRYPTO_MAX_RETRY_TOKENLEN];
	ngtcp2_ssize tl, n;
	ngtcp2_pkt_hd hd;
	ngtcp2_cid scid;

	if (ngtcp2_accept(&hd, pkt, len))
		return -1;
	scid.datalen = NGQ_SCID_LEN;
	ngq_random(scid.data, scid.datalen);
	tl = ngtcp2_crypto_generate_retry_token(
		token, secret, NGQ_SECRET_LEN, hd.version,
		(const ngtcp2_sockaddr *)peer, (ngtcp2_socklen)peerlen, &scid,
		&hd.dcid, now);
	if (tl < 0)
		return -1;
	n = ngtcp2_crypto_write_retry(out, cap, hd.version, &hd.scid, &scid,
				      &hd.dcid, token, (size_t)tl);
	return n < 0 ? -1 : n;
}

/*
 * Stateless reset (RFC 9000 10.3): every connection ID we issue carries a
 * token, HKDF of the ID under the listener's reset secret
 * (ngtcp2_crypto_generate_stateless_reset_token()). A short-header packet
 * that names no connection of ours (a restart forgot it, or it was
 * closed) is answered with a Stateless Reset bearing its ID's token, and
 * the client ends the connection at once instead of waiting out its
 * idle timeout. For that the secret must outlive the process: it is
 * derived from the listener's private key (HMAC-SHA-256 of a label under
 * the key file's bytes), which only this server holds and which survives
 * a restart; it gives nothing of the key away.
 */

/* The label the reset secret is derived with. */
#define NGQ_RESET_LABEL "smbsplice QUIC stateless reset secret v1"
/* The longest Stateless Reset sent: RFC 9000 10.3 asks one a byte
 * shorter than a packet of 43 bytes or less, and no longer is needed. */
#define NGQ_RESET_MAX 42
/* The shortest: 5 unpredictable bytes and the 16-byte token. */
#define NGQ_RESET_MIN                                                          \
	(NGTCP2_MIN_STATELESS_RESET_RANDLEN + NGTCP2_STATELESS_RESET_TOKENLEN)

/**
 * ngq_reset_secret() - a listener's stateless reset secret, the same at
 *			every start with the same key
 * @key:	the private key's PEM file
 * @out:	NGQ_SECRET_LEN bytes
 *
 * Return: 0, or -1 if the file cannot be read.
 */
int ngq_reset_secret(const char *key, uint8_t *out)
{
	static_assert(NGQ_SECRET_LEN == 32, "HMAC-SHA-256 fills the secret");
	gnutls_datum_t d;
	int rv;

	if (gnutls_load_file(key, &d) < 0)
		return -1;
	rv = gnutls_hmac_fast(GNUTLS_MAC_SHA256, d.data, d.size,
			      NGQ_RESET_LABEL, strlen(NGQ_RESET_LABEL), out);
	gnutls_memset(d.data, 0, d.size);
	gnutls_free(d.data);
	return rv ? -1 : 0;
}

/**
 * ngq_reset_pkt() - the Stateless Reset that answers a short-header
 *		     packet of no connection
 * @pkt:	the packet (ngq_peek() said NGQ_PACKET)
 * @len:	its length
 * @secret:	the listener's reset secret
 * @out:	where to write the reset
 * @cap:	its size
 *
 * The reset is a byte shorter than the packet, and at most
 * NGQ_RESET_MAX: it can never answer a reset with one as long (no loop)
 * nor amplify. A packet too short to answer so gets none, nor does a
 * long header (a client's Initial makes a connection or is dropped).
 *
 * Return: the reset's length, or -1 for none.
 */
ssize_t ngq_reset_pkt(const uint8_t *pkt, size_t len, const uint8_t *secret,
		      uint8_t *out, size_t cap)
{
	uint8_t token[NGTCP2_STATELESS_RESET_TOKENLEN], rnd[NGQ_RESET_MAX];
	size_t n = len - 1;
	ngtcp2_ssize w;
	ngtcp2_cid cid;

	if (len < 1 + NGQ_SCID_LEN || (pkt[0] & 0x80))
		return -1;
	if (n > NGQ_RESET_MAX)
		n = NGQ_RESET_MAX;
	if (n > cap)
		n = cap;
	if (n < NGQ_RESET_MIN)
		return -1;
	ngtcp2_cid_init(&cid, pkt + 1, NGQ_SCID_LEN);
	if (ngtcp2_crypto_generate_stateless_reset_token(token, secret,
							 NGQ_SECRET_LEN, &cid))
		return -1;
	ngq_random(rnd, n - NGTCP2_STATELESS_RESET_TOKENLEN);
	w = ngtcp2_pkt_write_stateless_reset(
		out, n, token, rnd, n - NGTCP2_STATELESS_RESET_TOKENLEN);
	return w < 0 ? -1 : w;
}

/*
 * Client certificates, as Windows Server 2025's SMB over QUIC client
 * access control has them: the listener requires a client certificate
 * whose chain leads to one of its CAs (--quic-client-ca) and carries the
 * Client Authentication EKU; of that certificate, its SHA-256 (of the
 * DER, as Windows' thumbprint) and its issuer's distinguished name are
 * matched against the deny rules, any of which refuses it, and the allow
 * rules, one of which must take it. A refusal fails the handshake with
 * TLS alert 49, access_denied; a chain that does not verify, with 48
 * (unknown_ca) or 42 (bad_certificate). The rules belong to the
 * credentials, so that a reload's new rules apply to new connections.
 */

#define NGQ_ALERT_BAD_CERTIFICATE  42
#define NGQ_ALERT_UNKNOWN_CA	   48
#define NGQ_ALERT_ACCESS_DENIED	   49
#define NGQ_ALERT_CERTIFICATE_REQD 116

/**
 * struct ngq_rule - one allow or deny rule
 * @issuer:	matches an issuer's DN (@dn), not a hash (@sha)
 * @sha:	a certificate's SHA-256
 * @dn:		an issuer's distinguished name, RFC 4514
 */
struct ngq_rule {
	bool issuer;
	uint8_t sha[32];
	char *dn;
};

/**
 * struct ngq_access - a listener's client certificate rules
 * @allow:	those that let a certificate in (at least one must)
 * @nallow:	how many
 * @deny:	those that keep it out (any one does)
 * @ndeny:	how many
 */
struct ngq_access {
	struct ngq_rule *allow;
	unsigned nallow;
	struct ngq_rule *deny;
	unsigned ndeny;
};

/**
 * access_free() - forget a listener's rules
 * @a:	the rules, or NULL
 */
static void access_free(struct ngq_access *a)
{
	if (!a)
		return;
	for (unsigned i = 0; a->allow && i < a->nallow; i++)
		free(a->allow[i].dn);
	for (unsigned i = 0; a->deny && i < a->ndeny; i++)
		free(a->deny[i].dn);
	free(a->allow);
	free(a->deny);
	free(a);
}

/**
 * rules_parse() - rules from their text
 * @text:	each "issuer:DN" or 64 hex digits (options_set.c checked)
 * @n:		how many
 * @out:	the rules, allocated
 *
 * Return: 0, or -1 (out of memory, or a hash that is not one).
 */
static int rules_parse(const char *const *text, unsigned n,
		       struct ngq_rule **out)
{
	struct ngq_rule *r = calloc(n ? n : 1, sizeof(*r));

	*out = r;
	if (!r)
		return -1;
	for (unsigned i = 0; i < n; i++) {
		const char *t = text[i];

		if (!strncmp(t, "issuer:", 7)) {
			r[i].issuer = true;
			r[i].dn = strdup(t + 7);
			if (!r[i].dn)
				return -1;
			continue;
		}
		if (strlen(t) != 64)
			return -1;
		for (unsigned k = 0; k < 32; k++)
			if (sscanf(t + 2 * k, "%2hhx", &r[i].sha[k]) != 1)
				return -1;
	}
	return 0;
}

/**
 * rules_match() - does a certificate meet one of a list's rules
 * @r:		the rules
 * @n:		how many
 * @sha:	the certificate's SHA-256
 * @issuer:	its issuer's DN, RFC 4514
 *
 * Return: the rule that matched, or NULL.
 */
static const struct ngq_rule *rules_match(const struct ngq_rule *r, unsigned n,
					  const uint8_t *sha,
					  const char *issuer)
{
	for (unsigned i = 0; i < n; i++)
		if (r[i].issuer ? !strcasecmp(r[i].dn, issuer)
				: !memcmp(r[i].sha, sha, 32))
			return &r[i];
	return NULL;
}

/**
 * cert_facts() - a certificate's SHA-256 and its issuer's DN
 * @der:	the certificate
 * @sha:	its SHA-256, filled in
 * @issuer:	its issuer's DN, filled in
 * @len:	room in @issuer
 *
 * Return: 0, or -1 if it cannot be read.
 */
static int cert_facts(const gnutls_datum_t *der, uint8_t *sha, char *issuer,
		      size_t len)
{
	gnutls_x509_crt_t crt;
	gnutls_datum_t dn;
	int rv;

	if (gnutls_hash_fast(GNUTLS_DIG_SHA256, der->data, der->size, sha) ||
	    gnutls_x509_crt_init(&crt))
		return -1;
	rv = gnutls_x509_crt_import(crt, der, GNUTLS_X509_FMT_DER);
	if (!rv)
		rv = gnutls_x509_crt_get_issuer_dn2(crt, &dn);
	gnutls_x509_crt_deinit(crt);
	if (rv)
		return -1;
	snprintf(issuer, len, "%.*s", (int)dn.size, (const char *)dn.data);
	gnutls_free(dn.data);
	return 0;
}

/**
 * judge() - the verdict on a client's certificate
 * @s:		the TLS session, its client's chain received
 * @a:		the listener's rules
 * @why:	what was wrong, for the log
 * @len:	room in @why
 *
 * Return: 0 to take it, or the TLS alert that refuses it.
 */
static uint8_t judge(gnutls_session_t s, const struct ngq_access *a, char *why,
		     size_t len)
{
	gnutls_typed_vdata_st vd = {
		.type = GNUTLS_DT_KEY_PURPOSE_OID,
		.data = (unsigned char *)GNUTLS_KP_TLS_WWW_CLIENT
	};
	const gnutls_datum_t *chain;
	char issuer[512], hex[65];
	unsigned n = 0, status;
	uint8_t sha[32];

	chain = gnutls_certificate_get_peers(s, &n);
	if (!chain || !n) {
		snprintf(why, len, "no client certificate");
		return NGQ_ALERT_CERTIFICATE_REQD;
	}
	if (cert_facts(&chain[0], sha, issuer, sizeof(issuer))) {
		snprintf(why, len, "a client certificate that cannot be read");
		return NGQ_ALERT_BAD_CERTIFICATE;
	}
	for (unsigned i = 0; i < 32; i++)
		snprintf(hex + 2 * i, 3, "%02x", sha[i]);
	if (gnutls_certificate_verify_peers(s, &vd, 1, &status) || status) {
		snprintf(
			why, len,
			"client certificate %s (issuer %s) does not verify against quic-client-ca (status 0x%x)",
			hex, issuer, status);
		return (status & GNUTLS_CERT_SIGNER_NOT_FOUND)
			       ? NGQ_ALERT_UNKNOWN_CA
			       : NGQ_ALERT_BAD_CERTIFICATE;
	}
	if (rules_match(a->deny, a->ndeny, sha, issuer)) {
		snprintf(
			why, len,
			"client certificate %s (issuer %s) denied by quic-client-deny",
			hex, issuer);
		return NGQ_ALERT_ACCESS_DENIED;
	}
	if (!rules_match(a->allow, a->nallow, sha, issuer)) {
		snprintf(
			why, len,
			"client certificate %s (issuer %s) matches no quic-client-allow",
			hex, issuer);
		return NGQ_ALERT_ACCESS_DENIED;
	}
	return 0;
}

/**
 * on_client_cert() - GnuTLS has the client's chain: judge it
 * @s:	the TLS session
 *
 * Return: 0 to go on, GNUTLS_E_CERTIFICATE_ERROR to fail the handshake
 * (with the connection's @alert).
 */
static int on_client_cert(gnutls_session_t s)
{
	ngtcp2_crypto_conn_ref *ref = gnutls_session_get_ptr(s);
	struct ngq_conn *c = ref->user_data;
	char why[1024];

	if (!c->creds->access)
		return 0;
	c->alert = judge(s, c->creds->access, why, sizeof(why));
	if (!c->alert)
		return 0;
	if (c->cb->cert_denied)
		c->cb->cert_denied(c->ud, why);
	return GNUTLS_E_CERTIFICATE_ERROR;
}

/**
 * client_auth_session() - a session of credentials that ask for client
 *			   certificates asks its client for one
 * @tls:	the session
 * @cr:		its credentials
 *
 * Return: 0.
 */
static int client_auth_session(gnutls_session_t tls, const struct ngq_creds *cr)
{
	if (cr->access)
		gnutls_certificate_server_set_request(tls, GNUTLS_CERT_REQUIRE);
	return 0;
}

/**
 * client_auth_alert() - the alert a failed handshake sends, where the
 *			 client certificate decided it
 * @c:		the connection
 * @alert:	the alert otherwise
 *
 * A client that sent no certificate never reached on_client_cert(): it
 * is counted here, once.
 *
 * Return: the alert.
 */
static uint8_t client_auth_alert(struct ngq_conn *c, uint8_t alert)
{
	int e = ngtcp2_conn_get_tls_error(c->conn);

	if (c->alert)
		return c->alert;
	if (c->creds && c->creds->access && !c->no_cert &&
	    (e == GNUTLS_E_NO_CERTIFICATE_FOUND ||
	     e == GNUTLS_E_CERTIFICATE_REQUIRED)) {
		c->no_cert = true;
		if (c->cb->cert_denied)
			c->cb->cert_denied(c->ud, "no client certificate");
	}
	return alert;
}

/**
 * ngq_creds_client_auth() - a listener's credentials ask clients for a
 *			     certificate, and judge it
 * @cr:		the credentials, fresh from ngq_creds_load()
 * @ca:		PEM file of the CAs a client's chain must lead to
 * @allow:	the allow rules: "issuer:DN" or a SHA-256 in 64 lower-case
 *		hex digits
 * @nallow:	how many (at least one)
 * @deny:	the deny rules, in the same forms
 * @ndeny:	how many
 * @err:	buffer for one line saying what is wrong
 * @errlen:	its size
 *
 * Return: 0, or -1 with @err set.
 */
int ngq_creds_client_auth(struct ngq_creds *cr, const char *ca,
			  const char *const *allow, unsigned nallow,
			  const char *const *deny, unsigned ndeny, char *err,
			  size_t errlen)
{
	struct ngq_access *a;
	int rv;

	if (file_readable("quic-client-ca", ca, err, errlen))
		return -1;
	rv = gnutls_certificate_set_x509_trust_file(cr->cred, ca,
						    GNUTLS_X509_FMT_PEM);
	if (rv <= 0) {
		snprintf(err, errlen, "quic-client-ca %s: %s", ca,
			 rv < 0 ? gnutls_strerror(rv) : "no certificate in it");
		return -1;
	}
	a = calloc(1, sizeof(*a));
	if (!a) {
		snprintf(err, errlen, "quic: out of memory");
		return -1;
	}
	a->nallow = nallow;
	a->ndeny = ndeny;
	if (rules_parse(allow, nallow, &a->allow) ||
	    rules_parse(deny, ndeny, &a->deny)) {
		access_free(a);
		snprintf(
			err, errlen,
			"quic-client-allow/-deny: out of memory, or a rule that is neither a SHA-256 nor issuer:DN");
		return -1;
	}
	gnutls_certificate_set_verify_function(cr->cred, on_client_cert);
	access_free(cr->access);
	cr->access = a;
	return 0;
}
