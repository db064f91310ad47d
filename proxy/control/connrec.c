// SPDX-License-Identifier: GPL-2.0-or-later
/* connrec.c - a connection's record, as `conns` and `conn` print it
 *
 * Theory of operation: the records a worker copied out (conn/connview.c)
 * become a table, JSON, or a detailed page in the control socket's
 * answer (outbuf.c). Nothing here touches a connection: the records are
 * the main thread's own by the time they are printed.
 */
#include "config.h"

#include <stdio.h>

#include "control/connrec.h"

/**
 * connrec_text_head() - the header line of `conns`
 * @ob:	the answer
 */
void connrec_text_head(struct outbuf *ob)
{
	outbuf_printf(
		ob,
		"%-6s %-2s %-10s %-22s %-22s %-10s %8s %7s %12s %12s %12s %12s %-7s %-3s %4s %s\n",
		"ID", "W", "LISTENER", "CLIENT", "BACKEND", "STATE", "AGE",
		"IDLE", "UP_SPLICED", "UP_COPIED", "DN_SPLICED", "DN_COPIED",
		"DIALECT", "S/E", "REQS", "OLDEST");
}

/**
 * connrec_text() - one line of `conns`
 * @ob:	the answer
 * @r:	the connection
 */
void connrec_text(struct outbuf *ob, const struct conn_rec *r)
{
	outbuf_printf(
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
		outbuf_printf(ob, "%s %.3fs\n", r->oldest_cmd, r->oldest_age);
	else
		outbuf_printf(ob, "-\n");
}

/**
 * connrec_json() - one connection as a JSON object
 * @ob:		the answer
 * @r:		the connection
 * @full:	with its pipe and buffer holdings (`conn ID`)
 */
void connrec_json(struct outbuf *ob, const struct conn_rec *r, bool full)
{
	static const char *const dname[DIR_COUNT] = { "up", "down" };

	outbuf_printf(ob, "{\"id\":%llu,\"worker\":%u,\"listener\":",
		      (unsigned long long)r->id, r->worker);
	outbuf_json_str(ob, r->listener);
	outbuf_printf(ob, ",\"client\":");
	outbuf_json_str(ob, r->cli);
	outbuf_printf(ob, ",\"backend\":");
	outbuf_json_str(ob, r->backend);
	outbuf_printf(ob, ",\"state\":\"%s\",\"age\":%.3f,\"idle\":%.3f",
		      r->state, r->age, r->idle);
	for (int d = 0; d < DIR_COUNT; d++)
		outbuf_printf(ob, ",\"%s_spliced\":%llu,\"%s_copied\":%llu",
			      dname[d], (unsigned long long)r->spliced[d],
			      dname[d], (unsigned long long)r->copied[d]);
	outbuf_printf(ob, ",\"dialect\":");
	outbuf_json_str(ob, r->dialect);
	outbuf_printf(
		ob,
		",\"signed\":%s,\"encrypted\":%s,\"unauthenticated\":%s,\"outstanding\":%u",
		r->signed_ ? "true" : "false", r->encrypted ? "true" : "false",
		r->unauth ? "true" : "false", r->outstanding);
	outbuf_printf(ob, ",\"oldest_command\":");
	outbuf_json_str(ob, r->oldest_cmd);
	outbuf_printf(ob, ",\"oldest_age\":%.3f", r->oldest_age);
	for (int d = 0; full && d < DIR_COUNT; d++)
		outbuf_printf(
			ob,
			",\"%s_pipe\":%s,\"%s_in_pipe\":%llu,\"%s_buffer\":%s,\"%s_in_buffer\":%llu",
			dname[d], r->pipe[d] ? "true" : "false", dname[d],
			(unsigned long long)r->in_pipe[d], dname[d],
			r->buf[d] ? "true" : "false", dname[d],
			(unsigned long long)r->in_buf[d]);
	outbuf_printf(ob, "}");
}

/**
 * connrec_detail() - one connection in full, as `conn ID` prints it
 * @ob:	the answer
 * @r:	the connection
 */
void connrec_detail(struct outbuf *ob, const struct conn_rec *r)
{
	static const char *const dname[DIR_COUNT] = { "up", "down" };

	outbuf_printf(
		ob,
		"id %llu\nworker %u\nlistener %s\nclient %s\nbackend %s\nstate %s\nage %.3f\nidle %.3f\nunauthenticated %s\ndialect %s\nsigned %s\nencrypted %s\n",
		(unsigned long long)r->id, r->worker, r->listener, r->cli,
		r->backend, r->state, r->age, r->idle, r->unauth ? "yes" : "no",
		r->dialect, r->signed_ ? "yes" : "no",
		r->encrypted ? "yes" : "no");
	for (int d = 0; d < DIR_COUNT; d++)
		outbuf_printf(
			ob,
			"%s spliced %llu copied %llu pipe %s (%llu bytes) buffer %s (%llu bytes)\n",
			dname[d], (unsigned long long)r->spliced[d],
			(unsigned long long)r->copied[d],
			r->pipe[d] ? "held" : "none",
			(unsigned long long)r->in_pipe[d],
			r->buf[d] ? "held" : "none",
			(unsigned long long)r->in_buf[d]);
	outbuf_printf(ob, "outstanding %u\n", r->outstanding);
	if (r->oldest_cmd)
		outbuf_printf(ob, "oldest %s %.3fs\n", r->oldest_cmd,
			      r->oldest_age);
}
