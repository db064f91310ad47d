// SPDX-License-Identifier: GPL-2.0-or-later
/* worker.c - one event loop thread
 *
 * Theory of operation: with --workers N the process runs N workers, each a
 * thread with a libev loop, a listening socket of its own (SO_REUSEPORT:
 * the kernel spreads new connections over them), its own pipe and buffer
 * pools and its own connections. A connection lives and dies in the worker
 * that accepted it, so the data path takes no lock and shares no cache
 * line with another thread. What is process-wide is small and read-mostly:
 * the options, the --max-pipes budget (one atomic counter), and counters
 * that only the worker writes and the main thread reads for /metrics.
 *
 * Threads rather than processes, because one process keeps one /metrics
 * endpoint, one set of caps, one log and one set of signals, with no
 * shared memory to set up; the data path is share-nothing either way.
 *
 * Lifecycle: worker_init() (main thread: loop, pools, listening socket),
 * worker_start() (the thread runs the loop), worker_stop() (main thread:
 * sets @stop, wakes the loop and waits for the thread to end every
 * connection and return), worker_destroy() (main thread: pools, loop).
 * Every few seconds the worker trims its pools, so the pipes and buffers
 * of a burst are given back once the burst is over.
 */
#include "config.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "conn.h"
#include "counter.h"
#include "listener.h"
#include "log.h"
#include "netns.h"
#include "proxy.h"
#include "worker.h"

/* How often the pools give back what sat unused since the last time. */
#define TRIM_EVERY 5.0

/* Free copy buffers a worker keeps for the next burst, in bytes. */
#define BUF_KEEP_BYTES (2u << 20)

/**
 * on_wake() - the main thread has something for this worker
 * @loop:	the worker's loop
 * @a:		&worker.wake
 * @revents:	unused
 */
static void on_wake(struct ev_loop *loop, ev_async *a, int revents)
{
	struct worker *w = a->data;

	(void)revents;
	if (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE))
		return;
	listener_stop(w);
	conn_close_all(w);
	ev_timer_stop(loop, &w->trim);
	ev_timer_stop(loop, &w->stall_check);
	ev_async_stop(loop, &w->wake);
	ev_break(loop, EVBREAK_ALL);
}

/**
 * on_trim() - give back the pipes and buffers that sat unused
 * @loop:	the worker's loop
 * @t:		&worker.trim
 * @revents:	unused
 */
static void on_trim(struct ev_loop *loop, ev_timer *t, int revents)
{
	struct worker *w = t->data;

	(void)loop;
	(void)revents;
	pool_trim(&w->pipes);
	if (bufpool_trim(&w->bufs))
		alloc_release_free_memory();
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

	w->px = px;
	w->id = id;
	w->listen_fd = -1;
	w->loop = ev_loop_new(EVBACKEND_EPOLL);
	if (!w->loop) {
		log_err("cannot create the event loop of worker %u (epoll): %s",
			id, strerror(errno));
		return -1;
	}
	pool_init(&w->pipes, &px->pipe_budget, o->pipe_size);
	bufpool_init(&w->bufs, o->buf_size, BUF_KEEP_BYTES);
	/* Started now, before the thread runs, so that a stop sent at once
	 * is not lost. */
	ev_async_init(&w->wake, on_wake);
	w->wake.data = w;
	ev_async_start(w->loop, &w->wake);
	ev_timer_init(&w->trim, on_trim, TRIM_EVERY, TRIM_EVERY);
	w->trim.data = w;
	conn_worker_init(w);
	return listener_open(w);
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
	int ns = w->px->netns[SIDE_BACKEND];

	/* For good: every backend socket this thread makes is to be made in
	 * the backend namespace. */
	if (ns >= 0 && netns_enter(ns)) {
		log_err("worker %u cannot enter %s: %s; it serves no one",
			w->id, w->px->opt->l.netns[SIDE_BACKEND],
			strerror(errno));
		ev_run(w->loop, 0);
		return NULL;
	}
	listener_start(w);
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
 * worker_stop() - end every connection of a running worker, and its thread
 * @w:	the worker, after worker_start()
 */
void worker_stop(struct worker *w)
{
	__atomic_store_n(&w->stop, true, __ATOMIC_RELEASE);
	ev_async_send(w->loop, &w->wake);
	pthread_join(w->thread, NULL);
}

/**
 * worker_destroy() - free what a worker owns, once its thread has ended
 * @w:	the worker (or one that failed worker_init() part way)
 */
void worker_destroy(struct worker *w)
{
	if (w->listen_fd >= 0)
		close(w->listen_fd);
	w->listen_fd = -1;
	pool_destroy(&w->pipes);
	bufpool_destroy(&w->bufs);
	if (w->loop)
		ev_loop_destroy(w->loop);
	w->loop = NULL;
}

/**
 * worker_report() - add a worker's counters and gauges to a scrape's sums
 * @w:		the worker, running in its own thread
 * @t:		the counters' sum
 * @g:		the gauges' sum; pipes_open is process-wide and left alone
 * @accepted:	set to the connections this worker accepted
 */
void worker_report(const struct worker *w, struct totals *t, struct gauges *g,
		   uint64_t *accepted)
{
	totals_add(t, &w->tot);
	*accepted = counter_read(&w->accepted);
	g->total += *accepted;
	g->active += counter_read(&w->active);
	g->pipes_lent += counter_read(&w->pipes.lent);
	g->pipes_denied += counter_read(&w->pipes.denied);
	g->pipes_small += counter_read(&w->pipes.small);
	g->pipe_stalls += counter_read(&w->pipe_stalls);
	g->bufs_lent += counter_read(&w->bufs.lent);
	g->bufs_free += counter_read(&w->bufs.nfree);
	g->buf_bytes_lent += counter_read(&w->bufs.lent_bytes);
	g->refused_conns += counter_read(&w->refused[ADMIT_MAX_CONNS]);
	g->refused_source += counter_read(&w->refused[ADMIT_PER_SOURCE]);
	g->denied += counter_read(&w->denied);
}

/**
 * worker_backend_failures() - add a worker's failed connects per backend
 * @w:		the worker
 * @sum:	per backend, OPT_MAX_BACKENDS of them
 */
void worker_backend_failures(const struct worker *w, uint64_t *sum)
{
	for (unsigned i = 0; i < OPT_MAX_BACKENDS; i++)
		sum[i] += counter_read(&w->backend_failures[i]);
}
