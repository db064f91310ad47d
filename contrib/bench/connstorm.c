// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * connstorm - connection storms and many idle connections, for proxy
 * benchmarks on loopback
 *
 *   connstorm serve [-l HOST:PORT]
 *   connstorm client -c HOST:PORT -n N -s SIZE [--smb] [--hold]
 *                    [--timeout SEC]
 *
 * Theory of operation: one single-threaded binary is both ends, each one
 * epoll loop over non-blocking sockets, level-triggered.
 *
 * "serve" is an echo backend: it accepts every connection it is offered
 * (a large listen backlog, the open-files soft limit raised to the hard
 * limit, a short pause when accept() runs out of descriptors) and sends
 * back every byte it reads, until the peer closes. A short send() keeps
 * the unsent rest in a buffer of its own and stops reading that connection
 * until the rest is out, so memory stays bounded by what the kernel would
 * not take. It prints "listening port=P" when ready.
 *
 * "client" is the storm: it calls connect() N times in a tight loop, all
 * non-blocking, before it looks at a single answer, the way every client
 * of a failed-over server reconnects at once. Each connection, once
 * connected, sends SIZE bytes and reads SIZE bytes back, checking every
 * byte. The bytes are a per-connection pseudo-random pattern: word i of
 * connection c's stream is splitmix64(seed(c) + i), so bytes echoed on the
 * wrong connection, lost, duplicated or reordered all show. With --smb the
 * first 116 bytes are replaced by a Direct TCP prefix, an SMB2 header and
 * the fixed body of a WRITE request whose data is the rest, so that a
 * message-aware proxy (smbsplice in smb mode) parses one valid frame each
 * way instead of giving up on the stream.
 *
 * It reports one line of key=value pairs: how long until the last
 * connection was established (as the client sees it: SYN-ACK received),
 * until the last round trip completed, and the failures by kind. With
 * --hold it then keeps every completed connection open until standard
 * input has a line or closes, so that a harness can read the proxy's
 * memory with all N connections open, and then prints how many of them
 * the far side had closed meanwhile.
 *
 * Bounds: --timeout ends the client whatever the network does; counts
 * are checked against the open-files limit before anything is opened;
 * every read and write loop is bounded per wake-up.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define CHUNK		(64U << 10) /* bytes per send()/recv() */
#define MAX_SIZE	(16U << 20) /* Direct TCP lengths have 24 bits */
#define MAX_EVENTS	1024
#define IO_PER_WAKE	16    /* reads or writes per wake-up */
#define SERVE_BACKLOG	65535 /* the kernel caps it at somaxconn */
#define ACCEPT_PAUSE_MS 100   /* after accept() ran out of fds */
#define FD_RESERVE	16    /* stdio, epoll, listener, spare */
#define DEF_TIMEOUT	60.0

/* SMB2 WRITE request framing, as in MS-SMB2 2.2.1 and 2.2.21 */
#define SMB_PREFIX	4
#define SMB2_HDR	64
#define SMB2_WRITE_BODY 48 /* fixed part; StructureSize says 49 */
#define SMB_LEAD	(SMB_PREFIX + SMB2_HDR + SMB2_WRITE_BODY)
#define SMB2_CMD_WRITE	9

enum cstate { C_CONNECTING, C_RUNNING, C_DONE, C_FAILED };

enum fail_kind {
	F_REFUSED,
	F_RESET,
	F_EOF,
	F_TIMEOUT,
	F_MISMATCH,
	F_OTHER,
	F_KINDS
};

static const char *const fail_name[F_KINDS] = {
	[F_REFUSED] = "refused", [F_RESET] = "reset",	    [F_EOF] = "eof",
	[F_TIMEOUT] = "timeout", [F_MISMATCH] = "mismatch", [F_OTHER] = "other",
};

/* One client connection; its index is its epoll cookie */
struct conn {
	int fd;
	uint8_t state; /* enum cstate */
	uint32_t sent; /* bytes sent so far */
	uint32_t rcvd; /* bytes received and checked so far */
	double t_conn; /* seconds from the storm's start to connected */
	double t_done; /* ... to the last byte received */
};

