/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_CONN_H
#define SMBSPLICE_CONN_H

#include <sys/socket.h>

#include "connlimits.h"

struct lcfg;
struct listener;
struct worker;

void conn_open(struct worker *w, struct listener *l, struct lcfg *cfg,
	       int cli_fd, const struct sockaddr *peer,
	       const struct source_key *source);
void conn_close_all(struct worker *w);
void conn_worker_init(struct worker *w);
void conn_log_quiet(void);

#endif /* SMBSPLICE_CONN_H */
