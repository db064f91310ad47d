// SPDX-License-Identifier: GPL-2.0-or-later
/* qdial_off.c - the quic: backend's calls in a build without ngtcp2
 *
 * configure found no ngtcp2 0.12 with GnuTLS (or was told --without-quic):
 * a quic: backend is refused at start and at --check with one line saying
 * what to install, as a quic: listener is (quic_off.c).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>

#include "conf/options.h"
#include "quic/qdial.h"

/**
 * qdial_any() - has a listener a quic: backend
 * @lo:	its settings
 *
 * Return: true if one of its backends is dialled over QUIC.
 */
bool qdial_any(const struct listen_opts *lo)
{
	for (unsigned i = 0; i < lo->nbackends; i++)
		if (lo->backend_quic[i])
			return true;
	return false;
}

/**
 * qdial_check() - refuse a quic: backend: there is no QUIC here
 * @lo:		the listener's settings
 * @err:	buffer for the line
 * @errlen:	its size
 *
 * Return: 0 for a listener without a quic: backend or its keys, else -1
 * with @err set.
 */
int qdial_check(const struct listen_opts *lo, char *err, size_t errlen)
{
	if (!qdial_any(lo) && !*lo->quic_name && !*lo->quic_ca &&
	    !*lo->quic_pin && !*lo->quic_client_cert && !*lo->quic_client_key)
		return 0;
	snprintf(
		err, errlen,
		"listener %s: smbsplice was built without QUIC, so it has no quic: backend; install libngtcp2-dev libngtcp2-crypto-gnutls-dev libgnutls28-dev and rebuild (./configure says \"QUIC: yes\")",
		lo->name);
	return -1;
}

/**
 * qdial_open() - no QUIC dial in this build (qdial_check() refused it)
 * @r:		unused
 * @out:	unused
 * @fd:		unused
 * @err:	buffer for the line
 * @errlen:	its size
 *
 * Return: -1.
 */
int qdial_open(const struct qdial_req *r, struct qdial **out, int *fd,
	       char *err, size_t errlen)
{
	snprintf(err, errlen, "smbsplice was built without QUIC");
	errno = EPROTONOSUPPORT;
	return -1;
}

/**
 * qdial_release() - nothing to let go of in this build
 * @q:	unused
 */
void qdial_release(struct qdial *q)
{
}

/**
 * qdial_abort() - nothing to close in this build
 * @qp:	unused
 */
void qdial_abort(struct qdial **qp)
{
}

/**
 * qdial_cancel() - nothing to cancel in this build
 * @q:	unused
 */
void qdial_cancel(struct qdial *q)
{
}

/**
 * qdial_health() - how health probes dial quic: backends: not at all,
 *		    there are none in a build without QUIC
 *
 * Return: NULL.
 */
const struct health_quic *qdial_health(void)
{
	return NULL;
}

/**
 * qdial_figures() - no dial runs in this build
 * @q:		unused
 * @out:	unused
 *
 * Return: false.
 */
bool qdial_figures(const struct qdial *q, struct quic_figures *out)
{
	return false;
}
