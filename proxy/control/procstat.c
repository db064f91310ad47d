// SPDX-License-Identifier: GPL-2.0-or-later
/* procstat.c - the process's own figures, as the process_* metrics give
 *
 * Theory of operation: the Prometheus client libraries give every exporter
 * the same process_* family (CPU time, memory, descriptors, start time),
 * read from /proc; dashboards and alerts written for any exporter expect
 * them. They are read here when a page is rendered, which metrics.c does
 * at most once a second and in the main thread, which forwards nothing.
 *
 * The cost is bounded: one read of /proc/self/stat (a line), one stat()
 * of /proc/self/fd (whose size is the count of open descriptors since
 * Linux 6.2) and getrlimit(). Only on an older kernel are the descriptors
 * counted by reading the directory, one entry per descriptor, which the
 * open-files limit bounds. The start time is computed once: it does not
 * change, and a clock stepped later should not move it.
 *
 * A figure that cannot be read is left off the page, not given as 0,
 * which a dashboard would believe; the log says why, rate-limited.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "control/procstat.h"

/**
 * read_small() - a small /proc file's text
 * @path:	the file
 * @buf:	where to put it, NUL-terminated
 * @len:	its size
 *
 * Return: 0, or -1 with errno set.
 */
static int read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;
	int e;

	if (fd < 0)
		return -1;
	do
		n = read(fd, buf, len - 1);
	while (n < 0 && errno == EINTR);
	e = errno;
	close(fd);
	if (n < 0) {
		errno = e;
		return -1;
	}
	buf[n] = '\0';
	return 0;
}

/**
 * clock_seconds() - a clock's time in seconds
 * @id:	the clock
 *
 * Return: the time.
 */
static double clock_seconds(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/**
 * read_stat() - CPU time, memory and start time from /proc/self/stat
 * @p:	where to put them; @p->stat_ok says whether they were read
 */
static void read_stat(struct procstat *p)
{
	static double start_time; /* main thread only */
	unsigned long long utime, stime, start, vsize;
	long long rss;
	double hz = (double)sysconf(_SC_CLK_TCK);
	char buf[1024], *rest;

	if (read_small("/proc/self/stat", buf, sizeof(buf))) {
		log_rate(
			LOG_LVL_WARN,
			"stats: cannot read /proc/self/stat (%s): process_cpu_seconds_total and the memory metrics are left out",
			strerror(errno));
		return;
	}
	/* The command name, in parentheses, may hold spaces and ')'. */
	rest = strrchr(buf, ')');
	if (!rest || hz <= 0 ||
	    sscanf(rest + 1,
		   " %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu %llu %*s %*s %*s %*s %*s %*s %llu %llu %lld",
		   &utime, &stime, &start, &vsize, &rss) != 5) {
		log_rate(
			LOG_LVL_WARN,
			"stats: /proc/self/stat is not as expected: process_cpu_seconds_total and the memory metrics are left out");
		return;
	}
	/* starttime counts clock ticks from boot, CLOCK_BOOTTIME's zero. */
	if (!start_time)
		start_time = clock_seconds(CLOCK_REALTIME) -
			     clock_seconds(CLOCK_BOOTTIME) + (double)start / hz;
	p->cpu_seconds = (double)(utime + stime) / hz;
	p->vsize_bytes = vsize;
	p->rss_bytes =
		rss > 0 ? (uint64_t)rss * (uint64_t)sysconf(_SC_PAGESIZE) : 0;
	p->start_time = start_time;
	p->stat_ok = true;
}

/**
 * count_fds() - descriptors open, by reading /proc/self/fd
 *
 * Return: how many, or -1 with errno set.
 */
static long long count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	long long n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n - 1; /* the directory's own descriptor */
}

/**
 * read_fds() - descriptors open and the open-files limit
 * @p:	where to put them; @p->fds_ok and @p->max_ok say which were read
 */
static void read_fds(struct procstat *p)
{
	struct rlimit rl;
	struct stat st;
	long long n;

	if (!stat("/proc/self/fd", &st) && st.st_size > 0)
		n = st.st_size;
	else
		n = count_fds();
	if (n >= 0) {
		p->open_fds = (uint64_t)n;
		p->fds_ok = true;
	} else {
		log_rate(
			LOG_LVL_WARN,
			"stats: cannot read /proc/self/fd (%s): process_open_fds is left out",
			strerror(errno));
	}
	if (!getrlimit(RLIMIT_NOFILE, &rl)) {
		p->max_fds =
			rl.rlim_cur == RLIM_INFINITY ? UINT64_MAX : rl.rlim_cur;
		p->max_ok = true;
	}
}

/**
 * procstat_read() - what the process uses now
 * @p:	where to put it
 */
void procstat_read(struct procstat *p)
{
	*p = (struct procstat){ 0 };
	read_stat(p);
	read_fds(p);
}