/* The client's whole state: one storm */
struct storm {
	struct conn *c;
	uint32_t n;	 /* connections */
	uint32_t size;	 /* bytes each way on each */
	int smb;	 /* lead the bytes with an SMB2 WRITE header */
	int ep;		 /* epoll fd */
	uint64_t seed;	 /* mixed with the index: per-connection pattern */
	double t0;	 /* the storm's start */
	uint32_t active; /* neither done nor failed */
	uint32_t done;	 /* completed their round trip */
	uint32_t fails[F_KINDS];
	char first_err[F_KINDS][96];
	struct sockaddr_storage to;
	socklen_t to_len;
	unsigned char buf[CHUNK];  /* what was sent or received */
	unsigned char want[CHUNK]; /* what should have been received */
};

/* Bytes a serve connection read but could not send back yet */
struct echo {
	unsigned char *pend;
	uint32_t off, len;
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

	fputs("connstorm: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(status);
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
 * parse_addr() - resolve HOST:PORT, [V6]:PORT, *:PORT or :PORT
 * @s:		the text
 * @ss:		filled with the address
 * @len:	filled with its length
 * @passive:	an empty or "*" host means any address, not loopback
 *
 * Return: 0; exits with status 2 if @s does not resolve
 */
static int parse_addr(const char *s, struct sockaddr_storage *ss,
		      socklen_t *len, int passive)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICSERV };
	struct addrinfo *ai = NULL;
	char host[256], *colon;
	const char *h = host;
	int err;

	if (strlen(s) >= sizeof(host))
		fail(2, "address too long: '%s'", s);
	strcpy(host, s);
	colon = strrchr(host, ':');
	if (!colon)
		fail(2, "bad address '%s' (want HOST:PORT)", s);
	*colon = '\0';
	parse_num(colon + 1, "port", 0, 65535);
	if (host[0] == '[' && colon > host + 1 && colon[-1] == ']') {
		colon[-1] = '\0';
		h = host + 1;
	}
	if (!*h || !strcmp(h, "*")) {
		h = NULL;
		hints.ai_family = AF_INET;
		hints.ai_flags |= passive ? AI_PASSIVE : 0;
	}
	err = getaddrinfo(h, colon + 1, &hints, &ai);
	if (err || !ai)
		fail(2, "cannot resolve '%s': %s", s, gai_strerror(err));
	memcpy(ss, ai->ai_addr, ai->ai_addrlen);
	*len = ai->ai_addrlen;
	freeaddrinfo(ai);
	return 0;
}

/**
 * raise_nofile() - raise the open-files soft limit to the hard limit
 *
 * Return: the soft limit now in force
 */
static unsigned long raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		fail(1, "getrlimit: %m");
	if (rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			getrlimit(RLIMIT_NOFILE, &rl);
	}
	return rl.rlim_cur;
}

/**
 * splitmix64() - a 64-bit mixing function (Vigna's SplitMix64 finaliser)
 * @x:		input
 *
 * Return: @x with every output bit depending on every input bit
 */
static uint64_t splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/**
 * put_le16() - store a little-endian 16-bit value
 * @p:		where
 * @v:		value
 */
static void put_le16(unsigned char *p, uint16_t v)
{
	p[0] = v;
	p[1] = v >> 8;
}

/**
 * put_le32() - store a little-endian 32-bit value
 * @p:		where
 * @v:		value
 */
static void put_le32(unsigned char *p, uint32_t v)
{
	put_le16(p, v);
	put_le16(p + 2, v >> 16);
}

/**
 * smb_lead() - the first SMB_LEAD bytes of an --smb connection's stream
 * @st:		the storm (its size sets the lengths)
 * @idx:	the connection, which becomes the MessageId
 * @out:	SMB_LEAD bytes to fill
 *
 * A Direct TCP prefix (0x00 and a 24-bit big-endian length), a sync SMB2
 * header for a WRITE request (not a response, not signed, no NextCommand)
 * and the WRITE body's fixed part: StructureSize 49, DataOffset 112 from
 * the header's start, Length the rest of the frame, FileId from the index.
 */
