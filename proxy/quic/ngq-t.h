/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_NGQ_T_H
#define SMBSPLICE_NGQ_T_H

/* ngq-t.h - the ngq module's own structures and the calls between its
 * files: ngq.c (a connection of either role, the stream's glue), ngq_sec.c
 * (Retry, Stateless Reset, path validation, client certificates) and
 * ngq_client.c (the client role); nothing outside them includes it.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gnutls/gnutls.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>

/* Not ngq.h: a -t.h header is a module of its own, and ngq.c includes
 * both. */
struct ngq_access;
struct ngq_cb;
struct ngq_path;
struct ngq_retry;
struct ngqc_side;

/**
 * struct ngq_creds - a listener's certificate and key
 * @cred:	GnuTLS's
 * @refs:	the listener's 1 while current, and one per connection whose
 *		TLS session uses them: a reload that rereads the files
 *		leaves handshakes on the old ones to their end (a
 *		connection lets go once its handshake is done)
 * @access:	the client certificates allowed and denied, NULL when none
 *		is asked for (ngq_creds_client_auth())
 */
struct ngq_creds {
	gnutls_certificate_credentials_t cred;
	unsigned refs;
	struct ngq_access *access;
};

/**
 * struct ngq_conn - one QUIC connection, a listener's or a client's
 * @conn:	ngtcp2's
 * @tls:	GnuTLS's session
 * @ref:	how ngtcp2_crypto finds @conn from @tls
 * @ccerr:	why it closes, for the CONNECTION_CLOSE
 * @cb:		its owner's callbacks
 * @ud:		their argument
 * @secret:	the stateless reset secret of the IDs it issues (the
 *		listener's, or the client's own in @cl)
 * @sid:	the stream served, -1 before it opens
 * @cl:		the client role's own (ngq_client.c), NULL for a
 *		listener's connection; the fields below are the listener's
 * @bad_alpn:	the client offered no "smb"
 * @creds:	the certificate its session uses (a reference), NULL once
 *		a listener's handshake is done (ngq_tls_shed())
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
	struct ngqc_side *cl;
	bool bad_alpn;
	struct ngq_creds *creds;
	uint8_t alert;
	bool no_cert;
	uint8_t slot;
};

int ngq_file_readable(const char *what, const char *path, char *err,
		      size_t errlen);

/* ngq.c: the glue both roles' connections share */
int ngq_tls_init(struct ngq_conn *c, unsigned flags,
		 gnutls_certificate_credentials_t cred);
void ngq_keepalive(ngtcp2_conn *conn, ngtcp2_duration most);
ngtcp2_path ngq_to_path(const struct ngq_path *p);
void ngq_callbacks(ngtcp2_callbacks *cb);

/* ngq_client.c */
void ngqc_side_free(struct ngqc_side *cl);

/* ngq_sec.c */
int ngq_retried_params(ngtcp2_transport_params *p, ngtcp2_settings *st,
		       const ngtcp2_pkt_hd *hd, const struct ngq_retry *rt);
int ngq_on_path_validation(ngtcp2_conn *conn, uint32_t flags,
			   const ngtcp2_path *path,
			   ngtcp2_path_validation_result res, void *ud);
void ngq_access_free(struct ngq_access *a);
int ngq_client_auth_session(gnutls_session_t tls, const struct ngq_creds *cr);
uint8_t ngq_client_auth_alert(struct ngq_conn *c, uint8_t alert);
int ngq_on_crypto(ngtcp2_conn *conn, ngtcp2_crypto_level level, uint64_t offset,
		  const uint8_t *data, size_t len, void *ud);
void ngq_tls_shed(struct ngq_conn *c);

#endif /* SMBSPLICE_NGQ_T_H */
