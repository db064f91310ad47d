/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_PP2_SOCK_H
#define SMBSPLICE_PP2_SOCK_H

#include <stddef.h>
#include <sys/socket.h>

#include "io/peek.h"
#include "pp2/pp2.h"

/* The longest PROXY header taken, TLVs included: HAProxy's and the cloud
 * load balancers' are a few hundred bytes; a longer one is refused, so a
 * gateway cannot make a connection hold more than this while it waits. */
#define PP2_SOCK_MAX 1024

enum peek_verdict pp2_sock_read(int fd, unsigned *peeked,
				struct peek_detail *out, struct pp2_info *info);
int pp2_sock_send(int srv_fd, int cli_fd, const struct sockaddr *client);

#endif /* SMBSPLICE_PP2_SOCK_H */