static void smb_lead(const struct storm *st, uint32_t idx, unsigned char *out)
{
	uint32_t frame = st->size - SMB_PREFIX;
	unsigned char *h = out + SMB_PREFIX, *b = h + SMB2_HDR;

	memset(out, 0, SMB_LEAD);
	out[1] = frame >> 16;
	out[2] = frame >> 8;
	out[3] = frame;
	memcpy(h, "\xfeSMB", 4);
	put_le16(h + 4, SMB2_HDR);		     /* StructureSize */
	put_le16(h + 6, 1);			     /* CreditCharge */
	put_le16(h + 12, SMB2_CMD_WRITE);	     /* Command */
	put_le16(h + 14, 1);			     /* CreditRequest */
	put_le32(h + 24, idx);			     /* MessageId, low half */
	put_le32(h + 36, 1);			     /* TreeId */
	put_le32(h + 40, 1);			     /* SessionId, low half */
	put_le16(b, SMB2_WRITE_BODY + 1);	     /* StructureSize 49 */
	put_le16(b + 2, SMB2_HDR + SMB2_WRITE_BODY); /* DataOffset 112 */
	put_le32(b + 4, st->size - SMB_LEAD);	     /* Length */
	put_le32(b + 16, idx);			     /* FileId */
}

/**
 * expect() - the bytes of connection @idx's stream at [@pos, @pos + @len)
 * @st:		the storm
 * @idx:	connection index
 * @pos:	stream offset
 * @len:	bytes, at most CHUNK
 * @out:	filled with them
 *
 * Both what the client sends and what it must receive back.
 */
static void expect(const struct storm *st, uint32_t idx, uint32_t pos,
		   uint32_t len, unsigned char *out)
{
	uint64_t seed = splitmix64(st->seed ^ ((uint64_t)idx << 32));
	unsigned char lead[SMB_LEAD];
	uint32_t i = 0, p, off, n;
	uint64_t w;

	while (i < len) {
		p = pos + i;
		off = p % 8;
		n = 8 - off < len - i ? 8 - off : len - i;
		w = htole64(splitmix64(seed + p / 8));
		if (n == 8)
			memcpy(out + i, &w, 8);
		else
			memcpy(out + i, (unsigned char *)&w + off, n);
		i += n;
	}
	if (st->smb && pos < SMB_LEAD) {
		smb_lead(st, idx, lead);
		n = SMB_LEAD - pos < len ? SMB_LEAD - pos : len;
		memcpy(out, lead + pos, n);
	}
}

/**
 * kind_of() - the failure kind an errno stands for
 * @err:	errno value
 *
 * Return: enum fail_kind
 */
static enum fail_kind kind_of(int err)
{
	switch (err) {
	case ECONNREFUSED:
		return F_REFUSED;
	case ECONNRESET:
	case EPIPE:
	case ECONNABORTED:
		return F_RESET;
	case ETIMEDOUT:
		return F_TIMEOUT;
	default:
		return F_OTHER;
	}
}

/**
 * conn_fail() - count a connection as failed and close it
 * @st:		the storm
 * @idx:	the connection
 * @kind:	what went wrong
 * @what:	the call that failed, or a description
 * @err:	errno, or 0
 */
static void conn_fail(struct storm *st, uint32_t idx, enum fail_kind kind,
		      const char *what, int err)
{
	struct conn *c = &st->c[idx];

	if (!st->fails[kind]++)
		snprintf(st->first_err[kind], sizeof(st->first_err[kind]),
			 "%s%s%s (connection %u, %u sent, %u received)", what,
			 err ? ": " : "", err ? strerror(err) : "", idx,
			 c->sent, c->rcvd);
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->state = C_FAILED;
	st->active--;
}

/**
 * conn_launch() - open connection @idx and start its connect()
 * @st:		the storm
 * @idx:	the connection
 */
static void conn_launch(struct storm *st, uint32_t idx)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT,
				  .data.u32 = idx };
	struct conn *c = &st->c[idx];
	int one = 1;

	c->fd = socket(st->to.ss_family,
		       SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0) {
		conn_fail(st, idx, F_OTHER, "socket", errno);
		return;
	}
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(c->fd, (struct sockaddr *)&st->to, st->to_len) &&
	    errno != EINPROGRESS)
		conn_fail(st, idx, kind_of(errno), "connect", errno);
	else if (epoll_ctl(st->ep, EPOLL_CTL_ADD, c->fd, &ev))
		conn_fail(st, idx, F_OTHER, "epoll_ctl", errno);
}

/**
 * conn_send() - send what the socket takes of the rest of the request
 * @st:		the storm
 * @idx:	the connection, connected
 *
 * Return: 0, or -1 if the connection failed
 */
