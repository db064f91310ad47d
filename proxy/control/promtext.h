/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_PROMTEXT_H
#define SMBSPLICE_PROMTEXT_H

/* promtext.h - the /metrics page as Prometheus text
 *
 * Theory of operation: metrics.c gathers the sums (counters.h) and calls
 * promtext_write() to render them into a FILE; serving the page over HTTP
 * stays in metrics.c.
 */

#include <stdint.h>
#include <stdio.h>

struct gauges;
struct lreport;
struct procstat;

int promtext_write(FILE *out, const struct lreport *ls, unsigned nls,
		   const struct gauges *g, const uint64_t *accepted,
		   const uint64_t *moved, unsigned nworkers,
		   const struct procstat *ps);

#endif /* SMBSPLICE_PROMTEXT_H */
