// SPDX-License-Identifier: GPL-2.0-or-later
/* worker.c - one event loop thread
 *
 * Theory of operation: with --workers N the process runs N workers, each a
 * thread with a libev loop, a listening socket of its own per listener
 * (SO_REUSEPORT: the kernel spreads new connections over them), its own
 * pipe and buffer pools and its own connections. A connection lives and
 * dies in the worker that accepted it, so the data path takes no lock and
 * shares no cache line with another thread. What is process-wide is small
 * and read-mostly: the caps (limits.c), the --max-pipes budget (one atomic
 * counter), listeners' settings (immutable, reference counted), and
 * counters that only the worker writes and the main thread reads.
 *
 * Threads rather than processes, because one process keeps one /metrics
 * endpoint, one set of caps, one log, one set of signals and one
 * configuration to reload, with no shared memory to set up; the data path
 * is share-nothing either way.
 *
 * The main thread reaches a worker only through a queue of commands under
 * a mutex and an ev_async. A command carries the function the worker's
 * thread runs (struct worker_cmd_ops) and its arguments, so that this
 * file knows only its own kinds: add a listener's socket, give a listener
 * new settings, remove one, drain (stop accepting, and say when the last
 * connection has ended), stop (end every connection now). The handover's
 * (pause, save, unpause, abandon) are connmove.c's, the control socket's
 * (snapshot, kill, hold, resume) controlcmd.c's. worker_run() queues one,
 * and can wait until it ran; worker_sync_all() waits until every worker has
 * run everything sent so far. Each worker runs its commands in the order
 * they were sent.
 *
 * Lifecycle: worker_init() (main thread: loop, pools), worker_start()
 * (the thread enters the backend namespace if all listeners share one,
 * or under --user is born in it, and runs the loop), commands,
 * worker_join() after worker_cmd_stop, worker_destroy(). Every few seconds the
 * worker trims its pools, so the pipes and buffers of a burst are given
 * back once the burst is over; and when the trim gave buffers back, or
 * descriptors were given back since the last trim (a connection, QUIC
 * handshake or pipe ended, or a reservation for one was undone: in
 * practice, whenever the process saw any client), it hands the
 * allocator's free pages to the kernel. The second case is a QUIC
 * handshake flood's: each handshake holds about 100 KiB of ngtcp2 and
 * GnuTLS state until --handshake-timeout, freed into the allocator, where
 * an idle worker would otherwise keep it resident for good (14 MiB after
 * 4,000 spoofed Initials, measured). A process that saw nothing does not
 * purge at all.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>

#include "net/accept.h"
#include "core/alloc.h"
#include "conn/conn.h"
#include "conn/connlog.h"
#include "common/counter.h"
#include "net/listener.h"
#include "common/log.h"
#include "common/netns.h"
#include "core/proxy.h"
#include "worker/worker.h"

/* How often the pools give back what sat unused since the last time. */
#define TRIM_EVERY 5.0

/* Seconds worker_sync_all() waits for the workers at most. */
#define SYNC_TIMEOUT 2

/* Free copy buffers a worker keeps for the next burst, in bytes. */
#define BUF_KEEP_BYTES (2u << 20)

static const char *const worker_state_name[] = {
	[WS_RUNNING] = "running",
	[WS_NO_NETNS] = "no_netns",
	[WS_DRAINING] =
		"drain", /* not "draining": scripts wait for that word */
	[WS_IDLE] = "idle",
};

_Static_assert(sizeof(worker_state_name) / sizeof(worker_state_name[0]) ==
		       WS_COUNT,
	       "a name per worker state");

/**
 * worker_set_state() - move a worker to its next stage, from its thread
 * @w:		the worker
 * @next:	the stage
 */
static void worker_set_state(struct worker *w, enum worker_state next)
{
	log_debug("worker %u: %s -> %s", w->id, worker_state_name[w->state],
		  worker_state_name[next]);
	__atomic_store_n(&w->state, next, __ATOMIC_RELEASE);
}

/**
 * worker_is_idle() - has a draining worker no connection left
 * @w:	the worker, from any thread
 *
 * Return: true once it has said so.
 */