static int conn_send(struct storm *st, uint32_t idx)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = idx };
	struct conn *c = &st->c[idx];
	uint32_t n;
	ssize_t w;
	int i;

	for (i = 0; i < IO_PER_WAKE && c->sent < st->size; i++) {
		n = st->size - c->sent < CHUNK ? st->size - c->sent : CHUNK;
		expect(st, idx, c->sent, n, st->buf);
		w = send(c->fd, st->buf, n, MSG_NOSIGNAL);
		if (w < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		if (w < 0) {
			conn_fail(st, idx, kind_of(errno), "send", errno);
			return -1;
		}
		c->sent += w;
		if ((uint32_t)w < n)
			return 0;
	}
	/* all sent: from now on only the answer matters */
	if (c->sent == st->size &&
	    epoll_ctl(st->ep, EPOLL_CTL_MOD, c->fd, &ev)) {
		conn_fail(st, idx, F_OTHER, "epoll_ctl", errno);
		return -1;
	}
	return 0;
}

/**
 * conn_recv() - read and check what has come back
 * @st:		the storm
 * @idx:	the connection, connected
 *
 * Bytes beyond @size that arrive in the same read also count as a
 * mismatch: an echo must give back exactly what it was sent.
 */
static void conn_recv(struct storm *st, uint32_t idx)
{
	struct conn *c = &st->c[idx];
	const char *why = NULL;
	uint32_t room;
	ssize_t r;
	int i;

	for (i = 0; i < IO_PER_WAKE && c->rcvd < st->size; i++) {
		room = st->size - c->rcvd < CHUNK ? st->size - c->rcvd : CHUNK;
		/* one byte more than due, so that excess shows */
		r = recv(c->fd, st->buf, room == CHUNK ? room : room + 1, 0);
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (r < 0)
			why = "recv";
		else if (!r)
			why = "closed before the whole echo";
		else if ((uint32_t)r > room)
			why = "more bytes than were sent";
		else
			expect(st, idx, c->rcvd, r, st->want);
		if (!why && memcmp(st->buf, st->want, r))
			why = "echoed bytes differ";
		if (why) {
			conn_fail(st, idx,
				  r < 0 ? kind_of(errno)
				  : r	? F_MISMATCH
					: F_EOF,
				  why, r < 0 ? errno : 0);
			return;
		}
		c->rcvd += r;
	}
	if (c->rcvd < st->size)
		return;
	/* done: keep the socket open, stop watching it */
	c->t_done = now() - st->t0;
	c->state = C_DONE;
	st->done++;
	st->active--;
	epoll_ctl(st->ep, EPOLL_CTL_DEL, c->fd, NULL);
}

/**
 * conn_connected() - epoll reported events on a connecting connection
 * @st:		the storm
 * @idx:	the connection, C_CONNECTING
 * @events:	EPOLL* bits
 *
 * Notes the time the connection was established, or counts its failure.
 */
static void conn_connected(struct storm *st, uint32_t idx, uint32_t events)
{
	struct conn *c = &st->c[idx];
	socklen_t len = sizeof(int);
	int err = 0;

	if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
		return;
	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len))
		err = errno;
	if (err) {
		conn_fail(st, idx, kind_of(err), "connect", err);
		return;
	}
	c->t_conn = now() - st->t0;
	c->state = C_RUNNING;
}

/**
 * conn_io() - epoll reported events on a connected connection
 * @st:		the storm
 * @idx:	the connection, C_RUNNING
 * @events:	EPOLL* bits
 */
