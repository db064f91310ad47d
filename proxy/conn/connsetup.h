/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_CONNSETUP_H
#define SMBSPLICE_CONNSETUP_H

#include <ev.h>

#include "conn/conn-t.h"

void conn_host_init(struct conn_host *h, struct proxy *px, struct ev_loop *loop,
		    unsigned id, struct pipe_pool *pipes, struct buf_pool *bufs,
		    struct timing_pool *timing, const struct conn_host_ops *ops,
		    void *ctx);

#endif /* SMBSPLICE_CONNSETUP_H */
