// SPDX-License-Identifier: GPL-2.0-or-later
/* main.c - smbsplice: a splicing TCP proxy for SMB
 *
 * Theory of operation: main() reads the configuration (the command line,
 * or a config file it names; a bad one is one line and exit status 2; with
 * --check, that is all), prepares the process (SIGPIPE ignored, since a
 * write to a reset peer must come back as EPIPE, not kill the daemon; the
 * open-files limit raised to its hard cap) and starts in this order:
 *
 *   1. the listeners' sockets, bound while the process may still bind
 *	anything (reload.c; or taken from systemd's socket activation);
 *   2. the --stats and --control sockets;
 *   3. with --user, the privileged helper (privhelper.c), then the switch
 *	to that user, keeping no capability (privs.c); then the --trace file,
 *	opened as that user (tracefile.c);
 *   4. the pipe pool sized to what this user may have, the workers' loops
 *	and pools, the descriptor budget, the log's writer thread;
 *   5. the workers (worker.c), each a thread with its own loop, handed
 *	their listening sockets; signals are blocked in them, so that they
 *	reach the main thread alone;
 *   6. READY=1 to systemd.
 *
 * The main thread then runs libev's default loop: it forwards nothing, and
 * serves /metrics, the control socket (control.c), and the signals:
 *
 *   SIGHUP	re-read the config file and apply it (reload.c); a file with
 *		errors is refused in one line, and the running configuration
 *		stays;
 *   SIGTERM	drain: close every listener at once, let the open
 *		connections run to their end or for --drain-timeout, then
 *		reset what is left and exit 0; a second SIGTERM stops at once;
 *   SIGINT	stop at once: reset every connection, log it, exit 0;
 *   SIGUSR1	reopen the log (nothing to reopen on standard error);
 *   SIGUSR2	hand every listener and connection over to the binary now on
 *		disk, and exit 0 (handover_out.c); if that fails, go on as before.
 *
 * Started by such a handover (handover_in.c), the process takes the old
 * one's sockets in step 1 and 2 instead of binding them, and its
 * connections before step 5.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "common/counter.h"
#include "net/listener.h"
#include "common/log.h"
#include "control/control.h"
#include "control/ctl.h"
#include "core/fdbudget.h"
#include "handover/handover.h"
#include "control/metrics.h"
#include "common/netns.h"
#include "core/notify.h"
#include "conf/options.h"
#include "priv/privhelper.h"
#include "priv/privs.h"
#include "core/proxy.h"
#include "daemon/reload.h"
#include "observe/tracefile.h"
#include "worker/worker.h"

/* How often retired listeners are looked at, to free them. */
#define REAP_EVERY 5.0

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
 * default_workers() - how many workers when --workers is not given
 *
 * One per two CPUs this process may run on (its affinity mask), at least
 * one. smbsplice mostly shares its machine with the peers it forwards
 * for: the smbd behind it, or the namespaces of the same host. What a
 * worker does per message is mostly the kernel's TCP work, done in
 * whichever thread makes the call, so a second worker adds no capacity
 * there: it halves how many ready connections each wake-up finds
 * (docs/design.md, "Workers"; the figures in docs/benchmarks.md).
 *
 * Return: the count.
 */
static unsigned default_workers(void)
{
	cpu_set_t set;
	int n;

	if (sched_getaffinity(0, sizeof(set), &set))
		return 1;
	n = CPU_COUNT(&set);
	return n > 1 ? (unsigned)n / 2 : 1;
}

/**
 * stop_now() - end every connection, stop every worker, leave the loop
 * @px:	the process
 *
 * libev still runs the callbacks that were pending when the loop was told
 * to break: a drain's last connection ending and a SIGINT in the same
 * iteration both call this, and a second join of the same threads is
 * undefined. The second call does nothing.
 */
