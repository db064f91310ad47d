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

#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <unistd.h>
#include <linux/capability.h>

#include "counter.h"
#include "dial.h"
#include "limits.h"
#include "log.h"
#include "netns.h"
#include "options.h"
#include "privs.h"
#include "proxy.h"
#include "worker.h"

/* Descriptors kept back, beyond those open at start and the scrapes, for
 * whatever the process opens later (a log or trace file, a config file). */
#define FD_SLACK 4

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
 * init_workers() - create every worker, with its loop and listening socket
 * @px:	the process, with @opt set
 *
 * Return: 0, or -1 after logging why.
 */
static int init_workers(struct proxy *px)
{
	unsigned i;

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
	return 0;
}

/**
 * run_workers() - start every worker's thread
 * @px:	the process, after init_workers()
 *
 * Workers are created with every signal blocked, so that signals reach
 * only the main thread, whose loop watches them.
 *
 * Return: 0, or -1 after logging why (workers already running are
 * stopped again).
 */
static int run_workers(struct proxy *px)
{
	sigset_t all, old;
	unsigned i;
	int r = 0;

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
 * count_open_fds() - descriptors the process has open now
 *
 * Return: the count, or 64 if /proc cannot tell.
 */
static long count_open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	long n = 0;

	if (!d)
		return 64;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1; /* the directory's own descriptor */
}

/**
 * init_limits() - size the descriptor budget from what is open now
 * @px:	the process, with its listeners, loops and metrics socket open
 *
 * What the process holds now, plus concurrent scrapes and a few for logs
 * and files, is kept back; connections and pipes share the rest.
 *
 * Return: 0, or -1 after logging why.
 */
static int init_limits(struct proxy *px)
{
	const struct options *o = px->opt;
	long reserved = count_open_fds() + METRICS_MAX_SCRAPES + FD_SLACK;
	struct rlimit rl;
	long room;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY)
		rl.rlim_cur = 1 << 20;
	if (limits_init(&px->limits, o->max_conns, o->max_per_source,
			(long)rl.rlim_cur, reserved)) {
		log_err("out of memory for the per-source table");
		return -1;
	}
	px->pipe_budget.fds = &px->limits.fds;
	room = px->limits.fds.limit / 2;
	if (room < 1) {
		log_err("the open-files limit (%ld) leaves no descriptor for a connection once %ld are kept back; raise ulimit -n or LimitNOFILE=",
			(long)rl.rlim_cur, reserved);
		return -1;
	}
	if (o->max_conns > room)
		log_warn(
			"--max-conns %u is more than the open-files limit (%ld) allows: at most %ld connections will be open at once; raise ulimit -n or LimitNOFILE=",
			o->max_conns, (long)rl.rlim_cur, room);
	return 0;
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
 * open_namespaces() - open and check the namespaces the listener names
 * @px:	the process
 *
 * Return: 0, or -1 after logging why.
 */
static int open_namespaces(struct proxy *px)
{
	static const char *const opt_name[SIDE_COUNT] = { "--listen-netns",
							  "--backend-netns" };
	const struct listen_opts *lo = &px->opt->l;
	char err[512];

	px->netns[SIDE_CLIENT] = px->netns[SIDE_BACKEND] = -1;
	for (int side = 0; side < SIDE_COUNT; side++) {
		if (!lo->netns[side][0])
			continue;
		if (netns_home() < 0) {
			log_err("cannot open /proc/self/ns/net: %s",
				strerror(errno));
			return -1;
		}
		px->netns[side] = netns_open(lo->netns[side], err, sizeof(err));
		if (px->netns[side] < 0) {
			log_err("%s %s", opt_name[side], err);
			return -1;
		}
	}
	return 0;
}

/**
 * close_namespaces() - close what open_namespaces() opened
 * @px:	the process
 */
static void close_namespaces(struct proxy *px)
{
	for (int side = 0; side < SIDE_COUNT; side++)
		if (px->netns[side] >= 0)
			close(px->netns[side]);
}

