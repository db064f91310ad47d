/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_DIR_H
#define SMBSPLICE_DIR_H

#include <stdbool.h>

#include "conn/conn-t.h"

void dir_init(struct dir *d, struct conn *c, enum dir_index id,
	      struct sock *src, struct sock *dst,
	      void (*cb)(struct ev_loop *, ev_io *, int));
enum pump_status dir_step(struct dir *d, bool *progress);
void dir_stop(struct dir *d, struct conn_host *h);
void dir_save(const struct dir *d, struct dir_saved *r, const void **bytes,
	      const struct pipe_slot **pipe);
int dir_restore(struct dir *d, const struct dir_saved *r, const void *bytes,
		struct pipe_slot *pipe);

#endif /* SMBSPLICE_DIR_H */
