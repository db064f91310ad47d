/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_CONN_H
#define SMBSPLICE_CONN_H

#include <sys/socket.h>

struct worker;

void conn_open(struct worker *w, int cli_fd, const struct sockaddr *peer);
void conn_close_all(struct worker *w);

#endif /* SMBSPLICE_CONN_H */
