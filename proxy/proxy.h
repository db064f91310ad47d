/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_PROXY_H
#define SMBSPLICE_PROXY_H

#include <ev.h>
#include <stdbool.h>

#include "limits.h"
#include "options.h"
#include "pipepool.h"

struct scrape;
struct worker;

/**
 * struct proxy - the process: its workers and the main thread's duties
 * @loop:		the main thread's loop (libev's default loop, which
 *			alone may watch signals)
 * @opt:		parsed command line, read-only once workers run
 * @limits:		caps on connections and descriptors, for all workers
 * @pipe_budget:	--max-pipes, shared by every worker's pipe pool
 * @workers:		the worker threads
 * @nworkers:		how many
 * @netns:		network namespaces per side, from netns_open(); -1
 *			for the process's own
 * @sigint_w:		SIGINT: stop cleanly
 * @sigterm_w:		SIGTERM: stop cleanly
 * @metrics_fd:		the --stats listening socket, -1 if none
 * @metrics_w:		readable watcher on @metrics_fd
 * @metrics_pause:	restarts @metrics_w after accept() ran out of fds
 * @scrapes:		scrapes being served
 * @nscrapes:		how many
 * @page:		the last rendered metrics page
 * @page_len:		its length
 * @page_at:		when it was rendered
 *
 * The main thread forwards nothing. It watches signals, serves /metrics
 * by reading every worker's counters, and tells the workers when to stop.
 */
struct proxy {
	struct ev_loop *loop;
	const struct options *opt;
	struct limits limits;
	struct pipe_budget pipe_budget;
	struct worker *workers;
	unsigned nworkers;
	int netns[SIDE_COUNT];
	ev_signal sigint_w, sigterm_w;
	int metrics_fd;
	ev_io metrics_w;
	ev_timer metrics_pause;
	struct scrape *scrapes;
	unsigned nscrapes;
	char *page;
	size_t page_len;
	ev_tstamp page_at;
};

/* Scrapes served at once; more wait in the --stats backlog. */
#define METRICS_MAX_SCRAPES 4

int metrics_start(struct proxy *px);
void metrics_stop(struct proxy *px);

#endif /* SMBSPLICE_PROXY_H */
