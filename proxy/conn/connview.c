// SPDX-License-Identifier: GPL-2.0-or-later
/* connview.c - a worker's connections, copied out for the control socket
 *
 * Theory of operation: the control socket (control.c) never reads a
 * worker's connections from the main thread, for they change under it at
 * every event. It asks instead: a controlcmd_snapshot carries a struct connview
 * with room the main thread lent, the worker runs connview_fill() between
 * two events (its connections hold still then), and the main thread reads
 * the records once worker_sync_all() says every worker is done. So what
 * `conns` shows is exact for each worker at one instant, and costs a
 * worker one pass over its list, a copy of a few hundred bytes per
 * connection: no lock is taken on the data path, no counter is added to
 * it. A controlcmd_kill is answered the same way, by connview_kill(): it
 * resets the connections a selector (struct conn_sel) names, one by its
 * id or a group by client or backend address.
 *
 * The records' text and JSON forms are the control socket's
 * (control/connrec.c).
 */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>

#include "conn/conn.h"
#include "conn/connview.h"
#include "common/monotime.h"
#include "quic/qdial.h"
#include "quic/qinfo.h"

/**
 * fill_who() - who the session is and what it has open
 * @w:	the connection's view, or NULL for none yet
 * @r:	its record
 */
static void fill_who(const struct smb_who *w, struct conn_rec *r)
{
	if (!w)
		return;
	r->session_id = w->session_id ? w->session_id : w->sealed_id;
	r->auth = smb_who_auth_text(w->auth);
	memcpy(r->user, w->user, sizeof(r->user));
	memcpy(r->domain, w->domain, sizeof(r->domain));
	memcpy(r->share, w->share, sizeof(r->share));
	r->nshares = w->nshares;
	r->more_shares = w->more_shares;
	r->open_files = w->open_files;
	r->sealed = w->sealed;
}

/**
 * backend_port() - the backend socket's own port
 * @fd:	the socket, or -1
 *
 * A system call per connection listed: only when the admin asks.
 *
 * Return: the port, or 0 (no socket, not bound yet, an error).
 */
static uint16_t backend_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (fd < 0 || getsockname(fd, (struct sockaddr *)&ss, &len))
		return 0;
	if (ss.ss_family == AF_INET)
		return ntohs(((struct sockaddr_in *)&ss)->sin_port);
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return 0;
}

/**
 * fill_smb() - what the framers saw of the SMB session
 * @c:	the connection
 * @r:	its record
 */
static void fill_smb(const struct conn *c, struct conn_rec *r)
{
	const struct smb_stream_facts *u = &c->dir[DIR_TO_SERVER].fr.facts,
				      *d = &c->dir[DIR_TO_CLIENT].fr.facts;

	if (c->lo->mode != MODE_SMB || !d->dialect) {
		snprintf(r->dialect, sizeof(r->dialect), "-");
	} else {
		smb_dialect_text(d->dialect, r->dialect, sizeof(r->dialect));
	}
	r->signed_ = u->signed_seen || d->signed_seen;
	r->encrypted = u->encrypted_seen || d->encrypted_seen;
	fill_who(c->who, r);
}

/**
 * quic_rec() - a side's QUIC figures, as the record keeps them
 * @f:	the figures
 * @q:	the record's side
 */
static void quic_rec(const struct quic_figures *f, struct conn_rec_quic *q)
{
	q->on = true;
	q->version = f->version;
	if (f->locallen)
		sock_addr_text((const struct sockaddr *)&f->local, q->local,
			       sizeof(q->local));
	else
		snprintf(q->local, sizeof(q->local), "-");
	if (f->remotelen)
		sock_addr_text((const struct sockaddr *)&f->remote, q->remote,
			       sizeof(q->remote));
	else
		snprintf(q->remote, sizeof(q->remote), "-");
	q->rtt_ns = f->rtt_ns;
	q->cwnd = f->cwnd;
	q->in_flight = f->in_flight;
	q->lost = f->lost;
}

