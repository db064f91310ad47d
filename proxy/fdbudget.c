// SPDX-License-Identifier: GPL-2.0-or-later
/* fdbudget.c - how many descriptors connections and pipes may hold
 *
 * Theory of operation: at start, once the listening sockets, loops and
 * the --stats socket are open, what the process holds then, plus room for
 * concurrent scrapes and a few files (FD_SLACK), is kept back from the
 * open-files limit; connections and pipes share the rest, two
 * descriptors each (limits_init()).
 */
#include "config.h"

#include <dirent.h>
#include <sys/resource.h>

#include "fdbudget.h"
#include "image.h"
#include "log.h"
#include "metrics.h"
#include "proxy.h"

/* Descriptors kept back, beyond those open at start and the scrapes, for
 * whatever the process opens later (a log or trace file, a config file, a
 * reload's new listening sockets, one per worker). */
#define FD_SLACK 8

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
 * What the process holds now, plus concurrent scrapes (with --stats) and a
 * few for logs and files, is kept back; connections and pipes share the
 * rest.
 *
 * Return: 0, or -1 after logging why.
 */
int init_limits(struct proxy *px)
{
	const struct options *o = px->opt;
	/* A handover's descriptors not yet taken are the connections' and
	 * pipes': they draw on the budget as they are adopted. */
	long reserved = count_open_fds() - (long)image_in_held(&px->hin) +
			(o->stats.len ? METRICS_MAX_SCRAPES : 0) + FD_SLACK;
	struct rlimit rl;
	long room;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur == RLIM_INFINITY)
		rl.rlim_cur = 1 << 20;
	if (limits_init(&px->limits, o->max_conns, o->max_per_source,
			o->source_prefix6, o->max_preauth, (long)rl.rlim_cur,
			reserved)) {
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