bool worker_is_idle(const struct worker *w)
{
	return __atomic_load_n(&w->state, __ATOMIC_ACQUIRE) == WS_IDLE;
}

/**
 * worker_drain_check() - tell the main thread if a draining worker has
 *			  nothing left to serve
 * @w:	the worker, from its thread
 *
 * Nothing left: no connection, no client on its way from another worker
 * (balance.c), and no QUIC listener still serving connections (whose
 * streams have ended, but which wait for their clients' close).
 */
void worker_drain_check(struct worker *w)
{
	if (w->state != WS_DRAINING || !conn_host_empty(&w->host) ||
	    w->quic.list || balance_pending(w))
		return;
	worker_set_state(w, WS_IDLE);
	ev_async_send(w->px->loop, &w->px->drained_w);
}

/**
 * worker_conn_ended() - a connection of this worker has ended
 * @ctx:	the worker
 *
 * While draining, the last one tells the main thread.
 */
static void worker_conn_ended(void *ctx)
{
	worker_drain_check(ctx);
}

/**
 * worker_of_host() - the worker whose connections these are
 * @h:	its conn_host
 *
 * Return: the worker.
 */
struct worker *worker_of_host(struct conn_host *h)
{
	return (struct worker *)((char *)h - offsetof(struct worker, host));
}

/**
 * worker_out_of_fds() - a connection found no descriptor for its backend
 * @ctx:	the worker
 * @why:	strerror() of socket()'s errno
 */
static void worker_out_of_fds(void *ctx, const char *why)
{
	struct worker *w = ctx;

	accept_pause_all(&w->acc, why);
}

/**
 * worker_quic_figures() - the QUIC figures of a connection whose client
 *			   side is a stream of this worker's QUIC listeners
 * @ctx:	the worker
 * @id:		the connection
 * @out:	filled in
 *
 * Return: true if one carries it.
 */
static bool worker_quic_figures(void *ctx, uint64_t id,
				struct quic_figures *out)
{
	struct worker *w = ctx;

	return quic_figures(&w->quic, id, out);
}

/**
 * worker_open() - make an accepted client a connection (conn_open())
 * @h:		the worker's connections
 * @l:		the listener
 * @cfg:	its settings
 * @fd:		the client's socket
 * @peer:	its address
 * @key:	its source key, admitted
 *
 * Return: the connection's id, 0 if it was refused (no memory): a QUIC
 * stream keeps it, to find its connection's figures for ctl.
 */
static uint64_t worker_open(struct conn_host *h, struct listener *l,
			    struct lcfg *cfg, int fd,
			    const struct sockaddr *peer,
			    const struct source_key *key)
{
	h->opened = 0;
	conn_open(h, l, cfg, fd, peer, key, NULL);
	return h->opened;
}

/* Where its acceptor's clients become connections. */
static const struct accept_ops worker_accept_ops = {
	.reserve = conn_host_reserve,
	.unreserve = conn_host_unreserve,
	.place = balance_place,
	.open = worker_open,
};

/* What a worker's connections tell it. */
static const struct conn_host_ops worker_conn_ops = {
	.out_of_fds = worker_out_of_fds,
	.ended = worker_conn_ended,
	.quic_figures = worker_quic_figures,
};

/**
 * add_drop() - give back what a worker_cmd_add carries: the socket, and the
 *		reference to the listener
 * @c:	the command
 */
static void add_drop(struct worker_cmd *c)
{
	close(c->fd);
	listener_put(c->l);
}

/**
 * add_run() - worker_cmd_add: accept on a listener's socket
 * @w:	the worker
 * @c:	@l and @fd, both the worker's
 *
 * A worker that will never accept (draining, or outside the backend
 * namespace) closes the socket at once.
 */
static void add_run(struct worker *w, struct worker_cmd *c)
{
	if (w->state != WS_RUNNING)
		add_drop(c);
	else if (c->l->cfg->o.quic)
		quic_add(&w->quic, c->l, c->fd);
	else
		accept_add(&w->acc, c->l, c->fd);
}

const struct worker_cmd_ops worker_cmd_add = {
	.run = add_run,
	.drop = add_drop,
};

/**
 * update_drop() - give back what a worker_cmd_update carries: its settings
 * @c:	the command
 */
