/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_CONNMOVE_H
#define SMBSPLICE_CONNMOVE_H

#include <stddef.h>

struct acceptor;

#include "conn/conn-t.h"
#include "handover/image.h"

struct worker_cmd_ops;

/*
 * The handover's commands, each worker's (worker_run(), handover_out.c):
 *   connmove_cmd_pause:   stop accepting and forwarding
 *   connmove_cmd_save:    write the listening sockets and connections into
 * @arg, a struct image_writer (paused) connmove_cmd_unpause: the handover
 * failed: forward and accept again connmove_cmd_abandon: the handover is done:
 * forget every listening socket and connection, closing this process's copies
 */
extern const struct worker_cmd_ops connmove_cmd_pause;
extern const struct worker_cmd_ops connmove_cmd_save;
extern const struct worker_cmd_ops connmove_cmd_unpause;
extern const struct worker_cmd_ops connmove_cmd_abandon;

void connmove_pause(struct conn_host *h);
void connmove_resume(struct conn_host *h);
void connmove_save(const struct conn_host *h, struct image_writer *w);
void connmove_save_listeners(const struct acceptor *a, struct image_writer *w);
void connmove_abandon(struct conn_host *h);
bool connmove_stays(const struct conn *c);
int connmove_adopt(struct conn_host *h, struct listener *l,
		   const struct img_conn_view *v, struct image_in *in,
		   char *err, size_t errlen);

#endif /* SMBSPLICE_CONNMOVE_H */
