/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_METRICS_H
#define SMBSPLICE_METRICS_H

/* metrics.h - the --stats endpoint: Prometheus text over HTTP
 *
 * Theory of operation: the process starts and stops it; metrics.c serves
 * each scrape from the main loop, with the page promtext.c renders from
 * the sums of counters.h. Its state is a struct metrics (metrics-t.h),
 * metrics.c's alone.
 */

#include "control/metrics-t.h"

struct listener;
struct lreport;
struct proxy;

int metrics_start(struct proxy *px, int handed);
void metrics_stop(struct proxy *px);
int metrics_socket(const struct proxy *px);
void metrics_report_listener(const struct listener *l, struct lreport *r);

#endif /* SMBSPLICE_METRICS_H */
