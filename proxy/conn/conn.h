/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_CONN_H
#define SMBSPLICE_CONN_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "conn/conn-t.h"
#include "conn/connhost.h"
#include "core/connlimits.h"

struct buf_pool;
struct conn;
struct lcfg;
struct listener;
struct pipe_pool;
struct proxy;
struct timing_pool;

void conn_open(struct conn_host *h, struct listener *l, struct lcfg *cfg,
	       int cli_fd, const struct sockaddr *peer,
	       const struct source_key *source);
void conn_close_all(struct conn_host *h);

#endif /* SMBSPLICE_CONN_H */
