// SPDX-License-Identifier: GPL-2.0-or-later
/* calibrate.c - measure where splicing starts to cost less than copying
 *
 * Theory of operation: a short measurement on this host, of what a proxy
 * in the middle pays in CPU to move SMB-like messages (a 64-byte header
 * and a payload) both ways the daemon can move them. A sender thread
 * writes a stream of such messages into one loopback TCP connection, a
 * sink thread reads another to its end, and this thread moves the stream
 * from one to the other:
 *
 *  - copying, as the copy pump does: recv() into a 64 KiB buffer (the
 *    daemon's --buffer-size) as much as is there, send() it on;
 *  - splicing, as the daemon moves a payload at or above its threshold:
 *    recv() the header alone and send() it with MSG_MORE, then splice()
 *    exactly the payload into a pipe of 1 MiB (--pipe-size) and out of it
 *    to the other socket, SPLICE_F_MORE while more is due.
 *
 * Its CPU time (CLOCK_THREAD_CPUTIME_ID, user and system, which includes
 * the loopback's delivery of what it sends) over the bytes moved is the
 * cost per byte, at every candidate threshold size. Each size is measured
 * three times, both ways in turn, and the least of each is kept: other
 * work on the host only ever adds. The crossover is the smallest size
 * from which splicing cost less at every size measured. The whole takes a
 * few seconds, and stops measuring after CALIB_BUDGET seconds whatever it
 * has.
 *
 * It reuses nothing of proxy/: it measures the system calls the daemon
 * makes, not the daemon.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "calibrate.h"

#define CALIB_HDR    64		 /* the header each payload follows */
#define CALIB_BYTES  (16u << 20) /* moved per measurement, at least */
#define CALIB_ROUNDS 3
#define CALIB_BUDGET 8.0 /* seconds, after which no new round starts */
#define CALIB_BUF    (64u << 10)
#define CALIB_PIPE   (1u << 20)

/**
 * struct calib_job - one measurement's connections and volume
 * @in:		the socket this thread reads from
 * @out:	the socket it writes to
 * @src:	the sender's end of @in's connection
 * @dst:	the sink's end of @out's connection
 * @size:	payload bytes per message
 * @msgs:	messages in the stream
 * @failed:	a helper thread's call failed
 */
struct calib_job {
	int in, out, src, dst;
	uint32_t size;
	uint64_t msgs;
	volatile int failed;
};

/**
 * now() - a clock's time in seconds
 * @clock:	CLOCK_MONOTONIC or CLOCK_THREAD_CPUTIME_ID
 *
 * Return: seconds.
 */
