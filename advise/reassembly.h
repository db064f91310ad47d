/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_ADVISE_REASSEMBLY_H
#define SMBSPLICE_ADVISE_REASSEMBLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capture.h"

/* The two directions of a connection. */
enum rs_dir {
	RS_TO_SERVER,
	RS_TO_CLIENT,
};

/* Why bytes of a stream are missing. */
enum rs_hole_kind {
	RS_HOLE_SNAPLEN, /* the segment was captured, its payload cut short */
	RS_HOLE_LOST,	 /* the capture lacks the segment altogether */
};

/**
 * struct rs_key - a connection's addresses, client first
 * @family:	4 or 6
 * @addr:	client address, then server address
 * @port:	client port, then server port
 */
struct rs_key {
	uint8_t family;
	uint8_t addr[2][16];
	uint16_t port[2];
};

/**
 * struct rs_ops - what the reassembler tells its consumer
 * @open:	a connection starts; return the consumer's state for it
 * @begin:	a direction's first byte comes next: at the stream's start
 *		(@at_start, its SYN was seen) or somewhere in the middle
 * @data:	the next bytes of a direction, in order
 * @hole:	the next @n bytes of a direction are not in the capture
 * @close:	the connection is over: no more calls with its state
 *
 * For each direction, begin() comes first, then data() and hole() in
 * stream order, covering every byte exactly once.
 */
struct rs_ops {
	void *(*open)(void *ctx, const struct rs_key *key);
	void (*begin)(void *conn, enum rs_dir dir, bool at_start);
	void (*data)(void *conn, enum rs_dir dir, const uint8_t *p, size_t n);
	void (*hole)(void *conn, enum rs_dir dir, uint64_t n,
		     enum rs_hole_kind kind);
	void (*close)(void *conn);
};

/**
 * struct rs_stats - what reassembly found, over every connection
 * @conns:		connections seen
 * @midstream:		directions the capture joined after their start
 * @lost_bytes:		bytes of sequence space the capture lacks
 * @lost_holes:		stretches of them
 * @lost_conns:		connections with at least one
 * @snapped_bytes:	payload bytes the snaplen cut off
 * @dup_bytes:		bytes seen more than once (retransmissions, overlap)
 * @ooo_segments:	segments that came before ones they follow
 * @late_segments:	segments of a connection already over, ignored
 * @given_up:		lost holes declared because too much waited behind
 *			them (RS_OOO_MAX_BYTES, RS_OOO_MAX_SEGS in one
 *			direction, RS_OOO_TOTAL_MAX in all)
 * @evicted:		connections ended early to make room: more than the
 *			table's bound were open at once (rs_set_max_conns())
 * @idle_ended:		connections ended after a long silence (RS_IDLE_USEC,
 *			RS_NEW_IDLE_USEC before any payload)
 */
struct rs_stats {
	uint64_t conns, midstream;
	uint64_t lost_bytes, lost_holes, lost_conns;
	uint64_t snapped_bytes, dup_bytes, ooo_segments, late_segments;
	uint64_t given_up, evicted, idle_ended;
};

/* Out-of-order data waiting in one direction, at most; past it, the first
 * hole is taken as lost. A TCP window is rarely above 16 MiB. */
#define RS_OOO_MAX_BYTES (32u << 20)
#define RS_OOO_MAX_SEGS	 16384u

/* Out-of-order data waiting in all connections together, with what
 * holding each segment costs, at most. */
#define RS_OOO_TOTAL_MAX (256u << 20)

/* Connections open at once, by default; past it the one heard from least
 * recently is ended (a connection that carried payload last). */
#define RS_MAX_CONNS 32768u

/* A connection silent this long in capture time is ended: longer than an
 * SMB session stays idle (servers disconnect idle sessions after 15
 * minutes, clients echo every minute); before any payload, longer than a
 * SYN is retried. */
#define RS_IDLE_USEC	 (3600ull * 1000000u)
#define RS_NEW_IDLE_USEC (180ull * 1000000u)

/* An ended connection is remembered this long, so that its late segments
 * (a retransmission after the RST) are ignored rather than taken for a new
 * connection joined in the middle. */
#define RS_LINGER_USEC (60ull * 1000000u)

struct rs_table;

struct rs_table *rs_new(const struct rs_ops *ops, void *ctx);
void rs_set_max_conns(struct rs_table *t, size_t n);
void rs_segment(struct rs_table *t, const struct tcp_seg *s, bool to_server);
void rs_finish(struct rs_table *t);
void rs_free(struct rs_table *t);
const struct rs_stats *rs_stats(const struct rs_table *t);

#endif /* SMBSPLICE_ADVISE_REASSEMBLY_H */
