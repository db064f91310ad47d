// SPDX-License-Identifier: GPL-2.0-or-later
/* connlog.c - what a connection says: its end line and its SMB warnings
 *
 * Theory of operation: a connection logs one line when it ends, which
 * tells its story: who, to which backend, through which listener and
 * worker, how it ended and why, how long it lasted, and what each
 * direction moved and how (the c2s= and s2c= fields, client to server and
 * server to client, which scripts parse: their names stay). In smb mode
 * the line adds the dialect, the large READs and WRITEs, signing and
 * encryption, and whether a stream ended in the middle of a message.
 *
 * A connection that forwarded nothing (connect and close, a silent client,
 * a server never reached) is what a flood is made of, so its line is rate
 * limited per way of ending; every few seconds the worker asks for the
 * count of the lines suppressed (connlog_quiet()).
 *
 * Under journald, each line also carries the connection's number, client
 * and listener as journal fields (and the end line how it ended), which
 * `journalctl SMBSPLICE_CLIENT=...` selects by.
 *
 * The warnings are the per-connection lines, rate limited, that a reader
 * of the SMB stream has to give: a stream smbsplice cannot parse, and a
 * server that invites clients around smbsplice (multichannel). This file
 * only reads the connection; conn.c records what was said.
 */
#include "config.h"

#include <stdio.h>

#include "conn/connlog.h"
#include "net/listener.h"
#include "common/log.h"
#include "conf/options.h"

static const char *const end_word[] = {
	[END_FIN] = "fin",	     [END_RST] = "rst",
	[END_TIMEOUT] = "timeout",   [END_ERROR] = "error",
	[END_SHUTDOWN] = "shutdown",
};

_Static_assert(sizeof(end_word) / sizeof(end_word[0]) == END_COUNT,
	       "a word per way of ending");

/* End lines of connections that forwarded nothing, per way of ending,
 * in this worker. */
static __thread struct log_limit quiet_end_limit[END_COUNT];

/**
 * midframe_word() - which streams ended in the middle of an SMB message
 * @c:	the connection
 *
 * Return: " midframe=" and the direction (named as the metrics name it),
 * or "" when both ended at a message boundary.
 */
static const char *midframe_word(const struct conn *c)
{
	static const char *const word[] = { "", " midframe=to_server",
					    " midframe=to_client",
					    " midframe=both" };

	return word[c->dir[DIR_TO_SERVER].pump.midframe |
		    c->dir[DIR_TO_CLIENT].pump.midframe << 1];
}

/**
 * conn_smb_text() - the SMB part of a connection's log line
 * @c:		the connection
 * @out:	buffer
 * @outlen:	its size
 *
 * Return: @out, empty in tcp mode.
 */
static const char *conn_smb_text(const struct conn *c, char *out, size_t outlen)
{
	const struct dir *ts = &c->dir[DIR_TO_SERVER],
			 *tc = &c->dir[DIR_TO_CLIENT];
	const struct smb_stream_facts *u = &ts->fr.facts, *d = &tc->fr.facts;
	char dialect[16];

	*out = '\0';
	if (c->lo->mode != MODE_SMB)
		return out;
	smb_dialect_text(d->dialect, dialect, sizeof(dialect));
	snprintf(
		out, outlen,
		" smb dialect=%s reads=%llu/%lluB writes=%llu/%lluB signed=%s encrypted=%s%s%s",
		dialect, (unsigned long long)d->reads,
		(unsigned long long)d->read_bytes,
		(unsigned long long)u->writes,
		(unsigned long long)u->write_bytes,
		u->signed_seen || d->signed_seen ? "yes" : "no",
		u->encrypted_seen || d->encrypted_seen ? "yes" : "no",
		(ts->flags | tc->flags) & DIR_F_OPAQUE ? " opaque=yes" : "",
		midframe_word(c));
	return out;
}

/* The journal fields every line about one connection carries, so that
 * `journalctl SMBSPLICE_CLIENT=...` finds them all: its number (as
 * `smbsplice ctl conns` shows it), client and listener; the end line adds
 * how it ended. */
enum { F_CONN, F_CLIENT, F_LISTENER, F_END, F_LAST };

/**
 * conn_fields() - the journal fields of a line about a connection
 * @c:		the connection
 * @f:		where, F_LAST + 1 of them; ended after F_LISTENER
 * @id:		buffer for the number, 24 bytes
 *
 * Return: @f.
 */
static struct log_field *conn_fields(const struct conn *c, struct log_field *f,
				     char *id)
{
	snprintf(id, 24, "%llu", (unsigned long long)c->id);
	f[F_CONN] = (struct log_field){ "SMBSPLICE_CONN", id };
	f[F_CLIENT] = (struct log_field){ "SMBSPLICE_CLIENT", c->cli_text };
	f[F_LISTENER] = (struct log_field){ "SMBSPLICE_LISTENER", c->lo->name };
	f[F_END] = (struct log_field){ NULL, NULL };
	f[F_LAST] = (struct log_field){ NULL, NULL };
	return f;
}

