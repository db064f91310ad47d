// SPDX-License-Identifier: GPL-2.0-or-later
/* qcheck.c - a QUIC listener's settings, checked and loaded
 *
 * Theory of operation: start, --check and a reload ask
 * quic_check_listener() whether a quic: listener can run as configured,
 * so that a missing, unreadable or mismatched certificate or key, or
 * client certificate rules that would let nobody or everybody in, fail
 * there in one line rather than at the first client's handshake. The
 * listener (quic.c) loads its credentials with quic_creds_load() when it
 * starts and when a reload changes them.
 */
#include "config.h"

#include <stdio.h>

#include "conf/options.h"
#include "quic/quic-t.h"
#include "quic/quic.h"

/**
 * quic_creds_load() - a QUIC listener's credentials, as its settings say:
 *		  certificate and key, and the client certificates it asks
 *		  for and judges
 * @o:		its settings
 * @out:	the credentials
 * @err:	buffer for one line saying what is wrong
 * @errlen:	its size
 *
 * Return: 0, or -1 with @err set.
 */
int quic_creds_load(const struct listen_opts *o, struct ngq_creds **out,
		    char *err, size_t errlen)
{
	const char *allow[OPT_MAX_QUIC_RULES], *deny[OPT_MAX_QUIC_RULES];

	if (ngq_creds_load(o->quic_cert, o->quic_key, out, err, errlen))
		return -1;
	if (!*o->quic_client_ca)
		return 0;
	for (unsigned i = 0; i < o->nquic_allow; i++)
		allow[i] = o->quic_allow[i];
	for (unsigned i = 0; i < o->nquic_deny; i++)
		deny[i] = o->quic_deny[i];
	if (ngq_creds_client_auth(*out, o->quic_client_ca, allow,
				  o->nquic_allow, deny, o->nquic_deny, err,
				  errlen)) {
		ngq_creds_free(*out);
		return -1;
	}
	return 0;
}

/**
 * client_auth_check() - are a listener's client certificate settings whole
 * @o:		its settings
 * @err:	buffer for one line saying what is wrong
 * @errlen:	its size
 *
 * Windows Server 2025's rule: a certificate needs an allow rule, so a CA
 * without one would let no client in; rules without a CA would let
 * every client in without a certificate.
 *
 * Return: 0, or -1 with @err set.
 */
static int client_auth_check(const struct listen_opts *o, char *err,
			     size_t errlen)
{
	if (*o->quic_client_ca && !o->nquic_allow) {
		snprintf(
			err, errlen,
			"listener %s: quic-client-ca needs at least one quic-client-allow (a certificate's SHA-256, or issuer:DN)",
			o->name);
		return -1;
	}
	if (!*o->quic_client_ca && (o->nquic_allow || o->nquic_deny)) {
		snprintf(
			err, errlen,
			"listener %s: quic-client-allow and quic-client-deny need quic-client-ca",
			o->name);
		return -1;
	}
	return 0;
}

/**
 * quic_check_listener() - can a QUIC listener start as configured
 * @o:		its settings
 * @err:	buffer for one line saying why not
 * @errlen:	its size
 *
 * The certificate and key are read (and matched) here, and the client
 * CAs, so that start and --check fail on a missing, unreadable or
 * mismatched file, not the first client's handshake.
 *
 * Return: 0, or -1 with @err set.
 */
int quic_check_listener(const struct listen_opts *o, char *err, size_t errlen)
{
	struct ngq_creds *cr;
	char why[512];

	if (!o->quic) {
		if (!*o->quic_cert && !*o->quic_key && !*o->quic_client_ca &&
		    !o->nquic_allow && !o->nquic_deny)
			return 0;
		snprintf(
			err, errlen,
			"listener %s: quic-cert, quic-key and quic-client-* need a QUIC listen address (listen = quic:HOST:PORT)",
			o->name);
		return -1;
	}
	if (o->accept_proxy || o->transparent || o->mptcp[SIDE_CLIENT]) {
		snprintf(
			err, errlen,
			"listener %s: accept-proxy, transparent and mptcp listen do not apply to a QUIC listener",
			o->name);
		return -1;
	}
	if (!ngq_cc_known(o->cc[SIDE_CLIENT])) {
		snprintf(
			err, errlen,
			"listener %s: congestion client:%s: a quic: listener takes reno, cubic, bbr or bbr2",
			o->name, o->cc[SIDE_CLIENT]);
		return -1;
	}
	if (client_auth_check(o, err, errlen))
		return -1;
	if (quic_creds_load(o, &cr, why, sizeof(why))) {
		snprintf(err, errlen, "listener %s: %s", o->name, why);
		return -1;
	}
	ngq_creds_free(cr);
	return 0;
}