static void update_drop(struct worker_cmd *c)
{
	listener_cfg_put(c->cfg);
}

/**
 * update_run() - worker_cmd_update: new connections on a listener start with
 *		  new settings
 * @w:	the worker
 * @c:	@l, and @cfg, a reference the worker takes over
 */
static void update_run(struct worker *w, struct worker_cmd *c)
{
	struct wlistener *wl = accept_find(&w->acc, c->l);
	struct qlistener *ql = quic_find(&w->quic, c->l);

	if (wl)
		accept_set_cfg(wl, c->cfg);
	else if (ql)
		quic_set_cfg(ql, c->cfg);
	else
		update_drop(c);
}

const struct worker_cmd_ops worker_cmd_update = {
	.run = update_run,
	.drop = update_drop,
};

/**
 * remove_run() - worker_cmd_remove: stop accepting on a listener: accept what
 *		  is queued, close
 * @w:	the worker
 * @c:	@l
 */
static void remove_run(struct worker *w, struct worker_cmd *c)
{
	struct wlistener *wl = accept_find(&w->acc, c->l);
	struct qlistener *ql = quic_find(&w->quic, c->l);

	if (wl)
		accept_remove(wl, true);
	if (ql)
		quic_drain(ql);
}

const struct worker_cmd_ops worker_cmd_remove = { .run = remove_run };

/**
 * drain_run() - worker_cmd_drain: stop accepting everywhere; say when no
 *		 connection is left
 * @w:	the worker
 * @c:	nothing of it is read
 */
static void drain_run(struct worker *w, struct worker_cmd *c)
{
	(void)c;
	if (w->state != WS_DRAINING && w->state != WS_IDLE)
		worker_set_state(w, WS_DRAINING);
	accept_remove_all(&w->acc, true);
	quic_drain_all(&w->quic);
	worker_drain_check(w);
}

const struct worker_cmd_ops worker_cmd_drain = { .run = drain_run };

/**
 * stop_run() - worker_cmd_stop: end every connection and leave the loop
 * @w:	the worker
 * @c:	nothing of it is read
 *
 * The loop ends once on_wake() has found the queue empty: commands queued
 * behind this one until then still run, as in any batch; later ones never
 * run, and worker_destroy() gives back what they carry.
 */
static void stop_run(struct worker *w, struct worker_cmd *c)
{
	(void)c;
	accept_remove_all(&w->acc, false);
	quic_remove_all(&w->quic);
	conn_close_all(&w->host);
	ev_timer_stop(w->loop, &w->trim);
	ev_async_stop(w->loop, &w->wake);
	ev_break(w->loop, EVBREAK_ALL);
}

const struct worker_cmd_ops worker_cmd_stop = { .run = stop_run };

/**
 * sync_run() - worker_sync_all()'s command: tell the main thread that every
 *		command sent before it has run
 * @w:	the worker
 * @c:	nothing of it is read
 */
static void sync_run(struct worker *w, struct worker_cmd *c)
{
	(void)c;
	pthread_mutex_lock(&w->px->sync_lock);
	w->px->synced++;
	pthread_cond_signal(&w->px->sync_cond);
	pthread_mutex_unlock(&w->px->sync_lock);
}

static const struct worker_cmd_ops worker_cmd_sync = { .run = sync_run };

/**
 * on_wake() - the main thread has queued commands for this worker
 * @loop:	the worker's loop
 * @a:		&worker.wake
 * @revents:	unused
 */
static void on_wake(struct ev_loop *loop, ev_async *a, int revents)
{
	struct worker *w = a->data;
	struct worker_cmd *c;

	(void)loop;
	(void)revents;
	for (;;) {
		pthread_mutex_lock(&w->lock);
		c = w->cmds;
		if (c)
			w->cmds = c->next;
		pthread_mutex_unlock(&w->lock);
		if (!c)
			break;
		c->ops->run(w, c);
		free(c);
	}
}

/**
 * queue_cmd() - add a command to a worker's queue and wake it
 * @w:	the worker
 * @c:	the command, which the worker frees
 */