static void conn_io(struct storm *st, uint32_t idx, uint32_t events)
{
	if (st->c[idx].sent < st->size && (events & (EPOLLOUT | EPOLLERR)) &&
	    conn_send(st, idx))
		return;
	if (events & (EPOLLIN | EPOLLERR | EPOLLHUP))
		conn_recv(st, idx);
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
 * quantile() - nearest-rank quantile of sorted samples
 * @v:		samples, ascending
 * @n:		how many
 * @q:		quantile, 0..1
 *
 * Return: the smallest sample not below @q of them, 0 with no samples
 */
static double quantile(const double *v, uint32_t n, double q)
{
	uint32_t k = (uint32_t)(q * n + 0.999999);

	if (!n)
		return 0;
	return v[k ? (k > n ? n : k) - 1 : 0];
}

/**
 * storm_report() - print the result line
 * @st:		the storm, finished
 * @launch:	seconds the connect() loop took
 */
static void storm_report(struct storm *st, double launch)
{
	double *tc = calloc(st->n + 1, sizeof(*tc));
	double *td = calloc(st->n + 1, sizeof(*td));
	uint32_t i, nc = 0, nd = 0, failed = 0;
	int k;

	if (!tc || !td)
		fail(1, "calloc: %m");
	for (i = 0; i < st->n; i++) {
		if (st->c[i].t_conn > 0)
			tc[nc++] = st->c[i].t_conn;
		if (st->c[i].state == C_DONE)
			td[nd++] = st->c[i].t_done;
	}
	qsort(tc, nc, sizeof(*tc), cmp_double);
	qsort(td, nd, sizeof(*td), cmp_double);
	for (k = 0; k < F_KINDS; k++)
		failed += st->fails[k];
	printf("storm n=%u size=%u smb=%d connected=%u done=%u failed=%u "
	       "launch_s=%.4f connect_s=%.4f done_s=%.4f connect_p50_s=%.4f "
	       "done_p50_s=%.4f done_p99_s=%.4f",
	       st->n, st->size, st->smb, nc, nd, failed, launch,
	       quantile(tc, nc, 1), quantile(td, nd, 1), quantile(tc, nc, 0.5),
	       quantile(td, nd, 0.5), quantile(td, nd, 0.99));
	for (k = 0; k < F_KINDS; k++)
		printf(" fail_%s=%u", fail_name[k], st->fails[k]);
	printf("\n");
	fflush(stdout);
	for (k = 0; k < F_KINDS; k++)
		if (st->fails[k])
			fprintf(stderr, "connstorm: %u %s, first: %s\n",
				st->fails[k], fail_name[k], st->first_err[k]);
	free(tc);
	free(td);
}

/**
 * hold() - keep the completed connections open until stdin says so
 * @st:		the storm, reported
 *
 * Waits for a line on, or the end of, standard input, then prints
 * "hold held=H lost=L": of the H connections held, L had been closed or
 * reset by the far side, or had received bytes nobody sent.
 */
static void hold(struct storm *st)
{
	uint32_t i, held = 0, lost = 0;
	char ch, peek;
	ssize_t r;

	do
		r = read(STDIN_FILENO, &ch, 1);
	while ((r > 0 && ch != '\n') || (r < 0 && errno == EINTR));
	for (i = 0; i < st->n; i++) {
		if (st->c[i].state != C_DONE)
			continue;
		held++;
		r = recv(st->c[i].fd, &peek, 1, MSG_PEEK | MSG_DONTWAIT);
		lost += !(r < 0 && errno == EAGAIN);
	}
	printf("hold held=%u lost=%u\n", held, lost);
	fflush(stdout);
}

/**
 * cmd_client() - "client -c HOST:PORT -n N -s SIZE [--smb] [--hold]
 *		  [--timeout SEC]"
 * @argc:	argument count, from the subcommand on
 * @argv:	arguments, from the subcommand on
 *
 * Return: 0 if every connection completed its round trip, 1 otherwise
 */
static int cmd_client(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "connect", required_argument, NULL, 'c' },
		{ "count", required_argument, NULL, 'n' },
		{ "size", required_argument, NULL, 's' },
		{ "smb", no_argument, NULL, 'S' },
		{ "hold", no_argument, NULL, 'H' },
		{ "timeout", required_argument, NULL, 't' },
		{ 0 }
	};
	struct epoll_event *evs;
	double timeout = DEF_TIMEOUT, deadline, launch, left;
	const char *to = NULL;
	unsigned long limit;
	struct storm *st;
	int opt, do_hold = 0, n, i;
	uint32_t idx;

	st = calloc(1, sizeof(*st));
	if (!st)
		fail(1, "calloc: %m");
	while ((opt = getopt_long(argc, argv, "c:n:s:", opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			to = optarg;
			break;
		case 'n':
			st->n = parse_num(optarg, "count", 1, 1000000);
			break;
		case 's':
			st->size = parse_num(optarg, "size", 1, MAX_SIZE);
			break;
		case 'S':
			st->smb = 1;
			break;
		case 'H':
			do_hold = 1;
			break;
		case 't':
			timeout = parse_num(optarg, "timeout", 1, 86400);
			break;
		default:
			fail(2, "usage: connstorm client -c HOST:PORT -n N "
				"-s SIZE [--smb] [--hold] [--timeout SEC]");
		}
	}
	if (!to || !st->n || !st->size || optind != argc)
		fail(2, "usage: connstorm client -c HOST:PORT -n N -s SIZE "
			"[--smb] [--hold] [--timeout SEC]");
	if (st->smb && st->size < SMB_LEAD)
		fail(2, "--smb needs a size of at least %d", SMB_LEAD);
	limit = raise_nofile();
	if (st->n > limit - FD_RESERVE)
		fail(2,
		     "%u connections need more than the open-files limit "
		     "of %lu allows",
		     st->n, limit);
	parse_addr(to, &st->to, &st->to_len, 0);
	st->c = calloc(st->n, sizeof(*st->c));
	/* room for every connection's events in one epoll_wait() */
	evs = calloc(st->n, sizeof(*evs));
	st->ep = epoll_create1(EPOLL_CLOEXEC);
	if (!st->c || !evs || st->ep < 0)
		fail(1, "setup: %m");
	st->seed = splitmix64((uint64_t)getpid() << 32 ^ (uint64_t)time(NULL));

	st->t0 = now();
	deadline = st->t0 + timeout;
	st->active = st->n;
	/* the storm: every connect() before any answer is looked at */
	for (idx = 0; idx < st->n; idx++) {
		st->c[idx].fd = -1;
		conn_launch(st, idx);
	}
	launch = now() - st->t0;
	while (st->active && (left = deadline - now()) > 0) {
		n = epoll_wait(st->ep, evs, st->n, (int)(left * 1000) + 1);
		if (n < 0 && errno != EINTR)
			fail(1, "epoll_wait: %m");
		/* connections first: their time must not wait on data */
		for (i = 0; i < n; i++) {
			idx = evs[i].data.u32;
			if (st->c[idx].state == C_CONNECTING)
				conn_connected(st, idx, evs[i].events);
		}
		for (i = 0; i < n; i++) {
			idx = evs[i].data.u32;
			if (st->c[idx].state == C_RUNNING)
				conn_io(st, idx, evs[i].events);
		}
	}
	for (idx = 0; idx < st->n; idx++)
		if (st->c[idx].state <= C_RUNNING)
			conn_fail(st, idx, F_TIMEOUT,
				  st->c[idx].state == C_CONNECTING
					  ? "no connection before --timeout"
					  : "no whole echo before --timeout",
				  0);
	storm_report(st, launch);
	if (do_hold)
		hold(st);
	for (idx = 0; idx < st->n; idx++)
		if (st->c[idx].fd >= 0)
			close(st->c[idx].fd);
	return st->done != st->n;
}

