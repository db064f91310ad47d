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
 * serves /metrics, the control socket (control.c) and the signals
 * (signals.c: SIGHUP reloads, reload.c; SIGTERM drains; SIGINT stops;
 * SIGUSR1 reopens the logs; SIGUSR2 hands over, handover_out.c). Stopping
 * is here (stop_now()): every worker told to stop and joined, then the
 * loop left, and everything freed in the reverse order of the start.
 *
 * Started by such a handover (handover_in.c), the process takes the old
 * one's sockets in step 1 and 2 instead of binding them, and its
 * connections before step 5.
 */
#include "config.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "common/counter.h"
#include "net/health.h"
#include "net/listener.h"
#include "common/log.h"
#include "common/monotime.h"
#include "control/control.h"
#include "control/ctl.h"
#include "core/fdbudget.h"
#include "handover/handover.h"
#include "control/metrics.h"
#include "common/netns.h"
#include "core/notify.h"
#include "conf/options.h"
#include "priv/privhelper.h"
#include "quic/qdial.h"
#include "priv/privs.h"
#include "core/proxy.h"
#include "daemon/reload.h"
#include "daemon/signals.h"
#include "observe/tracefile.h"
#include "worker/worker.h"

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
	health_stop();
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
 * handed_over() - a handover is done: stop, or serve on what stayed here
 * @px:	the process; the next one has its listeners, its --stats and
 *	control sockets, and every connection it could take
 *
 * A QUIC listener's connections stay in this process to their end
 * (connmove_stays()): it drains, as at SIGTERM, and stops when they are
 * gone or at --drain-timeout. Its scrapes and health probes are the next
 * process's now.
 */
static void handed_over(struct proxy *px)
{
	for (const struct listener *l = px->listeners; l; l = l->next)
		if (l->cfg && l->cfg->o.quic &&
		    !listener_is(l, LISTENER_RETIRED)) {
			metrics_stop(px);
			health_stop();
			signals_linger(px);
			return;
		}
	stop_now(px);
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
 * on sockets made as a start would make them, and binds each listening
 * address once, without listening, to find what a start's bind would
 * refuse (a port below 1024 without the capability); an address in use
 * passes, for the smbsplice it is run for may hold it.
 *
 * Return: 0 if it can, 2 otherwise (after saying why).
 */
static int check_config(struct proxy *px)
{
	char err[512];

	/* First: a process that cannot become --user would not bind as root
	 * either, and the listeners' lines would blame the wrong thing. */
	if (*px->opt->user &&
	    privs_check_user(px->opt->user, err, sizeof(err))) {
		fprintf(stderr, "smbsplice: %s\n", err);
		return 2;
	}
	for (unsigned i = 0; i < px->cfg->nls; i++) {
		struct lcfg *c =
			listener_cfg_new(&px->cfg->ls[i], err, sizeof(err));

		if (!px->cfg->ls[i].listen.len)
			printf("smbsplice: listener %s has no listen address: it needs a socket from systemd (socket activation)\n",
			       px->cfg->ls[i].name);
		if (!c || reload_check_listener(px, c, err, sizeof(err)) ||
		    listener_check_bind(c, err, sizeof(err))) {
			fprintf(stderr, "smbsplice: %s\n", err);
			if (c)
				listener_cfg_put(c);
			return 2;
		}
		listener_cfg_put(c);
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
	int handed[CONTROL_NLEVELS];
	char err[512];

	px->started_ns = mono_ns(); /* `info`'s uptime */
	px->started_at = time(NULL);
	px->workers = NULL;
	health_set_quic(qdial_health()); /* before the first probes */
	if (reload_apply(px, px->cfg, err, sizeof(err))) {
		log_err("%s", err);
		return -1;
	}
	for (unsigned i = 0; i < px->ninherited; i++)
		if (px->inherited[i] >= 0)
			log_warn(
				"socket %d from systemd matches no listener; it stays unused",
				px->inherited[i]);
	worker_choose_netns(px);
	handed[CONTROL_ADMIN] = handover_fd(HANDED_CONTROL);
	handed[CONTROL_VIEW] = handover_fd(HANDED_CONTROL_RO);
	if (metrics_start(px, handover_fd(HANDED_METRICS)) ||
	    control_start(px, handed) || handover_init(px, handed_over) ||
	    become_user(px))
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
	if (worker_init_all(px))
		return -1;
	reload_hand_out(px);
	if (fdbudget_init(px, handover_fds_held(),
			  px->opt->stats.len ? METRICS_MAX_SCRAPES : 0) ||
	    log_start() || tracefile_start() || handover_adopt(px) ||
	    worker_start_all(px))
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
			    .take_handed = handover_listener_fds,
			    .take_quic_map = handover_quic_map };
	struct options opt;
	uint64_t total;
	char err[512];
	int n;

	if (argc > 1 && !strcmp(argv[1], "ctl"))
		return ctl_main(argc - 1, argv + 1);
	n = notify_inherited(&px.inherited);
	px.ninherited = n > 0 ? (unsigned)n : 0;
	px.activated = px.ninherited > 0 || handover_incoming();
	if (!(px.cfg = calloc(1, sizeof(*px.cfg)))) {
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
	case OPT_UNRESOLVED:
		fprintf(stderr, "smbsplice: %s\n", err);
		return exit_early(&px, 1);
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
	signals_watch(&px, stop_now);
	if (handover_receive(&px))
		return exit_early(&px, 1);
	if (start(&px, &opt))
		return start_failed(&px);
	reload_log_listeners(&px, true);
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
