/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_PROCSTAT_H
#define SMBSPLICE_PROCSTAT_H

/* procstat.h - the process's own figures, as the process_* metrics give
 *
 * Theory of operation: metrics.c calls procstat_read() when it renders a
 * page (at most once a second) and hands the result to promtext.c, which
 * writes the process_* family the Prometheus client libraries define.
 * What could not be read is marked so and left off the page.
 */

#include <stdbool.h>
#include <stdint.h>

/**
 * struct procstat - what the process uses now
 * @cpu_seconds:	user and system CPU time since start
 * @start_time:		when the process started, in seconds since the epoch
 * @rss_bytes:		resident memory
 * @vsize_bytes:	virtual memory
 * @open_fds:		file descriptors open
 * @max_fds:		the open-files limit (RLIMIT_NOFILE, soft)
 * @stat_ok:		the first four were read
 * @fds_ok:		@open_fds was read
 * @max_ok:		@max_fds was read
 */
struct procstat {
	double cpu_seconds, start_time;
	uint64_t rss_bytes, vsize_bytes;
	uint64_t open_fds, max_fds;
	bool stat_ok, fds_ok, max_ok;
};

void procstat_read(struct procstat *p);

#endif /* SMBSPLICE_PROCSTAT_H */
