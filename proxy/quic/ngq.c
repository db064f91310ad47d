// SPDX-License-Identifier: GPL-2.0-or-later
/* ngq.c - every ngtcp2 and GnuTLS call of the daemon, with ngq_sec.c's
 *	   and ngq_client.c's
 *
 * Theory of operation: ngtcp2 0.12 (what Debian 12 ships) does QUIC v1's
 * packets, loss recovery and flow control; GnuTLS 3.7 does its TLS 1.3
 * handshake through ngtcp2_crypto_gnutls. Their API changed before and
 * at ngtcp2 1.0, so they are called here and in ngq_sec.c alone: quic.c hands
 * in datagrams and times (nanoseconds of CLOCK_MONOTONIC, ngtcp2's own
 * precision) and gets back packets to send and the stream's bytes
 * through struct ngq_cb.
 *
 * One connection structure and one stream glue for both roles: a quic:
 * backend's connection (ngq_client.c makes it, with what only a client
 * has in its @cl) is read, written, timed and closed by the calls here,
 * and its stream's callbacks are the listener's, so that the two roles
 * cannot drift apart in how they carry a stream.
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
 * that vanished is found within the idle timeout. A client's connection
 * (ngq_client.c) PINGs after NGQC_KEEPALIVE, 5 s: see there why.
 */
#include "config.h"

#include <assert.h>
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

#include "io/reuseport.h"
#include "quic/ngq-t.h"
#include "quic/ngq.h"

#define NGQ_IDLE		  (120 * NGTCP2_SECONDS)
#define NGQ_KEEPALIVE		  (25 * NGTCP2_SECONDS)
#define NGQ_ALPN		  "smb"
#define NGQ_ALERT_NO_APP_PROTOCOL 120
/* TLS alert missing_extension: no QUIC transport parameters. */
#define NGQ_ALERT_MISSING_EXTENSION 109

/* TLS 1.3 only; QUIC forbids the middlebox compatibility mode. */
#define NGQ_PRIORITY "NORMAL:-VERS-ALL:+VERS-TLS1.3:%DISABLE_TLS13_COMPAT_MODE"

/**
 * ngq_file_readable() - say which of the two files cannot be read
 * @what:	the option's name
 * @path:	the file
 * @err:	buffer for the line
 * @errlen:	its size
 *
 * Return: 0, or -1 with @err set.
 */
