// SPDX-License-Identifier: GPL-2.0-or-later
/* connmove.c - a connection leaving one process and arriving in the next
 *
 * Theory of operation: a live handover (handover_out.c) moves every
 * connection to the next process mid-message. Here is what that means
 * for one connection, in four steps:
 *
 *   pause:    every watcher and timer of the thread's connections stops
 *             (connmove_pause()); nothing is read or written from here,
 *             and bytes that come wait in the kernel;
 *   save:     each connection becomes an image record (conn_save()): its
 *             stage, deadlines, sockets, and per direction the pump's
 *             pending bytes (a pipe's travel as the pipe, with its bytes
 *             inside), the framer's position and held bytes, the
 *             latency table's outstanding requests, the capture's state;
 *   then either, the next process having said it took everything,
 *   abandon:  the connection is forgotten here (connmove_abandon()):
 *             this process's copies of its descriptors are closed, which
 *             sends nothing, since the next process holds the same
 *             sockets; no end line, no reset;
 *   or, the handover having failed,
 *   resume:   every watcher starts again from the connection's state
 *             (conn_resume()), as if nothing had happened.
 *
 * What a connection carries, and how, is one table, CONN_CARRIED
 * (conn/conn-t.h): conn_save() and the adopt are its rows expanded, each
 * a copy or one of the carry_* pairs below, and the image's record is laid
 * out from it; a member it marks REBUILT is made anew here.
 *
 * In the next process connmove_adopt() rebuilds each record into a live
 * connection, without starting any watcher: nothing is read from a
 * socket before the old process has stopped for good; conn_resume() then
 * starts it. A record is checked whole before the connection is linked;
 * one that fails refuses the handover, and the old process goes on.
 *
 * In the old process each step is a command of the worker's queue
 * (connmove_cmd_pause, connmove_cmd_save, connmove_cmd_abandon,
 * connmove_cmd_unpause, at the end of the first half of this file), which the
 * worker's thread runs between two events, for its listening sockets (accept.c)
 * and its connections alike.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net/accept.h"
#include "conn/conn.h"
#include "conn/connhost.h"
#include "handover/connmove.h"
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
 * connmove_pause() - stop every connection of a thread where it is
 * @h:	the thread's host
 */
void connmove_pause(struct conn_host *h)
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
 * connmove_resume() - run every connection of a thread again
 * @h:	the thread's host, paused, or with adopted connections
 */
void connmove_resume(struct conn_host *h)
{
	for (struct conn *c = h->conns; c; c = c->next)
		conn_resume(c);
}

/**
 * struct carry_out - a connection's record being written
 * @w:		the image
 * @r:		the record
 * @tails:	what follows it: each direction's pending bytes, its latency
 *		table, its capture's state
 * @lens:	their lengths; 0 for none
 * @tm:		the latency table, for @tails[2]
 * @tr:		the capture's state, for @tails[3]
 */
struct carry_out {
	struct image_writer *w;
	struct img_conn r;
	const void *tails[4];
	size_t lens[4];
	struct timing_saved tm;
	struct trace_conn_saved tr;
};

/**
 * struct carry_in - what a connection is rebuilt from
 * @h:		the worker's host it joins
 * @l:		its listener here, of the record's name
 * @v:		its record
 * @in:		the image received, whose descriptors it takes
 */
struct carry_in {
	struct conn_host *h;
	struct listener *l;
	const struct img_conn_view *v;
	struct image_in *in;
};

/* The pairs CONN_CARRIED names for the members that are not copied as
 * they are. A save fills its field of the record; an adopt sets its
 * member, or refuses (-1 with errno). */

/**
 * carry_save_worker() - the record names the worker by its number
 * @c:	the connection
 * @o:	its record
 */
static void carry_save_worker(const struct conn *c, struct carry_out *o)
{
	o->r.worker = c->host->id;
}

/**
 * carry_adopt_worker() - the connection joins the worker the record names
 * @c:	the connection
 * @a:	its record and the host the caller chose by @worker
 *
 * Return: 0.
 */
