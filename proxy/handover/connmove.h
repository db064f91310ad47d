/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_CONNMOVE_H
#define SMBSPLICE_CONNMOVE_H

#include <stddef.h>

struct acceptor;

#include "conn/conn-t.h"
#include "handover/image.h"

struct worker_cmd_ops;

/*
 * The handover's commands, each worker's (worker_run(), handover.c):
 *   wcmd_pause:   stop accepting and forwarding
 *   wcmd_save:    write the listening sockets and connections into @arg, a
 *                 struct image_writer (paused)
 *   wcmd_unpause: the handover failed: forward and accept again
 *   wcmd_abandon: the handover is done: forget every listening socket and
 *                 connection, closing this process's copies
 */
extern const struct worker_cmd_ops wcmd_pause;
extern const struct worker_cmd_ops wcmd_save;
extern const struct worker_cmd_ops wcmd_unpause;
extern const struct worker_cmd_ops wcmd_abandon;

void conn_host_pause(struct conn_host *h);
void conn_host_resume(struct conn_host *h);
void conn_host_save(const struct conn_host *h, struct image_writer *w);
void conn_host_save_listeners(const struct acceptor *a, struct image_writer *w);
void conn_host_abandon(struct conn_host *h);
int conn_adopt(struct conn_host *h, struct listener *l,
	       const struct img_conn_view *v, struct image_in *in, char *err,
	       size_t errlen);

#endif /* SMBSPLICE_CONNMOVE_H */
