// SPDX-License-Identifier: GPL-2.0-or-later
/* connmove.c - a connection leaving one process and arriving in the next
 *
 * Theory of operation: a live handover (handover.c) moves every
 * connection to the next process mid-message. Here is what that means
 * for one connection, in four steps:
 *
 *   pause:    every watcher and timer of the thread's connections stops
 *             (conn_host_pause()); nothing is read or written from here,
 *             and bytes that come wait in the kernel;
 *   save:     each connection becomes an image record (conn_save()): its
 *             stage, deadlines, sockets, and per direction the pump's
 *             pending bytes (a pipe's travel as the pipe, with its bytes
 *             inside), the framer's position and held bytes, the
 *             latency table's outstanding requests, the capture's state;
 *   then either, the next process having said it took everything,
 *   abandon:  the connection is forgotten here (conn_host_abandon()):
 *             this process's copies of its descriptors are closed, which
 *             sends nothing, since the next process holds the same
 *             sockets; no end line, no reset;
 *   or, the handover having failed,
 *   resume:   every watcher starts again from the connection's state
 *             (conn_resume()), as if nothing had happened.
 *
 * In the next process conn_adopt() rebuilds each record into a live
 * connection, without starting any watcher: nothing is read from a
 * socket before the old process has stopped for good; conn_resume() then
 * starts it. A record is checked whole before the connection is linked;
 * one that fails refuses the handover, and the old process goes on.
 *
 * In the old process each step is a command of the worker's queue
 * (wcmd_pause, wcmd_save, wcmd_abandon, wcmd_unpause, at the end of the
 * first half of this file), which the worker's thread runs between two
 * events, for its listening sockets (accept.c) and its connections alike.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net/accept.h"
#include "conn/connclock.h"
#include "conn/connhost.h"
#include "handover/connmove.h"
#include "conn/connstate.h"
#include "common/counter.h"
#include "conn/dir.h"
#include "net/listener.h"
#include "conn/observe.h"
#include "io/pipepool.h"
#include "core/proxy.h"
#include "worker/worker.h"

/**
 * conn_resume() - run a connection again after a pause, or an adoption
 * @c:	the connection, with no watcher running
 *
 * Each stage starts what it waits on: the handshake its client socket,
 * a connect in flight its backend socket, a connect that waits for a
 * descriptor its retry; an open connection runs each direction that is
 * not done once, as if its socket had woken it, which arms the watcher
 * its pump then asks for. The timer runs for what is left of the stage's
 * deadline.
 */
static void conn_resume(struct conn *c)
{
	struct ev_loop *loop = c->host->loop;
	ev_tstamp left = c->deadline - ev_now(loop);

	if (left < 0)
		left = 0;
	switch (c->state) {
	case CS_CONNECTING:
		if (c->srv.fd < 0) { /* waits for a descriptor: retry soon */
			conn_rearm(c, left < CONN_CONNECT_RETRY
					      ? left
					      : CONN_CONNECT_RETRY);
			return;
		}
		/* fall through */
	case CS_PROXY_HEADER:
	case CS_HANDSHAKE:
		ev_io_start(loop, &c->connect_w);
		conn_rearm(c, left);
		return;
	case CS_OPEN:
		conn_arm_open(c);
		for (unsigned i = 0; i < DIR_COUNT; i++)
			if (!(c->dir[i].flags & DIR_F_DONE))
				ev_feed_event(loop, &c->dir[i].rd, EV_READ);
		return;
	default:
		return;
	}
}

/**
 * conn_host_pause() - stop every connection of a thread where it is
 * @h:	the thread's host
 */
void conn_host_pause(struct conn_host *h)
{
	for (struct conn *c = h->conns; c; c = c->next) {
		for (unsigned i = 0; i < DIR_COUNT; i++)
			dir_stop(&c->dir[i], h);
		ev_io_stop(h->loop, &c->connect_w);
		ev_timer_stop(h->loop, &c->timer);
	}
	stall_list_stop(&h->stalls);
}

/**
 * conn_host_resume() - run every connection of a thread again
 * @h:	the thread's host, paused, or with adopted connections
 */
void conn_host_resume(struct conn_host *h)
{
	for (struct conn *c = h->conns; c; c = c->next)
		conn_resume(c);
}

/**
 * conn_save() - write a connection into the image
 * @c:	the connection, paused
 * @w:	the image
 */
