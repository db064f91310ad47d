// SPDX-License-Identifier: GPL-2.0-or-later
/* main.c - smbsplice: a splicing TCP proxy for SMB
 *
 * Theory of operation: main() parses the command line (a bad option is one
 * line and exit status 2) and prepares the process: SIGPIPE ignored, since
 * a write to a reset peer must come back as EPIPE, not kill the daemon; the
 * open-files limit raised to its hard cap, since every connection needs two
 * descriptors and every pipe two. It then opens one listening socket per
 * worker, starts the workers (worker.c), each a thread with its own loop,
 * and itself runs libev's default loop, which watches the signals and
 * serves /metrics. Signals are blocked in the workers, so that they reach
 * the main thread alone.
 *
 * On SIGINT or SIGTERM the main thread stops every worker, which ends its
 * connections with their log lines, then closes what is left and exits 0.
 */
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "counter.h"
#include "log.h"
#include "options.h"
#include "proxy.h"
#include "worker.h"

/**
 * raise_nofile_limit() - lift the soft open-files limit to the hard one
 */
static void raise_nofile_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= rl.rlim_max)
		return;
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
}

/**
 * usable_cpus() - how many CPUs this process may run on
 *
 * Return: the count from the affinity mask, at least 1.
 */
static unsigned usable_cpus(void)
{
	cpu_set_t set;
	int n;

	if (sched_getaffinity(0, sizeof(set), &set))
		return 1;
	n = CPU_COUNT(&set);
	return n > 0 ? (unsigned)n : 1;
}

/**
 * stop_workers() - end every worker's connections and threads
 * @px:		the process
 * @started:	how many workers are running
 */
static void stop_workers(struct proxy *px, unsigned started)
{
	for (unsigned i = 0; i < started; i++)
		worker_stop(&px->workers[i]);
}

/**
 * on_stop_signal() - SIGINT or SIGTERM: stop everything and leave the loop
 * @loop:	the main loop
 * @w:		the signal watcher
 * @revents:	unused
 */
static void on_stop_signal(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct proxy *px = w->data;
	uint64_t open = 0;

	(void)revents;
	for (unsigned i = 0; i < px->nworkers; i++)
		open += counter_read(&px->workers[i].active);
	log_info("signal %d: stopping, %llu connections open", w->signum,
		 (unsigned long long)open);
	metrics_stop(px);
	stop_workers(px, px->nworkers);
	ev_break(loop, EVBREAK_ALL);
}

/**
 * watch_signal() - stop cleanly on @signum
 * @px:		the process
 * @w:		watcher to use
 * @signum:	SIGINT or SIGTERM
 */
static void watch_signal(struct proxy *px, ev_signal *w, int signum)
{
	ev_signal_init(w, on_stop_signal, signum);
	w->data = px;
	ev_signal_start(px->loop, w);
}

/**
 * start_workers() - create every worker and run them
 * @px:	the process, with @opt set
 *
 * Workers are created with every signal blocked, so that signals reach
 * only the main thread, whose loop watches them.
 *
 * Return: 0, or -1 after logging why (workers already running are
 * stopped again).
 */
static int start_workers(struct proxy *px)
{
	sigset_t all, old;
	unsigned i;
	int r = 0;

	px->workers = calloc(px->nworkers, sizeof(*px->workers));
	if (!px->workers) {
		log_err("out of memory for %u workers", px->nworkers);
		return -1;
	}
	for (i = 0; i < px->nworkers; i++)
		px->workers[i].listen_fd = -1;
	for (i = 0; i < px->nworkers; i++)
		if (worker_init(&px->workers[i], px, i))
			return -1;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (i = 0; i < px->nworkers && !r; i++)
		r = worker_start(&px->workers[i]);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r)
		stop_workers(px, i - 1);
	return r;
}

/**
 * destroy_workers() - free every worker, once none runs
 * @px:	the process
 *
 * Return: connections accepted over the process's life.
 */
static uint64_t destroy_workers(struct proxy *px)
{
	uint64_t total = 0;

	if (!px->workers)
		return 0;
	for (unsigned i = 0; i < px->nworkers; i++) {
		total += counter_read(&px->workers[i].accepted);
		worker_destroy(&px->workers[i]);
	}
	free(px->workers);
	px->workers = NULL;
	return total;
}

/**
 * main() - parse options, run the proxy until told to stop
 * @argc:	argument count
 * @argv:	arguments
 *
 * Return: 0 after a clean stop, 1 if the proxy could not start, 2 on a bad
 * command line.
 */
int main(int argc, char **argv)
{
	struct options opt;
	struct proxy px = { .metrics_fd = -1 };
	uint64_t total;
	char err[256];

	switch (options_parse(&opt, argc, argv, err, sizeof(err))) {
	case OPT_EXIT:
		return 0;
	case OPT_BAD:
		fprintf(stderr, "smbsplice: %s\n", err);
		return 2;
	case OPT_OK:
		break;
	}
	log_verbosity = opt.verbose;
	signal(SIGPIPE, SIG_IGN);
	raise_nofile_limit();

	px.opt = &opt;
	px.nworkers = opt.workers ? opt.workers : usable_cpus();
	px.pipe_budget.max = opt.max_pipes;
	px.loop = ev_default_loop(EVBACKEND_EPOLL);
	if (!px.loop) {
		log_err("cannot create the event loop (epoll)");
		return 1;
	}
	if (metrics_start(&px) || start_workers(&px)) {
		metrics_stop(&px);
		destroy_workers(&px);
		return 1;
	}
	watch_signal(&px, &px.sigint_w, SIGINT);
	watch_signal(&px, &px.sigterm_w, SIGTERM);
	log_info(
		"listening on %s, forwarding to %s (mode %s, workers %u, pipe %zu, buffer %zu, max pipes %u%s)",
		opt.listen.text, opt.backend.text,
		opt.mode == MODE_SMB ? "smb" : "tcp", px.nworkers,
		opt.pipe_size, opt.buf_size, opt.max_pipes,
		opt.splice ? "" : ", no splice");

	ev_run(px.loop, 0);

	total = destroy_workers(&px);
	ev_loop_destroy(px.loop);
	log_info("stopped after %llu connections", (unsigned long long)total);
	return 0;
}