/**
 * check_backend_side() - can backend sockets be made as asked
 * @px:	the process, with its namespaces open
 *
 * Tried from inside the backend namespace, as the workers will; a missing
 * capability, congestion control module or MPTCP is one line now rather
 * than a reset client later.
 *
 * Return: 0, or -1 after logging why.
 */
static int check_backend_side(struct proxy *px)
{
	const struct listen_opts *lo = &px->opt->l;
	int ns = px->netns[SIDE_BACKEND], r;
	char err[512];

	if (lo->transparent && !privs_have(CAP_NET_ADMIN)) {
		log_err("listener %s: --transparent needs CAP_NET_ADMIN: run as root, or grant it (AmbientCapabilities=CAP_NET_ADMIN)",
			lo->name);
		return -1;
	}
	if (ns >= 0 && netns_enter(ns)) {
		log_err("--backend-netns %s: %s", lo->netns[SIDE_BACKEND],
			strerror(errno));
		return -1;
	}
	r = dial_check(lo, err, sizeof(err));
	if (ns >= 0)
		netns_enter(netns_home());
	if (r)
		log_err("%s", err);
	return r;
}

/**
 * log_listening() - the start-up line: what listens, where it forwards
 * @px:	the process, running
 */
static void log_listening(const struct proxy *px)
{
	const struct options *o = px->opt;
	const struct listen_opts *lo = &o->l;
	long room = px->limits.fds.limit / 2;
	char backends[512] = "";
	size_t n = 0;

	for (unsigned i = 0; i < lo->nbackends && n < sizeof(backends); i++)
		n += (size_t)snprintf(backends + n, sizeof(backends) - n,
				      "%s%s", i ? ", then " : "",
				      lo->backend[i].text);
	log_info(
		"listening on %s%s%s, forwarding to %s%s%s (mode %s, workers %u, pipe %zu, buffer %zu, max pipes %u, max conns %ld%s%s)",
		lo->listen.text, lo->netns[SIDE_CLIENT][0] ? " in " : "",
		lo->netns[SIDE_CLIENT], backends,
		lo->netns[SIDE_BACKEND][0] ? " in " : "",
		lo->netns[SIDE_BACKEND], lo->mode == MODE_SMB ? "smb" : "tcp",
		px->nworkers, o->pipe_size, o->buf_size, o->max_pipes,
		o->max_conns && o->max_conns < room ? (long)o->max_conns : room,
		lo->splice ? "" : ", no splice",
		lo->transparent ? ", transparent" : "");
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

	if (opt.l.splice) {
		opt.max_pipes = pool_fit_kernel(&opt.pipe_size, opt.max_pipes,
						err, sizeof(err));
		if (*err)
			log_warn("%s", err);
	}
	px.opt = &opt;
	if (open_namespaces(&px) || check_backend_side(&px))
		return 1;
	px.nworkers = opt.workers ? opt.workers : usable_cpus();
	px.pipe_budget.max = opt.max_pipes;
	px.loop = ev_default_loop(EVBACKEND_EPOLL);
	if (!px.loop) {
		log_err("cannot create the event loop (epoll)");
		return 1;
	}
	if (metrics_start(&px) || init_workers(&px) || init_limits(&px) ||
	    log_start() || run_workers(&px)) {
		metrics_stop(&px);
		destroy_workers(&px);
		log_stop();
		return 1;
	}
	watch_signal(&px, &px.sigint_w, SIGINT);
	watch_signal(&px, &px.sigterm_w, SIGTERM);
	log_listening(&px);

	ev_run(px.loop, 0);

	total = destroy_workers(&px);
	log_stop();
	limits_destroy(&px.limits);
	close_namespaces(&px);
	ev_loop_destroy(px.loop);
	log_info("stopped after %llu connections", (unsigned long long)total);
	return 0;
}
