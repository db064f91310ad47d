// SPDX-License-Identifier: GPL-2.0-or-later
/* signals.c - the main thread's signals, and the drain SIGTERM starts
 *
 * Theory of operation: the main loop watches every signal (the workers
 * block them all):
 *
 *   SIGHUP	re-read the config file and apply it (reload.c);
 *   SIGTERM	drain: close every listener at once, let the open
 *		connections run to their end or for --drain-timeout, then
 *		reset what is left and stop; a second SIGTERM stops at once;
 *   SIGINT	stop at once: reset every connection;
 *   SIGUSR1	reopen the log and the trace;
 *   SIGUSR2	hand over to the binary on disk (handover_out.c).
 *
 * Stopping itself is main.c's (the stop callback signals_watch() is
 * given): here is only when. A timer also frees retired listeners whose
 * last connection has ended.
 */
#include "config.h"

#include <signal.h>
#include <stddef.h>

#include "common/log.h"
#include "core/notify.h"
#include "core/proxy.h"
#include "daemon/reload.h"
#include "daemon/signals.h"
#include "handover/handover.h"
#include "net/listener.h"
#include "observe/tracefile.h"
#include "worker/worker.h"

/* How often retired listeners are looked at, to free them. */
#define REAP_EVERY 5.0

/* What stops the process: main.c's, given to signals_watch(). */
static void (*stop_now)(struct proxy *px);

/**
 * on_sigint() - SIGINT: stop at once
 * @loop:	the main loop
 * @w:		the signal watcher
 * @revents:	unused
 */
static void on_sigint(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct proxy *px = w->data;

	(void)loop;
	(void)revents;
	log_info("signal %d: stopping, %lu connections open", w->signum,
		 worker_active_all(px));
	stop_now(px);
}

/**
 * on_drained() - a worker says its last connection has ended
 * @loop:	the main loop
 * @a:		&proxy.drained_w
 * @revents:	unused
 */
static void on_drained(struct ev_loop *loop, ev_async *a, int revents)
{
	struct proxy *px = a->data;

	(void)loop;
	(void)revents;
	for (unsigned i = 0; i < px->nworkers; i++)
		if (!worker_is_idle(&px->workers[i]))
			return;
	log_info("drained: every connection has ended");
	stop_now(px);
}

/**
 * on_drain_timeout() - --drain-timeout is spent: reset what is left
 * @loop:	the main loop
 * @t:		&proxy.drain_timer
 * @revents:	unused
 */
static void on_drain_timeout(struct ev_loop *loop, ev_timer *t, int revents)
{
	struct proxy *px = t->data;

	(void)loop;
	(void)revents;
	log_warn(
		"drain: --drain-timeout %gs is spent; resetting the %lu connections still open",
		px->opt->drain_timeout, worker_active_all(px));
	stop_now(px);
}

/**
 * drain() - close every listener, let the open connections run to their
 *	     end or for --drain-timeout
 * @px:		the process, running
 * @what:	what began it, for the line
 */
static void drain(struct proxy *px, const char *what)
{
	unsigned long open;

	px->state = PX_DRAINING;
	reload_retire_all(px);
	for (unsigned i = 0; i < px->nworkers; i++)
		worker_run(&px->workers[i],
			   &(struct worker_cmd){ .ops = &worker_cmd_drain },
			   WORKER_CMD_NOWAIT);
	worker_sync_all(px);
	open = worker_active_all(px);
	if (px->opt->drain_timeout > 0)
		log_info(
			"%s: draining: listeners closed, %lu connections open, letting them run for up to %gs (SIGTERM again or SIGINT to stop now)",
			what, open, px->opt->drain_timeout);
	else
		log_info(
			"%s: draining: listeners closed, %lu connections open, letting them run to their end (SIGTERM again or SIGINT to stop now)",
			what, open);
	if (px->opt->drain_timeout > 0) {
		ev_timer_set(&px->drain_timer, px->opt->drain_timeout, 0.);
		ev_timer_start(px->loop, &px->drain_timer);
	}
}

