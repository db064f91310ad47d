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
#include "core/limits.h"
#include "conf/options.h"
#include "io/pipepool.h"
#include "observe/timing.h"
#include "observe/counters.h"
#include "quic/quic.h"

struct lcfg;
struct listener;
struct proxy;
struct sockaddr;
struct source_key;

/* A worker's stage; worker_set_state() alone moves it:
 *   running -> no_netns (it could not enter the backend namespace)
 *   running, no_netns -> draining (worker_cmd_drain) -> idle (none left) */
enum worker_state {
	WS_RUNNING,  /* accepts and serves */
	WS_NO_NETNS, /* could not enter the backend namespace: refuses every
		      * listener */
	WS_DRAINING, /* stopped accepting; says when no connection is left */
	WS_IDLE,     /* draining, and no connection left */
	WS_COUNT
};

struct worker_cmd;

/**
 * struct worker_cmd_ops - what one kind of command does
 * @run:	carry it out, on the worker's thread, between two events; the
 *		command is freed after
 * @drop:	give back what the command carries (a socket, a reference)
 *		when the worker ended before it ran; NULL if it carries
 *		nothing of its own
 *
 * The module a kind belongs to defines it, so that the worker runs every
 * kind without knowing any: the listeners' in worker.c (below), the
 * handover's in connmove.c, the control socket's in controlcmd.c.
 */
struct worker_cmd_ops {
	void (*run)(struct worker *w, struct worker_cmd *c);
	void (*drop)(struct worker_cmd *c);
};

/**
 * struct worker_cmd - one thing the main thread asks of a worker
 * @ops:	what kind
 * @l:		a listener
 * @cfg:	settings
 * @fd:		a socket
 * @arg:	anything else; owned by the main thread, which reads it only
 *		once the worker has run the command (WORKER_CMD_WAIT, or
 *		worker_sync_all())
 * @next:	the queue
 *
 * Built with designated initialisers, naming only what the kind takes;
 * its ops' comment says what each field is for and who owns it.
 */
struct worker_cmd {
	const struct worker_cmd_ops *ops;
	struct listener *l;
	struct lcfg *cfg;
	int fd;
	void *arg;
	struct worker_cmd *next;
};

/* Whether worker_run() returns at once, or once the worker ran it. */
enum worker_cmd_wait {
	WORKER_CMD_NOWAIT,
	WORKER_CMD_WAIT,
};

/*
 * The listeners' commands (worker.c):
 *   worker_cmd_add:    accept on @l's socket @fd; both are the worker's (@l a
 *                reference the sender took for it)
 *   worker_cmd_update: new connections on @l start with @cfg, a reference the
 *                worker takes over
 *   worker_cmd_remove: stop accepting on @l: accept what is queued, close
 *   worker_cmd_drain:  stop accepting everywhere; say when no connection is
 * left worker_cmd_stop:   end every connection and leave the loop
 */
extern const struct worker_cmd_ops worker_cmd_add;
extern const struct worker_cmd_ops worker_cmd_update;
extern const struct worker_cmd_ops worker_cmd_remove;
extern const struct worker_cmd_ops worker_cmd_drain;
extern const struct worker_cmd_ops worker_cmd_stop;

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
 * @trim_given:	the process's descriptors ever given back, at the last
 *		trim: a change means memory was freed (worker.c, on_trim())
 * @incoming:	clients on their way to this worker: being placed by it, or
 *		handed to it by the worker that accepted them
 *		(balance.c; atomic, written by them and by this worker)
 * @moved:	clients this worker accepted and handed to a worker that
 *		served fewer connections (a counter, this worker's)
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
	struct quic_host quic;
	struct conn_host host;
	ev_async wake;
	pthread_mutex_t lock;
	struct worker_cmd *cmds;
	enum worker_state state;
	ino_t netns_ino;
	ev_timer trim;
	unsigned long trim_given;
	unsigned incoming;
	uint64_t moved;
};

int worker_init(struct worker *w, struct proxy *px, unsigned id);
int worker_start(struct worker *w);
int worker_run(struct worker *w, const struct worker_cmd *c,
	       enum worker_cmd_wait wait);
void worker_join(struct worker *w);
void worker_destroy(struct worker *w);
void worker_report(const struct worker *w, struct gauges *g, uint64_t *accepted,
		   uint64_t *moved);
struct worker *worker_of_host(struct conn_host *h);
void worker_drain_check(struct worker *w);

/* balance.c: each accepted TCP client to the worker that serves fewest;
 * balance_cmd_take opens a client another worker accepted (@l, @cfg:
 * references the sender took; @fd and @arg: the command's own). */
extern const struct worker_cmd_ops balance_cmd_take;
void balance_place(struct conn_host *h, struct listener *l, struct lcfg *cfg,
		   int fd, const struct sockaddr *peer,
		   const struct source_key *key);
bool balance_pending(const struct worker *w);
bool worker_is_idle(const struct worker *w);
uint64_t worker_active(const struct worker *w);
uint64_t worker_accepted(const struct worker *w);
unsigned long worker_active_all(const struct proxy *px);
int worker_sync_all(struct proxy *px);
void worker_choose_netns(struct proxy *px);
int worker_init_all(struct proxy *px);
int worker_start_all(struct proxy *px);

#endif /* SMBSPLICE_WORKER_H */
