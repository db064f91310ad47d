// SPDX-License-Identifier: GPL-2.0-or-later
/* stream.c - the listener's end of a QUIC stream: how it opens and how a
 *	      reset is told
 *
 * Theory of operation: when the client opens its one stream, a
 * socketpair(AF_UNIX, SOCK_STREAM) is made, one end handed to
 * accept_ops' open() as if accepted from the client's UDP address, the
 * other given to the connection's bridge (bridge.c, which moves the
 * bytes, the same for a quic: backend's dial). A RESET_STREAM or
 * STOP_SENDING from the client closes the socketpair (the connection
 * behind it ends) and the QUIC connection: a socketpair carries no
 * reset. Apart from quic.c, which routes datagrams and keeps the
 * connections, for the daemon's 1000-line file limit.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "common/counter.h"
#include "common/log.h"
#include "core/proxy.h"
#include "net/accept.h"
#include "net/listener.h"
#include "quic/quic-t.h"
#include "quic/quic.h"

/**
 * quic_stream_open() - ngq.c: the client opened its stream
 * @ud:		the connection's bridge
 * @sid:	the stream
 *
 * The socketpair is made, and one end becomes the client side of an
 * smbsplice connection: from here on that connection holds the
 * admission and two of the three descriptors taken at the Initial.
 *
 * Return: 0, or -1 to refuse the stream (a second one, or no memory).
 */
int quic_stream_open(void *ud, int64_t sid)
{
	struct qconn *qc = QBRIDGE_OWNER(ud, struct qconn);
	struct qlistener *ql = qc->ql;
	struct acceptor *acc = ql->qh->acc;
	int sv[2];

	if (qc->b.opened || qc->b.dead)
		return -1;
	if (qbridge_rings(&qc->b) ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
		       sv)) {
		log_rate(LOG_LVL_ERR,
			 "quic: no memory or socket for a stream: %s",
			 strerror(errno));
		quic_conn_end(qc, true);
		return -1;
	}
	qbridge_set_fd(&qc->b, sv[0]);
	qbridge_open(&qc->b);
	quic_proved(qc);
	counter_add(&ql->st.streams, 1);
	counter_add(&ql->l->st[acc->id].accepted, 1);
	qc->conn_id = acc->ops->open(acc->host, ql->l, ql->cfg, sv[1],
				     (struct sockaddr *)&qc->peer, &qc->key);
	return 0;
}

/**
 * quic_stream_reset() - ngq.c: the client reset the stream or asked it
 *			 stopped: the connection behind it ends, and so
 *			 does the QUIC connection
 * @ud:		the connection's bridge
 */
void quic_stream_reset(void *ud)
{
	qbridge_end(ud, true);
}

/**
 * on_settle() - bridge.c: act on what the bridge did
 * @b:	the connection's bridge
 */
static void on_settle(struct qbridge *b)
{
	quic_conn_settle(QBRIDGE_OWNER(b, struct qconn), NGQ_OK);
}

const struct qbridge_ops quic_bridge_ops = { .settle = on_settle };

/**
 * quic_figures() - the QUIC figures of the connection a stream became
 * @qh:		the worker's QUIC listeners
 * @id:		the connection's id (struct conn.id)
 * @out:	filled in
 *
 * For ctl, between two events of the worker: a walk of its QUIC
 * connections, done only when an admin asks.
 *
 * Return: true if a QUIC connection of @qh carries connection @id.
 */
bool quic_figures(struct quic_host *qh, uint64_t id, struct quic_figures *out)
{
	for (struct qlistener *ql = qh->list; ql; ql = ql->next)
		for (struct qconn *qc = ql->conns; qc; qc = qc->next)
			if (qc->conn_id == id && qc->b.nc) {
				ngq_info(qc->b.nc, out);
				return true;
			}
	return false;
}
