/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_CONNVIEW_H
#define SMBSPLICE_CONNVIEW_H

/* connview.h - a worker's connections as the control socket sees them:
 * fixed-size records a worker fills between events, and their text and
 * JSON forms. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "smb/who.h"
#include "conf/options.h"
#include "observe/dirindex.h"

struct conn;
struct conn_host;

/* A connection's two sides, as its QUIC figures name them. */
enum conn_rec_side {
	REC_CLIENT,  /* its client is a QUIC listener's stream */
	REC_BACKEND, /* its backend is a quic: dial */
	REC_SIDES,
};

/**
 * struct conn_rec_quic - a side's QUIC connection, as ctl prints it
 * @on:		the side is a QUIC stream; nothing else is set otherwise
 * @version:	the QUIC version (1 for QUIC v1)
 * @local:	the path's local UDP address, as text
 * @remote:	its remote UDP address, the current one (after a
 *		migration, the new one)
 * @rtt_ns:	smoothed round-trip time, ns
 * @cwnd:	congestion window, bytes
 * @in_flight:	bytes in flight
 * @lost:	the stream's packets declared lost
 */
struct conn_rec_quic {
	bool on;
	uint32_t version;
	char local[64], remote[64];
	uint64_t rtt_ns, cwnd, in_flight, lost;
};

/**
 * struct conn_rec - one connection, copied out of its worker
 * @id:		its number (struct conn.id)
 * @worker:	the worker that owns it
 * @listener:	the listener it came on
 * @cli:	client address
 * @backend:	backend address, "-" before one is dialled
 * @state:	its stage (conn_state_text())
 * @age:	seconds since it was accepted
 * @idle:	seconds since either direction last delivered a byte
 * @spliced:	bytes each direction spliced (enum dir_index)
 * @copied:	bytes each direction copied
 * @outstanding: SMB2 requests sent and not yet answered
 * @oldest_cmd:	the oldest one's command (smb_command_name()), or NULL
 * @oldest_age:	seconds since it was handed to the server
 * @in_pipe:	bytes each direction holds in a splice pipe
 * @in_buf:	bytes each direction holds in a copy buffer
 * @pipe:	each direction holds a pipe now
 * @buf:	each direction holds a copy buffer now
 * @unauth:	no session setup has succeeded yet (smb mode)
 * @dialect:	the SMB dialect the server chose ("-" in tcp mode or
 *		before the NEGOTIATE response)
 * @signed_:	a signed message was seen
 * @encrypted:	an encrypted message was seen
 * @bport:	the backend socket's local port, 0 before there is one:
 *		what smbstatus shows as the client's port, unless
 *		@transparent
 * @transparent: --transparent: the backend sees the client's own
 *		address and port
 * @session_id:	SessionId of the last session setup that succeeded (or
 *		of the last encrypted frame, if none was seen); 0 for none
 * @auth:	how its user is known (smb_who_auth_text()), NULL if no
 *		session setup has succeeded
 * @user:	its user as the client named it, "" if not known
 * @domain:	its domain, likewise
 * @share:	shares connected (the first SMB_WHO_SHARES)
 * @nshares:	how many of @share count
 * @more_shares: shares connected beyond those
 * @open_files:	files opened and not closed
 * @sealed:	the session encrypts: trees and files are not seen since
 * @quic:	each side's QUIC figures (enum conn_rec_side)
 */
struct conn_rec {
	uint64_t id;
	unsigned worker;
	char listener[OPT_NAME_LEN];
	char cli[64];
	char backend[128];
	const char *state;
	double age, idle;
	uint64_t spliced[DIR_COUNT], copied[DIR_COUNT];
	unsigned outstanding;
	const char *oldest_cmd;
	double oldest_age;
	uint64_t in_pipe[DIR_COUNT], in_buf[DIR_COUNT];
	bool pipe[DIR_COUNT], buf[DIR_COUNT];
	bool unauth;
	char dialect[16];
	bool signed_, encrypted;
	uint16_t bport;
	bool transparent;
	uint64_t session_id;
	const char *auth;
	char user[SMB_WHO_USER_MAX];
	char domain[SMB_WHO_DOMAIN_MAX];
	char share[SMB_WHO_SHARES][SMB_WHO_SHARE_MAX];
	unsigned nshares;
	uint32_t more_shares, open_files;
	bool sealed;
	struct conn_rec_quic quic[REC_SIDES];
};

/**
 * struct connview - what the main thread asks one worker to fill
 * @only:	0 for every connection, or the one id wanted
 * @recs:	room for @cap records, lent by the main thread
 * @cap:	how many
 * @n:		records filled
 * @total:	connections the worker had (more than @n: @cap was short)
 */
struct connview {
	uint64_t only;
	struct conn_rec *recs;
	unsigned cap, n, total;
};

/* What a kill names: one connection, or every connection of a group.
 * Another group is one more kind here, one more case in connview.c's
 * sel_match(), and one more row of control/ctlsel.c's kill_kinds. */
enum conn_sel_kind {
	CONN_SEL_ID,	  /* @id */
	CONN_SEL_CLIENT,  /* the client's address, and port if @port */
	CONN_SEL_BACKEND, /* the backend, as named (@text) or by address */
	CONN_SEL_USER, /* the session's user, "user" or "DOMAIN\\user" (@text)
			*/
};

/**
 * struct conn_sel - which connections a command is about
 * @kind:	what the selector matches on
 * @id:		CONN_SEL_ID: the connection's number
 * @addr:	CONN_SEL_CLIENT, or CONN_SEL_BACKEND with @has_addr: the
 *		address (IPv4 or IPv6; an IPv4 one also matches its
 *		IPv4-mapped IPv6 form)
 * @has_addr:	@addr is set
 * @port:	the port in @addr must match too
 * @text:	CONN_SEL_BACKEND: the backend as the listener names it
 *		(its HOST:PORT as written, what `listeners` prints);
 *		CONN_SEL_USER: the user's name (connview_user_is())
 */
struct conn_sel {
	enum conn_sel_kind kind;
	uint64_t id;
	struct sockaddr_storage addr;
	bool has_addr, port;
	char text[128];
};

/**
 * struct conn_kill - what the main thread asks one worker to reset
 * @sel:	the connections
 * @who:	who asked, for the end lines
 * @killed:	set by the worker: how many it reset (each worker is lent
 *		its own struct, so none writes another's count)
 */
struct conn_kill {
	struct conn_sel sel;
	char who[96];
	unsigned killed;
};

void connview_fill(const struct conn_host *h, struct connview *v);
unsigned connview_kill(struct conn_host *h, struct conn_kill *k);
bool connview_addr_match(const struct conn_sel *s,
			 const struct sockaddr_storage *sa);
const char *connview_user(const struct conn *c, const char **domain);
bool connview_user_is(const struct conn *c, const char *name);

#endif /* SMBSPLICE_CONNVIEW_H */