/**
 * fill_quic() - the QUIC figures of a connection's QUIC sides
 * @c:	the connection
 * @r:	its record
 *
 * The QUIC module is asked through its getters (the worker's, for a
 * listener's stream; qdial.h's, for a dial): nothing here reads ngtcp2.
 */
static void fill_quic(const struct conn *c, struct conn_rec *r)
{
	const struct conn_host *h = c->host;
	struct quic_figures f;

	memset(r->quic, 0, sizeof(r->quic));
	if (c->lo->quic && h->ops && h->ops->quic_figures &&
	    h->ops->quic_figures(h->ctx, c->id, &f))
		quic_rec(&f, &r->quic[REC_CLIENT]);
	if (qdial_figures(c->qd, &f))
		quic_rec(&f, &r->quic[REC_BACKEND]);
}

/**
 * fill_rec() - copy one connection into a record
 * @c:		the connection, in its worker's thread
 * @r:		the record
 * @now:	the worker's loop time
 * @now_ns:	mono_ns() now
 */
static void fill_rec(const struct conn *c, struct conn_rec *r, ev_tstamp now,
		     uint64_t now_ns)
{
	uint16_t cmd;
	uint64_t sent;

	r->id = c->id;
	r->worker = c->host->id;
	snprintf(r->listener, sizeof(r->listener), "%s", c->lo->name);
	snprintf(r->cli, sizeof(r->cli), "%s", c->cli_text);
	snprintf(r->backend, sizeof(r->backend), "%s",
		 c->srv.fd >= 0 ? c->lo->backend[c->be].text : "-");
	r->state = conn_state_text(c->state);
	r->age = now - c->started;
	r->idle = now -
		  (c->last_active > c->started ? c->last_active : c->started);
	for (int d = 0; d < DIR_COUNT; d++) {
		const struct pump *p = &c->dir[d].pump;

		r->spliced[d] = p->spliced;
		r->copied[d] = p->copied;
		r->in_pipe[d] = p->in_pipe;
		r->in_buf[d] = p->buf_len - p->buf_off;
		r->pipe[d] = p->pipe != NULL;
		r->buf[d] = p->buf != NULL;
	}
	r->outstanding = timing_outstanding(&c->tm, &cmd, &sent);
	r->oldest_cmd = sent ? smb_command_name(cmd) : NULL;
	r->oldest_age = sent && now_ns > sent ? (now_ns - sent) / 1e9 : 0;
	r->unauth = c->unauth;
	r->bport = backend_port(c->srv.fd);
	r->transparent = c->lo->transparent;
	fill_smb(c, r);
	fill_quic(c, r);
}

/**
 * connview_fill() - copy a worker's connections into the main thread's
 *		     records
 * @h:	the worker's connections, in its thread, between events
 * @v:	what was asked, and the room for it
 */
void connview_fill(const struct conn_host *h, struct connview *v)
{
	ev_tstamp now = ev_now(h->loop);
	uint64_t now_ns = mono_ns();

	v->n = v->total = 0;
	for (const struct conn *c = h->conns; c; c = c->next) {
		if (v->only && c->id != v->only)
			continue;
		v->total++;
		if (v->n < v->cap)
			fill_rec(c, &v->recs[v->n++], now, now_ns);
	}
}

/**
 * connview_user() - a connection's user, as its session setup named it
 * @c:		the connection, in its worker's thread
 * @domain:	if not NULL, set to the user's domain ("" if none) when
 *		a user is returned
 *
 * So that acting on a user's connections needs nothing of smb/who.h.
 *
 * Return: the user (UTF-8, no control characters), or NULL when no
 * NTLMSSP session setup named one (none yet, Kerberos, anonymous, tcp
 * mode).
 */
const char *connview_user(const struct conn *c, const char **domain)
{
	const struct smb_who *w = c->who;

	if (!w || w->auth != SMB_WHO_NTLMSSP || !w->user[0])
		return NULL;
	if (domain)
		*domain = w->domain;
	return w->user;
}