static int carry_adopt_worker(struct conn *c, const struct carry_in *a)
{
	c->host = a->h;
	return 0;
}

/**
 * carry_save_listener() - the record names the listener
 * @c:	the connection
 * @o:	its record
 */
static void carry_save_listener(const struct conn *c, struct carry_out *o)
{
	snprintf(o->r.listener, sizeof(o->r.listener), "%s", c->l->name);
}

/**
 * carry_adopt_listener() - the connection holds the listener of its name
 *			    here, its current settings and its counters
 * @c:	the connection, its host set
 * @a:	its record and that listener
 *
 * Return: 0.
 */
static int carry_adopt_listener(struct conn *c, const struct carry_in *a)
{
	c->l = a->l;
	listener_get(c->l);
	c->cfg = c->l->cfg;
	listener_cfg_get(c->cfg);
	c->st = &c->l->st[c->host->id];
	return 0;
}

/**
 * carry_save_state() - the record holds the stage
 * @c:	the connection
 * @o:	its record
 */
static void carry_save_state(const struct conn *c, struct carry_out *o)
{
	o->r.state = c->state;
}

/**
 * carry_adopt_state() - the connection enters its stage, as the debug log
 *			 shows every change of one
 * @c:	the connection, its client's text set
 * @a:	its record, whose stage the decoder checked
 *
 * Return: 0.
 */
static int carry_adopt_state(struct conn *c, const struct carry_in *a)
{
	conn_set_state(c, (enum conn_state)a->v->c.state);
	return 0;
}

/**
 * carry_save_admitted() - the record says whether it holds a place
 * @c:	the connection
 * @o:	its record
 */
static void carry_save_admitted(const struct conn *c, struct carry_out *o)
{
	o->r.admitted = c->admitted;
}

/**
 * carry_adopt_admitted() - the caps here count the place it held
 * @c:	the connection, its source and @unauth set
 * @a:	its record
 *
 * Return: 0, or -1 (ENOMEM).
 */
static int carry_adopt_admitted(struct conn *c, const struct carry_in *a)
{
	if (a->v->c.admitted &&
	    limits_adopt(&c->host->px->limits, &c->source, c->unauth)) {
		errno = ENOMEM;
		return -1;
	}
	c->admitted = a->v->c.admitted;
	return 0;
}

/**
 * carry_save_mode() - the record says whether its listener was in smb mode
 * @c:	the connection
 * @o:	its record
 */
static void carry_save_mode(const struct conn *c, struct carry_out *o)
{
	o->r.smb = c->lo->mode == MODE_SMB;
}

/**
 * carry_adopt_mode() - the connection goes on under its listener's current
 *			settings
 * @c:	the connection, its listener's settings held
 * @a:	its record, whose mode connmove_adopt() found the listener's
 *
 * Return: 0.
 */
static int carry_adopt_mode(struct conn *c, const struct carry_in *a)
{
	c->lo = &c->cfg->o;
	return 0;
}

/**
 * carry_save_timing() - an open connection's latency table follows the
 *			 record
 * @c:	the connection
 * @o:	its record
 */
static void carry_save_timing(const struct conn *c, struct carry_out *o)
{
	if (c->state == CS_OPEN)
		observe_save_timing(c, &o->tm, &o->r.timing_len);
	o->tails[2] = &o->tm;
	o->lens[2] = o->r.timing_len;
}

/**
 * carry_adopt_timing() - an open connection times its messages as it did
 * @c:	the connection, linked, its directions not yet set up
 * @a:	its record
 *
 * Return: 0, or -1 with errno.
 */
static int carry_adopt_timing(struct conn *c, const struct carry_in *a)
{
	return observe_adopt_timing(c, a->v->timing, a->v->c.timing_len);
}

/**
 * carry_save_trace() - an open connection's capture follows the record
 * @c:	the connection
 * @o:	its record
 */
static void carry_save_trace(const struct conn *c, struct carry_out *o)
{
	if (c->state == CS_OPEN)
		observe_save_trace(c, &o->tr, &o->r.trace_len);
	o->tails[3] = &o->tr;
	o->lens[3] = o->r.trace_len;
}

