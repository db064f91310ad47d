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
#include "core/limits.h"

struct buf_pool;
struct conn;
struct lcfg;
struct listener;
struct pipe_pool;
struct proxy;
struct timing_pool;

void conn_open(struct conn_host *h, struct listener *l, struct lcfg *cfg,
	       int cli_fd, const struct sockaddr *peer,
	       const struct source_key *source, unsigned *arrival);
void conn_close_all(struct conn_host *h);

void conn_set_state(struct conn *c, enum conn_state next);
void conn_end(struct conn *c, enum conn_end end, const char *why);
void conn_free(struct conn *c);

/* After the backend socket could not be created for want of descriptors:
 * how long to wait before the next try (and the accept pause). */
#define CONN_CONNECT_RETRY 0.1
enum conn_end conn_end_for_errno(int err);
const char *conn_state_text(enum conn_state s);
void conn_rearm(struct conn *c, ev_tstamp after);

/* For the handover, which rebuilds a connection (connmove.c). */
void conn_dirs_init(struct conn *c);
void conn_watchers_init(struct conn *c);

void conn_note_auth(struct conn *c);
void conn_arm_open(struct conn *c);
void conn_open_timer(struct conn *c);

void conn_host_init(struct conn_host *h, struct proxy *px, struct ev_loop *loop,
		    unsigned id, struct pipe_pool *pipes, struct buf_pool *bufs,
		    struct timing_pool *timing, const struct conn_host_ops *ops,
		    void *ctx);

#endif /* SMBSPLICE_CONN_H */