/**
 * echo_close() - end a serve connection
 * @tab:	per-fd state
 * @fd:		the connection
 */
static void echo_close(struct echo *tab, int fd)
{
	free(tab[fd].pend);
	memset(&tab[fd], 0, sizeof(tab[fd]));
	close(fd); /* also leaves the epoll set: the fd is not shared */
}

/**
 * echo_flush() - send a serve connection's pending bytes
 * @tab:	per-fd state
 * @fd:		the connection, with bytes pending
 * @ep:		epoll fd
 *
 * Return: 1 when none are left (reading resumes), 0 if some still are,
 * -1 if the connection was closed
 */
static int echo_flush(struct echo *tab, int fd, int ep)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };
	struct echo *e = &tab[fd];
	ssize_t w;

	w = send(fd, e->pend + e->off, e->len - e->off, MSG_NOSIGNAL);
	if (w < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (w < 0) {
		echo_close(tab, fd);
		return -1;
	}
	e->off += w;
	if (e->off < e->len)
		return 0;
	free(e->pend);
	memset(e, 0, sizeof(*e));
	if (epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev)) {
		echo_close(tab, fd);
		return -1;
	}
	return 1;
}

/**
 * echo_event() - a serve connection is readable, or writable with bytes
 * pending
 * @tab:	per-fd state
 * @fd:		the connection
 * @ep:		epoll fd
 * @buf:	CHUNK bytes of scratch space
 */
