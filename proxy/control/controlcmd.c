// SPDX-License-Identifier: GPL-2.0-or-later
/* controlcmd.c - the control socket's commands
 *
 * Theory of operation: control.c hands over one request line; this file
 * splits it into words, runs the command and builds the whole answer,
 * plain text or, with --json as the last word, one JSON document. What
 * is read of the workers is a snapshot each of them takes between events
 * (controlcmd_snapshot, connview.c); what is done to them (kill, drain, resume)
 * is a command each runs the same way (controlcmd_kill, controlcmd_hold,
 * controlcmd_resume). These commands are defined here, the only file that sends
 * them. Both wait in worker_sync_all(); if a worker does not answer within its
 * bound, the buffers it was lent are left to it (never freed under it) and the
 * answer says so.
 *
 * A socket has a level (enum control_level): the read-only one serves
 * what looks and refuses, before reading any argument, what acts (drain,
 * resume, kill), so that its clients can see everything and change
 * nothing. `kill` names one connection or a group (struct conn_sel,
 * ctlsel.c): each worker resets its own connections of the group and
 * counts them in a struct of its own.
 *
 * `top` ranks connections by bytes per second since the previous `top`
 * (the baseline kept here, one per process): `smbsplice ctl top` asks
 * twice, an interval apart. A connection younger than the interval is
 * rated over its own age.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "control/connrec.h"
#include "control/controlcmd.h"
#include "control/ctlsel.h"
#include "control/ctlinfo.h"
#include "net/accept.h"
#include "net/listener.h"
#include "common/log.h"
#include "control/metrics.h"
#include "core/proxy.h"
#include "quic/quic.h"
#include "worker/worker.h"

/* Connections `top` shows unless told otherwise, and at most. */
#define TOP_DEFAULT 20
#define TOP_MAX	    1000
/* Room asked of a worker past the connections it had a moment ago. */
#define SNAP_SLACK 64

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/**
 * snapshot_run() - controlcmd_snapshot: copy a worker's connections
 * @w:	the worker
 * @c:	@arg, the struct connview to fill, lent by the main thread
 */
static void snapshot_run(struct worker *w, struct worker_cmd *c)
{
	connview_fill(&w->host, c->arg);
}

static const struct worker_cmd_ops controlcmd_snapshot = {
	.run = snapshot_run
};

/**
 * kill_run() - controlcmd_kill: reset a connection, if this worker has it
 * @w:	the worker
 * @c:	@arg, the struct conn_kill naming it, lent by the main thread
 */
static void kill_run(struct worker *w, struct worker_cmd *c)
{
	connview_kill(&w->host, c->arg);
}

static const struct worker_cmd_ops controlcmd_kill = { .run = kill_run };

/**
 * hold_listener() - stop or start accepting on one listener, in a worker
 * @w:		the worker
 * @l:		the listener
 * @hold:	true to stop
 */
static void hold_listener(struct worker *w, struct listener *l, bool hold)
{
	struct wlistener *wl = accept_find(&w->acc, l);
	struct qlistener *ql = quic_find(&w->quic, l);

	if (wl && accept_hold(wl, hold))
		log_warn("worker %u cannot %s listener %s: %s", w->id,
			 hold ? "drain" : "resume", l->name, strerror(errno));
	if (ql)
		quic_hold(ql, hold);
}

/**
 * hold_run() - controlcmd_hold: stop accepting on a listener until
 *controlcmd_resume
 * @w:	the worker
 * @c:	@l, which the main thread holds a reference to until it has
 *	waited for this command
 */
static void hold_run(struct worker *w, struct worker_cmd *c)
{
	hold_listener(w, c->l, true);
}

static const struct worker_cmd_ops controlcmd_hold = { .run = hold_run };

/**
 * resume_run() - controlcmd_resume: accept on a listener again
 * @w:	the worker
 * @c:	@l, as for controlcmd_hold
 */
static void resume_run(struct worker *w, struct worker_cmd *c)
{
	hold_listener(w, c->l, false);
}

