/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_CONN_H
#define SMBSPLICE_CONN_H

#include <sys/socket.h>

#include "proxy.h"
#include "stats.h"

void conn_open(struct proxy *px, int cli_fd, const struct sockaddr *peer);
void conn_close_all(struct proxy *px);
void conn_sum_live(const struct proxy *px, struct totals *t);

#endif /* SMBSPLICE_CONN_H */