static double now(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/**
 * sender() - write the message stream into the proxy's source connection
 * @arg:	the job
 *
 * The bytes' values do not matter to either pump.
 *
 * Return: NULL.
 */
static void *sender(void *arg)
{
	static uint8_t buf[1u << 20];
	struct calib_job *j = arg;
	uint64_t left = j->msgs * (CALIB_HDR + (uint64_t)j->size);
	ssize_t n;

	memset(buf, 0x5a, sizeof(buf));
	while (left) {
		n = send(j->src, buf, left < sizeof(buf) ? left : sizeof(buf),
			 MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			j->failed = 1;
			break;
		}
		left -= (uint64_t)n;
	}
	shutdown(j->src, SHUT_WR);
	return NULL;
}

/**
 * sink() - read the proxy's destination connection to its end
 * @arg:	the job
 *
 * Return: NULL.
 */
static void *sink(void *arg)
{
	static uint8_t buf[1u << 20];
	struct calib_job *j = arg;
	ssize_t n;

	while ((n = recv(j->dst, buf, sizeof(buf), 0)) != 0)
		if (n < 0 && errno != EINTR) {
			j->failed = 1;
			break;
		}
	return NULL;
}

/**
 * send_all() - send a buffer whole
 * @fd:		the socket
 * @p:		the bytes
 * @n:		how many
 * @flags:	MSG_MORE or 0
 *
 * Return: 0, or -1.
 */
static int send_all(int fd, const uint8_t *p, size_t n, int flags)
{
	ssize_t k;

	while (n) {
		k = send(fd, p, n, flags | MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/**
 * move_copy() - move the stream by recv() and send(), as the copy pump
 * @j:	the job
 *
 * Return: 0, or -1.
 */
static int move_copy(struct calib_job *j)
{
	static uint8_t buf[CALIB_BUF];
	uint64_t left = j->msgs * (CALIB_HDR + (uint64_t)j->size);
	ssize_t n;

	while (left) {
		n = recv(j->in, buf, left < sizeof(buf) ? left : sizeof(buf),
			 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || send_all(j->out, buf, (size_t)n,
				       (uint64_t)n < left ? MSG_MORE : 0))
			return -1;
		left -= (uint64_t)n;
	}
	return 0;
}

/**
 * recv_all() - receive exactly @n bytes
 * @fd:	the socket
 * @p:	where
 * @n:	how many
 *
 * Return: 0, or -1.
 */
static int recv_all(int fd, uint8_t *p, size_t n)
{
	ssize_t k;

	while (n) {
		k = recv(fd, p, n, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/**
 * splice_payload() - move exactly one payload through the pipe
 * @j:		the job
 * @pfd:	the pipe
 * @more:	more messages follow this one
 *
 * Return: 0, or -1.
 */
static int splice_payload(struct calib_job *j, const int pfd[2], bool more)
{
	uint32_t left = j->size;
	ssize_t in, out;
	size_t inpipe;

	while (left) {
		in = splice(j->in, NULL, pfd[1], NULL,
			    left < CALIB_PIPE ? left : CALIB_PIPE,
			    SPLICE_F_MOVE | SPLICE_F_MORE);
		if (in < 0 && errno == EINTR)
			continue;
		if (in <= 0)
			return -1;
		left -= (uint32_t)in;
		for (inpipe = (size_t)in; inpipe; inpipe -= (size_t)out) {
			out = splice(
				pfd[0], NULL, j->out, NULL, inpipe,
				SPLICE_F_MOVE |
					(left || more ? SPLICE_F_MORE : 0));
			if (out < 0 && errno == EINTR)
				out = 0;
			else if (out <= 0)
				return -1;
		}
	}
	return 0;
}

/**
 * move_splice() - move the stream as the daemon moves spliced payloads
 * @j:	the job
 *
 * Return: 0, or -1.
 */
static int move_splice(struct calib_job *j)
{
	uint8_t hdr[CALIB_HDR];
	int pfd[2], r = 0;

	if (pipe2(pfd, O_CLOEXEC))
		return -1;
	/* Without the privilege for 1 MiB, the default size serves. */
	fcntl(pfd[1], F_SETPIPE_SZ, CALIB_PIPE);
	for (uint64_t i = 0; i < j->msgs && !r; i++) {
		if (recv_all(j->in, hdr, sizeof(hdr)) ||
		    send_all(j->out, hdr, sizeof(hdr), MSG_MORE) ||
		    splice_payload(j, pfd, i + 1 < j->msgs))
			r = -1;
	}
	close(pfd[0]);
	close(pfd[1]);
	return r;
}

/**
 * loopback_pair() - a connected pair of loopback TCP sockets
 * @lfd:	a listening socket on loopback
 * @addr:	its address
 * @a:		set to the connecting end
 * @b:		set to the accepted end
 *
 * Return: 0, or -1.
 */
static int loopback_pair(int lfd, const struct sockaddr_in *addr, int *a,
			 int *b)
{
	*a = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (*a < 0)
		return -1;
	if (connect(*a, (const struct sockaddr *)addr, sizeof(*addr)) ||
	    (*b = accept4(lfd, NULL, NULL, SOCK_CLOEXEC)) < 0) {
		close(*a);
		return -1;
	}
	return 0;
}

/**
 * measure() - the CPU this thread spends per KiB moving one stream
 * @lfd:	the listening socket
 * @addr:	its address
 * @size:	payload bytes per message
 * @spliced:	splice the payloads, or copy everything
 * @ns:		set to nanoseconds per KiB
 *
 * Return: 0, or -1 with errno set.
 */
static int measure(int lfd, const struct sockaddr_in *addr, uint32_t size,
		   bool spliced, double *ns)
{
	struct calib_job j = { .size = size };
	pthread_t ts, tk;
	double t0;
	int r;

	j.msgs = CALIB_BYTES / (CALIB_HDR + size);
	if (j.msgs < 4)
		j.msgs = 4;
	if (loopback_pair(lfd, addr, &j.src, &j.in))
		return -1;
	if (loopback_pair(lfd, addr, &j.out, &j.dst)) {
		close(j.src);
		close(j.in);
		return -1;
	}
	pthread_create(&ts, NULL, sender, &j);
	pthread_create(&tk, NULL, sink, &j);
	t0 = now(CLOCK_THREAD_CPUTIME_ID);
	r = spliced ? move_splice(&j) : move_copy(&j);
	*ns = (now(CLOCK_THREAD_CPUTIME_ID) - t0) * 1e9 /
	      ((double)j.msgs * (CALIB_HDR + size) / 1024.0);
	/* Closing both of this thread's ends lets both helpers finish,
	 * even after a failure: unread bytes reset the sender's
	 * connection, and the sink reads to the end. */
	close(j.in);
	close(j.out);
	pthread_join(ts, NULL);
	pthread_join(tk, NULL);
	close(j.src);
	close(j.dst);
	return r || j.failed ? -1 : 0;
}

/**
 * loopback_listener() - a listening socket on 127.0.0.1, any port
 * @addr:	set to its address
 *
 * Return: the socket, or -1.
 */
static int loopback_listener(struct sockaddr_in *addr)
{
	socklen_t alen = sizeof(*addr);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	memset(addr, 0, sizeof(*addr));
	addr->sin_family = AF_INET;
	addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)addr, sizeof(*addr)) || listen(fd, 8) ||
	    getsockname(fd, (struct sockaddr *)addr, &alen)) {
		close(fd);
		return -1;
	}
	return fd;
}

/**
 * crossover() - the smallest size from which splicing cost less throughout
 * @c:	the measurement
 *
 * Return: the size, or SMB_THRESHOLD_OFF.
 */
static uint32_t crossover(const struct calibration *c)
{
	uint32_t from = SMB_THRESHOLD_OFF;

	for (unsigned i = c->n; i-- > 0;) {
		if (c->pt[i].splice_ns >= c->pt[i].copy_ns)
			break;
		from = c->pt[i].size;
	}
	return from;
}

/**
 * run_rounds() - measure every size, both ways, in rounds
 * @c:		the measurement, its sizes filled in
 * @lfd:	the listening socket
 * @addr:	its address
 * @t0:		when the calibration started
 *
 * Return: 0, or -1 with @c->err set.
 */
static int run_rounds(struct calibration *c, int lfd,
		      const struct sockaddr_in *addr, double t0)
{
	double ns;

	for (int round = 0; round < CALIB_ROUNDS; round++) {
		if (round && now(CLOCK_MONOTONIC) - t0 > CALIB_BUDGET)
			break;
		for (unsigned i = 0; i < c->n; i++)
			for (int spliced = 0; spliced < 2; spliced++) {
				double *best = spliced ? &c->pt[i].splice_ns
						       : &c->pt[i].copy_ns;

				if (measure(lfd, addr, c->pt[i].size, spliced,
					    &ns)) {
					snprintf(
						c->err, sizeof(c->err),
						"moving %u-byte payloads over loopback failed: %s",
						c->pt[i].size,
						strerror(errno ? errno : EIO));
					return -1;
				}
				if (!round || ns < *best)
					*best = ns;
			}
	}
	return 0;
}

/**
 * calibrate() - measure this host's crossover
 * @c:	filled in
 *
 * Return: 0, or -1 with @c->err set.
 */
int calibrate(struct calibration *c)
{
	struct sockaddr_in addr;
	double t0 = now(CLOCK_MONOTONIC);
	int lfd, r;

	memset(c, 0, sizeof(*c));
	signal(SIGPIPE, SIG_IGN);
	lfd = loopback_listener(&addr);
	if (lfd < 0) {
		snprintf(c->err, sizeof(c->err),
			 "cannot listen on 127.0.0.1: %s", strerror(errno));
		return -1;
	}
	c->n = ADVISE_NCANDIDATES;
	for (unsigned i = 0; i < c->n; i++)
		c->pt[i].size = advise_candidates[i];
	r = run_rounds(c, lfd, &addr, t0);
	close(lfd);
	c->crossover = crossover(c);
	c->seconds = now(CLOCK_MONOTONIC) - t0;
	return r;
}
