// SPDX-License-Identifier: GPL-2.0-or-later
/* conn_pp2.c - the client a PROXY header names becomes the client
 *
 * Theory of operation: under --accept-proxy the socket's peer is a
 * gateway (accept.c heard it only because it is in --proxy-from, and held
 * it to the caps under its own address). Once its header is read
 * (pp2_sock.c), the client it names takes the gateway's place in
 * everything that judges or records a client: --allow and the caps
 * (admit.c), the log's address, and the address --transparent dials from
 * and --send-proxy passes on. A LOCAL header keeps the gateway. With
 * --transparent the client must be one an IPv4 listener's backend socket
 * can be bound to: an IPv6 client there is reset, never dialled from a
 * wrong address.
 */
#include "config.h"

#include <stdio.h>
#include <netinet/in.h>

#include "net/admit.h"
#include "conn/conn.h"
#include "conn/conn_pp2.h"
#include "common/counter.h"
#include "net/listener.h"
#include "common/log.h"
#include "core/proxy.h"
#include "io/sock.h"

/**
 * conn_pp2_adopt() - the PROXY header named a client: judge it instead
 * @c:	the connection, in CS_PROXY_HEADER, its header read
 * @in:	what the header said
 *
 * The gateway's place under the caps is given back and the client's
 * taken, --allow checked; a LOCAL header (the gateway's health check) or
 * one without addresses leaves the gateway as the client.
 *
 * Return: true if the client is served; otherwise the connection ended.
 */
bool conn_pp2_adopt(struct conn *c, const struct pp2_info *in)
{
	const struct sockaddr *src = (const struct sockaddr *)&in->src;
	char why[160], text[256], was[sizeof(c->cli_text)];
	enum admit a;

	if (!in->has_addr)
		return true;
	c->peer = in->src;
	memcpy(was, c->cli_text, sizeof(was));
	sock_addr_text(src, c->cli_text, sizeof(c->cli_text));
	log_debug("conn %s: PROXY header from %s", c->cli_text, was);
	if (c->lo->transparent && c->lo->listen.addr.ss_family == AF_INET &&
	    src->sa_family == AF_INET6 &&
	    !IN6_IS_ADDR_V4MAPPED(
		    &((const struct sockaddr_in6 *)src)->sin6_addr)) {
		counter_add(&c->st->proxy_refused, 1);
		conn_end(
			c, END_ERROR,
			"PROXY header names an IPv6 client: --transparent on an IPv4 listener cannot connect from it");
		return false;
	}
	limits_release(&c->host->px->limits, &c->source, c->unauth);
	a = admit_client(c->host->px, c->lo, src, true, &c->source, why,
			 sizeof(why));
	c->admitted = a == ADMIT_OK;
	if (c->admitted)
		return true;
	counter_add(a == ADMIT_DENIED ? &c->st->denied : &c->st->refused[a], 1);
	snprintf(text, sizeof(text), "refused by listener %s: %s", c->l->name,
		 why);
	conn_end(c, END_ERROR, text);
	return false;
}
