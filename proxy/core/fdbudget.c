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

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/resource.h>

#include "core/fdbudget.h"
#include "common/log.h"
#include "core/proxy.h"

/* Descriptors kept back, beyond those open at start and the scrapes, for
 * whatever the process opens later (a log or trace file, a config file, a
 * reload's new listening sockets, one per worker). */
#define FD_SLACK 8

/**
 * fd_table_size() - the slots of this process's descriptor table
 *
 * Return: FDSize of /proc/self/status (every open descriptor is below it),
 * or -1 if it cannot tell.
 */
static long fd_table_size(void)
{
	FILE *f = fopen("/proc/self/status", "re");
	char line[128];
	long n = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "FDSize: %ld", &n) == 1)
			break;
	fclose(f);
	return n;
}

/**
 * count_open_fds() - descriptors the process has open now
 *
 * One F_GETFD per slot of the table rather than a readdir of
 * /proc/self/fd, which makes a dentry and an inode for each descriptor:
 * with the 18,000 a handover of 9,000 connections holds that took 50 to
 * 160 ms of the pause, the slots take about 8.
 *
 * Return: the count, or 64 if /proc cannot tell.
 */
static long count_open_fds(void)
{
	long size = fd_table_size();
	long n = 0;

	if (size < 0)
		return 64;
	for (long fd = 0; fd < size && fd <= INT_MAX; fd++)
		n += fcntl((int)fd, F_GETFD) >= 0;
	return n;
}

/**
 * fdbudget_init() - size the descriptor budget from what is open now
 * @px:		the process, with its listeners, loops and metrics socket
 *		open
 * @handed:	descriptors a handover brought that no listener took yet
 *		(handover_fds_held())
 * @scrapes:	how many scrapes of --stats may be open at once, 0
 *		without it
 *
 * What the process holds now, plus concurrent scrapes and a few for logs
 * and files, is kept back; connections and pipes share the rest.
 *
 * Return: 0, or -1 after logging why.
 */
int fdbudget_init(struct proxy *px, size_t handed, unsigned scrapes)
{
	const struct options *o = px->opt;
	/* A handover's descriptors not yet taken are the connections' and
	 * pipes': they draw on the budget as they are adopted. */
	long reserved =
		count_open_fds() - (long)handed + (long)scrapes + FD_SLACK;
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
