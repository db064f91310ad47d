// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * loadgen - TCP load generator for benchmarking proxies on loopback
 *
 *   loadgen serve PORT
 *   loadgen bulk PORT MIB [up|down|both] [RUNS]
 *   loadgen rr PORT [ITER] [SIZES]
 *
 * Theory of operation: one binary is both ends. "serve" listens on
 * 127.0.0.1, runs a thread per connection and tells the protocol apart by
 * the first 8 bytes: "BULK" dir(be32) count(be64), where dir 1 = client
 * uploads, 2 = downloads, 3 = both at once; or "RRRR" 0(be32).
 *
 * Bulk data is a position-derived pattern: the little-endian 64-bit word at
 * stream offset 8 * i is (i + 1) * golden ratio, so lost, duplicated or
 * reordered bytes all show, wherever recv() splits the stream. The client
 * checks downloads itself. For uploads it shuts down its write side, and
 * the server, after any download data, replies with bytes received (be64)
 * and pattern mismatches (be64). The client then wants EOF, so trailing
 * junk fails a run too.
 *
 * Request/response: each round the client sends req(be32) resp(be32) and
 * req bytes in one send(); the server reads exactly that and answers with
 * exactly resp bytes. Round trips are timed with CLOCK_MONOTONIC; the
 * connection's first, which carries its set-up, is reported apart.
 *
 * Bounds: SO_RCVTIMEO/SO_SNDTIMEO limit every blocking call; byte counts,
 * round or connection counts and an EINTR budget limit every loop.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CHUNK	      (1UL << 20) /* bytes per send()/recv() */
#define MIB	      (1ULL << 20)
#define MAX_MIB	      (1ULL << 20) /* 1 TiB each way, plenty */
#define IO_TIMEOUT_S  60	   /* no single call blocks longer */
#define EINTR_BUDGET  1000	   /* signals taken per transfer */
#define MAX_CONNS     100000000UL  /* "serve" exits after these */
#define RR_MAX	      CHUNK	   /* largest request, reply */
#define RR_MAX_ROUNDS 1000000000UL /* per server connection */
#define RR_SMALL      16	   /* other side of a sized round */
#define MAX_SIZES     64

/* Pattern word at word index i of the stream, and byte at offset p */
#define PAT_WORD(i) (((uint64_t)(i) + 1) * 0x9e3779b97f4a7c15ULL)
#define PAT_BYTE(p) ((unsigned char)(PAT_WORD((p) / 8) >> ((p) % 8 * 8)))

/* The sizes from the pasta cork bug: qN = request size, rN = response */
static const char rr_default[] = "q4000,q7372,q7380,q8000,q9000,q16000,"
				 "q20000,r4000,r7380,r8000,r16000,r64000";

struct send_job {
	int fd;
	uint64_t count;
	unsigned char *buf; /* CHUNK bytes of scratch space */
	int shut;	    /* shut down the write side when done */
	int ret;
};

/* What a client sends first; "RRRR" clients send only 8 bytes */
struct hello {
	char magic[4];	/* "BULK" or "RRRR" */
	uint32_t code;	/* be32: bulk direction, 0 for "RRRR" */
	uint64_t count; /* be64: bulk bytes per direction */
} __attribute__((packed));

struct rr_size {
	uint32_t req;
	uint32_t resp;
};

/**
 * fail() - say in one line what went wrong, and exit
 * @status:	exit status: 1 for a failed run, 2 for a bad argument
 * @fmt:	printf-style format, %m for errno
 *
 * Return: does not return
 */
