// SPDX-License-Identifier: GPL-2.0-or-later
/* connrec.c - a connection's record, as `conns` and `conn` print it
 *
 * Theory of operation: the records a worker copied out (conn/connview.c)
 * become a table, JSON, or a detailed page in the control socket's
 * answer (outbuf.c). Nothing here touches a connection: the records are
 * the main thread's own by the time they are printed.
 *
 * What joins a record to smbstatus is its SessionId (smbstatus's
 * session_id, in decimal, as it prints it) and the backend socket's own
 * port (the port in smbstatus's hostname, "ipv4:ADDR:PORT"); under
 * --transparent ADDR is the client's own, else smbsplice's. Who and
 * what are as the wire said them in clear (smb/who.c): a name the client
 * chose is printed as it is (control characters were made '?'), so the
 * text table is for eyes, and JSON for scripts.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "control/connrec.h"

/**
 * user_text() - the session's user as one word
 * @r:		the connection
 * @out:	buffer
 * @len:	its size
 */
static void user_text(const struct conn_rec *r, char *out, size_t len)
{
	if (!r->auth)
		snprintf(out, len, "-");
	else if (strcmp(r->auth, "ntlmssp"))
		snprintf(out, len, "%s", r->auth);
	else if (r->domain[0])
		snprintf(out, len, "%s\\%s", r->domain, r->user);
	else
		snprintf(out, len, "%s", r->user);
}

/**
 * shares_text() - the shares connected, comma-separated
 * @r:		the connection
 * @out:	buffer
 * @len:	its size
 */
static void shares_text(const struct conn_rec *r, char *out, size_t len)
{
	size_t at = 0;

	if (r->sealed) {
		snprintf(out, len, "encrypted");
		return;
	}
	snprintf(out, len, "-");
	for (unsigned i = 0; i < r->nshares && at < len; i++)
		at += (size_t)snprintf(out + at, len - at, "%s%s", i ? "," : "",
				       r->share[i]);
	if (r->more_shares && at < len)
		snprintf(out + at, len - at, "+%u", r->more_shares);
}

/**
 * count_text() - open files, or "encrypted"
 * @r:		the connection
 * @out:	buffer
 * @len:	its size
 */
static void count_text(const struct conn_rec *r, char *out, size_t len)
{
	if (r->sealed)
		snprintf(out, len, "encrypted");
	else if (!r->auth)
		snprintf(out, len, "-");
	else
		snprintf(out, len, "%u", r->open_files);
}

/* The QUIC sides' names, in text and as JSON keys. */
static const char *const side_name[REC_SIDES] = { "client", "backend" };

/**
 * quic_lines() - a line for each side that is a QUIC stream
 * @ob:		the answer
 * @r:		the connection
 * @indent:	what starts each line: under a row of `conns`, two blanks
 *
 * Fields as words and values, so that a line reads and splits alike.
 */
static void quic_lines(struct outbuf *ob, const struct conn_rec *r,
		       const char *indent)
{
	for (int s = 0; s < REC_SIDES; s++) {
		const struct conn_rec_quic *q = &r->quic[s];

		if (!q->on)
			continue;
		outbuf_printf(
			ob,
			"%squic %s version 0x%08x local %s remote %s rtt %.3fms cwnd %llu in_flight %llu lost %llu\n",
			indent, side_name[s], q->version, q->local, q->remote,
			q->rtt_ns / 1e6, (unsigned long long)q->cwnd,
			(unsigned long long)q->in_flight,
			(unsigned long long)q->lost);
	}
}

/**
 * json_quic() - each side's QUIC figures, or null for a side that is not
 *		 a QUIC stream
 * @ob:	the answer
 * @r:	the connection
 */
static void json_quic(struct outbuf *ob, const struct conn_rec *r)
{
	for (int s = 0; s < REC_SIDES; s++) {
		const struct conn_rec_quic *q = &r->quic[s];

		outbuf_printf(ob, ",\"quic_%s\":", side_name[s]);
		if (!q->on) {
			outbuf_printf(ob, "null");
			continue;
		}
		outbuf_printf(ob, "{\"version\":%u,\"local\":", q->version);
		outbuf_json_str(ob, q->local);
		outbuf_printf(ob, ",\"remote\":");
		outbuf_json_str(ob, q->remote);
		outbuf_printf(
			ob,
			",\"rtt_ms\":%.6f,\"cwnd\":%llu,\"bytes_in_flight\":%llu,\"lost_packets\":%llu}",
			q->rtt_ns / 1e6, (unsigned long long)q->cwnd,
			(unsigned long long)q->in_flight,
			(unsigned long long)q->lost);
	}
}

/* Room for the longest user and shares text. */
#define WHO_TEXT    (SMB_WHO_DOMAIN_MAX + SMB_WHO_USER_MAX + 2)
#define SHARES_TEXT (SMB_WHO_SHARES * SMB_WHO_SHARE_MAX + 16)

/**
 * connrec_text_head() - the header line of `conns`
 * @ob:	the answer
 */