static void stop_now(struct proxy *px)
{
	if (px->state == PX_STOPPED)
		return;
	px->state = PX_STOPPED;
	ev_timer_stop(px->loop, &px->drain_timer);
	handover_stop(px);
	for (unsigned i = 0; i < px->nworkers; i++)
		worker_run(&px->workers[i],
			   &(struct worker_cmd){ .ops = &worker_cmd_stop },
			   WORKER_CMD_NOWAIT);
	for (unsigned i = 0; i < px->nworkers; i++)
		worker_join(&px->workers[i]);
	metrics_stop(px);
	control_stop(px);
	ev_break(px->loop, EVBREAK_ALL);
}

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
 * on_sigterm() - SIGTERM: drain; the second one stops at once
 * @loop:	the main loop
 * @w:		the signal watcher
 * @revents:	unused
 */
static void on_sigterm(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct proxy *px = w->data;
	unsigned long open = worker_active_all(px);

	(void)revents;
	if (px->state != PX_RUNNING) {
		log_info("signal %d again: stopping, %lu connections open",
			 w->signum, open);
		stop_now(px);
		return;
	}
	px->state = PX_DRAINING;
	notify_stopping(open);
	listeners_retire_all(px);
	for (unsigned i = 0; i < px->nworkers; i++)
		worker_run(&px->workers[i],
			   &(struct worker_cmd){ .ops = &worker_cmd_drain },
			   WORKER_CMD_NOWAIT);
	worker_sync_all(px);
	open = worker_active_all(px);
	if (px->opt->drain_timeout > 0)
		log_info(
			"signal %d: draining: listeners closed, %lu connections open, letting them run for up to %gs (SIGTERM again or SIGINT to stop now)",
			w->signum, open, px->opt->drain_timeout);
	else
		log_info(
			"signal %d: draining: listeners closed, %lu connections open, letting them run to their end (SIGTERM again or SIGINT to stop now)",
			w->signum, open);
	if (px->opt->drain_timeout > 0) {
		ev_timer_set(&px->drain_timer, px->opt->drain_timeout, 0.);
		ev_timer_start(loop, &px->drain_timer);
	}
}

/**
 * log_listeners() - one start-up or reload line per listener
 * @px:		the process
 * @started:	it has just started: say first what it runs with
 */
static void log_listeners(const struct proxy *px, bool started)
{
	const struct options *o = px->opt;
	long fds = budget_limit(&px->limits.fds) / 2;
	char backends[512];
	size_t n;

	if (started)
		log_info(
			"started: %u listener%s, %u worker%s, pipe %zu, buffer %zu, max pipes %u, max conns %ld",
			px->cfg->nls, px->cfg->nls == 1 ? "" : "s",
			px->nworkers, px->nworkers == 1 ? "" : "s",
			o->pipe_size, o->buf_size, o->max_pipes,
			o->max_conns && o->max_conns < fds ? (long)o->max_conns
							   : fds);
	for (const struct listener *l = px->listeners; l; l = l->next) {
		const struct listen_opts *lo = &l->cfg->o;

		if (listener_is(l, LISTENER_RETIRED))
			continue;
		n = 0;
		backends[0] = '\0';
		for (unsigned i = 0; i < lo->nbackends && n < sizeof(backends);
		     i++)
			n += (size_t)snprintf(
				backends + n, sizeof(backends) - n, "%s%s",
				i ? ", then " : "", lo->backend[i].text);
		log_info(
			"listener %s: listening on %s%s%s%s, forwarding to %s%s%s (mode %s%s%s)",
			l->name, lo->listen.text,
			lo->netns[SIDE_CLIENT][0] ? " in " : "",
			lo->netns[SIDE_CLIENT],
			listener_is(l, LISTENER_INHERITED) ? " (from systemd)"
							   : "",
			backends, lo->netns[SIDE_BACKEND][0] ? " in " : "",
			lo->netns[SIDE_BACKEND],
			lo->mode == MODE_SMB ? "smb" : "tcp",
			lo->splice ? "" : ", no splice",
			lo->transparent ? ", transparent" : "");
	}
}

/**
 * apply_globals() - what a reload may change in [global]
 * @px:		the process, with the configuration last read in @px->cfg
 * @now:	[global] as just read
 *
 * The log level and the drain timeout take effect; the rest sized things
 * made at start, and a line says they wait for a restart.
 */
