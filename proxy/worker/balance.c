// SPDX-License-Identifier: GPL-2.0-or-later
/* balance.c - each accepted TCP client served by the least loaded worker
 *
 * Theory of operation
 *
 * Every worker accepts on a socket of its own (SO_REUSEPORT) and the
 * kernel spreads new clients over them by a hash of their addresses: an
 * even spread of many short connections, but a poor one of a few long
 * ones. SMB sessions are few and long (a site's mapped drives, a
 * gateway's handful of tunnels), and four of them over two workers went
 * 2+2 only 3 times in 8: the rest left a core idle while the other
 * carried three or four gets.
 *
 * So a worker that accepts a TCP client counts the connections each
 * worker serves (its open connections, and those on their way to it) and
 * keeps the client only if none serves fewer; otherwise the client's
 * socket goes to the one that serves fewest, as a command on its queue,
 * and that worker opens the connection, before any byte of it is read
 * (Envoy's exact balance does the same). Clients admitted here stay
 * admitted (the caps and the descriptor budget are the process's).
 * A move costs a queued command and a wake of the other loop, once per
 * connection, never per message; a connection never moves once open.
 *
 * A worker that is not running (draining, or outside the backend
 * namespace) is never chosen. The count of connections on their way is
 * raised before the target's state is read, and a draining worker reads
 * it after setting its state, so a worker never reports its drain over
 * while a client is on its way to it (balance_pending()). A client that
 * found its target draining is kept, and the target told to look again
 * (balance_cmd_recheck): its drain check may have seen the raised count.
 *
 * The counts are read by other workers while they change, so each change
 * errs towards counting a client twice, never missing it in a worker's
 * load: a client being placed is counted on its way to the worker placing
 * it, a moved one is counted at its target before it leaves its acceptor
 * (at both while the command is queued: the acceptor, which only moves
 * clients to a lighter worker, is then one too heavy, which changes no
 * choice), and conn_open() lowers the count the instant it counts the
 * client open (the count used to fall only after the backend was
 * dialled, and an acceptor busy with two clients read the target's one
 * client as two and kept both: 3+1 once in 8 rounds, in CI's sanitizer
 * build). A third worker scanning the two loads as a client moves
 * between them can still miss it, in a window of a few instructions:
 * with three workers or more, a client may be placed one off.
 *
 * Its calls are declared in worker.h: the worker binds balance_place() as
 * its acceptor's place() and asks balance_pending() before its drain is
 * over, and this file reads the workers' loads and queues commands.
 *
 * QUIC streams are not moved: a stream's connection stays with the
 * worker of its QUIC connection, which io/reuseport.c steers by ID.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>

#include "common/counter.h"
#include "common/log.h"
#include "conf/options.h"
#include "conn/conn.h"
#include "core/limits.h"
#include "core/proxy.h"
#include "io/sock.h"
#include "net/listener.h"
#include "worker/worker.h"

/**
 * struct moving - what a moved client carries besides its socket
 * @peer:	its address
 * @key:	its source key, admitted by the worker that accepted it
 * @host:	the chosen worker's connections, whose budget (the
 *		process's) the client's descriptors are given back to if it
 *		never opens
 */
struct moving {
	struct sockaddr_storage peer;
	struct source_key key;
	struct conn_host *host;
};

/**
 * load() - the connections a worker serves, and those on their way to it
 * @w:	the worker, from any thread
 *
 * Return: the count.
 */
static uint64_t load(const struct worker *w)
{
	/* incoming first: a client that arrives between the two reads is
	 * then counted twice, never missed (conn_open() counts it open
	 * before it lowers incoming). */
	uint64_t on_way = __atomic_load_n(&w->incoming, __ATOMIC_SEQ_CST);

	return on_way + worker_active(w);
}

/**
 * lightest() - the running worker that serves fewest connections
 * @w:	the accepting worker, its incoming raised for the client being
 *	placed
 *
 * Return: @w if none serves fewer than it.
 */
static struct worker *lightest(struct worker *w)
{
	struct proxy *px = w->px;
	struct worker *best = w;
	uint64_t least = load(w) - 1, n; /* less the client being placed */

	for (unsigned i = 0; i < px->nworkers; i++) {
		struct worker *o = &px->workers[i];

		if (o == w ||
		    __atomic_load_n(&o->state, __ATOMIC_ACQUIRE) != WS_RUNNING)
			continue;
		n = load(o);
		if (n < least) {
			least = n;
			best = o;
		}
	}
	return best;
}

/**
 * take_run() - balance_cmd_take: open a client another worker accepted
 * @w:	the worker chosen
 * @c:	@l and @cfg (references the sender took), @fd (the client's
 *	socket) and @arg (its struct moving), all the command's own
 */