static void conn_save(const struct conn *c, struct image_writer *w)
{
	struct img_conn r = { .id = c->id,
			      .worker = c->host->id,
			      .state = c->state,
			      .be = c->be,
			      .peeked = c->peeked,
			      .cli_fd = imgw_fd(w, c->cli.fd),
			      .srv_fd = imgw_fd(w, c->srv.fd),
			      .started = c->started,
			      .deadline = c->deadline,
			      .last_active = c->last_active,
			      .cli_corked = c->cli.corked,
			      .srv_corked = c->srv.corked,
			      .unauth = c->unauth,
			      .admitted = c->admitted,
			      .lowat = c->lowat,
			      .smb = c->lo->mode == MODE_SMB };
	const void *tails[4] = { NULL, NULL, NULL, NULL };
	size_t lens[4] = { 0, 0, 0, 0 };
	struct timing_saved tm;
	struct trace_conn_saved tr;

	snprintf(r.listener, sizeof(r.listener), "%s", c->l->name);
	memcpy(r.peer, &c->peer, sizeof(r.peer));
	memcpy(r.cli_text, c->cli_text, sizeof(r.cli_text));
	memcpy(r.source, c->source.a, sizeof(r.source));
	for (unsigned i = 0; i < DIR_COUNT; i++) {
		const struct pipe_slot *pipe = NULL;

		r.dir[i].pipe_rd = r.dir[i].pipe_wr = -1;
		if (c->state != CS_OPEN)
			continue;
		dir_save(&c->dir[i], &r.dir[i], &tails[i], &pipe);
		lens[i] = r.dir[i].pump.pending;
		if (pipe) {
			r.dir[i].pipe_rd = imgw_fd(w, pipe->rd);
			r.dir[i].pipe_wr = imgw_fd(w, pipe->wr);
		}
	}
	if (c->state == CS_OPEN)
		observe_save(c, &tm, &r.timing_len, &tr, &r.trace_len);
	tails[2] = &tm;
	lens[2] = r.timing_len;
	tails[3] = &tr;
	lens[3] = r.trace_len;
	imgw_put(w, IMG_CONN, &r, sizeof(r), tails, lens, 4);
}

/**
 * conn_host_save() - write every connection of a thread into the image
 * @h:	the thread's host, paused
 * @w:	the image
 */
void conn_host_save(const struct conn_host *h, struct image_writer *w)
{
	for (const struct conn *c = h->conns; c; c = c->next)
		conn_save(c, w);
}

/**
 * conn_host_abandon() - forget every connection, now the next process's
 * @h:	the thread's host, paused and saved
 */
void conn_host_abandon(struct conn_host *h)
{
	struct conn *c;

	while ((c = h->conns)) {
		for (unsigned i = 0; i < DIR_COUNT; i++)
			pump_abandon(&c->dir[i].pump);
		observe_forget(c);
		conn_free(c);
	}
}

/**
 * pause_run() - wcmd_pause: stop accepting and forwarding
 * @w:	the worker
 * @c:	nothing of it is read
 */
static void pause_run(struct worker *w, struct worker_cmd *c)
{
	(void)c;
	accept_pause(&w->acc);
	conn_host_pause(&w->host);
}

const struct worker_cmd_ops wcmd_pause = { .run = pause_run };

/**
 * save_run() - wcmd_save: write the listening sockets and connections
 *		into the image
 * @w:	the worker, paused
 * @c:	@arg, the struct image_writer, which no other thread writes
 *	until the main thread has waited for this command
 */
static void save_run(struct worker *w, struct worker_cmd *c)
{
	conn_host_save_listeners(&w->acc, c->arg);
	conn_host_save(&w->host, c->arg);
}

const struct worker_cmd_ops wcmd_save = { .run = save_run };

/**
 * unpause_run() - wcmd_unpause: the handover failed: forward and accept
 *		   again
 * @w:	the worker, paused
 * @c:	nothing of it is read
 */
static void unpause_run(struct worker *w, struct worker_cmd *c)
{
	(void)c;
	accept_resume(&w->acc);
	conn_host_resume(&w->host);
}

const struct worker_cmd_ops wcmd_unpause = { .run = unpause_run };

/**
 * abandon_run() - wcmd_abandon: the handover is done: forget every
 *		   listening socket and connection, closing this process's
 *		   copies
 * @w:	the worker, paused and saved
 * @c:	nothing of it is read
 */
static void abandon_run(struct worker *w, struct worker_cmd *c)
{
	(void)c;
	accept_remove_all(&w->acc, false);
	conn_host_abandon(&w->host);
}

const struct worker_cmd_ops wcmd_abandon = { .run = abandon_run };

/**
 * adopt_open() - rebuild an open connection's two directions
 * @c:		the connection, its sockets set
 * @v:		its record
 * @in:		the image received; its descriptors taken here
 *
 * Return: 0, or -1 with errno.
 */
