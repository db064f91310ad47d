/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_METRICS_T_H
#define SMBSPLICE_METRICS_T_H

/* metrics-t.h - the --stats endpoint's state, as a type alone
 *
 * Theory of operation: struct proxy embeds one struct metrics, so that
 * the process needs no allocation to serve scrapes; this header gives it
 * the type and nothing else, so that proxy.h depends on no function of
 * metrics.c, which reads struct proxy. Only metrics.c reads or writes the
 * fields.
 */

#include <ev.h>
#include <stddef.h>

struct scrape;

/* Scrapes served at once; more wait in the --stats backlog. Each address
 * has a share of them (metrics.c), so this many idle clients must come
 * from several addresses, and each is closed within a second. */
#define METRICS_MAX_SCRAPES 16

/**
 * struct metrics - the --stats endpoint's state
 * @fd:		the --stats listening socket, -1 if none
 * @w:		readable watcher on @fd
 * @pause:	restarts @w after accept() ran out of descriptors
 * @scrapes:	scrapes being served
 * @nscrapes:	how many
 * @page:	the last rendered metrics page
 * @page_len:	its length
 * @page_at:	when it was rendered
 */
struct metrics {
	int fd;
	ev_io w;
	ev_timer pause;
	struct scrape *scrapes;
	unsigned nscrapes;
	char *page;
	size_t page_len;
	ev_tstamp page_at;
};

/* A struct metrics that holds nothing, for a struct proxy's initialiser. */
#define METRICS_INIT { .fd = -1 }

#endif /* SMBSPLICE_METRICS_T_H */