static void take_run(struct worker *w, struct worker_cmd *c)
{
	struct moving *m = c->arg;

	/* incoming falls the moment the client is counted among the open
	 * ones, not after conn_open() dialled the backend: load() read the
	 * client twice all that while, and a busy acceptor kept a third. */
	conn_open(&w->host, c->l, c->cfg, c->fd, (struct sockaddr *)&m->peer,
		  &m->key, &w->incoming);
	listener_cfg_put(c->cfg);
	listener_put(c->l);
	free(m);
	worker_drain_check(w); /* conn_open() may have refused it */
}

/**
 * take_drop() - the chosen worker ended before it ran the command: the
 *		 client is turned away as conn_open() turns one away
 * @c:	the command
 */
static void take_drop(struct worker_cmd *c)
{
	/* The chosen worker's incoming is not lowered: drop runs only once
	 * its thread has ended, and nothing reads the count after. */
	struct moving *m = c->arg;

	limits_release(&m->host->px->limits, &m->key,
		       c->cfg->o.mode == MODE_SMB);
	conn_host_unreserve(m->host);
	sock_set_linger0(c->fd);
	close(c->fd);
	listener_cfg_put(c->cfg);
	listener_put(c->l);
	free(m);
}

const struct worker_cmd_ops balance_cmd_take = {
	.run = take_run,
	.drop = take_drop,
};

/**
 * recheck_run() - balance_cmd_recheck: a draining worker whose count of
 *		   clients on their way was raised by a move that then kept
 *		   the client looks again whether its drain is over
 * @w:	the worker
 * @c:	nothing of it is read
 */
static void recheck_run(struct worker *w, struct worker_cmd *c)
{
	worker_drain_check(w);
}

static const struct worker_cmd_ops balance_cmd_recheck = {
	.run = recheck_run,
};

/**
 * move() - hand an accepted client to another worker
 * @w:		the accepting worker
 * @to:		the chosen one
 * @l:		the listener
 * @cfg:	its settings
 * @fd:		the client's socket
 * @peer:	its address
 * @key:	its source key, admitted
 *
 * Return: true if @to has it now; false if it is not running, or memory
 * ran out (@w keeps the client).
 */
static bool move(struct worker *w, struct worker *to, struct listener *l,
		 struct lcfg *cfg, int fd, const struct sockaddr *peer,
		 const struct source_key *key)
{
	struct moving *m;

	__atomic_add_fetch(&to->incoming, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&to->state, __ATOMIC_SEQ_CST) != WS_RUNNING ||
	    !(m = malloc(sizeof(*m))))
		goto keep;
	memset(&m->peer, 0, sizeof(m->peer));
	memcpy(&m->peer, peer,
	       peer->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
					   : sizeof(struct sockaddr_in));
	m->key = *key;
	m->host = &to->host;
	listener_get(l);
	listener_cfg_get(cfg);
	if (!worker_run(to,
			&(struct worker_cmd){ .ops = &balance_cmd_take,
					      .l = l,
					      .cfg = cfg,
					      .fd = fd,
					      .arg = m },
			WORKER_CMD_NOWAIT)) {
		counter_add(&w->moved, 1);
		return true;
	}
	listener_cfg_put(cfg);
	listener_put(l);
	free(m);
keep:
	__atomic_sub_fetch(&to->incoming, 1, __ATOMIC_SEQ_CST);
	/* Its drain check may have run while the count was raised, and found
	 * it not over; nothing else may wake it (if memory runs out here,
	 * --drain-timeout still ends the drain). */
	if (__atomic_load_n(&to->state, __ATOMIC_SEQ_CST) == WS_DRAINING)
		worker_run(to,
			   &(struct worker_cmd){ .ops = &balance_cmd_recheck },
			   WORKER_CMD_NOWAIT);
	return false;
}

/**
 * balance_place() - make an accepted TCP client a connection, in this
 *		     worker or in the one that serves fewest
 * @h:		the accepting worker's connections
 * @l:		the listener
 * @cfg:	its settings
 * @fd:		the client's socket
 * @peer:	its address
 * @key:	its source key, admitted
 */
void balance_place(struct conn_host *h, struct listener *l, struct lcfg *cfg,
		   int fd, const struct sockaddr *peer,
		   const struct source_key *key)
{
	struct worker *w = worker_of_host(h);
	struct worker *to;

	/* Counted on its way to this worker while it is placed, so that a
	 * worker placing a client at the same time sees it. */
	__atomic_add_fetch(&w->incoming, 1, __ATOMIC_SEQ_CST);
	to = lightest(w);
	if (to != w && move(w, to, l, cfg, fd, peer, key)) {
		/* After move() raised @to's: counted twice, never missed. */
		__atomic_sub_fetch(&w->incoming, 1, __ATOMIC_SEQ_CST);
		return;
	}
	conn_open(h, l, cfg, fd, peer, key, &w->incoming);
}

/**
 * balance_pending() - are clients on their way to this worker
 * @w:	the worker, from its thread, after it set its state
 *
 * Return: true if some are: its drain is not over.
 */
bool balance_pending(const struct worker *w)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return __atomic_load_n(&w->incoming, __ATOMIC_SEQ_CST) != 0;
}