static void __attribute__((noreturn, format(printf, 2, 3)))
fail(int status, const char *fmt, ...)
{
	va_list ap;

	fputs("loadgen: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(status);
}

/**
 * parse_num() - parse a decimal argument within limits
 * @s:		argument text
 * @what:	name of the argument, for the complaint
 * @min:	smallest accepted value
 * @max:	largest accepted value
 *
 * Return: the value; exits with status 2 if it is not a number in range
 */
static unsigned long long parse_num(const char *s, const char *what,
				    unsigned long long min,
				    unsigned long long max)
{
	unsigned long long v = 0;
	char *end = NULL;

	errno = 0;
	/* strtoull() would quietly take "-1" or " 5" */
	if (*s >= '0' && *s <= '9')
		v = strtoull(s, &end, 10);
	if (!end || *end || errno || v < min || v > max)
		fail(2, "bad %s '%s' (want %llu..%llu)", what, s, min, max);
	return v;
}

/**
 * now() - monotonic time, immune to clock steps during a run
 *
 * Return: seconds since an arbitrary point
 */
static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/**
 * xfer() - move exactly @len bytes, riding out EINTR and short transfers
 * @fd:		connected socket
 * @buf:	data to send, or room for data received
 * @len:	bytes wanted
 * @wr:		non-zero to send, zero to receive
 *
 * Return: bytes moved, less than @len on EOF (errno 0), error or timeout
 */
static size_t xfer(int fd, void *buf, size_t len, int wr)
{
	size_t done = 0;
	int intr = 0;

	while (done < len && intr < EINTR_BUDGET) {
		char *p = (char *)buf + done;
		ssize_t n = wr ? send(fd, p, len - done, MSG_NOSIGNAL)
			       : recv(fd, p, len - done, 0);

		if (n > 0) {
			done += n;
		} else if (n < 0 && errno == EINTR) {
			intr++;
		} else {
			/* lets callers tell a clean EOF from a timeout */
			errno = n ? errno : 0;
			break;
		}
	}
	return done;
}

/**
 * pat_fill() - fill a buffer with the pattern
 * @buf:	buffer
 * @len:	bytes to fill, a multiple of 8 as all counts are
 * @pos:	stream offset of @buf[0], a multiple of CHUNK
 */
static void pat_fill(unsigned char *buf, size_t len, uint64_t pos)
{
	size_t i;

	for (i = 0; i < len; i += 8) {
		uint64_t w = htole64(PAT_WORD((pos + i) / 8));

		memcpy(buf + i, &w, 8);
	}
}

/**
 * pat_check() - count pattern mismatches in received data
 * @buf:	data received
 * @len:	bytes in @buf
 * @pos:	stream offset of @buf[0], a multiple of CHUNK
 *
 * Return: mismatching words, plus mismatching bytes of a partial last word
 */
static uint64_t pat_check(const unsigned char *buf, size_t len, uint64_t pos)
{
	uint64_t w, bad = 0;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		memcpy(&w, buf + i, 8);
		bad += le64toh(w) != PAT_WORD((pos + i) / 8);
	}
	for (; i < len; i++)
		bad += buf[i] != PAT_BYTE(pos + i);
	return bad;
}

/**
 * sock_setup() - options both ends want on a connected socket
 * @fd:		socket
 */
static void sock_setup(int fd)
{
	struct timeval tv = { .tv_sec = IO_TIMEOUT_S };
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* a wedged proxy must fail the run, not hang it */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/**
 * sock_open() - socket connected to, or listening on, 127.0.0.1:@port
 * @port:	TCP port
 * @listening:	non-zero to bind and listen, zero to connect
 *
 * Return: the socket; exits with status 1 on failure
 */
static int sock_open(int port, int listening)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);

	sa.sin_port = htons(port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0)
		fail(1, "socket: %m");
	if (!listening) {
		sock_setup(fd);
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
			fail(1, "connect: %m");
		return fd;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 128))
		fail(1, "bind/listen: %m");
	return fd;
}

/**
 * bulk_send() - send a job's pattern bytes in CHUNK-sized send() calls
 * @arg:	struct send_job, whose @ret is set to 0, or -1 on failure
 *
 * Also the sender thread's body when both directions run at once.
 *
 * Return: NULL
 */
