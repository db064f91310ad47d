/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_PROXY_H
#define SMBSPLICE_PROXY_H

#include <ev.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <sys/types.h>

#include "conf/options.h"
#include "core/limits.h"
#include "io/pipepool.h"
#include "priv/privhelper.h"

struct listener;
struct worker;

/* The process's stage; only daemon/ moves it (main.c, signals.c), forward
 * only:
 *   running -> draining (SIGTERM) -> stopped; running -> stopped (SIGINT) */
enum proxy_state {
	PX_RUNNING,  /* serving; reloads are taken */
	PX_DRAINING, /* SIGTERM came: no listener, connections running out */
	PX_STOPPED,  /* stop_now() ran: the workers are joined */
};

/**
 * struct proxy - the process: its listeners, its workers, and the main
 *		  thread's duties
 * @started_ns:		when this process started (mono_ns()), for `info`'s
 *			uptime: a handover starts a new process
 * @started_at:		the same, on the wall clock
 * @loop:		the main thread's loop (libev's default loop, which
 *			alone may watch signals)
 * @argc:		the command line, which a reload parses again so that
 *			its options still override the file's [global]
 * @argv:		its arguments
 * @cfg:		the configuration in force (a reload replaces it)
 * @opt:		its process-wide settings, fixed at start but for
 *			verbose and drain-timeout, which a reload changes
 * @limits:		caps on connections and descriptors, for all workers
 * @pipe_budget:	--max-pipes, shared by every worker's pipe pool
 * @unpipe:		bytes that stalled pipes may be moved into
 *			(pump_unpipe()), --max-pipes × --pipe-size in all, so
 *			that moved bytes are bounded as pipes are
 * @listeners:		every listener, retired ones included until their
 *			last connection ends
 * @opening:		listeners a start or reload has made and not yet put
 *			in @listeners, chained by @next: their sockets listen
 *			already, and a later listener's probe must know them
 * @workers:		the worker threads
 * @nworkers:		how many
 * @worker_netns:	the backend namespace every worker enters at start,
 *			or -1 (listeners dial from the process's own, or
 *			from several)
 * @worker_netns_ino:	the namespace workers sit in (netns_ino())
 * @helper:		with --user, the privileged helper (privhelper.c);
 *			@helper.fds is NULL without one
 * @home_ino:		the namespace the process started in (netns_ino())
 * @inherited:		listening sockets from socket activation, -1 once
 *			claimed by a listener
 * @ninherited:		how many
 * @activated:		started by socket activation, or by a handover from
 *			a process that may have been: a listener may leave
 *			its listen address out (options_parse()'s inherited)
 * @sync_lock:		guards @synced
 * @sync_cond:		signalled when a worker has run worker_sync_all()'s
 *			command
 * @synced:		worker_sync_all()'s commands run, by all workers, ever
 * @sigint_w:		SIGINT: stop now
 * @sigterm_w:		SIGTERM: drain, then stop; a second stops now
 * @sighup_w:		SIGHUP: reload the config file
 * @sigusr1_w:		SIGUSR1: reopen the log files
 * @sigusr2_w:		SIGUSR2: hand over to the binary on disk
 *(handover_out.c)
 * @drained_w:		a worker says it has drained
 * @drain_timer:	--drain-timeout
 * @reaper:		frees retired listeners now and then
 * @state:		its stage
 * @take_handed:	the seam through which a listener takes the sockets a
 *			handover brought (handover_listener_fds(): net/
 *			ranks below handover/); NULL in tests
 * @take_quic_map:	the same for a QUIC listener's steering map
 *			(handover_quic_map()): a descriptor, or -1
 *
 * The main thread forwards nothing. It watches signals, reloads, drains,
 * serves /metrics by reading the workers' counters, and reaches the
 * workers through their command queues.
 */
struct proxy {
	uint64_t started_ns;
	time_t started_at;
	struct ev_loop *loop;
	int argc;
	char **argv;
	struct config *cfg;
	struct options *opt;
	struct limits limits;
	struct pipe_budget pipe_budget;
	struct budget unpipe;
	struct listener *listeners;
	struct listener *opening;
	struct worker *workers;
	unsigned nworkers;
	int worker_netns;
	ino_t worker_netns_ino;
	struct privhelper helper;
	ino_t home_ino;
	int *inherited;
	unsigned ninherited;
	bool activated;
	pthread_mutex_t sync_lock;
	pthread_cond_t sync_cond;
	unsigned long synced;
	ev_signal sigint_w, sigterm_w, sighup_w, sigusr1_w, sigusr2_w;
	ev_async drained_w;
	ev_timer drain_timer;
	ev_timer reaper;
	enum proxy_state state;
	unsigned (*take_handed)(const char *name, const struct endpoint *ep,
				int *fds, unsigned nworkers);
	int (*take_quic_map)(const char *name, const struct endpoint *ep);
};

#endif /* SMBSPLICE_PROXY_H */