void connrec_text_head(struct outbuf *ob)
{
	outbuf_printf(
		ob,
		"%-6s %-2s %-10s %-22s %-22s %-10s %8s %7s %12s %12s %12s %12s %-7s %-3s %-6s %-10s %-16s %-12s %5s %4s %s\n",
		"ID", "W", "LISTENER", "CLIENT", "BACKEND", "STATE", "AGE",
		"IDLE", "UP_SPLICED", "UP_COPIED", "DN_SPLICED", "DN_COPIED",
		"DIALECT", "S/E", "BPORT", "SESSION", "USER", "SHARES", "FILES",
		"REQS", "OLDEST");
}

/**
 * connrec_text() - one line of `conns`
 * @ob:	the answer
 * @r:	the connection
 */
void connrec_text(struct outbuf *ob, const struct conn_rec *r)
{
	char port[8] = "-", sess[24] = "-", user[WHO_TEXT];
	char shares[SHARES_TEXT], files[16];

	if (r->bport)
		snprintf(port, sizeof(port), "%u%s", r->bport,
			 r->transparent ? "t" : "");
	if (r->session_id)
		snprintf(sess, sizeof(sess), "%llu",
			 (unsigned long long)r->session_id);
	user_text(r, user, sizeof(user));
	shares_text(r, shares, sizeof(shares));
	count_text(r, files, sizeof(files));
	outbuf_printf(
		ob,
		"%-6llu %-2u %-10s %-22s %-22s %-10s %8.1f %7.1f %12llu %12llu %12llu %12llu %-7s %c%c  %-6s %-10s %-16s %-12s %5s %4u ",
		(unsigned long long)r->id, r->worker, r->listener, r->cli,
		r->backend, r->state, r->age, r->idle,
		(unsigned long long)r->spliced[DIR_TO_SERVER],
		(unsigned long long)r->copied[DIR_TO_SERVER],
		(unsigned long long)r->spliced[DIR_TO_CLIENT],
		(unsigned long long)r->copied[DIR_TO_CLIENT], r->dialect,
		r->signed_ ? 'S' : '-', r->encrypted ? 'E' : '-', port, sess,
		user, shares, files, r->outstanding);
	if (r->oldest_cmd)
		outbuf_printf(ob, "%s %.3fs\n", r->oldest_cmd, r->oldest_age);
	else
		outbuf_printf(ob, "-\n");
	quic_lines(ob, r, "  ");
}

/**
 * json_who() - the fields that join a record to smbstatus, and who and
 *		what its session is
 * @ob:	the answer
 * @r:	the connection
 *
 * SessionId is a string of decimal digits, as smbstatus --json has it
 * (a 64-bit number is more than a JSON reader's double holds).
 */
static void json_who(struct outbuf *ob, const struct conn_rec *r)
{
	if (r->bport)
		outbuf_printf(ob, ",\"backend_port\":%u", r->bport);
	else
		outbuf_printf(ob, ",\"backend_port\":null");
	outbuf_printf(ob, ",\"transparent\":%s",
		      r->transparent ? "true" : "false");
	if (r->session_id)
		outbuf_printf(ob, ",\"session_id\":\"%llu\"",
			      (unsigned long long)r->session_id);
	else
		outbuf_printf(ob, ",\"session_id\":null");
	outbuf_printf(ob, ",\"auth\":");
	outbuf_json_str(ob, r->auth);
	outbuf_printf(ob, ",\"user\":");
	outbuf_json_str(ob, r->user[0] ? r->user : NULL);
	outbuf_printf(ob, ",\"domain\":");
	outbuf_json_str(ob, r->domain[0] ? r->domain : NULL);
	if (r->sealed) {
		outbuf_printf(ob, ",\"shares\":\"encrypted\",\"more_shares\":"
				  "null,\"open_files\":\"encrypted\"");
		return;
	}
	outbuf_printf(ob, ",\"shares\":[");
	for (unsigned i = 0; i < r->nshares; i++) {
		outbuf_printf(ob, i ? "," : "");
		outbuf_json_str(ob, r->share[i]);
	}
	outbuf_printf(ob,
		      "],\"more_shares\":%u,\"open_files\":", r->more_shares);
	if (r->auth)
		outbuf_printf(ob, "%u", r->open_files);
	else
		outbuf_printf(ob, "null");
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
	json_who(ob, r);
	json_quic(ob, r);
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
 * detail_who() - the smbstatus join and the session, a field a line
 * @ob:	the answer
 * @r:	the connection
 */
static void detail_who(struct outbuf *ob, const struct conn_rec *r)
{
	char user[WHO_TEXT], shares[SHARES_TEXT], files[16];

	if (r->bport)
		outbuf_printf(ob, "backend port %u (smbd sees %s address)\n",
			      r->bport,
			      r->transparent ? "the client's own"
					     : "smbsplice's");
	else
		outbuf_printf(ob, "backend port -\n");
	if (r->session_id)
		outbuf_printf(ob, "session %llu\n",
			      (unsigned long long)r->session_id);
	else
		outbuf_printf(ob, "session -\n");
	user_text(r, user, sizeof(user));
	shares_text(r, shares, sizeof(shares));
	count_text(r, files, sizeof(files));
	outbuf_printf(ob, "user %s\nshares %s\nopen files %s\n", user, shares,
		      files);
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
	detail_who(ob, r);
	quic_lines(ob, r, "");
}