static void *bulk_send(void *arg)
{
	struct send_job *j = arg;
	uint64_t pos;

	j->ret = 0;
	for (pos = 0; pos < j->count && !j->ret; pos += CHUNK) {
		size_t n = j->count - pos < CHUNK ? j->count - pos : CHUNK;

		pat_fill(j->buf, n, pos);
		j->ret = xfer(j->fd, j->buf, n, 1) == n ? 0 : -1;
	}
	if (j->shut)
		shutdown(j->fd, SHUT_WR);
	return NULL;
}

/**
 * bulk_recv() - receive and check pattern bytes until @max, EOF or error
 * @fd:		connected socket
 * @buf:	CHUNK bytes of scratch space
 * @max:	stop after this many bytes
 * @bad:	set to the number of pattern mismatches
 *
 * Return: bytes received
 */
static uint64_t bulk_recv(int fd, unsigned char *buf, uint64_t max,
			  uint64_t *bad)
{
	uint64_t pos;
	size_t want, n;

	/* whole chunks, however recv() splits them, keep checks aligned */
	for (pos = 0, *bad = 0; pos < max; pos += n) {
		want = max - pos < CHUNK ? max - pos : CHUNK;
		n = xfer(fd, buf, want, 0);
		*bad += pat_check(buf, n, pos);
		if (n < want)
			return pos + n;
	}
	return pos;
}

/**
 * serve_bulk() - server side of one bulk transfer
 * @fd:		connected socket
 * @dir:	1 upload, 2 download, 3 both
 * @count:	bytes announced by the client
 * @buf:	2 * CHUNK bytes of scratch space
 */
static void serve_bulk(int fd, uint32_t dir, uint64_t count, unsigned char *buf)
{
	struct send_job job = { fd, count, buf + CHUNK, 0, 0 };
	uint64_t got, bad, reply[2];
	pthread_t tid;

	if (dir == 2) {
		bulk_send(&job);
		return;
	}
	if (dir == 3 && pthread_create(&tid, NULL, bulk_send, &job))
		return;
	/* one byte past @count, so that excess shows in the reply */
	got = bulk_recv(fd, buf, count + 1, &bad);
	if (dir == 3)
		pthread_join(tid, NULL);
	/* stream order puts the reply after all download data */
	reply[0] = htobe64(got);
	reply[1] = htobe64(bad);
	xfer(fd, reply, sizeof(reply), 1);
}

/**
 * serve_rr() - server side of request/response rounds, until EOF
 * @fd:		connected socket
 * @buf:	2 * RR_MAX bytes of scratch space
 *
 * Responses are 'r' bytes, as in rr.py: zeros would read as a run of empty
 * SMB keepalive frames to smbsplice's smb mode, which is not what a
 * non-SMB peer looks like.
 */
static void serve_rr(int fd, unsigned char *buf)
{
	unsigned long round;
	uint32_t hdr[2], req, resp;

	memset(buf + RR_MAX, 'r', RR_MAX);
	for (round = 0; round < RR_MAX_ROUNDS; round++) {
		if (xfer(fd, hdr, sizeof(hdr), 0) != sizeof(hdr))
			return;
		req = be32toh(hdr[0]);
		resp = be32toh(hdr[1]);
		if (req > RR_MAX || resp > RR_MAX ||
		    xfer(fd, buf, req, 0) != req ||
		    xfer(fd, buf + RR_MAX, resp, 1) != resp)
			return;
	}
}

/**
 * serve_conn() - thread body: tell the protocol apart and serve it
 * @arg:	accepted socket, cast to a pointer
 *
 * Return: NULL
 */
static void *serve_conn(void *arg)
{
	unsigned char *buf = calloc(2, CHUNK);
	int fd = (intptr_t)arg;
	struct hello h;
	uint32_t code;
	uint64_t count;

	pthread_detach(pthread_self());
	if (!buf || xfer(fd, &h, 8, 0) != 8)
		goto out;
	code = be32toh(h.code);
	if (!memcmp(h.magic, "RRRR", 4) && !code)
		serve_rr(fd, buf);
	if (memcmp(h.magic, "BULK", 4) || code < 1 || code > 3 ||
	    xfer(fd, &h.count, 8, 0) != 8)
		goto out;
	count = be64toh(h.count);
	/* pat_fill() works in whole words */
	if (count <= MAX_MIB * MIB && !(count % 8))
		serve_bulk(fd, code, count, buf);
out:
	free(buf);
	close(fd);
	return NULL;
}

