// SPDX-License-Identifier: GPL-2.0-or-later
/* connview.c - a worker's connections, copied out for the control socket
 *
 * Theory of operation: the control socket (control.c) never reads a
 * worker's connections from the main thread, for they change under it at
 * every event. It asks instead: a wcmd_snapshot carries a struct connview
 * with room the main thread lent, the worker runs connview_fill() between
 * two events (its connections hold still then), and the main thread reads
 * the records once workers_sync() says every worker is done. So what
 * `conns` shows is exact for each worker at one instant, and costs a
 * worker one pass over its list, a copy of a few hundred bytes per
 * connection: no lock is taken on the data path, no counter is added to
 * it. A wcmd_kill is answered the same way, by connview_kill().
 *
 * The rest of the file is the text and JSON forms of a record, into an
 * answer buffer bounded by the caller (struct outbuf): an answer that
 * would pass the bound is cut and says so, rather than grow without end.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conn/conn.h"
#include "conn/connstate.h"
#include "conn/connview.h"
#include "common/monotime.h"

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
	fill_smb(c, r);
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
 * connview_kill() - reset one connection of this worker, if it has it
 * @h:	the worker's connections, in its thread
 * @k:	the id and who asked; @found is set if it was here
 *
 * Both peers are reset (linger 0), as for any end but a clean one; the
 * end line, its one log line, says who asked.
 *
 * Return: true if it was here.
 */
bool connview_kill(struct conn_host *h, struct conn_kill *k)
{
	char why[128];

	for (struct conn *c = h->conns; c; c = c->next) {
		if (c->id != k->id || c->state == CS_ENDED)
			continue;
		snprintf(why, sizeof(why), "killed by %s", k->who);
		conn_end(c, END_ERROR, why);
		k->found = true;
		return true;
	}
	return false;
}

/**
 * ob_printf() - add to an answer
 * @ob:		the answer
 * @fmt:	printf() format
 *
 * Past @ob->max, or out of memory, the answer stays as it was and is
 * marked cut.
 */
void ob_printf(struct outbuf *ob, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (ob->full)
		return;
	for (;;) {
		va_start(ap, fmt);
		n = vsnprintf(ob->p ? ob->p + ob->len : NULL,
			      ob->p ? ob->cap - ob->len : 0, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if (ob->p && ob->len + (size_t)n < ob->cap) {
			ob->len += (size_t)n;
			return;
		}
		size_t want = ob->cap ? ob->cap * 2 : 65536;
		char *p;

		while (want <= ob->len + (size_t)n)
			want *= 2;
		if (want > ob->max || !(p = realloc(ob->p, want))) {
			ob->full = true;
			return;
		}
		ob->p = p;
		ob->cap = want;
	}
}

/**
 * ob_json_str() - add a JSON string
 * @ob:	the answer
 * @s:	the text, or NULL for null
 */
void ob_json_str(struct outbuf *ob, const char *s)
{
	if (!s) {
		ob_printf(ob, "null");
		return;
	}
	ob_printf(ob, "\"");
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			ob_printf(ob, "\\%c", ch);
		else if (ch < 0x20 || ch == 0x7f)
			ob_printf(ob, "\\u%04x", ch);
		else
			ob_printf(ob, "%c", ch);
	}
	ob_printf(ob, "\"");
}

/**
 * connview_text_head() - the header line of `conns`
 * @ob:	the answer
 */
void connview_text_head(struct outbuf *ob)
{
	ob_printf(
		ob,
		"%-6s %-2s %-10s %-22s %-22s %-10s %8s %7s %12s %12s %12s %12s %-7s %-3s %4s %s\n",
		"ID", "W", "LISTENER", "CLIENT", "BACKEND", "STATE", "AGE",
		"IDLE", "UP_SPLICED", "UP_COPIED", "DN_SPLICED", "DN_COPIED",
		"DIALECT", "S/E", "REQS", "OLDEST");
}

/**
 * connview_text() - one line of `conns`
 * @ob:	the answer
 * @r:	the connection
 */