static void queue_cmd(struct worker *w, struct worker_cmd *c)
{
	struct worker_cmd **link;

	pthread_mutex_lock(&w->lock);
	for (link = &w->cmds; *link; link = &(*link)->next)
		;
	*link = c;
	pthread_mutex_unlock(&w->lock);
	ev_async_send(w->loop, &w->wake);
}

/**
 * worker_run() - queue a command for a worker, wake it, and maybe wait
 *		  until it ran
 * @w:		the worker
 * @c:		the command, copied: a compound literal will do
 * @wait:	WORKER_CMD_WAIT to return only once the worker has run it,
 *		by way of worker_sync_all() (so every worker has run what it
 *		was sent, and the same bound holds)
 *
 * Return: 0; -1 if memory ran out (nothing was queued: what @c carries
 * is still the caller's; WORKER_CMD_WAIT still waits for what was sent
 * before); 1, with WORKER_CMD_WAIT, if a worker did not answer in time (it may
 * yet run @c: what @c->arg points to must be left to it).
 */
int worker_run(struct worker *w, const struct worker_cmd *c,
	       enum worker_cmd_wait wait)
{
	struct worker_cmd *q = malloc(sizeof(*q));
	int r = -1;

	if (q) {
		*q = *c;
		q->next = NULL;
		queue_cmd(w, q);
		r = 0;
	}
	if (wait == WORKER_CMD_WAIT && worker_sync_all(w->px) && !r)
		r = 1;
	return r;
}

/**
 * worker_sync_all() - wait until every worker has run the commands sent so far
 * @px:	the process
 *
 * So that a line saying a listener is closed is true when it is logged,
 * and a client that connects after it is refused. Workers run their
 * commands within one loop iteration, and no callback of theirs blocks,
 * so the wait is short; it gives up after SYNC_TIMEOUT all the same,
 * rather than hold the main thread (and /metrics) hostage.
 *
 * Return: 0, or -1 if it gave up: a worker may still be running what
 * was sent.
 */
int worker_sync_all(struct proxy *px)
{
	unsigned long target;
	struct timespec until;
	unsigned sent = 0;
	int r = 0;

	if (!px->workers)
		return 0; /* still starting: no worker runs yet */
	pthread_mutex_lock(&px->sync_lock);
	target = px->synced;
	pthread_mutex_unlock(&px->sync_lock);
	for (unsigned i = 0; i < px->nworkers; i++)
		sent += !worker_run(
			&px->workers[i],
			&(struct worker_cmd){ .ops = &worker_cmd_sync },
			WORKER_CMD_NOWAIT);
	target += sent;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += SYNC_TIMEOUT;
	pthread_mutex_lock(&px->sync_lock);
	while (px->synced < target && r != ETIMEDOUT)
		r = pthread_cond_timedwait(&px->sync_cond, &px->sync_lock,
					   &until);
	pthread_mutex_unlock(&px->sync_lock);
	if (r == ETIMEDOUT) {
		log_warn("workers did not answer within %ds; going on",
			 SYNC_TIMEOUT);
		return -1;
	}
	return 0;
}

/**
 * on_trim() - give back the pipes, buffers and timing blocks that sat
 *	       unused, and the memory of what ended; say how many end lines
 *	       were suppressed
 * @loop:	the worker's loop
 * @t:		&worker.trim
 * @revents:	unused
 *
 * The descriptors are the process's (every worker's connections,
 * handshakes and pipes), so a worker that served none of them may purge:
 * the purge is of every arena. A busy proxy purges every TRIM_EVERY
 * seconds: pages jemalloc's own decay would return within its ten seconds
 * anyway (a purge with little free took 0.2 us here, one of 16 MiB
 * 290 us). The TCP data path allocates nothing; ngtcp2 allocates per
 * packet on the QUIC one, and may fault a few pages back in after each.
 */
static void on_trim(struct ev_loop *loop, ev_timer *t, int revents)
{
	struct worker *w = t->data;
	unsigned long given;
	bool freed;

	(void)loop;
	(void)revents;
	pipepool_trim(&w->pipes);
	timing_pool_trim(&w->timing);
	given = budget_given(&w->px->limits.fds);
	freed = bufpool_trim(&w->bufs) || given != w->trim_given;
	w->trim_given = given;
	if (freed)
		alloc_release_free_memory();
	connlog_quiet();
}

