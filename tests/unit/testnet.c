// SPDX-License-Identifier: GPL-2.0-or-later
/* testnet.c - loopback sockets the unit tests share (test_privhelper.c,
 * test_hostile.c, test_fdpass.c, test_howire.c, test_sockbuf.c): a free
 * port, a connected pair, a count of open descriptors.
 */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <dirent.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <cmocka.h>

#include "testnet.h"

/**
 * free_port() - a TCP port free on 127.0.0.1 now
 *
 * Return: the port, in host order.
 */
int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	port = ntohs(a.sin_port);
	close(fd);
	return port;
}

/**
 * tcp_pair() - a connected pair through a listener of its own
 * @at:	where to listen (port 0: any)
 * @l:	set to the listener, which keeps SYNs as a transparent one under
 *	--user does
 * @c:	set to the connecting end
 * @s:	set to the accepted end
 */
void tcp_pair(struct sockaddr_in at, int *l, int *c, int *s)
{
	socklen_t len = sizeof(at);
	int on = 1;

	*l = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(*l, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	setsockopt(*l, IPPROTO_TCP, TCP_SAVE_SYN, &on, sizeof(on));
	assert_int_equal(bind(*l, (struct sockaddr *)&at, sizeof(at)), 0);
	assert_int_equal(listen(*l, 1), 0);
	assert_int_equal(getsockname(*l, (struct sockaddr *)&at, &len), 0);
	*c = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(*c, (struct sockaddr *)&at, sizeof(at)), 0);
	*s = accept(*l, NULL, NULL);
	assert_true(*s >= 0);
}

/**
 * testnet_count_fds() - descriptors open in this process now
 *
 * Return: their number.
 */
int testnet_count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	assert_non_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n - 3; /* ".", ".." and the DIR's own */
}
