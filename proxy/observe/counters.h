/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_COUNTERS_H
#define SMBSPLICE_COUNTERS_H

/* counters.h - what workers count, and the sums a scrape makes of it
 *
 * Theory of operation: a worker adds to its own struct totals, per
 * listener; metrics.c sums them with counters_add_totals() into a struct
 * lreport per listener, reads the process's struct gauges, and promtext.c
 * writes both out. Only types and the sum live here: no rendering, no I/O.
 */

#include <stdint.h>

#include "observe/dirindex.h"
#include "smb/framer.h"
#include "smb/hist.h"
#include "io/pump.h"

/**
 * struct dir_totals - counters of one direction, summed over connections
 * @pump:	bytes and calls per pump
 * @smb:	what the framer saw (smb mode)
 * @forward:	smb mode: per frame, first byte read to last byte written
 */
struct dir_totals {
	struct pump_stats pump;
	struct smb_dir_stats smb;
	struct hist forward;
};

/**
 * struct totals - the counters one worker adds to and /metrics sums
 * @dir:		per direction
 * @opaque_conns:	connections on which a framer gave up parsing
 * @request:		smb mode: the server's time per command, request's
 *			last byte sent to response's first byte read; the
 *			last slot for commands past SMB2_OPLOCK_BREAK
 * @untimed_requests:	requests not timed: too many outstanding on their
 *			connection
 *
 * Only uint64_t counters, each written by one thread alone (counter.h):
 * counters_add_totals() relies on both.
 */
struct totals {
	struct dir_totals dir[DIR_COUNT];
	uint64_t opaque_conns;
	struct hist request[SMB2_NCOMMANDS + 1];
	uint64_t untimed_requests;
};

/* backends a listener may have (OPT_MAX_BACKENDS, which metrics.c checks) */
#define LREPORT_MAX_BACKENDS 8

/**
 * struct lreport - one listener's counters, summed over the workers
 * @name:		the listener's name
 * @tot:		what its connections moved
 * @accepted:		connections it accepted
 * @active:		its connections open now
 * @denied:		clients --allow refused
 * @refused_conns:	clients reset for --max-conns
 * @refused_source:	clients reset for --max-conns-per-source
 * @refused_preauth:	clients reset for --max-preauth-per-source
 * @bad_openings:	clients reset for a first frame that is not an SMB
 *			opening
 * @auth_timeouts:	connections ended by --auth-timeout
 * @proxy_refused:	clients reset for --proxy-from or a bad PROXY header
 * @quic_handshakes:	a QUIC listener's connections begun
 * @quic_retries:	its Retry packets sent
 * @quic_resets:	its Stateless Resets sent
 * @quic_migrations:	its connections that moved to a new client path
 * @quic_certs_denied:	client certificates it refused
 * @backends:		its backends, as configured
 * @nbackends:		how many
 * @backend_failures:	failed connects to each
 * @backend_admin:	each one's admin state (enum be_admin, listener.h)
 * @backend_down:	each one the health checks found down
 * @backend_changes:	changes of each one's admin state or health
 */
struct lreport {
	const char *name;
	struct totals tot;
	uint64_t accepted, active, denied, refused_conns, refused_source;
	uint64_t refused_preauth, bad_openings, auth_timeouts;
	uint64_t proxy_refused;
	uint64_t quic_handshakes, quic_retries, quic_resets, quic_migrations;
	uint64_t quic_certs_denied;
	const char *backends[LREPORT_MAX_BACKENDS];
	unsigned nbackends;
	uint64_t backend_failures[LREPORT_MAX_BACKENDS];
	unsigned char backend_admin[LREPORT_MAX_BACKENDS];
	bool backend_down[LREPORT_MAX_BACKENDS];
	uint64_t backend_changes[LREPORT_MAX_BACKENDS];
};

/**
 * struct gauges - the process's state now, for /metrics
 * @total:		connections accepted since start
 * @pipes_open:		splice pipes open
 * @pipes_lent:		splice pipes holding a splice in flight
 * @pipes_denied:	times no pipe could be had and the copy pump served
 * @pipes_small:	pipes the kernel would not give --pipe-size
 * @pipe_stalls:	pipes moved to a buffer after waiting too long
 * @bufs_lent:		copy buffers holding bytes in flight
 * @buf_bytes_lent:	their bytes
 * @bufs_free:		copy buffers kept for reuse
 * @fds_used:		descriptors connections and pipes hold
 * @fds_limit:		descriptors they may hold
 * @log_dropped:	log lines dropped because standard error lagged
 * @trace_records:	--trace records written
 * @trace_dropped:	--trace records dropped: the writer lagged
 * @draining:		SIGTERM came and the process is draining
 */
struct gauges {
	uint64_t total;
	uint64_t pipes_open, pipes_lent, pipes_denied, pipes_small;
	uint64_t pipe_stalls;
	uint64_t bufs_lent, bufs_free, buf_bytes_lent;
	uint64_t fds_used, fds_limit;
	uint64_t log_dropped;
	uint64_t trace_records, trace_dropped;
	uint64_t draining;
};

void counters_add_totals(struct totals *sum, const struct totals *t);

#endif /* SMBSPLICE_COUNTERS_H */
