/* SPDX-License-Identifier: GPL-2.0-or-later */
/* testnet.h - loopback sockets the privileged side's tests share, and a
 * count of open descriptors for the tests that look for leaks */
#ifndef SMBSPLICE_TESTNET_H
#define SMBSPLICE_TESTNET_H

#include <netinet/in.h>

int free_port(void);
void tcp_pair(struct sockaddr_in at, int *l, int *c, int *s);
int testnet_count_fds(void);

#endif /* SMBSPLICE_TESTNET_H */