static void echo_event(struct echo *tab, int fd, int ep, unsigned char *buf)
{
	struct epoll_event ev = { .events = EPOLLOUT, .data.fd = fd };
	struct echo *e = &tab[fd];
	ssize_t r, w;
	int i;

	if (e->len && echo_flush(tab, fd, ep) <= 0)
		return;
	for (i = 0; i < IO_PER_WAKE; i++) {
		r = recv(fd, buf, CHUNK, 0);
		if (r < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		w = r > 0 ? send(fd, buf, r, MSG_NOSIGNAL) : -1;
		if (r <= 0 || (w < 0 && errno != EAGAIN && errno != EINTR))
			break; /* end of stream or error */
		w = w < 0 ? 0 : w;
		if (w == r)
			continue;
		/* keep the rest and stop reading until it is out */
		e->pend = malloc(r - w);
		if (!e->pend)
			break;
		memcpy(e->pend, buf + w, r - w);
		e->len = r - w;
		if (epoll_ctl(ep, EPOLL_CTL_MOD, fd, &ev))
			break;
		return;
	}
	if (i < IO_PER_WAKE)
		echo_close(tab, fd);
}

/**
 * cmd_serve() - "serve [-l HOST:PORT]": echo on every connection
 * @argc:	argument count, from the subcommand on
 * @argv:	arguments, from the subcommand on
 *
 * Listens on 127.0.0.1 and a port of the kernel's choosing by default.
 *
 * Return: does not return but by a signal; exits on setup failure
 */
static int cmd_serve(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, 'l' }, { 0 }
	};
	struct epoll_event ev = { .events = EPOLLIN }, evs[MAX_EVENTS];
	const char *at = "127.0.0.1:0";
	struct sockaddr_storage ss;
	double resume = 0;
	socklen_t len = sizeof(ss);
	unsigned char *buf;
	struct echo *tab;
	unsigned long limit;
	int opt, one = 1, lfd, ep, fd, n, i;

	while ((opt = getopt_long(argc, argv, "l:", opts, NULL)) != -1) {
		if (opt != 'l')
			fail(2, "usage: connstorm serve [-l HOST:PORT]");
		at = optarg;
	}
	if (optind != argc)
		fail(2, "usage: connstorm serve [-l HOST:PORT]");
	limit = raise_nofile();
	parse_addr(at, &ss, &len, 1);
	tab = calloc(limit, sizeof(*tab));
	buf = malloc(CHUNK);
	ep = epoll_create1(EPOLL_CLOEXEC);
	lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		     0);
	if (!tab || !buf || ep < 0 || lfd < 0)
		fail(1, "setup: %m");
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&ss, len) ||
	    listen(lfd, SERVE_BACKLOG))
		fail(1, "bind/listen %s: %m", at);
	len = sizeof(ss);
	getsockname(lfd, (struct sockaddr *)&ss, &len);
	ev.data.fd = lfd;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev))
		fail(1, "epoll_ctl: %m");
	printf("listening port=%u\n",
	       ntohs(((struct sockaddr_in *)&ss)->sin_port));
	fflush(stdout);

	for (;;) {
		n = epoll_wait(ep, evs, MAX_EVENTS,
			       resume ? ACCEPT_PAUSE_MS : -1);
		if (n < 0 && errno != EINTR)
			fail(1, "epoll_wait: %m");
		if (resume && now() >= resume) {
			ev.data.fd = lfd;
			resume = epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev)
					 ? now() + 1
					 : 0;
		}
		for (i = 0; i < n; i++) {
			if (evs[i].data.fd != lfd) {
				echo_event(tab, evs[i].data.fd, ep, buf);
				continue;
			}
			while ((fd = accept4(lfd, NULL, NULL,
					     SOCK_NONBLOCK | SOCK_CLOEXEC)) >=
			       0) {
				ev.data.fd = fd;
				setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
					   sizeof(one));
				if ((unsigned long)fd >= limit ||
				    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev))
					close(fd);
			}
			if (errno == EMFILE || errno == ENFILE ||
			    errno == ENOBUFS || errno == ENOMEM) {
				/* out of fds: let connections end first */
				fprintf(stderr, "connstorm: accept: %m; "
						"pausing accepts\n");
				epoll_ctl(ep, EPOLL_CTL_DEL, lfd, NULL);
				resume = now() + ACCEPT_PAUSE_MS / 1e3;
			}
		}
	}
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
	if (argc > 1 && !strcmp(argv[1], "client"))
		return cmd_client(argc - 1, argv + 1);
	fail(2, "usage: connstorm serve [-l HOST:PORT] | client -c HOST:PORT "
		"-n N -s SIZE [--smb] [--hold] [--timeout SEC]");
}
