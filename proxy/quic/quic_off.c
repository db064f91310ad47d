// SPDX-License-Identifier: GPL-2.0-or-later
/* quic_off.c - the QUIC listener's calls in a build without ngtcp2
 *
 * configure found no ngtcp2 0.12 with GnuTLS (or was told --without-quic):
 * the daemon builds and runs, and a quic: listener is refused at start and
 * at --check with one line saying what to install.
 */
#include "config.h"

#include <stdio.h>
#include <unistd.h>

#include "common/log.h"
#include "conf/options.h"
#include "net/listener.h"
#include "quic/quic.h"

/**
 * quic_built() - was the daemon built with QUIC
 *
 * Return: false.
 */
bool quic_built(void)
{
	return false;
}

/**
 * quic_check_listener() - refuse a QUIC listener: there is no QUIC here
 * @o:		the listener's settings
 * @err:	buffer for the line
 * @errlen:	its size
 *
 * Return: 0 for a TCP listener without QUIC keys, else -1 with @err set.
 */
int quic_check_listener(const struct listen_opts *o, char *err, size_t errlen)
{
	if (!o->quic && !*o->quic_cert && !*o->quic_key &&
	    !*o->quic_client_ca && !o->nquic_allow && !o->nquic_deny)
		return 0;
	snprintf(
		err, errlen,
		"listener %s: smbsplice was built without QUIC; install libngtcp2-dev libngtcp2-crypto-gnutls-dev libgnutls28-dev and rebuild (./configure says \"QUIC: yes\")",
		o->name);
	return -1;
}

/**
 * quic_host_init() - a worker's QUIC side: nothing
 * @qh:		the worker's
 * @acc:	its acceptor
 * @drained:	never called
 * @ctx:	its argument
 */
void quic_host_init(struct quic_host *qh, struct acceptor *acc,
		    void (*drained)(void *ctx), void *ctx)
{
	*qh = (struct quic_host){ .acc = acc, .drained = drained, .ctx = ctx };
}

/**
 * quic_add() - never called: quic_check_listener() refused the listener
 * @qh:		the worker's QUIC side
 * @l:		the listener, whose reference is dropped
 * @fd:		its socket, closed
 *
 * Return: false.
 */
bool quic_add(struct quic_host *qh, struct listener *l, int fd)
{
	close(fd);
	listener_put(l);
	return false;
}

/**
 * quic_find() - no QUIC listener is served
 * @qh:	the worker's QUIC side
 * @l:	the listener
 *
 * Return: NULL.
 */
struct qlistener *quic_find(struct quic_host *qh, const struct listener *l)
{
	return NULL;
}

/**
 * quic_set_cfg() - never called
 * @ql:		unused
 * @cfg:	unused
 */
void quic_set_cfg(struct qlistener *ql, struct lcfg *cfg)
{
}

/**
 * quic_remove() - never called
 * @ql:	unused
 */
void quic_remove(struct qlistener *ql)
{
}

/**
 * quic_drain() - never called
 * @ql:	unused
 */
void quic_drain(struct qlistener *ql)
{
}

/**
 * quic_hold() - never called
 * @ql:		unused
 * @hold:	unused
 */
void quic_hold(struct qlistener *ql, bool hold)
{
}

/**
 * quic_drain_all() - nothing to drain
 * @qh:	the worker's QUIC side
 */
void quic_drain_all(struct quic_host *qh)
{
}

/**
 * quic_remove_all() - nothing to stop
 * @qh:	the worker's QUIC side
 */
void quic_remove_all(struct quic_host *qh)
{
}

/**
 * quic_figures() - no QUIC connection carries anything in this build
 * @qh:		unused
 * @id:		unused
 * @out:	unused
 *
 * Return: false.
 */
bool quic_figures(struct quic_host *qh, uint64_t id, struct quic_figures *out)
{
	return false;
}