void connview_text(struct outbuf *ob, const struct conn_rec *r)
{
	ob_printf(
		ob,
		"%-6llu %-2u %-10s %-22s %-22s %-10s %8.1f %7.1f %12llu %12llu %12llu %12llu %-7s %c%c  %4u ",
		(unsigned long long)r->id, r->worker, r->listener, r->cli,
		r->backend, r->state, r->age, r->idle,
		(unsigned long long)r->spliced[DIR_TO_SERVER],
		(unsigned long long)r->copied[DIR_TO_SERVER],
		(unsigned long long)r->spliced[DIR_TO_CLIENT],
		(unsigned long long)r->copied[DIR_TO_CLIENT], r->dialect,
		r->signed_ ? 'S' : '-', r->encrypted ? 'E' : '-',
		r->outstanding);
	if (r->oldest_cmd)
		ob_printf(ob, "%s %.3fs\n", r->oldest_cmd, r->oldest_age);
	else
		ob_printf(ob, "-\n");
}

/**
 * connview_json() - one connection as a JSON object
 * @ob:		the answer
 * @r:		the connection
 * @full:	with its pipe and buffer holdings (`conn ID`)
 */
void connview_json(struct outbuf *ob, const struct conn_rec *r, bool full)
{
	static const char *const dname[DIR_COUNT] = { "up", "down" };

	ob_printf(ob, "{\"id\":%llu,\"worker\":%u,\"listener\":",
		  (unsigned long long)r->id, r->worker);
	ob_json_str(ob, r->listener);
	ob_printf(ob, ",\"client\":");
	ob_json_str(ob, r->cli);
	ob_printf(ob, ",\"backend\":");
	ob_json_str(ob, r->backend);
	ob_printf(ob, ",\"state\":\"%s\",\"age\":%.3f,\"idle\":%.3f", r->state,
		  r->age, r->idle);
	for (int d = 0; d < DIR_COUNT; d++)
		ob_printf(ob, ",\"%s_spliced\":%llu,\"%s_copied\":%llu",
			  dname[d], (unsigned long long)r->spliced[d], dname[d],
			  (unsigned long long)r->copied[d]);
	ob_printf(ob, ",\"dialect\":");
	ob_json_str(ob, r->dialect);
	ob_printf(
		ob,
		",\"signed\":%s,\"encrypted\":%s,\"unauthenticated\":%s,\"outstanding\":%u",
		r->signed_ ? "true" : "false", r->encrypted ? "true" : "false",
		r->unauth ? "true" : "false", r->outstanding);
	ob_printf(ob, ",\"oldest_command\":");
	ob_json_str(ob, r->oldest_cmd);
	ob_printf(ob, ",\"oldest_age\":%.3f", r->oldest_age);
	for (int d = 0; full && d < DIR_COUNT; d++)
		ob_printf(
			ob,
			",\"%s_pipe\":%s,\"%s_in_pipe\":%llu,\"%s_buffer\":%s,\"%s_in_buffer\":%llu",
			dname[d], r->pipe[d] ? "true" : "false", dname[d],
			(unsigned long long)r->in_pipe[d], dname[d],
			r->buf[d] ? "true" : "false", dname[d],
			(unsigned long long)r->in_buf[d]);
	ob_printf(ob, "}");
}

/**
 * connview_detail() - one connection in full, as `conn ID` prints it
 * @ob:	the answer
 * @r:	the connection
 */
void connview_detail(struct outbuf *ob, const struct conn_rec *r)
{
	static const char *const dname[DIR_COUNT] = { "up", "down" };

	ob_printf(
		ob,
		"id %llu\nworker %u\nlistener %s\nclient %s\nbackend %s\nstate %s\nage %.3f\nidle %.3f\nunauthenticated %s\ndialect %s\nsigned %s\nencrypted %s\n",
		(unsigned long long)r->id, r->worker, r->listener, r->cli,
		r->backend, r->state, r->age, r->idle, r->unauth ? "yes" : "no",
		r->dialect, r->signed_ ? "yes" : "no",
		r->encrypted ? "yes" : "no");
	for (int d = 0; d < DIR_COUNT; d++)
		ob_printf(
			ob,
			"%s spliced %llu copied %llu pipe %s (%llu bytes) buffer %s (%llu bytes)\n",
			dname[d], (unsigned long long)r->spliced[d],
			(unsigned long long)r->copied[d],
			r->pipe[d] ? "held" : "none",
			(unsigned long long)r->in_pipe[d],
			r->buf[d] ? "held" : "none",
			(unsigned long long)r->in_buf[d]);
	ob_printf(ob, "outstanding %u\n", r->outstanding);
	if (r->oldest_cmd)
		ob_printf(ob, "oldest %s %.3fs\n", r->oldest_cmd,
			  r->oldest_age);
}