static void apply_globals(struct proxy *px, const struct options *now)
{
	char keys[256];

	px->opt->verbose = now->verbose;
	log_verbosity = now->verbose;
	px->opt->drain_timeout = now->drain_timeout;
	options_restart_only(&px->cfg->o, now, keys, sizeof(keys));
	if (*keys)
		log_warn(
			"reload: [global] %s changed; that takes a restart, and the running values stay",
			keys);
}

/**
 * on_sighup() - SIGHUP: reopen the trace, re-read the config file and apply it
 * @loop:	the main loop
 * @w:		the signal watcher
 * @revents:	unused
 */
static void on_sighup(struct ev_loop *loop, ev_signal *w, int revents)
{
	struct proxy *px = w->data;
	struct config *c;
	char err[512];

	(void)loop;
	(void)revents;
	tracefile_reopen();
	if (px->state != PX_RUNNING)
		return;
	if (!*px->opt->config) {
		if (!tracefile_enabled())
			log_warn(
				"signal %d: nothing to reload: smbsplice was started without --config",
				w->signum);
		return;
	}
	notify_reloading();
	c = calloc(1, sizeof(*c));
	if (!c) {
		log_err("reload: out of memory; the running configuration stays");
	} else if (options_parse(c, px->argc, px->argv, px->activated, err,
				 sizeof(err)) != OPT_OK ||
		   listeners_apply(px, c, err, sizeof(err))) {
		log_err("reload refused: %s; the running configuration stays",
			err);
		free(c);
	} else {
		apply_globals(px, &c->o);
		free(px->cfg);
		px->cfg = c;
		log_info("reload: %s read, %u listener%s", px->opt->config,
			 c->nls, c->nls == 1 ? "" : "s");
		log_listeners(px, false);
	}
	notify_ready(px->cfg->nls);
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
 * watch_signals() - the main loop's signals and timers
 * @px:	the process
 */
static void watch_signals(struct proxy *px)
{
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

/**
 * choose_worker_netns() - where workers sit
 * @px:	the process, with its listeners made
 *
 * When every listener dials into one namespace, workers sit in it from
 * start to end, and dialling costs no setns(). Otherwise they stay in the
 * process's own, and a connection of a listener with a backend namespace
 * makes its socket from inside it (as root), or has the privileged helper
 * make it (under --user).
 */
static void choose_worker_netns(struct proxy *px)
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
 * become_user() - with --user, give up root once every socket is bound
 * @px:	the process, single-threaded still
 *
 * The privileged helper is forked first, and holds what the daemon gives
 * up. The main thread then enters the workers' namespace, if they have
 * one, for they are born where it is and could not enter it after; then
 * the daemon keeps no capability at all, in no set.
 *
 * Return: 0, or -1 after logging why.
 */
static int become_user(struct proxy *px)
{
	char err[256];

	if (!*px->opt->user)
		return 0;
	if (privhelper_start(&px->helper, px->cfg, px->argc, px->argv,
			     px->activated, px->nworkers + 1, err,
			     sizeof(err))) {
		log_err("%s", err);
		return -1;
	}
	if (px->worker_netns >= 0 && netns_enter(px->worker_netns)) {
		log_err("cannot enter the backend namespace: %s",
			strerror(errno));
		return -1;
	}
	if (privs_become(px->opt->user, 0, err, sizeof(err))) {
		log_err("%s", err);
		return -1;
	}
	netns_no_entry_check();
	log_info(
		"running as %s (uid %u) with no capability; the privileged helper (pid %d) keeps CAP_NET_ADMIN, CAP_NET_BIND_SERVICE and CAP_SYS_ADMIN to make sockets for --transparent, namespaces and new listeners",
		px->opt->user, (unsigned)getuid(), (int)px->helper.pid);
	return 0;
}

/**
 * init_workers() - create every worker's loop and pools
 * @px:	the process
 *
 * Return: 0, or -1 after logging why.
 */
static int init_workers(struct proxy *px)
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

/**
 * destroy_all() - free the workers and listeners, once no worker runs
 * @px:	the process
 *
 * Return: connections accepted over the process's life.
 */
static uint64_t destroy_all(struct proxy *px)
{
	struct listener *l;
	uint64_t total = 0;

	if (px->workers) {
		for (unsigned i = 0; i < px->nworkers; i++) {
			total += worker_accepted(&px->workers[i]);
			worker_destroy(&px->workers[i]);
		}
		free(px->workers);
		px->workers = NULL;
	}
	while ((l = px->listeners)) {
		px->listeners = l->next;
		listener_free(l);
	}
	for (unsigned i = 0; i < px->ninherited; i++)
		if (px->inherited[i] >= 0)
			close(px->inherited[i]);
	free(px->inherited);
	if (px->worker_netns >= 0)
		close(px->worker_netns);
	privhelper_stop(&px->helper);
	free(px->cfg);
	return total;
}

/**
 * check_config() - --check: can this configuration start
 * @px:	the process, with its configuration read
 *
 * Beyond the syntax, it opens the namespaces and tries each side's socket
 * options (congestion control, --transparent's privilege, --source, MPTCP)
 * on sockets made as a start would make them, but binds no listening
 * address: the smbsplice it is run for may hold them.
 *
 * Return: 0 if it can, 2 otherwise (after saying why).
 */
static int check_config(struct proxy *px)
{
	char err[512];

	for (unsigned i = 0; i < px->cfg->nls; i++) {
		struct lcfg *c =
			listener_cfg_new(&px->cfg->ls[i], err, sizeof(err));

		if (!px->cfg->ls[i].listen.len)
			printf("smbsplice: listener %s has no listen address: it needs a socket from systemd (socket activation)\n",
			       px->cfg->ls[i].name);
		if (!c || listener_check(px, c, err, sizeof(err))) {
			fprintf(stderr, "smbsplice: %s\n", err);
			if (c)
				listener_cfg_put(c);
			return 2;
		}
		listener_cfg_put(c);
	}
	if (*px->opt->user &&
	    privs_check_user(px->opt->user, err, sizeof(err))) {
		fprintf(stderr, "smbsplice: %s\n", err);
		return 2;
	}
	printf("smbsplice: configuration OK: %u listener%s", px->cfg->nls,
	       px->cfg->nls == 1 ? "" : "s");
	for (unsigned i = 0; i < px->cfg->nls; i++)
		printf("%s%s", i ? ", " : " (", px->cfg->ls[i].name);
	printf(")\n");
	return 0;
}

/**
 * start() - steps 1 to 6 of the theory of operation
 * @px:		the process, configured
 * @opt:	its process-wide settings, which the pool sizing may lower
 *
 * Return: 0, or -1 after logging why.
 */
static int start(struct proxy *px, struct options *opt)
{
	char err[512];

	px->workers = NULL;
	if (listeners_apply(px, px->cfg, err, sizeof(err))) {
		log_err("%s", err);
		return -1;
	}
	for (unsigned i = 0; i < px->ninherited; i++)
		if (px->inherited[i] >= 0)
			log_warn(
				"socket %d from systemd matches no listener; it stays unused",
				px->inherited[i]);
	choose_worker_netns(px);
	if (metrics_start(px, handover_fd(false)) ||
	    control_start(px, handover_fd(true)) ||
	    handover_init(px, stop_now) || become_user(px))
		return -1;
	/* As the user it will belong to, who rotates and reopens it: root
	 * opening a name that user may plant would follow the user's links. */
	if (*opt->trace &&
	    tracefile_open(opt->trace, opt->trace_max, err, sizeof(err))) {
		log_err("%s", err);
		return -1;
	}
	if (px->cfg->ls[0].splice) {
		opt->max_pipes = pipepool_fit_kernel(
			&opt->pipe_size, opt->max_pipes,
			privs_have(CAP_SYS_RESOURCE),
			!px->helper.fds && privs_have(CAP_SYS_ADMIN), err,
			sizeof(err));
		if (*err)
			log_warn("%s", err);
	}
	px->pipe_budget.pipes.limit = opt->max_pipes;
	px->unpipe.limit = (long)opt->max_pipes * (long)opt->pipe_size;
	if (init_workers(px))
		return -1;
	listeners_hand_out(px);
	if (fdbudget_init(px, handover_fds_held(),
			  px->opt->stats.len ? METRICS_MAX_SCRAPES : 0) ||
	    log_start() || tracefile_start() || handover_adopt(px) ||
	    run_workers(px))
		return -1;
	return 0;
}

/**
 * exit_early() - leave before anything but the configuration was made
 * @px:		the process
 * @status:	the exit status
 *
 * Return: @status.
 */
static int exit_early(struct proxy *px, int status)
{
	free(px->cfg);
	free(px->inherited);
	return status;
}

/**
 * start_failed() - undo what start() made, after it said why it failed
 * @px:	the process
 *
 * Taking over from another process, nothing is undone: that process
 * forwards on, and its control socket's path must stay.
 *
 * Return: 1, the exit status.
 */
static int start_failed(struct proxy *px)
{
	if (handover_taking())
		handover_refuse(px,
				"it could not start (see the lines before)");
	metrics_stop(px);
	control_stop(px);
	destroy_all(px);
	tracefile_close();
	log_stop();
	return 1;
}

/**
 * main() - read the configuration, run the proxy until told to stop
 * @argc:	argument count
 * @argv:	arguments
 *
 * Return: 0 after a clean stop, 1 if the proxy could not start, 2 on a bad
 * configuration.
 */
int main(int argc, char **argv)
{
	struct proxy px = { .worker_netns = -1,
			    .sync_lock = PTHREAD_MUTEX_INITIALIZER,
			    .sync_cond = PTHREAD_COND_INITIALIZER,
			    .take_handed = handover_listener_fds };
	struct options opt;
	uint64_t total;
	char err[512];
	int n;

	if (argc > 1 && !strcmp(argv[1], "ctl"))
		return ctl_main(argc - 1, argv + 1);
	n = notify_inherited(&px.inherited);
	px.ninherited = n > 0 ? (unsigned)n : 0;
	px.activated = px.ninherited > 0 || handover_incoming();
	px.cfg = calloc(1, sizeof(*px.cfg));
	if (!px.cfg) {
		fprintf(stderr, "smbsplice: out of memory\n");
		return 1;
	}
	switch (options_parse(px.cfg, argc, argv, px.activated, err,
			      sizeof(err))) {
	case OPT_EXIT:
		return exit_early(&px, 0);
	case OPT_BAD:
		fprintf(stderr, "smbsplice: %s\n", err);
		return exit_early(&px, 2);
	case OPT_OK:
		break;
	}
	opt = px.cfg->o;
	px.opt = &opt;
	px.argc = argc; /* a reload reads the file, then the options, again */
	px.argv = argv;
	netns_home();
	if (opt.check)
		return exit_early(&px, check_config(&px));
	log_verbosity = opt.verbose;
	if (opt.syslog)
		log_use_syslog();
	signal(SIGPIPE, SIG_IGN);
	raise_nofile_limit();
	px.nworkers = opt.workers ? opt.workers : default_workers();
	px.loop = ev_default_loop(EVBACKEND_EPOLL);
	if (!px.loop) {
		log_err("cannot create the event loop (epoll)");
		return exit_early(&px, 1);
	}
	watch_signals(&px);
	if (handover_receive(&px))
		return exit_early(&px, 1);
	if (start(&px, &opt))
		return start_failed(&px);
	log_listeners(&px, true);
	notify_ready(px.cfg->nls);

	ev_run(px.loop, 0);

	total = destroy_all(&px);
	tracefile_close();
	log_stop();
	limits_destroy(&px.limits);
	ev_loop_destroy(px.loop);
	log_info("stopped after %llu connections", (unsigned long long)total);
	return 0;
}