/**
 * carry_adopt_trace() - an open connection is captured as it was
 * @c:	the connection, linked, its directions not yet set up
 * @a:	its record
 *
 * Return: 0, or -1 with errno.
 */
static int carry_adopt_trace(struct conn *c, const struct carry_in *a)
{
	return observe_adopt_trace(c, a->v->trace);
}

/**
 * carry_save_who() - the session's view goes in the record
 * @c:	the connection
 * @o:	its record
 */
static void carry_save_who(const struct conn *c, struct carry_out *o)
{
	observe_save_who(c, &o->r.who);
}

/**
 * carry_adopt_who() - the session's view is shown as it was
 * @c:	the connection, linked and open (only an open one has framers
 *	to fill a view, and a view the checks refuse is then told as a
 *	saved state that does not hold together, not as memory)
 * @a:	its record
 *
 * Return: 0, or -1 with errno.
 */
static int carry_adopt_who(struct conn *c, const struct carry_in *a)
{
	return observe_adopt_who(c, &a->v->c.who);
}

/**
 * carry_save_dirs() - an open connection's directions go in the record,
 *		       their pending bytes after it, their pipes beside it
 * @c:	the connection
 * @o:	its record
 */
static void carry_save_dirs(const struct conn *c, struct carry_out *o)
{
	for (unsigned i = 0; i < DIR_COUNT; i++) {
		struct dir_saved *r = &o->r.dir[i];
		const struct pipe_slot *pipe = NULL;

		r->pipe_rd = r->pipe_wr = -1;
		if (c->state != CS_OPEN)
			continue;
		dir_save(&c->dir[i], r, &o->tails[i], &pipe);
		o->lens[i] = r->pump.pending;
		if (pipe) {
			r->pipe_rd = image_write_fd(o->w, pipe->rd);
			r->pipe_wr = image_write_fd(o->w, pipe->wr);
		}
	}
}

/**
 * carry_adopt_dirs() - an open connection's directions go on where they
 *			were
 * @c:	the connection, linked and observed
 * @a:	its record; the pipes' descriptors are taken from the image
 *
 * Return: 0, or -1 with errno.
 */
static int carry_adopt_dirs(struct conn *c, const struct carry_in *a)
{
	const struct img_conn *r = &a->v->c;

	conn_dirs_init(c);
	for (unsigned i = 0; i < DIR_COUNT; i++) {
		struct pipe_slot *pipe = NULL;
		int32_t rd = r->dir[i].pipe_rd, wr = r->dir[i].pipe_wr;

		if (rd >= 0) {
			pipe = pipepool_adopt(c->host->pipes,
					      image_in_take_fd(a->in, rd),
					      image_in_take_fd(a->in, wr));
			if (!pipe)
				return -1;
		}
		if (dir_restore(&c->dir[i], &r->dir[i], a->v->bytes[i], pipe))
			return -1;
	}
	return 0;
}