/**
 * cmd_serve() - "serve PORT": accept, start a thread per connection
 * @argc:	argument count, from the subcommand on
 * @argv:	arguments, from the subcommand on
 *
 * Return: 0 after MAX_CONNS connections; exits on setup failure
 */
static int cmd_serve(int argc, char **argv)
{
	unsigned long n;
	pthread_t tid;
	int lfd, fd;

	if (argc != 2)
		fail(2, "usage: loadgen serve PORT");
	lfd = sock_open(parse_num(argv[1], "PORT", 1, 65535), 1);
	for (n = 0; n < MAX_CONNS; n++) {
		fd = accept(lfd, NULL, NULL);
		if (fd < 0) {
			/* out of fds or memory: let connections drain */
			if (errno != EINTR && errno != ECONNABORTED)
				usleep(10000);
			continue;
		}
		sock_setup(fd);
		if (pthread_create(&tid, NULL, serve_conn,
				   (void *)(intptr_t)fd))
			close(fd);
	}
	return 0;
}

/**
 * bulk_report() - print the result line of one run and direction
 * @dir:	"up" or "down"
 * @mib:	MiB moved
 * @secs:	elapsed time
 * @ok:		whether count and pattern checks passed
 */
static void bulk_report(const char *dir, uint64_t mib, double secs, int ok)
{
	printf("bulk dir=%s mib=%llu secs=%.3f gbit=%.2f ok=%d\n", dir,
	       (unsigned long long)mib, secs,
	       secs > 0 ? mib * MIB * 8 / secs / 1e9 : 0, ok);
	fflush(stdout);
}

/**
 * bulk_run() - client side of one bulk run, printing its result lines
 * @port:	TCP port
 * @mib:	MiB per direction
 * @dir:	1 upload, 2 download, 3 both
 * @buf:	2 * CHUNK bytes of scratch space
 *
 * Up time ends with the server's reply, which in "both" mode queues behind
 * the download data, so there it is never less than the down time.
 *
 * Return: 0 if every direction passed, 1 otherwise
 */
static int bulk_run(int port, uint64_t mib, uint32_t dir, unsigned char *buf)
{
	struct send_job job = { sock_open(port, 0), mib * MIB, buf + CHUNK, 1,
				-1 };
	double t0 = now(), t_up = 0, t_down = 0;
	struct hello h = { "BULK", htobe32(dir), htobe64(job.count) };
	uint64_t got, bad, reply[2];
	int ok_up = 0, ok_down = 0;
	pthread_t tid;

	if (xfer(job.fd, &h, sizeof(h), 1) != sizeof(h) ||
	    (dir == 3 && pthread_create(&tid, NULL, bulk_send, &job)))
		goto out;
	if (dir == 1)
		bulk_send(&job);
	if (dir & 2) {
		got = bulk_recv(job.fd, buf, job.count, &bad);
		t_down = now() - t0;
		ok_down = got == job.count && !bad;
	}
	if (dir == 3)
		pthread_join(tid, NULL);
	if (dir & 1) {
		ok_up = !job.ret && xfer(job.fd, reply, 16, 0) == 16 &&
			be64toh(reply[0]) == job.count && !reply[1];
		t_up = now() - t0;
	}
	/* bytes beyond what was due are as wrong as missing ones */
	if (xfer(job.fd, reply, 1, 0) || errno)
		ok_up = ok_down = 0;
out:
	close(job.fd);
	if (dir & 1)
		bulk_report("up", mib, t_up, ok_up);
	if (dir & 2)
		bulk_report("down", mib, t_down, ok_down);
	return !(ok_up + ok_down == (dir == 3 ? 2 : 1));
}

