/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_PROXY_H
#define SMBSPLICE_PROXY_H

#include <ev.h>
#include <stdbool.h>

#include "options.h"
#include "pipepool.h"
#include "stats.h"

struct conn;

/**
 * struct proxy - the daemon's state, one per process
 * @loop:		the libev loop
 * @opt:		parsed command line
 * @pool:		splice pipes shared by all connections
 * @listen_fd:		the listening socket
 * @accept_w:		readable watcher on @listen_fd
 * @accept_pause:	restarts @accept_w after accept() ran out of fds
 * @accept_warned:	when the last accept pause was logged
 * @sigint_w:		SIGINT: stop cleanly
 * @sigterm_w:		SIGTERM: stop cleanly
 * @conns:		live connections, newest first
 * @active:		connections open now
 * @total:		connections ever accepted
 * @closed:		counters of the connections that have ended
 * @metrics_fd:		the --stats listening socket, -1 if none
 * @metrics_w:		readable watcher on @metrics_fd
 * @metrics_pause:	restarts @metrics_w after accept() ran out of fds
 */
struct proxy {
	struct ev_loop *loop;
	const struct options *opt;
	struct pipe_pool pool;
	int listen_fd;
	ev_io accept_w;
	ev_timer accept_pause;
	ev_tstamp accept_warned;
	ev_signal sigint_w, sigterm_w;
	struct conn *conns;
	unsigned long active, total;
	struct totals closed;
	int metrics_fd;
	ev_io metrics_w;
	ev_timer metrics_pause;
};

int listener_start(struct proxy *px);
void listener_stop(struct proxy *px);
int metrics_start(struct proxy *px);
void metrics_stop(struct proxy *px);

#endif /* SMBSPLICE_PROXY_H */