static const struct worker_cmd_ops controlcmd_resume = { .run = resume_run };

/**
 * struct top_base - each connection's bytes at the previous `top`
 * @id:		connection ids, ascending
 * @bytes:	bytes each way then, two per id (enum dir_index)
 * @n:		how many
 * @at:		when (ev_time())
 */
static struct top_base {
	uint64_t *id, *bytes;
	unsigned n;
	double at;
} top_base;

/**
 * by_id() - qsort() order of records: by id
 * @a:	a record
 * @b:	another
 *
 * Return: <0, 0 or >0.
 */
static int by_id(const void *a, const void *b)
{
	const struct conn_rec *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

/**
 * snapshot() - every worker's connections (or the one @only names)
 * @px:		the process
 * @only:	0, or an id
 * @n:		set to the records
 *
 * Return: records sorted by id (free() them), or NULL if memory ran out
 * or a worker did not answer.
 */
static struct conn_rec *snapshot(struct proxy *px, uint64_t only, unsigned *n)
{
	struct connview *v = calloc(px->nworkers, sizeof(*v));
	struct conn_rec *recs;
	size_t cap = 0, off = 0;

	*n = 0;
	if (!v)
		return NULL;
	for (unsigned i = 0; i < px->nworkers; i++)
		cap += only ? 1 : worker_active(&px->workers[i]) + SNAP_SLACK;
	recs = calloc(cap ? cap : 1, sizeof(*recs));
	if (!recs) {
		free(v);
		return NULL;
	}
	for (unsigned i = 0; i < px->nworkers; i++) {
		v[i].only = only;
		v[i].recs = recs + off;
		v[i].cap = only ? 1
				: (unsigned)worker_active(&px->workers[i]) +
					   SNAP_SLACK;
		off += v[i].cap;
		worker_run(&px->workers[i],
			   &(struct worker_cmd){ .ops = &controlcmd_snapshot,
						 .arg = &v[i] },
			   WORKER_CMD_NOWAIT);
	}
	if (worker_sync_all(px)) {
		log_warn(
			"control socket: a worker did not answer; its snapshot buffer is left to it");
		return NULL; /* @v and @recs may still be written: not freed */
	}
	for (unsigned i = 0; i < px->nworkers; i++) {
		memmove(recs + *n, v[i].recs, v[i].n * sizeof(*recs));
		*n += v[i].n;
	}
	free(v);
	qsort(recs, *n, sizeof(*recs), by_id);
	return recs;
}

/**
 * answer_error() - an error, in the answer's form
 * @out:	the answer
 * @json:	JSON, not text
 * @what:	the complaint
 */
static void answer_error(struct outbuf *out, bool json, const char *what)
{
	if (json) {
		outbuf_printf(out, "{\"error\":");
		outbuf_json_str(out, what);
		outbuf_printf(out, "}\n");
	} else {
		outbuf_printf(out, "error: %s\n", what);
	}
}

/**
 * cmd_conns() - `conns`: every live connection, or `conn ID`: one, in
 *		 full
 * @px:		the process
 * @only:	0 for `conns`, else the id of `conn ID`
 * @json:	JSON, not text
 * @out:	the answer
 */
static void cmd_conns(struct proxy *px, uint64_t only, bool json,
		      struct outbuf *out)
{
	unsigned n;
	struct conn_rec *r = snapshot(px, only, &n);

	if (!r) {
		answer_error(out, json,
			     "out of memory, or a worker did not answer");
		return;
	}
	if (only && !n) {
		answer_error(out, json, "no such connection");
	} else if (only) {
		if (json)
			connrec_json(out, &r[0], true);
		else
			connrec_detail(out, &r[0]);
		outbuf_printf(out, json ? "\n" : "");
	} else if (json) {
		outbuf_printf(out, "{\"conns\":[");
		for (unsigned i = 0; i < n; i++) {
			outbuf_printf(out, i ? ",\n" : "\n");
			connrec_json(out, &r[i], false);
		}
		outbuf_printf(out, "]}\n");
	} else {
		connrec_text_head(out);
		for (unsigned i = 0; i < n; i++)
			connrec_text(out, &r[i]);
	}
	free(r);
}

/**
 * listener_conns() - how many of a snapshot's connections came on @name
 * @r:		the records
 * @n:		how many
 * @name:	the listener's name
 *
 * Return: the count.
 */
static unsigned listener_conns(const struct conn_rec *r, unsigned n,
			       const char *name)
{
	unsigned k = 0;

	for (unsigned i = 0; i < n; i++)
		k += !strcmp(r[i].listener, name);
	return k;
}

/**
 * listener_json() - one listener as a JSON object
 * @out:	the answer
 * @l:		the listener
 * @r:		its counters
 * @now:	its connections now
 */
static void listener_json(struct outbuf *out, const struct listener *l,
			  const struct lreport *r, unsigned now)
{
	outbuf_printf(out, "{\"name\":");
	outbuf_json_str(out, l->name);
	outbuf_printf(out, ",\"listen\":");
	outbuf_json_str(out, l->cfg->o.listen.text);
	outbuf_printf(
		out,
		",\"drained\":%s,\"conns\":%u,\"total\":%llu,\"backends\":[",
		l->held ? "true" : "false", now,
		(unsigned long long)r->accepted);
	for (unsigned b = 0; b < r->nbackends; b++) {
		outbuf_printf(out, "%s{\"address\":", b ? "," : "");
		outbuf_json_str(out, r->backends[b]);
		outbuf_printf(out,
			      ",\"failures\":%llu,\"admin\":\"%s\","
			      "\"health\":\"%s\",\"changes\":%llu}",
			      (unsigned long long)r->backend_failures[b],
			      listener_admin_name(r->backend_admin[b]),
			      r->backend_down[b] ? "down" : "up",
			      (unsigned long long)r->backend_changes[b]);
	}
	outbuf_printf(out, "]}");
}

/**
 * cmd_listeners() - `listeners`: each with its address, backends and
 *		     their failures, connections now and in all
 * @px:		the process
 * @json:	JSON, not text
 * @out:	the answer
 */
static void cmd_listeners(struct proxy *px, bool json, struct outbuf *out)
{
	unsigned n, k = 0;
	struct conn_rec *recs = snapshot(px, 0, &n);

	if (!recs) {
		answer_error(out, json,
			     "out of memory, or a worker did not answer");
		return;
	}
	outbuf_printf(out,
		      json ? "{\"listeners\":["
			   : "%-12s %-24s %-8s %6s %10s %s\n",
		      "NAME", "LISTEN", "STATE", "CONNS", "TOTAL",
		      "BACKENDS (FAILURES ADMIN HEALTH)");
	for (struct listener *l = px->listeners; l; l = l->next) {
		struct lreport r = { 0 };
		unsigned now = listener_conns(recs, n, l->name);

		if (listener_is(l, LISTENER_RETIRED))
			continue;
		metrics_report_listener(l, &r);
		if (json) {
			outbuf_printf(out, k++ ? ",\n" : "\n");
			listener_json(out, l, &r, now);
			continue;
		}
		outbuf_printf(out, "%-12s %-24s %-8s %6u %10llu", l->name,
			      l->cfg->o.listen.text,
			      l->held ? "drained" : "open", now,
			      (unsigned long long)r.accepted);
		for (unsigned b = 0; b < r.nbackends; b++)
			outbuf_printf(out, " %s (%llu %s %s)", r.backends[b],
				      (unsigned long long)r.backend_failures[b],
				      listener_admin_name(r.backend_admin[b]),
				      r.backend_down[b] ? "down" : "up");
		outbuf_printf(out, "\n");
	}
	if (json)
		outbuf_printf(out, "]}\n");
	free(recs);
}

/**
 * cmd_hold() - `drain NAME` / `resume NAME`: stop or start accepting on
 *		one listener, in every worker, without a reload
 * @px:		the process
 * @name:	the listener
 * @hold:	drain, not resume
 * @who:	the asker's credentials, for the log
 * @json:	JSON, not text
 * @out:	the answer
 */
static void cmd_hold(struct proxy *px, const char *name, bool hold,
		     const char *who, bool json, struct outbuf *out)
{
	struct listener *l = listener_named(px, name);

	if (!l || px->state != PX_RUNNING) {
		answer_error(out, json,
			     l ? "the process is draining"
			       : "no such listener");
		return;
	}
	for (unsigned i = 0; i < px->nworkers; i++)
		worker_run(
			&px->workers[i],
			&(struct worker_cmd){ .ops = hold ? &controlcmd_hold
							  : &controlcmd_resume,
					      .l = l },
			WORKER_CMD_NOWAIT);
	worker_sync_all(px);
	listener_hold(l, hold);
	log_info("listener %s: %s by control socket (%s)%s", name,
		 hold ? "drained" : "resumed", who,
		 hold ? ": no new connection until resume" : "");
	if (json) {
		outbuf_printf(out, "{\"listener\":");
		outbuf_json_str(out, name);
		outbuf_printf(out, ",\"drained\":%s}\n",
			      hold ? "true" : "false");
	} else {
		outbuf_printf(out, "listener %s %s\n", name,
			      hold ? "drained" : "resumed");
	}
}

/**
 * find_backend() - a listener's backend, by its address as configured or
 *		    its place in the list, from 1
 * @lo:		the listener's settings
 * @word:	the command's word
 *
 * Return: its index, or -1.
 */
static int find_backend(const struct listen_opts *lo, const char *word)
{
	char *end;
	unsigned long k;

	for (unsigned i = 0; i < lo->nbackends; i++)
		if (!strcmp(lo->backend[i].text, word))
			return (int)i;
	errno = 0;
	k = strtoul(word, &end, 10);
	if (isdigit((unsigned char)*word) && !*end && !errno && k >= 1 &&
	    k <= lo->nbackends)
		return (int)k - 1;
	return -1;
}

/**
 * cmd_backend() - `backend LISTENER BACKEND drain|maint|ready`: take a
 *		   backend out of service, or put it back, without a reload
 * @px:		the process
 * @w:		the command's words after "backend"
 * @who:	the asker's credentials, for the log
 * @json:	JSON, not text
 * @out:	the answer
 *
 * Connections open to it run on; only new ones are steered
 * (listener_pick_backend()).
 */
static void cmd_backend(struct proxy *px, char *const w[3], const char *who,
			bool json, struct outbuf *out)
{
	struct listener *l = listener_named(px, w[0]);
	int be = l ? find_backend(&l->cfg->o, w[1]) : -1;
	int admin = -1;
	char why[160];

	for (int a = 0; a < BE_ADMIN_COUNT; a++)
		if (!strcmp(w[2], listener_admin_name(a)))
			admin = a;
	if (!l || be < 0 || admin < 0) {
		answer_error(out, json,
			     !l	      ? "no such listener"
			     : be < 0 ? "no such backend on that listener "
					"(its address as configured, or its "
					"place from 1)"
				      : "expected drain, maint or ready");
		return;
	}
	snprintf(why, sizeof(why), "by control socket (%s)", who);
	listener_set_admin(l->cfg, (unsigned)be, (enum be_admin)admin, why);
	if (json) {
		outbuf_printf(out, "{\"listener\":");
		outbuf_json_str(out, l->name);
		outbuf_printf(out, ",\"backend\":");
		outbuf_json_str(out, l->cfg->o.backend[be].text);
		outbuf_printf(out, ",\"admin\":\"%s\"}\n", w[2]);
	} else {
		outbuf_printf(out, "listener %s backend %s %s\n", l->name,
			      l->cfg->o.backend[be].text, w[2]);
	}
}

/**
 * kill_all() - ask every worker to reset what @sel names
 * @px:		the process
 * @sel:	the connections
 * @who:	the asker's credentials, for the end lines
 * @n:		set to how many were reset
 *
 * Each worker is lent a struct conn_kill of its own, so that none writes
 * another's count.
 *
 * Return: 0, or -1 (memory, or a worker that did not answer: then what
 * was lent is left to it).
 */
static int kill_all(struct proxy *px, const struct conn_sel *sel,
		    const char *who, unsigned *n)
{
	struct conn_kill *k = calloc(px->nworkers, sizeof(*k));

	*n = 0;
	if (!k)
		return -1;
	for (unsigned i = 0; i < px->nworkers; i++) {
		k[i].sel = *sel;
		snprintf(k[i].who, sizeof(k[i].who), "control socket (%s)",
			 who);
		worker_run(&px->workers[i],
			   &(struct worker_cmd){ .ops = &controlcmd_kill,
						 .arg = &k[i] },
			   WORKER_CMD_NOWAIT);
	}
	if (worker_sync_all(px))
		return -1; /* @k may still be written: not freed */
	for (unsigned i = 0; i < px->nworkers; i++)
		*n += k[i].killed;
	free(k);
	return 0;
}

/**
 * backend_named() - does any listener name this backend now
 * @px:		the process
 * @sel:	a CONN_SEL_BACKEND selector
 *
 * Return: true if one does, by name or by address.
 */
static bool backend_named(struct proxy *px, const struct conn_sel *sel)
{
	for (struct listener *l = px->listeners; l; l = l->next) {
		const struct listen_opts *o = &l->cfg->o;

		for (unsigned b = 0; b < o->nbackends; b++)
			if (!strcmp(o->backend[b].text, sel->text) ||
			    (sel->has_addr &&
			     connview_addr_match(sel, &o->backend[b].addr)))
				return true;
	}
	return false;
}

/**
 * cmd_kill() - `kill ID`: reset one connection, both peers; `kill client
 *		ADDR[:PORT]`, `kill backend HOST:PORT`, `kill user NAME`:
 *		every one of a group
 * @px:		the process
 * @sel:	the connections
 * @kind:	the group's word (ctlsel.c's kill_kinds), NULL for `kill ID`
 * @arg:	the group's argument as given (no control characters), for the
 *		answer
 * @who:	the asker's credentials, for the end lines
 * @json:	JSON, not text
 * @out:	the answer
 *
 * A group that has no connection is no error (there is nothing left of
 * it, which is what was asked), unless it is a backend no listener
 * names: that is a typo.
 */
static void cmd_kill(struct proxy *px, const struct conn_sel *sel,
		     const char *kind, const char *arg, const char *who,
		     bool json, struct outbuf *out)
{
	unsigned n;

	if (kill_all(px, sel, who, &n)) {
		answer_error(out, json,
			     "out of memory, or a worker did not answer");
		return;
	}
	if (sel->kind == CONN_SEL_ID) {
		if (!n)
			answer_error(out, json, "no such connection");
		else if (json)
			outbuf_printf(out, "{\"killed\":%llu}\n",
				      (unsigned long long)sel->id);
		else
			outbuf_printf(out, "killed %llu\n",
				      (unsigned long long)sel->id);
		return;
	}
	if (!n && sel->kind == CONN_SEL_BACKEND && !backend_named(px, sel)) {
		answer_error(
			out, json,
			"no listener has that backend; name it as listeners prints it, or by ADDR[:PORT]");
		return;
	}
	log_info("control socket (%s): kill %s %s: %u connection%s reset", who,
		 kind, arg, n, n == 1 ? "" : "s");
	if (json) {
		outbuf_printf(out, "{\"kill\":\"%s\",\"match\":", kind);
		outbuf_json_str(out, arg);
		outbuf_printf(out, ",\"killed\":%u}\n", n);
	} else {
		outbuf_printf(out, "killed %u connection%s of %s %s\n", n,
			      n == 1 ? "" : "s", kind, arg);
	}
}

/**
 * struct top_row - a connection and its rates over the interval
 * @r:		the connection
 * @rate:	bytes per second each way (enum dir_index)
 * @sum:	both ways
 */
struct top_row {
	const struct conn_rec *r;
	double rate[DIR_COUNT], sum;
};

/**
 * by_rate() - qsort() order of top rows: busiest first, then by id
 * @a:	a row
 * @b:	another
 *
 * Return: <0, 0 or >0.
 */
static int by_rate(const void *a, const void *b)
{
	const struct top_row *x = a, *y = b;

	if (x->sum != y->sum)
		return x->sum < y->sum ? 1 : -1;
	return by_id(x->r, y->r);
}

/**
 * rate_rows() - each connection's bytes per second since the baseline,
 *		 and the baseline moved to now
 * @recs:	the snapshot, by id
 * @n:		how many
 * @now:	ev_time()
 * @dt:		set to the interval
 *
 * Return: rows (free() them), or NULL if memory ran out.
 */
static struct top_row *rate_rows(const struct conn_rec *recs, unsigned n,
				 double now, double *dt)
{
	struct top_row *rows = calloc(n ? n : 1, sizeof(*rows));
	uint64_t *id = malloc((n ? n : 1) * sizeof(*id));
	uint64_t *bytes = malloc((n ? n : 1) * 2 * sizeof(*bytes));
	unsigned j = 0;

	if (!rows || !id || !bytes) {
		free(rows);
		free(id);
		free(bytes);
		return NULL;
	}
	*dt = top_base.at ? now - top_base.at : 0;
	for (unsigned i = 0; i < n; i++) {
		const struct conn_rec *r = &recs[i];
		double span;
		bool seen;

		while (j < top_base.n && top_base.id[j] < r->id)
			j++;
		seen = j < top_base.n && top_base.id[j] == r->id;
		span = seen ? *dt : r->age;
		rows[i].r = r;
		for (int d = 0; d < DIR_COUNT; d++) {
			uint64_t b = r->spliced[d] + r->copied[d];
			uint64_t was = seen ? top_base.bytes[2 * j + d] : 0;

			rows[i].rate[d] = span > 0 ? (b - was) / span : 0;
			rows[i].sum += rows[i].rate[d];
			id[i] = r->id;
			bytes[2 * i + d] = b;
		}
	}
	free(top_base.id);
	free(top_base.bytes);
	top_base = (struct top_base){ id, bytes, n, now };
	return rows;
}

/**
 * top_print() - the rows of `top`, busiest first
 * @out:	the answer
 * @rows:	the rows, sorted
 * @n:		how many to print
 * @all:	connections in all
 * @dt:		the interval
 * @json:	JSON, not text
 */
static void top_print(struct outbuf *out, const struct top_row *rows,
		      unsigned n, unsigned all, double dt, bool json)
{
	if (json)
		outbuf_printf(out,
			      "{\"interval\":%.3f,\"conns_total\":%u,\"top\":[",
			      dt, all);
	else
		outbuf_printf(
			out,
			"smbsplice top: %u connections, rates over %.1fs\n%-6s %-22s %-10s %-10s %12s %12s %4s %s\n",
			all, dt, "ID", "CLIENT", "LISTENER", "STATE", "UP_B/S",
			"DOWN_B/S", "REQS", "OLDEST");
	for (unsigned i = 0; i < n; i++) {
		const struct conn_rec *r = rows[i].r;

		if (json) {
			outbuf_printf(
				out,
				"%s{\"up_rate\":%.0f,\"down_rate\":%.0f,\"conn\":",
				i ? ",\n" : "\n", rows[i].rate[DIR_TO_SERVER],
				rows[i].rate[DIR_TO_CLIENT]);
			connrec_json(out, r, false);
			outbuf_printf(out, "}");
			continue;
		}
		outbuf_printf(out,
			      "%-6llu %-22s %-10s %-10s %12.0f %12.0f %4u ",
			      (unsigned long long)r->id, r->cli, r->listener,
			      r->state, rows[i].rate[DIR_TO_SERVER],
			      rows[i].rate[DIR_TO_CLIENT], r->outstanding);
		if (r->oldest_cmd)
			outbuf_printf(out, "%s %.3fs\n", r->oldest_cmd,
				      r->oldest_age);
		else
			outbuf_printf(out, "-\n");
	}
	if (json)
		outbuf_printf(out, "]}\n");
}

/**
 * cmd_top() - `top [N]`: the N busiest connections by bytes per second
 *	       since the previous `top`
 * @px:		the process
 * @max:	N
 * @json:	JSON, not text
 * @out:	the answer
 */
static void cmd_top(struct proxy *px, unsigned max, bool json,
		    struct outbuf *out)
{
	unsigned n;
	struct conn_rec *recs = snapshot(px, 0, &n);
	struct top_row *rows = NULL;
	double dt;

	if (recs)
		rows = rate_rows(recs, n, ev_time(), &dt);
	if (!rows) {
		answer_error(out, json,
			     "out of memory, or a worker did not answer");
		free(recs);
		return;
	}
	qsort(rows, n, sizeof(*rows), by_rate);
	top_print(out, rows, n < max ? n : max, n, dt, json);
	free(rows);
	free(recs);
}

/**
 * parse_id() - a connection id or a count, as a command's argument
 * @s:		the word, or NULL
 * @v:		set to its value
 *
 * Return: true if it is a positive decimal number.
 */
static bool parse_id(const char *s, uint64_t *v)
{
	char *end;

	if (!s || !isdigit((unsigned char)*s))
		return false;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return !*end && !errno && *v;
}

/**
 * run_kill() - `kill ID` or `kill GROUP ARG`: the words checked, then
 *		cmd_kill()
 * @px:		the process
 * @w:		the words, w[0] being "kill"
 * @n:		how many
 * @who:	the asker's credentials
 * @json:	JSON, not text
 * @out:	the answer
 */
static void run_kill(struct proxy *px, char **w, unsigned n, const char *who,
		     bool json, struct outbuf *out)
{
	struct conn_sel sel = { .kind = CONN_SEL_ID };
	const char *bad;

	if (n == 2 && parse_id(w[1], &sel.id)) {
		cmd_kill(px, &sel, NULL, NULL, who, json, out);
		return;
	}
	switch (n == 3 ? ctlsel_parse(w[1], w[2], &sel, &bad) : -2) {
	case 0:
		cmd_kill(px, &sel, w[1], w[2], who, json, out);
		return;
	case -1:
		answer_error(out, json, bad);
		return;
	}
	answer_error(
		out, json,
		"kill what? kill ID, kill client ADDR[:PORT], kill backend ADDR[:PORT] or kill user [DOMAIN\\]NAME");
}

/**
 * struct command - a command, for help and for the socket's level
 * @name:	its first word
 * @usage:	with its arguments
 * @help:	what it does
 * @acts:	it changes something: the admin socket alone serves it
 */
static const struct command {
	const char *name, *usage, *help;
	bool acts;
} commands[] = {
	{ "conns", "conns", "every live connection", false },
	{ "conn", "conn ID", "one connection in full", false },
	{ "listeners", "listeners", "listeners, backends and their failures",
	  false },
	{ "top", "top [N]", "the N busiest since the previous top", false },
	{ "info", "info", "version, pid, uptime, workers, limits, build",
	  false },
	{ "help", "help", "this list", false },
	{ "drain", "drain LISTENER", "stop accepting on a listener", true },
	{ "resume", "resume LISTENER", "accept on it again", true },
	{ "backend", "backend LISTENER BACKEND drain|maint|ready",
	  "steer new connections off a backend, or back", true },
	{ "kill", "kill ID", "reset one connection", true },
	{ "kill", "kill client ADDR[:PORT]",
	  "reset every connection from an address", true },
	{ "kill", "kill backend ADDR[:PORT]",
	  "reset every connection to a backend", true },
	{ "kill", "kill user [DOMAIN\\]NAME",
	  "reset every connection of a user's sessions", true },
};

/**
 * command_acts() - what a command's first word is, for the socket's level
 * @name:	the first word
 *
 * Return: 0 for a command that only looks, 1 for one that acts, -1 for
 * a word that names none. The read-only socket runs only a 0: a command
 * added to controlcmd_run() without its row here is refused there, not
 * served.
 */
static int command_acts(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		if (!strcmp(commands[i].name, name))
			return commands[i].acts;
	return -1;
}

/**
 * refuse_view() - answer a read-only socket's client what it may not run
 * @w0:		the command's first word, not one that only looks
 * @who:	the asker's credentials
 * @json:	JSON, not text
 * @out:	the answer
 */
static void refuse_view(const char *w0, const char *who, bool json,
			struct outbuf *out)
{
	char why[160];

	if (command_acts(w0) < 0) {
		answer_error(out, json,
			     "unknown command or bad argument; try help");
		return;
	}
	log_rate(LOG_LVL_WARN,
		 "control socket: %s refused to %s: the socket is read-only",
		 who, w0);
	/* @w0 is a command's name from the table: no need to escape it */
	snprintf(
		why, sizeof(why),
		"permission denied: this socket is read-only (level view); %s is served on the admin socket (--control)",
		w0);
	answer_error(out, json, why);
}

/**
 * cmd_help() - `help`: the commands this socket serves
 * @level:	the socket's
 * @out:	the answer
 */
static void cmd_help(enum control_level level, struct outbuf *out)
{
	outbuf_printf(out, "commands (add --json for JSON):\n");
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		if (level == CONTROL_ADMIN || !commands[i].acts)
			outbuf_printf(out, "  %-24s %s\n", commands[i].usage,
				      commands[i].help);
	if (level != CONTROL_ADMIN)
		outbuf_printf(out, "this socket is read-only (level view): "
				   "the commands that act are served on the "
				   "admin socket (--control)\n");
}

/**
 * controlcmd_run() - run one request line
 * @px:		the process
 * @line:	the line, without its newline (split in place)
 * @who:	the asker's credentials
 * @level:	what the socket it came on may do
 * @out:	the answer
 */
void controlcmd_run(struct proxy *px, char *line, const char *who,
		    enum control_level level, struct outbuf *out)
{
	char *w[4] = { 0 }, *save = NULL, *t;
	unsigned n = 0;
	bool json = false;
	uint64_t v;

	for (t = strtok_r(line, " \t\r", &save); t;
	     t = strtok_r(NULL, " \t\r", &save)) {
		if (!strcmp(t, "--json"))
			json = true;
		else if (n < 4)
			w[n++] = t;
	}
	if (n && level != CONTROL_ADMIN && command_acts(w[0]) != 0) {
		refuse_view(w[0], who, json, out);
	} else if (!n || !strcmp(w[0], "help")) {
		cmd_help(level, out);
	} else if (!strcmp(w[0], "conns") && n == 1) {
		cmd_conns(px, 0, json, out);
	} else if (!strcmp(w[0], "conn") && n == 2 && parse_id(w[1], &v)) {
		cmd_conns(px, v, json, out);
	} else if (!strcmp(w[0], "listeners") && n == 1) {
		cmd_listeners(px, json, out);
	} else if (!strcmp(w[0], "info") && n == 1) {
		ctlinfo_run(px, level, json, out);
	} else if ((!strcmp(w[0], "drain") || !strcmp(w[0], "resume")) &&
		   n == 2) {
		cmd_hold(px, w[1], !strcmp(w[0], "drain"), who, json, out);
	} else if (!strcmp(w[0], "backend") && n == 4) {
		cmd_backend(px, &w[1], who, json, out);
	} else if (!strcmp(w[0], "kill")) {
		run_kill(px, w, n, who, json, out);
	} else if (!strcmp(w[0], "top") && n <= 2 &&
		   (n == 1 || parse_id(w[1], &v))) {
		cmd_top(px,
			n == 1	      ? TOP_DEFAULT
			: v > TOP_MAX ? TOP_MAX
				      : v,
			json, out);
	} else {
		answer_error(out, json,
			     "unknown command or bad argument; try help");
	}
}
