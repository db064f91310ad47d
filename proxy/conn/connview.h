/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_CONNVIEW_H
#define SMBSPLICE_CONNVIEW_H

/* connview.h - a worker's connections as the control socket sees them:
 * fixed-size records a worker fills between events, and their text and
 * JSON forms. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conf/options.h"
#include "observe/dirindex.h"

struct conn_host;

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

/**
 * struct conn_kill - what the main thread asks a worker to reset
 * @id:		the connection
 * @who:	who asked, for the log line
 * @found:	set by the worker that had it
 */
struct conn_kill {
	uint64_t id;
	char who[96];
	bool found;
};

void connview_fill(const struct conn_host *h, struct connview *v);
bool connview_kill(struct conn_host *h, struct conn_kill *k);

#endif /* SMBSPLICE_CONNVIEW_H */