/**
 * cmd_bulk() - "bulk PORT MIB [up|down|both] [RUNS]"
 * @argc:	argument count, from the subcommand on
 * @argv:	arguments, from the subcommand on
 *
 * Return: exit status, 0 if every run and direction passed
 */
static int cmd_bulk(int argc, char **argv)
{
	unsigned long long mib, runs = 1, i;
	unsigned char *buf;
	uint32_t dir = 3;
	int port, bad = 0;

	if (argc < 3 || argc > 5)
		fail(2, "usage: loadgen bulk PORT MIB [up|down|both] [RUNS]");
	port = parse_num(argv[1], "PORT", 1, 65535);
	mib = parse_num(argv[2], "MIB", 1, MAX_MIB);
	if (argc > 3 && strcmp(argv[3], "both"))
		dir = !strcmp(argv[3], "up") ? 1 : !strcmp(argv[3], "down") * 2;
	if (!dir)
		fail(2, "bad direction '%s' (want up, down or both)", argv[3]);
	if (argc > 4)
		runs = parse_num(argv[4], "RUNS", 1, 100000);
	buf = malloc(2 * CHUNK);
	if (!buf)
		fail(1, "malloc: %m");
	for (i = 0; i < runs; i++)
		bad |= bulk_run(port, mib, dir, buf);
	free(buf);
	return bad;
}

/**
 * parse_sizes() - parse a SIZES list like "q4000,r64000"
 * @s:		list: qN is an N-byte request, rN an N-byte response, the
 *		other side of each round being RR_SMALL bytes
 * @sz:		array of MAX_SIZES entries to fill
 *
 * Return: number of entries; exits with status 2 on a bad list
 */