/**
 * worker_init() - prepare a worker, from the main thread
 * @w:		the worker, zeroed
 * @px:		the process
 * @id:		its number
 *
 * Return: 0, or -1 after logging why.
 */
int worker_init(struct worker *w, struct proxy *px, unsigned id)
{
	const struct options *o = px->opt;
	struct stat st;

	w->px = px;
	w->id = id;
	w->loop = ev_loop_new(EVBACKEND_EPOLL);
	if (!w->loop) {
		log_err("cannot create the event loop of worker %u (epoll): %s",
			id, strerror(errno));
		return -1;
	}
	pthread_mutex_init(&w->lock, NULL);
	pipepool_init(&w->pipes, &px->pipe_budget, o->pipe_size);
	bufpool_init(&w->bufs, o->buf_size, BUF_KEEP_BYTES);
	bufpool_bound_large(&w->bufs, &px->unpipe);
	/* Started now, before the thread runs, so that a command sent at
	 * once is not lost. */
	ev_async_init(&w->wake, on_wake);
	w->wake.data = w;
	ev_async_start(w->loop, &w->wake);
	ev_timer_init(&w->trim, on_trim, TRIM_EVERY, TRIM_EVERY);
	w->trim.data = w;
	if (!fstat(netns_home(), &st))
		w->netns_ino = st.st_ino;
	conn_host_init(&w->host, px, w->loop, id, &w->pipes, &w->bufs,
		       &w->timing, &worker_conn_ops, w);
	conn_host_sits_in(&w->host, w->netns_ino);
	accept_init(&w->acc, px, w->loop, id, &w->host, &worker_accept_ops);
	quic_host_init(&w->quic, &w->acc, worker_conn_ended, w);
	return 0;
}

/**
 * worker_main() - the worker thread
 * @arg:	the worker
 *
 * Return: NULL, once the loop was told to stop.
 */
static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct proxy *px = w->px;
	struct stat st;

	/* For good, when every listener dials into one namespace: then no
	 * connection needs a setns(), nor the privilege to make one. Under
	 * --user the thread was born there (become_user() in main.c). */
	if (px->worker_netns >= 0) {
		if (!px->helper.fds && netns_enter(px->worker_netns)) {
			log_err("worker %u cannot enter the backend namespace: %s; it serves no one",
				w->id, strerror(errno));
			worker_set_state(w, WS_NO_NETNS);
		} else if (!fstat(px->worker_netns, &st)) {
			w->netns_ino = st.st_ino;
			conn_host_sits_in(&w->host, w->netns_ino);
		}
	}
	ev_timer_start(w->loop, &w->trim);
	ev_run(w->loop, 0);
	return NULL;
}

/**
 * worker_start() - run the worker's loop in a thread of its own
 * @w:	the worker, after worker_init()
 *
 * Return: 0, or -1 after logging why.
 */
int worker_start(struct worker *w)
{
	int err = pthread_create(&w->thread, NULL, worker_main, w);

	if (err) {
		log_err("cannot start worker %u: %s", w->id, strerror(err));
		return -1;
	}
	return 0;
}

/**
 * worker_join() - wait for a worker told worker_cmd_stop to end
 * @w:	the worker
 */
void worker_join(struct worker *w)
{
	pthread_join(w->thread, NULL);
}

/**
 * worker_destroy() - free what a worker owns, once its thread has ended
 * @w:	the worker (or one that failed worker_init() part way)
 */
void worker_destroy(struct worker *w)
{
	struct worker_cmd *c;

	/* Sent after the stop: give back what they carry. */
	while ((c = w->cmds)) {
		w->cmds = c->next;
		if (c->ops->drop)
			c->ops->drop(c);
		free(c);
	}
	pipepool_destroy(&w->pipes);
	bufpool_destroy(&w->bufs);
	w->timing.used = false;
	timing_pool_trim(&w->timing);
	if (w->loop) {
		ev_loop_destroy(w->loop);
		pthread_mutex_destroy(&w->lock);
	}
	w->loop = NULL;
}

/**
 * worker_report() - add a worker's gauges to a scrape's sums
 * @w:		the worker, running in its own thread
 * @g:		the gauges' sum; pipes_open is process-wide and left alone
 * @accepted:	set to the connections this worker opened (those other
 *		workers handed it included)
 * @moved:	set to the clients it accepted and handed to another
 */
