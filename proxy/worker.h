/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_WORKER_H
#define SMBSPLICE_WORKER_H

#include <ev.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "bufpool.h"
#include "limits.h"
#include "options.h"
#include "pipepool.h"
#include "stats.h"

struct conn;
struct dir;
struct proxy;

/**
 * struct worker - one event loop thread and everything it owns
 * @px:		the process
 * @id:		0 to --workers - 1, for logs and metrics
 * @thread:	the thread running @loop
 * @loop:	this worker's libev loop
 * @pipes:	its splice pipes (drawing on the process-wide budget)
 * @bufs:	its copy buffers
 * @listen_fd:	its own SO_REUSEPORT listening socket
 * @accept_w:	readable watcher on @listen_fd
 * @accept_pause: restarts @accept_w after accept() ran out of fds
 * @accept_warned: when the last accept pause was logged
 * @wake:	the process's way to reach this loop (see @stop)
 * @stop:	set by the main thread before it sends @wake: end every
 *		connection and leave the loop
 * @trim:	shrinks the pools every few seconds
 * @stalls:	directions whose pipe waits for its destination, oldest
 *		first (conn.c)
 * @stall_check: runs while @stalls is not empty (conn.c)
 * @pipe_stalls: pipes that waited too long and were moved to a buffer (a
 *		counter any thread may read)
 * @conns:	live connections, newest first
 * @active:	connections open now (a gauge any thread may read)
 * @accepted:	connections ever accepted (a counter any thread may read)
 * @refused:	clients refused, per enum admit (counters likewise)
 * @denied:	clients refused by --allow (a counter likewise)
 * @backend_failures: failed connects, per backend (counters likewise)
 * @tot:	counters of everything this worker forwarded
 *
 * Nothing here is shared on the data path: the main thread only reads the
 * counters and gauges (see counter.h), and writes @stop once.
 */
struct worker {
	struct proxy *px;
	unsigned id;
	pthread_t thread;
	struct ev_loop *loop;
	struct pipe_pool pipes;
	struct buf_pool bufs;
	int listen_fd;
	ev_io accept_w;
	ev_timer accept_pause;
	ev_tstamp accept_warned;
	ev_async wake;
	bool stop;
	ev_timer trim;
	struct dir *stalls;
	ev_timer stall_check;
	uint64_t pipe_stalls;
	struct conn *conns;
	uint64_t active, accepted;
	uint64_t refused[ADMIT_PER_SOURCE + 1];
	uint64_t denied;
	uint64_t backend_failures[OPT_MAX_BACKENDS];
	struct totals tot;
};

int worker_init(struct worker *w, struct proxy *px, unsigned id);
int worker_start(struct worker *w);
void worker_stop(struct worker *w);
void worker_destroy(struct worker *w);
void worker_report(const struct worker *w, struct totals *t, struct gauges *g,
		   uint64_t *accepted);
void worker_backend_failures(const struct worker *w, uint64_t *sum);

#endif /* SMBSPLICE_WORKER_H */