static int adopt_open(struct conn *c, const struct img_conn_view *v,
		      struct image_in *in)
{
	const struct img_conn *r = &v->c;

	if (observe_adopt(c, v->timing, r->timing_len, v->trace))
		return -1;
	conn_dirs_init(c);
	for (unsigned i = 0; i < DIR_COUNT; i++) {
		struct pipe_slot *pipe = NULL;
		int32_t rd = r->dir[i].pipe_rd, wr = r->dir[i].pipe_wr;

		if (rd >= 0) {
			pipe = pipepool_adopt(c->host->pipes,
					      image_in_take_fd(in, rd),
					      image_in_take_fd(in, wr));
			if (!pipe)
				return -1;
		}
		if (dir_restore(&c->dir[i], &r->dir[i], v->bytes[i], pipe))
			return -1;
	}
	return 0;
}

/**
 * conn_adopt() - rebuild a connection a handover brought in
 * @h:		the worker's host, whose loop does not run yet
 * @l:		its listener here, of the record's name
 * @v:		its record, decoded and checked (image.c)
 * @in:		the image received; the descriptors the connection takes
 *		are taken from it (image_in_take_fd())
 * @err:	one line saying what is wrong
 * @errlen:	its size
 *
 * The connection continues under @l's current settings; a listener whose
 * mode changed, or that lost the backend a connection forwards to,
 * refuses it. No watcher starts (conn_host_resume() starts them). On
 * failure the process that tried is to exit without touching a socket:
 * what was half built is not unwound.
 *
 * Return: 0, or -1 with @err set.
 */
int conn_adopt(struct conn_host *h, struct listener *l,
	       const struct img_conn_view *v, struct image_in *in, char *err,
	       size_t errlen)
{
	const struct img_conn *r = &v->c;
	const struct listen_opts *o = &l->cfg->o;
	struct conn *c;

	if (r->smb != (o->mode == MODE_SMB) || r->be >= o->nbackends) {
		snprintf(
			err, errlen,
			"listener %s changed its mode or lost backend %u; a connection cannot move to it (stop the old process to apply it)",
			l->name, r->be + 1);
		return -1;
	}
	if (!(c = calloc(1, sizeof(*c))))
		goto oom;
	c->host = h;
	c->l = l;
	listener_get(l);
	c->cfg = l->cfg;
	lcfg_get(c->cfg);
	c->lo = o;
	c->st = &l->st[h->id];
	c->id = r->id;
	c->be = r->be;
	memcpy(&c->peer, r->peer, sizeof(c->peer));
	memcpy(c->cli_text, r->cli_text, sizeof(c->cli_text));
	memcpy(c->source.a, r->source, sizeof(c->source.a));
	c->unauth = r->unauth;
	c->lowat = r->lowat;
	c->peeked = r->peeked;
	c->cli =
		(struct sock){ image_in_take_fd(in, r->cli_fd), r->cli_corked };
	c->srv =
		(struct sock){ image_in_take_fd(in, r->srv_fd), r->srv_corked };
	c->started = r->started;
	c->deadline = r->deadline;
	c->last_active = r->last_active;
	conn_set_state(c, (enum conn_state)r->state);
	conn_watchers_init(c);
	if (r->admitted && limits_adopt(&h->px->limits, &c->source, c->unauth))
		goto oom;
	c->admitted = r->admitted;
	conn_host_reserve_force(h);
	c->next = h->conns;
	if (h->conns)
		h->conns->prev = c;
	h->conns = c;
	counter_add(&h->active, 1);
	if (c->state == CS_OPEN && adopt_open(c, v, in)) {
		snprintf(err, errlen, "connection %llu (%s): %s",
			 (unsigned long long)c->id, c->cli_text,
			 errno == ENOMEM
				 ? "out of memory"
				 : "its saved state does not hold together");
		return -1;
	}
	return 0;
oom:
	snprintf(err, errlen, "out of memory rebuilding the connections");
	return -1;
}

/**
 * conn_host_save_listeners() - write a worker's listening sockets into an
 *				image
 * @a:	the worker's acceptor, paused
 * @w:	the image
 */
void conn_host_save_listeners(const struct acceptor *a, struct image_writer *w)
{
	for (const struct wlistener *wl = a->list; wl; wl = wl->next) {
		struct img_listener r = { .worker = a->id,
					  .fd = imgw_fd(w, wl->fd) };

		snprintf(r.name, sizeof(r.name), "%s", wl->l->name);
		imgw_put(w, IMG_LISTENER, &r, sizeof(r), NULL, NULL, 0);
	}
}