void worker_report(const struct worker *w, struct gauges *g, uint64_t *accepted,
		   uint64_t *moved)
{
	*accepted = conn_host_accepted(&w->host);
	*moved = counter_read(&w->moved);
	g->total += *accepted;
	g->pipes_lent += counter_read(&w->pipes.lent);
	g->pipes_denied += counter_read(&w->pipes.denied);
	g->pipes_small += counter_read(&w->pipes.small);
	g->pipe_stalls += conn_host_pipe_stalls(&w->host);
	g->bufs_lent += counter_read(&w->bufs.lent);
	g->bufs_free += counter_read(&w->bufs.nfree);
	g->buf_bytes_lent += counter_read(&w->bufs.lent_bytes);
}

/**
 * worker_active() - connections open in a worker, from any thread
 * @w:	the worker
 *
 * Return: the gauge.
 */
uint64_t worker_active(const struct worker *w)
{
	return conn_host_active(&w->host);
}

/**
 * worker_accepted() - connections a worker ever accepted, from any thread
 * @w:	the worker
 *
 * Return: the counter.
 */
uint64_t worker_accepted(const struct worker *w)
{
	return conn_host_accepted(&w->host);
}

/**
 * worker_active_all() - connections open in the whole process
 * @px:	the process
 *
 * Return: the count.
 */
unsigned long worker_active_all(const struct proxy *px)
{
	unsigned long n = 0;

	for (unsigned i = 0; i < px->nworkers; i++)
		n += worker_active(&px->workers[i]);
	return n;
}

/**
 * worker_choose_netns() - where workers sit
 * @px:	the process, with its listeners made
 *
 * When every listener dials into one namespace, workers sit in it from
 * start to end, and dialling costs no setns(). Otherwise they stay in the
 * process's own, and a connection of a listener with a backend namespace
 * makes its socket from inside it (as root), or has the privileged helper
 * make it (under --user).
 */
void worker_choose_netns(struct proxy *px)
{
	const struct listener *first = px->listeners;
	bool same = true, any = false;

	px->worker_netns = -1;
	px->home_ino = netns_ino(netns_home());
	for (const struct listener *l = px->listeners; l; l = l->next) {
		any |= l->cfg->netns[SIDE_BACKEND] >= 0;
		same &= l->cfg->netns_ino[SIDE_BACKEND] ==
			first->cfg->netns_ino[SIDE_BACKEND];
	}
	if (any && same)
		px->worker_netns = fcntl(first->cfg->netns[SIDE_BACKEND],
					 F_DUPFD_CLOEXEC, 0);
	px->worker_netns_ino = px->worker_netns >= 0
				       ? netns_ino(px->worker_netns)
				       : px->home_ino;
}

/**
 * worker_init_all() - create every worker's loop and pools
 * @px:	the process
 *
 * Return: 0, or -1 after logging why.
 */
int worker_init_all(struct proxy *px)
{
	px->workers = calloc(px->nworkers, sizeof(*px->workers));
	if (!px->workers) {
		log_err("out of memory for %u workers", px->nworkers);
		return -1;
	}
	for (unsigned i = 0; i < px->nworkers; i++)
		if (worker_init(&px->workers[i], px, i))
			return -1;
	return 0;
}

/**
 * worker_start_all() - start every worker's thread
 * @px:	the process, after worker_init_all()
 *
 * Workers are created with every signal blocked, so that signals reach
 * only the main thread, whose loop watches them.
 *
 * Return: 0, or -1 after logging why (workers already running are
 * stopped again).
 */
int worker_start_all(struct proxy *px)
{
	sigset_t all, old;
	unsigned i;
	int r = 0;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (i = 0; i < px->nworkers && !r; i++)
		r = worker_start(&px->workers[i]);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!r)
		return 0;
	for (unsigned j = 0; j + 1 < i; j++) {
		worker_run(&px->workers[j],
			   &(struct worker_cmd){ .ops = &worker_cmd_stop },
			   WORKER_CMD_NOWAIT);
		worker_join(&px->workers[j]);
	}
	return -1;
}