int ngq_file_readable(const char *what, const char *path, char *err,
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

	if (ngq_file_readable("quic-cert", cert, err, errlen) ||
	    ngq_file_readable("quic-key", key, err, errlen))
		return -1;
	cr = calloc(1, sizeof(*cr));
	if (!cr || gnutls_certificate_allocate_credentials(&cr->cred)) {
		free(cr);
		snprintf(err, errlen, "quic: out of memory");
		return -1;
	}
	cr->refs = 1; /* so that ngq_creds_free() below frees it */
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
	ngq_access_free(cr->access);
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

/* The kernel's steering program reads the slot of IDs of this length. */
static_assert(NGQ_SCID_LEN == REUSEPORT_CIDLEN, "steered IDs' length");

/**
 * ngq_new_cid() - a new connection ID of ours
 * @cid:	filled in
 * @len:	its length
 * @slot:	its first byte: the worker's socket slot, by which the kernel
 *		steers its datagrams (io/reuseport.c); the rest is random
 *
 * The client side's IDs have slot 0: nothing steers by them.
 */
static void ngq_new_cid(ngtcp2_cid *cid, size_t len, uint8_t slot)
{
	ngq_random(cid->data, len);
	cid->data[0] = slot;
	cid->datalen = len;
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
	int rv;

	/* ngtcp2 asserts that a datagram has a byte: an empty one (anyone
	 * can send it) would abort the daemon. */
	if (!len)
		return NGQ_GARBAGE;
	rv = ngtcp2_pkt_decode_version_cid(&vc, pkt, len, NGQ_SCID_LEN);
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
 * on_client_hello() - refuse a client that offers no "smb", or sent no
 *		       QUIC transport parameters
 * @s:		the session
 * @htype:	unused
 * @when:	unused
 * @incoming:	unused
 * @msg:	unused
 *
 * A ClientHello without the quic_transport_parameters extension must
 * fail the handshake with missing_extension (RFC 9001 8.2). ngtcp2 0.12
 * does not check it: the handshake went on without them, and the first
 * 1-RTT packet written failed ngtcp2's assertion of a negotiated version
 * (the daemon aborted; found by tests/fuzz/fuzz_quic.c).
 *
 * Return: 0, or a GnuTLS error to fail the handshake.
 */
static int on_client_hello(gnutls_session_t s, unsigned htype, unsigned when,
			   unsigned incoming, const gnutls_datum_t *msg)
{
	ngtcp2_crypto_conn_ref *ref = gnutls_session_get_ptr(s);
	struct ngq_conn *c = ref->user_data;
	gnutls_datum_t p;

	if (!ngtcp2_conn_get_remote_transport_params(c->conn)) {
		c->alert = NGQ_ALERT_MISSING_EXTENSION;
		return GNUTLS_E_MISSING_EXTENSION;
	}
	if (!gnutls_alpn_get_selected_protocol(s, &p) &&
	    p.size == strlen(NGQ_ALPN) && !memcmp(p.data, NGQ_ALPN, p.size))
		return 0;
	c->bad_alpn = true;
	return GNUTLS_E_NO_APPLICATION_PROTOCOL;
}

/**
 * ngq_tls_init() - a connection's TLS session, either role's: TLS 1.3,
 *		    ALPN smb, the certificate credentials
 * @c:		the connection
 * @flags:	gnutls_init()'s: GNUTLS_SERVER or GNUTLS_CLIENT, and more
 * @cred:	what it shows and trusts
 *
 * What each role adds (client certificates, SNI) is its own caller's.
 *
 * Return: 0, or -1 (ngq_free() frees what was made).
 */
int ngq_tls_init(struct ngq_conn *c, unsigned flags,
		 gnutls_certificate_credentials_t cred)
{
	gnutls_datum_t alpn = { .data = (unsigned char *)NGQ_ALPN,
				.size = strlen(NGQ_ALPN) };
	bool server = flags & GNUTLS_SERVER;

	if (gnutls_init(&c->tls, flags | GNUTLS_NO_END_OF_EARLY_DATA))
		return -1;
	c->ref.get_conn = get_conn;
	c->ref.user_data = c;
	gnutls_session_set_ptr(c->tls, &c->ref);
	if (gnutls_priority_set_direct(c->tls, NGQ_PRIORITY, NULL) ||
	    (server ? ngtcp2_crypto_gnutls_configure_server_session(c->tls)
		    : ngtcp2_crypto_gnutls_configure_client_session(c->tls)) ||
	    gnutls_credentials_set(c->tls, GNUTLS_CRD_CERTIFICATE, cred) ||
	    gnutls_alpn_set_protocols(c->tls, &alpn, 1, GNUTLS_ALPN_MANDATORY))
		return -1;
	return 0;
}

/**
 * tls_new() - a listener's connection's TLS session: server, client
 *	       certificates if asked for, and the ALPN check
 * @c:		the connection
 * @cr:		the listener's certificate
 *
 * Return: 0, or -1.
 */
static int tls_new(struct ngq_conn *c, struct ngq_creds *cr)
{
	c->creds = cr;
	cr->refs++;
	if (ngq_tls_init(c, GNUTLS_SERVER, cr->cred) ||
	    ngq_client_auth_session(c->tls, cr))
		return -1;
	gnutls_handshake_set_hook_function(c->tls,
					   GNUTLS_HANDSHAKE_CLIENT_HELLO,
					   GNUTLS_HOOK_POST, on_client_hello);
	return 0;
}

/**
 * ngq_keepalive() - keepalives as often as the peer's idle timeout needs,
 *		     once the handshake has told it
 * @conn:	the connection
 * @most:	the longest silence wanted before a PING (NGQ_KEEPALIVE for a
 *		listener's connection; a client's is shorter, ngq_client.c)
 */
void ngq_keepalive(ngtcp2_conn *conn, ngtcp2_duration most)
{
	const ngtcp2_transport_params *p =
		ngtcp2_conn_get_remote_transport_params(conn);
	ngtcp2_duration ka = most;

	if (p && p->max_idle_timeout && p->max_idle_timeout / 2 < ka)
		ka = p->max_idle_timeout / 2;
	ngtcp2_conn_set_keep_alive_timeout(conn, ka);
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
	ngq_keepalive(conn, NGQ_KEEPALIVE);
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

	ngq_new_cid(cid, len, c->slot);
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
 * on_acked() - the peer acknowledged bytes of a stream
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
 * on_reset() - the peer reset the stream (RESET_STREAM)
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
 * on_stop_sending() - the peer asked the stream's sending stopped
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
 * ngq_callbacks() - the callbacks both roles' connections share: the
 *		     stream's glue, IDs, randomness and ngtcp2_crypto's
 * @cb:	filled in; what only one role has (its Initial, its handshake's
 *	end, Retry, path validation) is its caller's to add
 */
void ngq_callbacks(ngtcp2_callbacks *cb)
{
	cb->recv_crypto_data = ngq_on_crypto;
	cb->encrypt = ngtcp2_crypto_encrypt_cb;
	cb->decrypt = ngtcp2_crypto_decrypt_cb;
	cb->hp_mask = ngtcp2_crypto_hp_mask_cb;
	cb->recv_stream_data = on_stream_data;
	cb->acked_stream_data_offset = on_acked;
	cb->rand = on_rand;
	cb->get_new_connection_id = on_new_cid;
	cb->update_key = ngtcp2_crypto_update_key_cb;
	cb->stream_reset = on_reset;
	cb->delete_crypto_aead_ctx = ngtcp2_crypto_delete_crypto_aead_ctx_cb;
	cb->delete_crypto_cipher_ctx =
		ngtcp2_crypto_delete_crypto_cipher_ctx_cb;
	cb->get_path_challenge_data = ngtcp2_crypto_get_path_challenge_data_cb;
	cb->stream_stop_sending = on_stop_sending;
	cb->version_negotiation = ngtcp2_crypto_version_negotiation_cb;
}

/**
 * ngq_to_path() - an ngtcp2 path from ours
 * @p:	ours
 *
 * Return: ngtcp2's, pointing at the same addresses.
 */
ngtcp2_path ngq_to_path(const struct ngq_path *p)
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
 * ngq_cc_algo() - ngtcp2's congestion control by its name
 * @name:	reno, cubic, bbr or bbr2; empty for cubic
 *
 * For both roles: the listener's `--congestion client:ALG`, the QUIC
 * backend's `backend:ALG`.
 *
 * Return: the algorithm, or -1 for a name ngtcp2 does not have.
 */
int ngq_cc_algo(const char *name)
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
 * ngq_cc_known() - is a congestion control name one QUIC has here
 * @name:	the name; empty for the default
 *
 * Return: true if ngq_accept() and ngqc_connect() take it.
 */
bool ngq_cc_known(const char *name)
{
	return ngq_cc_algo(name) >= 0;
}

/**
 * ngq_accept() - a new connection from a client's first Initial
 * @out:	the connection
 * @cr:		the listener's certificate
 * @secret:	its stateless reset secret (NGQ_SECRET_LEN bytes, kept)
 * @path:	the datagram's addresses
 * @pkt:	the datagram; ngq_is_initial() said yes
 * @len:	its length
 * @tune:	the client's window (bytes it may send ahead of what
 *		ngq_consumed() gave back) and the congestion control
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
	       const uint8_t *pkt, size_t len, const struct ngq_tune *tune,
	       const struct ngq_retry *rt, const struct ngq_cb *cb, void *ud,
	       uint64_t now)
{
	int cc = ngq_cc_algo(tune->cc);
	struct ngq_conn *c = calloc(1, sizeof(*c));
	ngtcp2_path p = ngq_to_path(path);
	ngtcp2_callbacks cbs = {
		.recv_client_initial = ngtcp2_crypto_recv_client_initial_cb,
		.handshake_completed = on_handshake,
		.stream_open = on_stream_open,
		.remove_connection_id = on_remove_cid,
		.path_validation = ngq_on_path_validation,
	};
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
	ngq_callbacks(&cbs);
	c->slot = tune->slot;
	ngq_new_cid(&scid, NGQ_SCID_LEN, c->slot);
	ngtcp2_settings_default(&st);
	st.initial_ts = now;
	st.cc_algo = cc < 0 ? NGTCP2_CC_ALGO_CUBIC : cc; /* checked at start */
	if (conn_params(&params, &hd, &scid, secret, tune->window) ||
	    (rt && ngq_retried_params(&params, &st, &hd, rt)) ||
	    tls_new(c, cr) ||
	    ngtcp2_conn_server_new(&c->conn, &hd.scid, &scid, &p, hd.version,
				   &cbs, &st, &params, NULL, c))
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
	ngtcp2_path p = ngq_to_path(path);
	uint8_t alert;
	int rv;

	/* ngtcp2 takes an empty datagram for a caller's error and the
	 * connection would end (INTERNAL_ERROR): one forged from the peer's
	 * address is dropped, as garbage is (the listener's never come
	 * here: ngq_peek() calls them garbage). */
	if (!len)
		return NGQ_OK;
	rv = ngtcp2_conn_read_pkt(c->conn, &p, NULL, pkt, len, now);
	switch (rv) {
	case 0:
		ngq_tls_shed(c);
		return NGQ_OK;
	case NGTCP2_ERR_DRAINING:
		return NGQ_DRAIN;
	case NGTCP2_ERR_DROP_CONN:
	case NGTCP2_ERR_RETRY:
		return NGQ_DEAD;
	case NGTCP2_ERR_CRYPTO:
		alert = ngtcp2_conn_get_tls_alert(c->conn);
		if (!c->cl &&
		    (c->bad_alpn || ngtcp2_conn_get_tls_error(c->conn) ==
					    GNUTLS_E_NO_APPLICATION_PROTOCOL))
			alert = NGQ_ALERT_NO_APP_PROTOCOL;
		if (!c->cl)
			alert = ngq_client_auth_alert(c, alert);
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
 * @to:		the address to send it to, or NULL (a client's socket is
 *		connected)
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
		sid = -1, iovcnt = 0, fl = 0;
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
	if (n && to && ps.path.remote.addrlen <= *tolen) {
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
 * Return: its length, or 0 if none can be sent (a listener's still in the
 * handshake's first flight, or closing already).
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
 * ngq_info() - a connection's figures, for ctl
 * @c:		the connection, of either role
 * @out:	filled in
 *
 * The path is ngtcp2's current one: after a migration, the new address.
 * Losses are those of the stream's packets (ngtcp2 0.12's conn_stat has
 * no loss count).
 */
void ngq_info(struct ngq_conn *c, struct quic_figures *out)
{
	const ngtcp2_path *p = ngtcp2_conn_get_path(c->conn);
	ngtcp2_conn_stat cs;

	ngtcp2_conn_get_conn_stat(c->conn, &cs);
	*out = (struct quic_figures){
		.version = ngtcp2_conn_get_negotiated_version(c->conn),
		.rtt_ns = cs.smoothed_rtt,
		.cwnd = cs.cwnd,
		.in_flight = cs.bytes_in_flight,
		.lost = c->sid >= 0 ? ngtcp2_conn_get_stream_loss_count(c->conn,
									c->sid)
				    : 0,
	};
	if (p->local.addrlen <= sizeof(out->local)) {
		memcpy(&out->local, p->local.addr, p->local.addrlen);
		out->locallen = p->local.addrlen;
	}
	if (p->remote.addrlen <= sizeof(out->remote)) {
		memcpy(&out->remote, p->remote.addr, p->remote.addrlen);
		out->remotelen = p->remote.addrlen;
	}
}

/**
 * ngq_free() - forget a connection, of either role
 * @c:	the connection
 */
void ngq_free(struct ngq_conn *c)
{
	if (c->conn)
		ngtcp2_conn_del(c->conn);
	if (c->tls)
		gnutls_deinit(c->tls);
	ngq_creds_free(c->creds);
	if (c->cl)
		ngqc_side_free(c->cl);
	free(c);
}
