/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_CONN_H
#define SMBSPLICE_CONN_H

#include <sys/socket.h>

#include "proxy.h"

void conn_open(struct proxy *px, int cli_fd, const struct sockaddr *peer);
void conn_close_all(struct proxy *px);

#endif /* SMBSPLICE_CONN_H */