/* CONN_CARRIED's rows as the save: a copy, or the row's pair. */
#define SAVE_COPY(m, part, type) o->r.m = c->m;
#define SAVE_BYTES(m, type, n)                                                 \
	_Static_assert(sizeof(c->m) == n, #m " fills its field");              \
	memcpy(o->r.m, &c->m, n);
#define SAVE_SOCK(m, ...)                                                      \
	o->r.m##_fd = image_write_fd(o->w, c->m.fd);                           \
	o->r.m##_corked = c->m.corked;
#define SAVE_PAIR(m, part, type, field, dims, fn) carry_save_##fn(c, o);
#define SAVE_OPEN				  SAVE_PAIR
#define SAVE_REBUILT(m, why)
#define SAVE_ROW(m, how, ...) SAVE_##how(m, __VA_ARGS__)

/**
 * conn_save() - write a connection into the image
 * @c:	the connection, paused
 * @w:	the image
 *
 * Every row of CONN_CARRIED, top to bottom: the sockets' descriptors are
 * indexed before the pipes', as the image has always had them.
 */
static void conn_save(const struct conn *c, struct image_writer *w)
{
	/* Not cleared whole: @tm is 33 KiB, and clearing it for each of
	 * 9,000 connections would be most of the pause. What is not written
	 * is not read: a tail's length is 0 unless its save filled it. */
	struct carry_out co, *o = &co;

	o->w = w;
	o->r = (struct img_conn){ 0 };
	memset(o->tails, 0, sizeof(o->tails));
	memset(o->lens, 0, sizeof(o->lens));

	CONN_CARRIED(SAVE_ROW)
	image_write_put(w, IMG_CONN, &o->r, sizeof(o->r), o->tails, o->lens, 4);
}

/**
 * connmove_stays() - does a connection stay in this process at a handover
 * @c:	the connection
 *
 * One whose client is a QUIC stream: its QUIC connection is inside
 * ngtcp2 here and cannot be carried, so the connection serves on here
 * to its end, beside the next process (handover_out.c).
 *
 * Return: true if it stays.
 */
bool connmove_stays(const struct conn *c)
{
	return c->lo->quic;
}

/**
 * connmove_save() - write every connection of a thread into the image
 * @h:	the thread's host, paused
 * @w:	the image
 */
void connmove_save(const struct conn_host *h, struct image_writer *w)
{
	for (const struct conn *c = h->conns; c; c = c->next)
		if (!connmove_stays(c))
			conn_save(c, w);
}

/**
 * connmove_abandon() - forget every connection, now the next process's
 * @h:	the thread's host, paused and saved
 */
void connmove_abandon(struct conn_host *h)
{
	struct conn *c, *next;

	for (c = h->conns; c; c = next) {
		next = c->next;
		if (connmove_stays(c))
			continue;
		for (unsigned i = 0; i < DIR_COUNT; i++)
			pump_abandon(&c->dir[i].pump);
		observe_forget(c);
		conn_free(c);
	}
}

/* CONN_CARRIED's rows as the adopt of a connection's fields: a copy, or
 * the row's pair; an OPEN row waits for adopt_open(). */
#define ADOPT_COPY(m, part, type) c->m = r->m;
#define ADOPT_BYTES(m, type, n)	  memcpy(&c->m, r->m, n);
#define ADOPT_SOCK(m, ...)                                                     \
	c->m = (struct sock){ image_in_take_fd(a->in, r->m##_fd),              \
			      r->m##_corked };
#define ADOPT_PAIR(m, part, type, field, dims, fn)                             \
	if (carry_adopt_##fn(c, a))                                            \
		return -1;
#define ADOPT_OPEN(...)
#define ADOPT_REBUILT(m, why)
#define ADOPT_ROW(m, how, ...) ADOPT_##how(m, __VA_ARGS__)

/* And as the adopt of an open connection's: the OPEN rows alone. */
#define OPEN_COPY(...)
#define OPEN_BYTES(...)
#define OPEN_SOCK(...)
#define OPEN_PAIR(...)
#define OPEN_OPEN(m, part, type, field, dims, fn)                              \
	ADOPT_PAIR(m, part, type, field, dims, fn)
#define OPEN_REBUILT(m, why)
#define OPEN_ROW(m, how, ...) OPEN_##how(m, __VA_ARGS__)

/**
 * pause_run() - connmove_cmd_pause: stop accepting and forwarding
 * @w:	the worker
 * @c:	nothing of it is read
 */
static void pause_run(struct worker *w, struct worker_cmd *c)
{
	(void)c;
	accept_pause(&w->acc);
	connmove_pause(&w->host);
}

const struct worker_cmd_ops connmove_cmd_pause = { .run = pause_run };

/**
 * save_run() - connmove_cmd_save: write the listening sockets and connections
 *		into the image
 * @w:	the worker, paused
 * @c:	@arg, the struct image_writer, which no other thread writes
 *	until the main thread has waited for this command
 */
static void save_run(struct worker *w, struct worker_cmd *c)
{
	connmove_save_listeners(&w->acc, c->arg);
	connmove_save(&w->host, c->arg);
}

const struct worker_cmd_ops connmove_cmd_save = { .run = save_run };

/**
 * unpause_run() - connmove_cmd_unpause: the handover failed: forward and accept
 *		   again
 * @w:	the worker, paused
 * @c:	nothing of it is read
 */
static void unpause_run(struct worker *w, struct worker_cmd *c)
{
	(void)c;
	accept_resume(&w->acc);
	connmove_resume(&w->host);
}

const struct worker_cmd_ops connmove_cmd_unpause = { .run = unpause_run };

/**
 * abandon_run() - connmove_cmd_abandon: the handover is done: forget every
 *		   listening socket and connection the next process took,
 *		   closing this process's copies; those that stay here
 *		   (connmove_stays()) run again
 * @w:	the worker, paused and saved
 * @c:	nothing of it is read
 */
static void abandon_run(struct worker *w, struct worker_cmd *c)
{
	(void)c;
	accept_remove_all(&w->acc, false);
	connmove_abandon(&w->host);
	connmove_resume(&w->host);
}

const struct worker_cmd_ops connmove_cmd_abandon = { .run = abandon_run };

/**
 * adopt_fields() - rebuild a connection's fields from its record
 * @c:	the connection, zeroed
 * @a:	its record; the sockets' descriptors are taken from the image
 *
 * Every row of CONN_CARRIED but the OPEN ones, top to bottom.
 *
 * Return: 0, or -1 with errno.
 */
static int adopt_fields(struct conn *c, const struct carry_in *a)
{
	const struct img_conn *r = &a->v->c;

	CONN_CARRIED(ADOPT_ROW)
	return 0;
}

/**
 * adopt_open() - rebuild an open connection's observers and directions
 * @c:	the connection, linked
 * @a:	its record; the pipes' descriptors are taken from the image
 *
 * The OPEN rows of CONN_CARRIED, top to bottom.
 *
 * Return: 0, or -1 with errno.
 */
static int adopt_open(struct conn *c, const struct carry_in *a)
{
	CONN_CARRIED(OPEN_ROW)
	return 0;
}

/**
 * connmove_adopt() - rebuild a connection a handover brought in
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
 * refuses it. No watcher starts (connmove_resume() starts them). On
 * failure the process that tried is to exit without touching a socket:
 * what was half built is not unwound.
 *
 * Return: 0, or -1 with @err set.
 */
int connmove_adopt(struct conn_host *h, struct listener *l,
		   const struct img_conn_view *v, struct image_in *in,
		   char *err, size_t errlen)
{
	const struct img_conn *r = &v->c;
	const struct listen_opts *o = &l->cfg->o;
	const struct carry_in a = { .h = h, .l = l, .v = v, .in = in };
	struct conn *c;

	if (r->smb != (o->mode == MODE_SMB) || r->be >= o->nbackends) {
		snprintf(
			err, errlen,
			"listener %s changed its mode or lost backend %u; a connection cannot move to it (stop the old process to apply it)",
			l->name, r->be + 1);
		return -1;
	}
	if (!(c = calloc(1, sizeof(*c))) || adopt_fields(c, &a))
		goto oom;
	conn_watchers_init(c);
	conn_host_reserve_force(h);
	conn_host_link(h, c);
	if (c->state == CS_OPEN && adopt_open(c, &a)) {
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
 * connmove_save_listeners() - write a worker's listening sockets into an
 *				image
 * @a:	the worker's acceptor, paused
 * @w:	the image
 */
void connmove_save_listeners(const struct acceptor *a, struct image_writer *w)
{
	for (const struct wlistener *wl = a->list; wl; wl = wl->next) {
		struct img_listener r = { .worker = a->id,
					  .fd = image_write_fd(w, wl->fd) };

		snprintf(r.name, sizeof(r.name), "%s", wl->l->name);
		image_write_put(w, IMG_LISTENER, &r, sizeof(r), NULL, NULL, 0);
	}
}
