// SPDX-License-Identifier: GPL-2.0-or-later
/* ngq_sec.c - the QUIC library's calls for a listener's defences: Retry
 *	       (address validation), Stateless Reset, path validation,
 *	       client certificates, and the TLS session's end
 *
 * Theory of operation: the second file of the ngq module (ngq.h), apart
 * from ngq.c's connections so that neither passes the daemon's file size
 * limit; the two files together hold every ngtcp2 and GnuTLS call of the
 * daemon, and moving to ngtcp2 1.x is these two. Each section below says
 * what it does; quic.c decides when.
 *
 * A server's TLS session is freed the moment ngtcp2 reports the
 * handshake done (ngq_tls_shed()): every key after it (1-RTT, key
 * updates) is ngtcp2's, derived from secrets it already holds, and a
 * TLS 1.3 client has nothing more to send a QUIC server (KeyUpdate is
 * QUIC's own, RFC 9001 6; no certificate is asked for after the
 * handshake). The session held 21 KiB of heap for as long as the
 * connection lived, and a mapped drive's connection lives for hours.
 * Its reference to the listener's certificate and key goes with it.
 * CRYPTO bytes that come after it anyway end the connection with
 * unexpected_message (ngq_on_crypto()), as GnuTLS would have. The client
 * role keeps its session: a server may send tickets after the handshake.
 */
#include "config.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <gnutls/crypto.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>

#include "quic/ngq-t.h"
#include "quic/ngq.h"

/* TLS alert unexpected_message: handshake bytes after the handshake. */
#define NGQ_ALERT_UNEXPECTED 10

/**
 * ngq_retried_params() - a connection whose client answered our Retry
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
int ngq_retried_params(ngtcp2_transport_params *p, ngtcp2_settings *st,
		       const ngtcp2_pkt_hd *hd, const struct ngq_retry *rt)
{
	ngtcp2_cid_init(&p->original_dcid, rt->odcid, rt->odcidlen);
	p->retry_scid = hd->dcid;
	p->retry_scid_present = 1;
	st->token = hd->token;
	return 0;
}

/**
 * ngq_on_path_validation() - a new path of the client's was validated
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
int ngq_on_path_validation(ngtcp2_conn *conn, uint32_t flags,
			   const ngtcp2_path *path,
			   ngtcp2_path_validation_result res, void *ud)
{
	struct ngq_conn *c = ud;

	if (res == NGTCP2_PATH_VALIDATION_RESULT_SUCCESS && c->cb->migrated)
		c->cb->migrated(c->ud,
				(const struct sockaddr *)path->remote.addr,
				path->remote.addrlen);
	return 0;
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
 * ngq_access_free() - forget a listener's rules
 * @a:	the rules, or NULL
 */
void ngq_access_free(struct ngq_access *a)
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
 * ngq_client_auth_session() - a session of credentials that ask for client
 *			   certificates asks its client for one
 * @tls:	the session
 * @cr:		its credentials
 *
 * Return: 0.
 */
int ngq_client_auth_session(gnutls_session_t tls, const struct ngq_creds *cr)
{
	if (cr->access)
		gnutls_certificate_server_set_request(tls, GNUTLS_CERT_REQUIRE);
	return 0;
}

/**
 * ngq_client_auth_alert() - the alert a failed handshake sends, where the
 *			 client certificate decided it
 * @c:		the connection
 * @alert:	the alert otherwise
 *
 * A client that sent no certificate never reached on_client_cert(): it
 * is counted here, once.
 *
 * Return: the alert.
 */
uint8_t ngq_client_auth_alert(struct ngq_conn *c, uint8_t alert)
{
	int e = ngtcp2_conn_get_tls_error(c->conn);

	if (c->alert)
		return c->alert;
	if (c->creds && c->creds->access && !c->no_cert &&
	    (e == GNUTLS_E_NO_CERTIFICATE_FOUND ||
	     e == GNUTLS_E_CERTIFICATE_REQUIRED ||
	     alert == NGQ_ALERT_CERTIFICATE_REQD)) {
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

	if (ngq_file_readable("quic-client-ca", ca, err, errlen))
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
		ngq_access_free(a);
		snprintf(
			err, errlen,
			"quic-client-allow/-deny: out of memory, or a rule that is neither a SHA-256 nor issuer:DN");
		return -1;
	}
	gnutls_certificate_set_verify_function(cr->cred, on_client_cert);
	ngq_access_free(cr->access);
	cr->access = a;
	return 0;
}

/**
 * ngq_on_crypto() - handshake bytes from the peer, for TLS; to a server
 *		     whose handshake is over, a protocol violation
 * @conn:	the connection
 * @level:	their encryption level
 * @offset:	where in that level's stream
 * @data:	the bytes
 * @len:	how many
 * @ud:		our connection
 *
 * Return: 0, or an ngtcp2 error (a TLS alert set).
 */
int ngq_on_crypto(ngtcp2_conn *conn, ngtcp2_crypto_level level, uint64_t offset,
		  const uint8_t *data, size_t len, void *ud)
{
	struct ngq_conn *c = ud;

	if (!c->tls) {
		ngtcp2_conn_set_tls_alert(conn, NGQ_ALERT_UNEXPECTED);
		return NGTCP2_ERR_CRYPTO;
	}
	return ngtcp2_crypto_recv_crypto_data_cb(conn, level, offset, data, len,
						 ud);
}

/**
 * ngq_tls_shed() - free a server's TLS session once its handshake is done
 * @c:	the connection, outside ngtcp2's calls
 */
void ngq_tls_shed(struct ngq_conn *c)
{
	if (c->cl || !c->tls || !ngtcp2_conn_get_handshake_completed(c->conn))
		return;
	ngtcp2_conn_set_tls_native_handle(c->conn, NULL);
	gnutls_deinit(c->tls);
	c->tls = NULL;
	/* Nor the certificate: a reload's new one need not wait for hours
	 * of old connections to free the old key. */
	ngq_creds_free(c->creds);
	c->creds = NULL;
}
