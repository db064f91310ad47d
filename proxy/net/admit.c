// SPDX-License-Identifier: GPL-2.0-or-later
/* admit.c - whether a client is served: --allow and the caps
 *
 * Theory of operation: a client is judged by its address, twice at most:
 * by the acceptor (accept.c) on the address the socket shows, and, on a
 * listener with --accept-proxy, once more by the connection (conn.c) on
 * the address its PROXY header names, since the socket's peer is then
 * only the gateway. Both ask here, so that the same client meets the same
 * rules and the same words in the log whichever way it came.
 */
#include "config.h"

#include <stdio.h>

#include "net/admit.h"
#include "conf/options.h"
#include "conf/parse.h"
#include "core/proxy.h"

/**
 * admit_in() - is an address in one of a list's networks
 * @list:	the networks
 * @n:		how many
 * @sa:		the address
 *
 * Return: true if it is.
 */
bool admit_in(const struct cidr *list, unsigned n, const struct sockaddr *sa)
{
	for (unsigned i = 0; i < n; i++)
		if (parse_cidr_match(&list[i], sa))
			return true;
	return false;
}

/**
 * admit_client() - serve a client, or say why not
 * @px:			the process, whose caps count it
 * @lo:			the listener's settings
 * @peer:		the client's address
 * @check_allow:	judge it against --allow too
 * @key:		its key for the caps, set; on ADMIT_OK it holds a
 *			place the connection gives back (limits_release())
 * @why:		on refusal, the reason, for the log line
 * @whylen:		its size
 *
 * Return: ADMIT_OK, or the reason it is refused.
 */
enum admit admit_client(struct proxy *px, const struct listen_opts *lo,
			const struct sockaddr *peer, bool check_allow,
			struct source_key *key, char *why, size_t whylen)
{
	const struct options *o = px->opt;
	enum admit a;

	limits_source_key(peer, key);
	if (check_allow && lo->nallow &&
	    !admit_in(lo->allow, lo->nallow, peer)) {
		snprintf(why, whylen, "not in --allow");
		return ADMIT_DENIED;
	}
	a = limits_admit(&px->limits, key, lo->mode == MODE_SMB);
	if (a == ADMIT_MAX_CONNS)
		snprintf(why, whylen, "too many connections (--max-conns %u)",
			 o->max_conns);
	else if (a == ADMIT_PER_SOURCE)
		snprintf(
			why, whylen,
			"too many connections from its address (--max-conns-per-source %u)",
			o->max_per_source);
	else if (a == ADMIT_PREAUTH)
		snprintf(
			why, whylen,
			"its address has %u connections that have not completed a session setup (--max-preauth-per-source)",
			o->max_preauth);
	return a;
}
