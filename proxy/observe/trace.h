/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_TRACE_H
#define SMBSPLICE_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "smb/framer.h"
#include "observe/dirindex.h"

struct trace_conn;

/* Bytes of a frame a trace record holds at most. */
#define TRACE_SNAP 512u

/**
 * struct trace_dir_saved - one direction's capture, for a live handover
 * @seen:	stream bytes passed so far
 * @f_off:	stream offset of the frame being captured
 * @f_ts_sec:	when the framer reported it (CLOCK_REALTIME), seconds
 * @f_len:	its length, prefix included; see @f_known
 * @f_cut:	how much of it the record takes, at most TRACE_SNAP
 * @f_sent:	bytes of it the records written so far stand for
 * @f_have:	bytes of it in @buf, at most TRACE_SNAP
 * @f_ts_nsec:	and nanoseconds, below 1e9
 * @f_known:	1 if the framer has reported it, else 0; so for the flags
 * @f_done:	its first record is written
 * @raw:	not SMB: only the first bytes are written
 * @raw_done:	and they were
 * @buf:	the frame's first bytes; zero past @f_have
 */
struct trace_dir_saved {
	uint64_t seen, f_off;
	int64_t f_ts_sec;
	uint32_t f_len, f_cut, f_sent, f_have;
	uint32_t f_ts_nsec;
	uint8_t f_known, f_done, raw, raw_done;
	uint8_t buf[TRACE_SNAP];
};

/**
 * struct trace_conn_saved - a connection's capture, for a live handover
 * @isn:	initial sequence number of each direction
 * @port:	the client's and the listener's port, network order
 * @v6:		1 if the addresses are IPv6, 0 if IPv4
 * @addr:	the client's and the listener's address: 16 bytes, or 4 and
 *		zeros
 * @what:	the connection, for the log, NUL-terminated
 * @dir:	per direction
 *
 * The read being walked (where trace_chunk() points) is not here: it
 * lasts from trace_chunk() to trace_chunk_done(), and a handover comes
 * between events, never inside one.
 */
struct trace_conn_saved {
	uint32_t isn[DIR_COUNT];
	uint16_t port[2];
	uint8_t v6;
	uint8_t addr[2][16];
	char what[64];
	struct trace_dir_saved dir[DIR_COUNT];
};

struct trace_conn *trace_conn_new(const struct sockaddr_storage *client,
				  const struct sockaddr_storage *local,
				  const char *what);
void trace_conn_start(struct trace_conn *t);
void trace_chunk(struct trace_conn *t, enum dir_index d, const uint8_t *p,
		 size_t n);
void trace_message(struct trace_conn *t, enum dir_index d,
		   const struct smb_msg *m);
void trace_chunk_done(struct trace_conn *t, enum dir_index d, bool opaque);
void trace_conn_end(struct trace_conn *t, bool clean);
void trace_conn_free(struct trace_conn *t);
void trace_conn_save(const struct trace_conn *t, struct trace_conn_saved *s);
int trace_conn_restore(struct trace_conn **out,
		       const struct trace_conn_saved *s);

#endif /* SMBSPLICE_TRACE_H */
