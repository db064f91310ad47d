/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_SOCK_H
#define SMBSPLICE_SOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "conf/parse.h"

/**
 * struct sock - one TCP socket of a connection and its cork state
 * @fd:		the socket
 * @corked:	bytes were written with MORE (MSG_MORE, SPLICE_F_MORE) and may
 *		sit in the kernel waiting for more; sock_uncork() must push
 *		them before the forwarder goes idle on this socket. Set by
 *		every write that carried MORE, cleared by every write without
 *		it and by sock_uncork().
 */
struct sock {
	int fd;
	bool corked;
};

int sock_set_nodelay(int fd);
int sock_set_oobinline(int fd);
int sock_set_save_syn(int fd, bool on);
int sock_set_linger0(int fd);
int sock_listen_hold(int fd, bool hold);
int sock_uncork(struct sock *s);
int sock_set_rcvlowat(int fd, int n);
bool sock_peer_shut(int fd);
int sock_stream(int family, bool mptcp);
int sock_bound(const struct sockaddr *sa, socklen_t len, bool reuseport,
	       bool mptcp);
/* A QUIC listener's UDP socket buffers (sock_udp_bound()). */
#define SOCK_UDP_BUF (4u << 20)
int sock_udp_bound(const struct sockaddr *sa, socklen_t len, bool reuseport);
/* The most bytes one read of a UDP_GRO socket returns (a coalesced batch
 * is at most 64 KiB), and the control room its segment size needs. */
#define SOCK_GRO_MAX  65536
#define SOCK_GRO_CMSG CMSG_SPACE(sizeof(int))

bool sock_gro_on(int fd);
size_t sock_gro_seg(const struct msghdr *h, size_t len);
int sock_send_gso(int fd, const struct sockaddr *to, socklen_t tolen,
		  const void *buf, size_t len, size_t seg);
int sock_listen(const struct sockaddr *sa, socklen_t len, bool reuseport,
		bool mptcp);
int sock_bind_any_port(int fd, const struct sockaddr *sa, socklen_t len);
int sock_set_transparent(int fd, int family);
int sock_set_keepalive(int fd, const struct keepalive *k);
int sock_set_congestion(int fd, const char *alg);
int sock_set_buffers(int fd, unsigned bytes);
int sock_connect_start(int fd, const struct sockaddr *sa, socklen_t len);
int sock_connect_result(int fd);
bool sock_bound_to(int fd, const struct sockaddr *sa, socklen_t len);
void sock_addr_text(const struct sockaddr *sa, char *out, size_t outlen);

#endif /* SMBSPLICE_SOCK_H */