/**
 * on_sigterm() - SIGTERM: drain; the second one stops at once
 * @loop:	the main loop
 * @w:		the signal watcher
 * @revents:	unused
 */
static void on_sigterm(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct proxy *px = w->data;
	unsigned long open = worker_active_all(px);
	char what[32];

	(void)loop;
	(void)revents;
	if (px->state != PX_RUNNING) {
		log_info("signal %d again: stopping, %lu connections open",
			 w->signum, open);
		stop_now(px);
		return;
	}
	notify_stopping(open);
	snprintf(what, sizeof(what), "signal %d", w->signum);
	drain(px, what);
}

/**
 * signals_linger() - after a handover, serve what stayed here to its end
 * @px:	the process, whose listeners and connections the next process
 *	took, but for its QUIC connections (connmove_stays())
 *
 * A drain, as SIGTERM's: each QUIC listener takes no new connection and
 * goes with its last one, and the process stops when nothing is left, or
 * at --drain-timeout. The service manager is not told: the next process
 * is its main one now.
 */
void signals_linger(struct proxy *px)
{
	drain(px, "handover");
}

/**
 * on_sighup() - SIGHUP: reload (reload_run())
 * @loop:	the main loop
 * @w:		the signal watcher
 * @revents:	unused
 */
static void on_sighup(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)loop;
	(void)revents;
	reload_run(w->data, w->signum);
}

/**
 * on_sigusr1() - SIGUSR1: reopen the logs and the trace
 * @loop:	the main loop
 * @w:		the signal watcher
 * @revents:	unused
 */
static void on_sigusr1(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)loop;
	(void)w;
	(void)revents;
	log_reopen();
	tracefile_reopen();
}

/**
 * on_sigusr2() - SIGUSR2: hand over to the binary on disk
 * @loop:	the main loop
 * @w:		the signal watcher
 * @revents:	unused
 */
static void on_sigusr2(struct ev_loop *loop, ev_signal *w, int revents)
{
	(void)loop;
	(void)revents;
	handover_start(w->data);
}

/**
 * on_reap() - free the retired listeners whose connections have ended
 * @loop:	the main loop
 * @t:		&proxy.reaper
 * @revents:	unused
 */
static void on_reap(struct ev_loop *loop, ev_timer *t, int revents)
{
	(void)loop;
	(void)revents;
	listener_reap(t->data);
}

/**
 * signals_watch() - the main loop's signals and timers
 * @px:		the process, with its loop
 * @stop:	what stops the process, once its workers may be stopped
 */
void signals_watch(struct proxy *px, void (*stop)(struct proxy *px))
{
	stop_now = stop;
	static const struct {
		int signum;
		void (*cb)(struct ev_loop *, ev_signal *, int);
		size_t off;
	} sigs[] = {
		{ SIGINT, on_sigint, offsetof(struct proxy, sigint_w) },
		{ SIGTERM, on_sigterm, offsetof(struct proxy, sigterm_w) },
		{ SIGHUP, on_sighup, offsetof(struct proxy, sighup_w) },
		{ SIGUSR1, on_sigusr1, offsetof(struct proxy, sigusr1_w) },
		{ SIGUSR2, on_sigusr2, offsetof(struct proxy, sigusr2_w) },
	};

	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		ev_signal *w = (ev_signal *)((char *)px + sigs[i].off);

		ev_signal_init(w, sigs[i].cb, sigs[i].signum);
		w->data = px;
		ev_signal_start(px->loop, w);
	}
	ev_async_init(&px->drained_w, on_drained);
	px->drained_w.data = px;
	ev_async_start(px->loop, &px->drained_w);
	ev_init(&px->drain_timer, on_drain_timeout);
	px->drain_timer.data = px;
	ev_timer_init(&px->reaper, on_reap, REAP_EVERY, REAP_EVERY);
	px->reaper.data = px;
	ev_timer_start(px->loop, &px->reaper);
}
