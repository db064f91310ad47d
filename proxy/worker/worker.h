/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_WORKER_H
#define SMBSPLICE_WORKER_H

#include <ev.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "net/accept.h"
#include "io/bufpool.h"
#include "conn/conn.h"
#include "core/connlimits.h"
#include "conf/options.h"
#include "io/pipepool.h"
#include "observe/timing.h"
#include "observe/counters.h"

struct lcfg;
struct listener;
struct proxy;

enum worker_cmd_kind {
	WCMD_ADD,    /* accept on @l's socket @fd */
	WCMD_UPDATE, /* new connections on @l start with @cfg */
	WCMD_REMOVE, /* stop accepting on @l: accept what is queued, close */
	WCMD_DRAIN,  /* stop accepting everywhere; say when no connection is
		      * left */
	WCMD_STOP,   /* end every connection and leave the loop */
	WCMD_SYNC,   /* tell the main thread every command before is done */
	WCMD_SNAPSHOT, /* copy the connections into @arg, a struct connview */
	WCMD_KILL,     /* reset the connection @arg (struct conn_kill) names */
	WCMD_HOLD,     /* stop accepting on @l until WCMD_RESUME */
	WCMD_RESUME,   /* accept on @l again */
	WCMD_PAUSE,    /* a handover: stop accepting and forwarding */
	WCMD_SAVE,     /* write the listening sockets and connections into
			* @arg, a struct image_writer (paused) */
	WCMD_UNPAUSE,  /* the handover failed: forward and accept again */
	WCMD_ABANDON,  /* the handover is done: forget every listening socket
			* and connection, closing this process's copies */
};

/* A worker's stage; worker_set_state() alone moves it:
 *   running -> no_netns (it could not enter the backend namespace)
 *   running, no_netns -> draining (WCMD_DRAIN) -> idle (none left) */
enum worker_state {
	WS_RUNNING,  /* accepts and serves */
	WS_NO_NETNS, /* could not enter the backend namespace: refuses every
		      * listener */
	WS_DRAINING, /* stopped accepting; says when no connection is left */
	WS_IDLE,     /* draining, and no connection left */
	WS_COUNT
};

/**
 * struct worker_cmd - one thing the main thread asks of a worker
 * @kind:	what
 * @l:		the listener, for ADD, UPDATE and REMOVE
 * @cfg:	the new settings, for UPDATE (a reference the worker takes
 *		over)
 * @fd:		the socket, for ADD
 * @arg:	what SNAPSHOT fills and KILL names, owned by the main thread,
 *		which reads it after workers_sync()
 * @next:	the queue
 */
struct worker_cmd {
	enum worker_cmd_kind kind;
	struct listener *l;
	struct lcfg *cfg;
	int fd;
	void *arg;
	struct worker_cmd *next;
};

/**
 * struct worker - one event loop thread and everything it owns
 * @px:		the process
 * @id:		0 to --workers - 1, for logs and metrics
 * @thread:	the thread running @loop
 * @loop:	this worker's libev loop
 * @pipes:	its splice pipes (drawing on the process-wide budget)
 * @bufs:	its copy buffers
 * @timing:	spare blocks for timing messages (timing.c)
 * @acc:	the listening sockets it accepts on (accept.c)
 * @host:	its connections (conn.c)
 * @wake:	the main thread's way to reach this loop (see @cmds)
 * @lock:	guards @cmds
 * @cmds:	commands from the main thread, oldest first
 * @state:	its stage (written by the worker, atomic: the main thread
 *		reads it with worker_is_idle())
 * @netns_ino:	the network namespace the thread sits in (its inode), for
 *		dialling backends in another one
 * @trim:	shrinks the pools every few seconds
 *
 * Nothing here is shared on the data path: the main thread only reads the
 * counters and gauges (see counter.h), and queues commands under @lock.
 */
struct worker {
	struct proxy *px;
	unsigned id;
	pthread_t thread;
	struct ev_loop *loop;
	struct pipe_pool pipes;
	struct buf_pool bufs;
	struct timing_pool timing;
	struct acceptor acc;
	struct conn_host host;
	ev_async wake;
	pthread_mutex_t lock;
	struct worker_cmd *cmds;
	enum worker_state state;
	ino_t netns_ino;
	ev_timer trim;
};

int worker_init(struct worker *w, struct proxy *px, unsigned id);
int worker_start(struct worker *w);
int worker_send(struct worker *w, enum worker_cmd_kind kind, struct listener *l,
		struct lcfg *cfg, int fd);
int worker_ask(struct worker *w, enum worker_cmd_kind kind, struct listener *l,
	       void *arg);
void worker_join(struct worker *w);
void worker_destroy(struct worker *w);
void worker_report(const struct worker *w, struct gauges *g,
		   uint64_t *accepted);
bool worker_is_idle(const struct worker *w);
uint64_t worker_active(const struct worker *w);
uint64_t worker_accepted(const struct worker *w);
unsigned long workers_active(const struct proxy *px);
int workers_sync(struct proxy *px);

#endif /* SMBSPLICE_WORKER_H */