static int parse_sizes(const char *s, struct rr_size *sz)
{
	char *copy = strdup(s), *save = NULL, *tok;
	uint32_t v;
	int n = 0;

	if (!copy)
		fail(1, "strdup: %m");
	for (tok = strtok_r(copy, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (n >= MAX_SIZES || (*tok != 'q' && *tok != 'r'))
			fail(2,
			     "bad SIZES entry '%s' (want qN or rN, at most "
			     "%d)",
			     tok, MAX_SIZES);
		v = parse_num(tok + 1, "size", 1, RR_MAX);
		sz[n].req = *tok == 'q' ? v : RR_SMALL;
		sz[n++].resp = *tok == 'r' ? v : RR_SMALL;
	}
	free(copy);
	if (!n)
		fail(2, "empty SIZES list");
	return n;
}

/**
 * cmp_double() - qsort() comparator for ascending doubles
 * @a:		first
 * @b:		second
 *
 * Return: negative, zero or positive as @a is below, at or above @b
 */
static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/**
 * rr_report() - print the latency summary of one size
 * @sz:		size measured
 * @lat:	round trip times in microseconds, sorted here
 * @n:		samples in @lat
 *
 * Return: the largest sample
 */
static double rr_report(const struct rr_size *sz, double *lat, size_t n)
{
	int is_req = sz->req >= sz->resp;
	double sum = 0;
	size_t i;

	qsort(lat, n, sizeof(*lat), cmp_double);
	for (i = 0; i < n; i++)
		sum += lat[i];
	/* nearest rank: the smallest sample not below 99% of them */
	printf("rr kind=%s size=%u n=%zu mean_us=%.1f p99_us=%.1f "
	       "max_us=%.1f\n",
	       is_req ? "request" : "response", is_req ? sz->req : sz->resp, n,
	       sum / n, lat[(99 * n + 99) / 100 - 1], lat[n - 1]);
	fflush(stdout);
	return lat[n - 1];
}

/**
 * rr_setup() - one untimed small round trip before the timed ones
 * @fd:		connected socket, hello sent
 * @tx:		send buffer, at least 8 + RR_SMALL bytes
 * @rx:		receive buffer, at least RR_SMALL bytes
 *
 * The first exchange of a connection carries its set-up: the server's
 * thread start and, through a proxy, the proxy's own connect to the
 * server (smbsplice dials on the client's first byte). That is connection
 * cost, not a round trip, so it is reported on its own line, "rr
 * setup_us=", and kept out of the sizes' figures for every contestant.
 */
static void rr_setup(int fd, unsigned char *tx, unsigned char *rx)
{
	uint32_t hdr[2] = { htobe32(RR_SMALL), htobe32(RR_SMALL) };
	double t0 = now();

	memcpy(tx, hdr, sizeof(hdr));
	if (xfer(fd, tx, 8 + RR_SMALL, 1) != 8 + RR_SMALL ||
	    xfer(fd, rx, RR_SMALL, 0) != RR_SMALL)
		fail(1, "first round trip: %m");
	printf("rr setup_us=%.1f\n", (now() - t0) * 1e6);
}

/**
 * cmd_rr() - "rr PORT [ITER] [SIZES]": time request/response rounds
 * @argc:	argument count, from the subcommand on
 * @argv:	arguments, from the subcommand on
 *
 * Return: 0; exits with status 1 on I/O failure
 */
static int cmd_rr(int argc, char **argv)
{
	struct rr_size sz[MAX_SIZES];
	double *lat, t0, max, worst = 0;
	uint32_t hdr[2];
	unsigned char *tx, *rx;
	size_t iter = 200, i;
	int port, fd, n, s;

	if (argc < 2 || argc > 4)
		fail(2, "usage: loadgen rr PORT [ITER] [SIZES]");
	port = parse_num(argv[1], "PORT", 1, 65535);
	if (argc > 2)
		iter = parse_num(argv[2], "ITER", 1, 10000000);
	n = parse_sizes(argc > 3 ? argv[3] : rr_default, sz);
	tx = malloc(8 + RR_MAX);
	rx = malloc(RR_MAX);
	lat = malloc(iter * sizeof(*lat));
	if (!tx || !rx || !lat)
		fail(1, "malloc: %m");

	memset(tx, 'q', 8 + RR_MAX); /* as rr.py: not zeros, see serve_rr() */
	fd = sock_open(port, 0);
	if (xfer(fd, "RRRR\0\0\0\0", 8, 1) != 8)
		fail(1, "send: %m");
	rr_setup(fd, tx, rx);
	for (s = 0; s < n; s++) {
		hdr[0] = htobe32(sz[s].req);
		hdr[1] = htobe32(sz[s].resp);
		memcpy(tx, hdr, sizeof(hdr));
		for (i = 0; i < iter; i++) {
			t0 = now();
			/* header and request in one send(), like RPC clients */
			if (xfer(fd, tx, 8 + sz[s].req, 1) != 8 + sz[s].req ||
			    xfer(fd, rx, sz[s].resp, 0) != sz[s].resp)
				fail(1, "round trip: %m");
			lat[i] = (now() - t0) * 1e6;
		}
		max = rr_report(&sz[s], lat, iter);
		worst = max > worst ? max : worst;
	}
	printf("rr worst_us=%.1f\n", worst);
	close(fd);
	return 0;
}

/**
 * main() - dispatch to a subcommand
 * @argc:	argument count
 * @argv:	arguments
 *
 * Return: 0 on success, 1 on a failed run, 2 on a bad command line
 */
int main(int argc, char **argv)
{
	/* a peer gone away must show up as EPIPE, not kill us */
	signal(SIGPIPE, SIG_IGN);
	if (argc > 1 && !strcmp(argv[1], "serve"))
		return cmd_serve(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "bulk"))
		return cmd_bulk(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "rr"))
		return cmd_rr(argc - 1, argv + 1);
	fail(2, "usage: loadgen serve PORT | bulk PORT MIB [up|down|both] "
		"[RUNS] | rr PORT [ITER] [SIZES]");
}