/**
 * connview_user_is() - is a connection's user the one an admin named
 * @c:		the connection, in its worker's thread
 * @name:	"user", or "DOMAIN\user"; letters match without case
 *
 * Return: true if it is (smb_who_user_is()).
 */
bool connview_user_is(const struct conn *c, const char *name)
{
	return smb_who_user_is(c->who, name);
}

/**
 * addr_key() - an address's 16 bytes as IPv6 (IPv4 mapped) and its port
 * @sa:		the address
 * @key:	set to its bytes
 * @port:	set to its port, host order
 *
 * So that a client of a dual-stack [::] listener, whose address comes as
 * ::ffff:192.0.2.7, matches `kill client 192.0.2.7`.
 *
 * Return: false for a family that is neither.
 */
static bool addr_key(const struct sockaddr_storage *sa, uint8_t key[16],
		     unsigned *port)
{
	const struct sockaddr_in *a4 = (const struct sockaddr_in *)sa;
	const struct sockaddr_in6 *a6 = (const struct sockaddr_in6 *)sa;

	if (sa->ss_family == AF_INET6) {
		memcpy(key, &a6->sin6_addr, 16);
		*port = ntohs(a6->sin6_port);
		return true;
	}
	if (sa->ss_family != AF_INET)
		return false;
	memset(key, 0, 10);
	key[10] = key[11] = 0xff;
	memcpy(key + 12, &a4->sin_addr, 4);
	*port = ntohs(a4->sin_port);
	return true;
}

/**
 * connview_addr_match() - is @sa the selector's address (and port, if it
 *			   names one)
 * @s:	the selector, with @s->has_addr
 * @sa:	a connection's or a backend's address
 *
 * Return: true if so.
 */
bool connview_addr_match(const struct conn_sel *s,
			 const struct sockaddr_storage *sa)
{
	uint8_t a[16], b[16];
	unsigned pa, pb;

	return addr_key(&s->addr, a, &pa) && addr_key(sa, b, &pb) &&
	       !memcmp(a, b, 16) && (!s->port || pa == pb);
}

/**
 * sel_match() - is a connection one the selector names
 * @c:	the connection, in its worker's thread
 * @s:	the selector
 *
 * A connection matches a backend once it dials it (as `conns` shows
 * it), by the name the listener gives it or by its resolved address.
 *
 * Return: true if so.
 */
static bool sel_match(const struct conn *c, const struct conn_sel *s)
{
	const struct endpoint *be = &c->lo->backend[c->be];

	switch (s->kind) {
	case CONN_SEL_ID:
		return c->id == s->id;
	case CONN_SEL_CLIENT:
		return connview_addr_match(s, &c->peer);
	case CONN_SEL_BACKEND:
		return c->srv.fd >= 0 &&
		       (!strcmp(be->text, s->text) ||
			(s->has_addr && connview_addr_match(s, &be->addr)));
	case CONN_SEL_USER:
		return connview_user_is(c, s->text);
	}
	return false;
}

/**
 * connview_kill() - reset the connections of this worker a selector names
 * @h:	the worker's connections, in its thread
 * @k:	the selector and who asked; @killed is set to how many
 *
 * Both peers are reset (linger 0), as for any end but a clean one; each
 * end line, its one log line, says who asked.
 *
 * Return: how many were reset.
 */
unsigned connview_kill(struct conn_host *h, struct conn_kill *k)
{
	struct conn *c, *next;
	char why[128];

	snprintf(why, sizeof(why), "killed by %s", k->who);
	k->killed = 0;
	for (c = h->conns; c; c = next) {
		next = c->next; /* conn_end() frees @c */
		if (c->state == CS_ENDED || !sel_match(c, &k->sel))
			continue;
		conn_end(c, END_ERROR, why);
		k->killed++;
		if (k->sel.kind == CONN_SEL_ID)
			break; /* ids are unique */
	}
	return k->killed;
}