/**
 * connlog_end() - the one line that records a connection
 * @c:		the connection
 * @end:	how it ended
 * @why:	detail for errors and timeouts, or NULL
 *
 * A connection that forwarded no byte either way has its line rate
 * limited like any per-client line; one that moved bytes always gets its
 * line.
 */
void connlog_end(const struct conn *c, enum conn_end end, const char *why)
{
	const struct pump *u = &c->dir[DIR_TO_SERVER].pump,
			  *d = &c->dir[DIR_TO_CLIENT].pump;
	struct log_field f[F_LAST + 1];
	char smb[256], line[1024], id[24];

	snprintf(
		line, sizeof(line),
		"conn %s -> %s listener=%s worker=%u end=%s%s%s%s dur=%.3fs "
		"c2s=%llu (splice %llu copy %llu) s2c=%llu (splice %llu copy %llu)%s",
		c->cli_text, c->lo->backend[c->be].text, c->lo->name,
		c->host->id, end_word[end], why ? " (" : "", why ? why : "",
		why ? ")" : "", ev_now(c->host->loop) - c->started,
		(unsigned long long)(u->spliced + u->copied),
		(unsigned long long)u->spliced, (unsigned long long)u->copied,
		(unsigned long long)(d->spliced + d->copied),
		(unsigned long long)d->spliced, (unsigned long long)d->copied,
		conn_smb_text(c, smb, sizeof(smb)));
	conn_fields(c, f, id);
	f[F_END] = (struct log_field){ "SMBSPLICE_END", end_word[end] };
	if (u->spliced + u->copied + d->spliced + d->copied)
		log_fields(f, LOG_LVL_INFO, "%s", line);
	else
		log_limited(&quiet_end_limit[end], f, LOG_LVL_INFO, "%s", line);
}

/**
 * connlog_quiet() - count the end lines suppressed in a window now over
 *
 * Called every few seconds in each worker, so that a burst of empty
 * connections is accounted for even if no other follows it.
 */
void connlog_quiet(void)
{
	unsigned long n;

	for (size_t e = 0; e < END_COUNT; e++) {
		n = log_limit_expired(&quiet_end_limit[e]);
		if (n)
			log_info(
				"%lu more connections that forwarded nothing ended (%s); their lines were suppressed",
				n, end_word[e]);
	}
}

/**
 * connlog_opaque() - a direction stopped parsing SMB: say so
 * @d:	the direction, whose framer gave up
 */
void connlog_opaque(const struct dir *d)
{
	struct log_field f[F_LAST + 1];
	char id[24];

	log_rate_fields(
		conn_fields(d->c, f, id), LOG_LVL_WARN,
		"conn %s: %s is not SMB as smbsplice reads it (%s); forwarding it opaque",
		d->c->cli_text,
		d->id == DIR_TO_SERVER ? "client to server"
				       : "server to client",
		d->fr.why);
}

/**
 * connlog_smb_warnings() - say, once per connection, that clients may go
 *			    around smbsplice
 * @d:	the direction, in smb mode
 *
 * A server that offers multichannel, or tells a client its interface
 * addresses, invites the client to open more connections straight to
 * those addresses. smbsplice changes no byte, so it cannot hide them;
 * the README says how to configure the server instead.
 *
 * Return: the DIR_F_* of the warnings given now, for the caller to
 * record so that each is given once.
 */
unsigned connlog_smb_warnings(const struct dir *d)
{
	const struct smb_stream_facts *f = &d->fr.facts;
	struct log_field lf[F_LAST + 1];
	unsigned said = 0;
	char id[24];

	if (f->multichannel && !(d->flags & DIR_F_MULTICHANNEL)) {
		said |= DIR_F_MULTICHANNEL;
		log_rate_fields(
			conn_fields(d->c, lf, id), LOG_LVL_WARN,
			"conn %s: the server offers SMB3 multichannel; clients may open connections to its own addresses, around smbsplice (set 'server multi channel support = no' in smb.conf, see README)",
			d->c->cli_text);
	}
	if (f->interface_list && !(d->flags & DIR_F_IFLIST)) {
		said |= DIR_F_IFLIST;
		log_rate_fields(
			conn_fields(d->c, lf, id), LOG_LVL_WARN,
			"conn %s: the server sent the client its network interface list (FSCTL_QUERY_NETWORK_INTERFACE_INFO); the client may connect to those addresses directly, around smbsplice",
			d->c->cli_text);
	}
	return said;
}
