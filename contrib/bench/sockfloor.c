// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * sockfloor - an in-kernel TCP forwarder, to measure what no forwarder beats
 *
 *   sockfloor LISTEN_PORT BACKEND_PORT [NETNS_PATH]
 *
 * Theory of operation: a benchmark contestant, not a product. It accepts
 * on 127.0.0.1:LISTEN_PORT, connects to 127.0.0.1:BACKEND_PORT (inside the
 * network namespace at NETNS_PATH, if given) and puts both sockets in a
 * BPF sockhash whose verdict program (no stream parser) redirects every
 * arriving skb to the other socket's send side. Bytes never reach user
 * space and no user-space thread wakes per message; what remains is the
 * kernel's work for the second TCP connection and the sockmap worker that
 * transmits redirected skbs. That is the floor for any forwarder of small
 * messages on this machine, against which smbsplice's cost can be judged.
 *
 * The verdict program finds the peer through a hash map from the arriving
 * socket's (remote port, local port) to the peer's: ports alone identify
 * a socket here because every connection is on 127.0.0.1. The program is
 * written as instructions, so that the benchmark needs neither a BPF
 * compiler nor libbpf.
 *
 * What it does not do, being a floor: it parses nothing, so it cannot
 * splice, observe or choose. Bytes that arrive before the pair is in the
 * map (the client's first message may) are copied once by the pair's
 * thread (forward_early()), which would race with a sender that streams
 * on. An end of stream is passed on by shutdown() from that thread once
 * the bytes before it have been handed on, a reset at once. The redirect
 * queue has no bound: a fast sender's bytes pile up in the kernel in
 * front of a slow receiver, which no real forwarder may allow.
 *
 * Bounds: one thread per connection pair, at most MAX_PAIRS in the maps;
 * the process exits after MAX_ACCEPTS connections.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/sockios.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_PAIRS     4096
#define MAX_ACCEPTS   100000000UL
#define LOG_SIZE      65536
#define DRAIN_WAIT_MS 30000 /* for a stream's end to follow its bytes */

/* Instruction builders, as in the kernel's filter.h */
#define INSN(c, d, s, o, i)                                                    \
	((struct bpf_insn){ .code = (c),                                       \
			    .dst_reg = (d),                                    \
			    .src_reg = (s),                                    \
			    .off = (o),                                        \
			    .imm = (i) })
#define MOV64_REG(d, s)	 INSN(BPF_ALU64 | BPF_MOV | BPF_X, d, s, 0, 0)
#define MOV64_IMM(d, i)	 INSN(BPF_ALU64 | BPF_MOV | BPF_K, d, 0, 0, i)
#define ADD64_IMM(d, i)	 INSN(BPF_ALU64 | BPF_ADD | BPF_K, d, 0, 0, i)
#define LDX_W(d, s, o)	 INSN(BPF_LDX | BPF_MEM | BPF_W, d, s, o, 0)
#define STX_W(d, s, o)	 INSN(BPF_STX | BPF_MEM | BPF_W, d, s, o, 0)
#define JEQ_IMM(d, i, o) INSN(BPF_JMP | BPF_JEQ | BPF_K, d, 0, o, i)
#define CALL(f)		 INSN(BPF_JMP | BPF_CALL, 0, 0, 0, f)
#define EXIT()		 INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)
#define LD_MAP_FD(d, fd)                                                       \
	INSN(BPF_LD | BPF_DW | BPF_IMM, d, BPF_PSEUDO_MAP_FD, 0, fd),          \
		INSN(0, 0, 0, 0, 0)

/* A socket's key: the two words of __sk_buff the verdict program reads */
struct key {
	uint32_t remote_port; /* as __sk_buff holds it: see key_of() */
	uint32_t local_port;  /* host order */
};

static int socks_fd, peers_fd, listen_port, backend_port, netns_fd = -1;

/**
 * fail() - print a message and exit
 * @fmt:	printf format, then its arguments
 */
static void __attribute__((noreturn, format(printf, 1, 2)))
fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fputs("sockfloor: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(1);
}

/**
 * sys_bpf() - the bpf() system call
 * @cmd:	BPF_* command
 * @attr:	its attributes
 *
 * Return: as bpf(2)
 */
static int sys_bpf(int cmd, union bpf_attr *attr)
{
	return syscall(SYS_bpf, cmd, attr, sizeof(*attr));
}

/**
 * map_create() - create a BPF map
 * @type:	BPF_MAP_TYPE_*
 * @value_size:	bytes per value
 *
 * Return: the map's descriptor; exits on failure
 */
static int map_create(int type, unsigned int value_size)
{
	union bpf_attr a = { .map_type = type,
			     .key_size = sizeof(struct key),
			     .value_size = value_size,
			     .max_entries = 2 * MAX_PAIRS };
	int fd = sys_bpf(BPF_MAP_CREATE, &a);

	if (fd < 0)
		fail("bpf(BPF_MAP_CREATE): %m");
	return fd;
}

/**
 * verdict_load() - load the verdict program and attach it to the sockhash
 *
 * In C: key = { skb->remote_port, skb->local_port }; peer =
 * lookup(peers, key); return peer ? bpf_sk_redirect_hash(skb, socks, peer,
 * 0) : SK_PASS. No peer means the pair is being unlinked at its end; the
 * bytes are then left to the socket's reader, which is gone by then.
 */
static void verdict_load(void)
{
	struct bpf_insn prog[] = {
		MOV64_REG(BPF_REG_6, BPF_REG_1),
		LDX_W(BPF_REG_2, BPF_REG_6,
		      offsetof(struct __sk_buff, remote_port)),
		STX_W(BPF_REG_10, BPF_REG_2, -8),
		LDX_W(BPF_REG_2, BPF_REG_6,
		      offsetof(struct __sk_buff, local_port)),
		STX_W(BPF_REG_10, BPF_REG_2, -4),
		LD_MAP_FD(BPF_REG_1, peers_fd),
		MOV64_REG(BPF_REG_2, BPF_REG_10),
		ADD64_IMM(BPF_REG_2, -8),
		CALL(BPF_FUNC_map_lookup_elem),
		JEQ_IMM(BPF_REG_0, 0, 7), /* over the 7 of the redirect */
		MOV64_REG(BPF_REG_1, BPF_REG_6),
		LD_MAP_FD(BPF_REG_2, socks_fd),
		MOV64_REG(BPF_REG_3, BPF_REG_0),
		MOV64_IMM(BPF_REG_4, 0),
		CALL(BPF_FUNC_sk_redirect_hash),
		EXIT(),
		MOV64_IMM(BPF_REG_0, SK_PASS),
		EXIT(),
	};
	static char log[LOG_SIZE];
	union bpf_attr a = { .prog_type = BPF_PROG_TYPE_SK_SKB,
			     .insns = (uintptr_t)prog,
			     .insn_cnt = sizeof(prog) / sizeof(prog[0]),
			     .license = (uintptr_t) "GPL",
			     .log_buf = (uintptr_t)log,
			     .log_size = sizeof(log),
			     .log_level = 1 };
	int prog_fd = sys_bpf(BPF_PROG_LOAD, &a);

	if (prog_fd < 0)
		fail("bpf(BPF_PROG_LOAD): %m\n%s", log);
	memset(&a, 0, sizeof(a));
	a.target_fd = socks_fd;
	a.attach_bpf_fd = prog_fd;
	a.attach_type = BPF_SK_SKB_VERDICT;
	if (sys_bpf(BPF_PROG_ATTACH, &a))
		fail("bpf(BPF_PROG_ATTACH): %m");
}

/**
 * key_of() - a connected socket's key, as the verdict program builds it
 * @fd:		the socket
 *
 * Return: the key; exits on failure
 */
static struct key key_of(int fd)
{
	struct sockaddr_in local, remote;
	socklen_t ll = sizeof(local), rl = sizeof(remote);

	if (getsockname(fd, (struct sockaddr *)&local, &ll) ||
	    getpeername(fd, (struct sockaddr *)&remote, &rl))
		fail("getsockname/getpeername: %m");
	/* __sk_buff's remote_port is the network-order port in the high half
	 * on little-endian machines, the low half on big-endian ones
	 */
	return (struct key)
	{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
		.remote_port = (uint32_t)remote.sin_port << 16,
#else
		.remote_port = remote.sin_port,
#endif
		.local_port = ntohs(local.sin_port)
	};
}

/**
 * map_set() - update or delete one element
 * @map:	map descriptor
 * @k:		key
 * @value:	value, or NULL to delete
 *
 * Return: as bpf(2)
 */
static int map_set(int map, const struct key *k, const void *value)
{
	union bpf_attr a = { .map_fd = map,
			     .key = (uintptr_t)k,
			     .value = (uintptr_t)value };

	return sys_bpf(value ? BPF_MAP_UPDATE_ELEM : BPF_MAP_DELETE_ELEM, &a);
}

/**
 * pair_link() - put a pair in the maps, each socket pointing at the other
 * @fd:		the two sockets: accepted, then the backend
 * @k:		their keys
 *
 * Return: 0, or -1 with errno set
 */
static int pair_link(const int fd[2], const struct key k[2])
{
	uint32_t v0 = fd[0], v1 = fd[1];

	/* The verdict runs only for sockets in the sockhash, and drops what
	 * it cannot redirect: so the peer entries first, then the backend
	 * (silent until the client speaks), the client last.
	 */
	if (map_set(peers_fd, &k[0], &k[1]) || map_set(peers_fd, &k[1], &k[0]))
		return -1;
	return map_set(socks_fd, &k[1], &v1) || map_set(socks_fd, &k[0], &v0)
		       ? -1
		       : 0;
}

/**
 * forward_early() - pass on bytes that arrived before the pair was linked
 * @from:	socket to drain
 * @to:		its peer
 *
 * Bytes a socket held when it entered the sockhash do not go through the
 * verdict program: the kernel queues them for recv() (SIOCINQ no longer
 * counts them). Copy them once. A sender that waits for an answer after
 * its first message (an SMB or rr client) sends nothing meanwhile; one
 * that streams on could have later bytes redirected before these, which
 * is why the floor is not run on bulk uploads.
 */
static void forward_early(int from, int to)
{
	char buf[65536];
	ssize_t n;

	while ((n = recv(from, buf, sizeof(buf), MSG_DONTWAIT)) > 0)
		if (send(to, buf, n, MSG_NOSIGNAL) != n)
			return;
}

/**
 * tcp_info_of() - a socket's TCP_INFO
 * @fd:		the socket
 * @ti:		filled in
 *
 * Return: 0, or -1 if getsockopt() failed (@ti is then zeroed)
 */
static int tcp_info_of(int fd, struct tcp_info *ti)
{
	socklen_t len = sizeof(*ti);

	if (!getsockopt(fd, IPPROTO_TCP, TCP_INFO, ti, &len))
		return 0;
	memset(ti, 0, sizeof(*ti));
	return -1;
}

/**
 * tcp_received() - sequence space a socket has received: its bytes and FIN
 * @fd:		the socket
 *
 * Return: the count, or 0 if TCP_INFO fails
 */
static uint64_t tcp_received(int fd)
{
	struct tcp_info ti;

	tcp_info_of(fd, &ti);
	return ti.tcpi_bytes_received;
}

/**
 * tcp_queued() - sequence space a socket has been given to send
 * @fd:		the socket
 *
 * Acknowledged bytes plus those still in the send queue; an actively
 * opened socket's count includes its SYN, so callers take differences.
 *
 * Return: the count, or 0 if TCP_INFO or SIOCOUTQ fails
 */
static uint64_t tcp_queued(int fd)
{
	struct tcp_info ti;
	int outq;

	if (tcp_info_of(fd, &ti) || ioctl(fd, SIOCOUTQ, &outq))
		return 0;
	return ti.tcpi_bytes_acked + outq;
}

/**
 * tcp_open() - whether a socket can still send
 * @fd:		the socket
 *
 * Return: nonzero while established or with only the peer's end seen
 */
static int tcp_open(int fd)
{
	struct tcp_info ti;

	tcp_info_of(fd, &ti);
	return ti.tcpi_state == BPF_TCP_ESTABLISHED ||
	       ti.tcpi_state == BPF_TCP_CLOSE_WAIT;
}

/**
 * drain_wait() - wait until what one socket received is queued on the other
 * @from:	the socket whose peer ended its stream
 * @to:		the socket that will pass the end on
 * @to_base:	tcp_queued() of @to when the pair was linked, before it sent
 *
 * The sockmap worker's queue is not visible and has no bound (the source
 * socket takes, and acknowledges, all it is sent), so the end of a stream
 * may be seen long before its last bytes are handed on. All @from
 * received but its FIN has been handed on once @to has queued as much;
 * a shutdown() then goes after it. For at most DRAIN_WAIT_MS.
 */
static void drain_wait(int from, int to, uint64_t to_base)
{
	int ms;

	for (ms = 0; ms < DRAIN_WAIT_MS; ms++) {
		if (tcp_queued(to) - to_base + 1 >= tcp_received(from) ||
		    !tcp_open(to))
			return;
		usleep(1000);
	}
	fprintf(stderr,
		"sockfloor: %d ms and bytes still queued; ending anyway\n",
		DRAIN_WAIT_MS);
}

/**
 * pair_run() - a pair's thread: link it, wait for both ends, unlink it
 * @arg:	the accepted socket, cast
 *
 * Return: NULL
 */
static void *pair_run(void *arg)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(backend_port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd[2] = { (int)(intptr_t)arg, -1 };
	struct pollfd p[2] = { { .fd = -1, .events = POLLRDHUP },
			       { .fd = -1, .events = POLLRDHUP } };
	uint64_t base[2];
	struct key k[2];
	int ended = 0, i, one = 1;

	/* setns() moves only this thread, which makes only this socket */
	if (netns_fd >= 0 && setns(netns_fd, CLONE_NEWNET)) {
		perror("sockfloor: setns");
		goto out;
	}
	fd[1] = socket(AF_INET, SOCK_STREAM, 0);
	if (fd[1] < 0 || connect(fd[1], (struct sockaddr *)&sa, sizeof(sa))) {
		perror("sockfloor: backend");
		goto out;
	}
	setsockopt(fd[1], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	k[0] = key_of(fd[0]);
	k[1] = key_of(fd[1]);
	base[0] = tcp_queued(fd[0]);
	base[1] = tcp_queued(fd[1]);
	if (pair_link(fd, k)) {
		perror("sockfloor: sockhash");
		goto out;
	}
	/* the server speaks only after the client: its socket holds nothing */
	forward_early(fd[0], fd[1]);
	p[0].fd = fd[0];
	p[1].fd = fd[1];
	while (ended != 3 && poll(p, 2, -1) >= 0) {
		for (i = 0; i < 2; i++) {
			if (!(p[i].revents & (POLLRDHUP | POLLHUP | POLLERR)) ||
			    (ended & (1 << i)))
				continue;
			/* a reset has nothing more to hand on */
			if (!(p[i].revents & POLLERR))
				drain_wait(fd[i], fd[!i], base[!i]);
			shutdown(fd[!i], SHUT_WR);
			ended |= 1 << i;
			/* poll() would report HUP or ERR for ever */
			p[i].fd = -1;
		}
	}
	map_set(socks_fd, &k[0], NULL);
	map_set(socks_fd, &k[1], NULL);
	map_set(peers_fd, &k[0], NULL);
	map_set(peers_fd, &k[1], NULL);
out:
	close(fd[0]);
	if (fd[1] >= 0)
		close(fd[1]);
	return NULL;
}

/**
 * main() - parse the ports, set up the maps and program, accept forever
 * @argc:	argument count
 * @argv:	LISTEN_PORT BACKEND_PORT [NETNS_PATH]
 *
 * Return: does not return on success; 1 on failure, 2 on a bad command line
 */
int main(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	unsigned long n;
	pthread_t t;
	int lfd, one = 1, fd;

	if (argc < 3 || argc > 4 || !(listen_port = atoi(argv[1])) ||
	    !(backend_port = atoi(argv[2]))) {
		fputs("usage: sockfloor LISTEN_PORT BACKEND_PORT [NETNS_PATH]\n",
		      stderr);
		return 2;
	}
	if (argc == 4 && (netns_fd = open(argv[3], O_RDONLY | O_CLOEXEC)) < 0)
		fail("%s: %m", argv[3]);
	signal(SIGPIPE, SIG_IGN);
	socks_fd = map_create(BPF_MAP_TYPE_SOCKHASH, sizeof(uint32_t));
	peers_fd = map_create(BPF_MAP_TYPE_HASH, sizeof(struct key));
	verdict_load();

	sa.sin_port = htons(listen_port);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 ||
	    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 4096))
		fail("listen on port %d: %m", listen_port);
	printf("sockfloor: listening on 127.0.0.1:%d\n", listen_port);
	fflush(stdout);
	for (n = 0; n < MAX_ACCEPTS; n++) {
		fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			continue;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		if (pthread_create(&t, NULL, pair_run, (void *)(intptr_t)fd)) {
			close(fd);
			continue;
		}
		pthread_detach(t);
	}
	return 0;
}
