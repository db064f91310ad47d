/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_PUMP_H
#define SMBSPLICE_PUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io/bufpool.h"
#include "smb/framer.h"
#include "io/pipepool.h"
#include "io/policy.h"
#include "io/sock.h"

/**
 * struct pump_stats - what one direction moved, and how, summed over the
 *		       connections of one thread (see counter.h)
 * @spliced:		bytes that went socket -> pipe -> socket
 * @copied:		bytes that went through the copy buffer
 * @splice_calls:	splice() calls made (both legs)
 * @copy_calls:		recv() and send() calls made
 * @more_writes:	writes that carried MORE (MSG_MORE, SPLICE_F_MORE)
 * @uncorks:		setsockopt(TCP_CORK, 0) calls on the destination
 * @midframe_ends:	smb mode: sources that ended in the middle of an SMB
 *			message (their end of file was forwarded all the same)
 */
struct pump_stats {
	uint64_t spliced, copied;
	uint64_t splice_calls, copy_calls;
	uint64_t more_writes;
	uint64_t uncorks;
	uint64_t midframe_ends;
};

/**
 * struct pump - one direction of a connection: bytes from @src to @dst
 * @src:	socket read from
 * @dst:	socket written to
 * @pipes:	where pipes are borrowed
 * @bufs:	where copy buffers are borrowed
 * @pipe:	pipe lent for the splice in flight, NULL when none
 * @in_pipe:	bytes in @pipe not yet written to @dst
 * @buf:	copy buffer lent for the bytes in flight, NULL when none
 * @buf_own:	@buf is not one of the pool's but a larger one-off, of
 *		@buf_len bytes (see pump_unpipe())
 * @buf_off:	first byte of @buf not yet written to @dst
 * @buf_len:	bytes in @buf
 * @more:	the pending bytes are to be written with MORE
 * @drained:	the last read returned less than it asked for: the socket
 *		was empty then
 * @src_eof:	@src returned end of file; nothing more will be read
 * @dst_shut:	end of file was forwarded with shutdown(SHUT_WR)
 * @midframe:	smb mode: @src ended in the middle of an SMB message
 * @err:	errno of the failure, after PUMP_SRC_ERR or PUMP_DST_ERR
 * @fr:		SMB framer in smb mode, NULL in tcp mode; once it turns
 *		opaque, @policy chooses instead
 * @policy:	pump choice for unframed bytes
 * @spliced:	bytes this direction spliced, for the connection's log line
 * @copied:	bytes this direction copied, likewise
 * @tot:	the thread's counters for this direction
 * @wrote:	called after each write that moved bytes, or NULL
 * @wrote_ctx:	its context
 * @tap:	called around each read's walk by the framer, or NULL
 * @tap_ctx:	its context
 *
 * At most one of @in_pipe and @buf_len - @buf_off is non-zero: pending bytes
 * are written before anything new is read, which keeps order across the two
 * pumps without any bookkeeping. A pipe or buffer is held only while it
 * holds bytes, so a direction waiting to read holds neither.
 */
struct pump {
	struct sock *src, *dst;
	struct pipe_pool *pipes;
	struct buf_pool *bufs;
	struct pipe_slot *pipe;
	size_t in_pipe;
	char *buf;
	size_t buf_off, buf_len;
	bool buf_own;
	bool more, drained;
	bool src_eof, dst_shut, midframe;
	int err;
	struct smb_framer *fr;
	struct flow_policy policy;
	uint64_t spliced, copied;
	struct pump_stats *tot;
	void (*wrote)(void *ctx, uint64_t written, uint64_t began_ns);
	void *wrote_ctx;
	void (*tap)(void *ctx, const void *p, size_t n, bool walked);
	void *tap_ctx;
};

enum pump_status {
	PUMP_WAIT_READ,	 /* nothing pending, @src has no bytes: wait to read */
	PUMP_WAIT_WRITE, /* bytes pending, @dst is full: wait to write */
	PUMP_FIN,	 /* end of file forwarded: this direction is done
			  * (@midframe says whether it came mid-message) */
	PUMP_SRC_ERR,	 /* reading @src failed, see @err */
	PUMP_DST_ERR,	 /* writing @dst failed, see @err */
};

/* Reads per pump_run() call before yielding to the event loop, so one busy
 * direction cannot starve the others. */
#define PUMP_BUDGET 16

/**
 * struct pump_saved - a direction's bytes and flags, as a handover carries
 *		       them to the next process (connmove.c)
 * @in_pipe:	bytes in the pipe, whose two ends travel beside the image;
 *		0 when no pipe is held
 * @pending:	bytes of the copy buffer not yet written; they follow the
 *		record in the image
 * @spliced:	as struct pump
 * @copied:	as struct pump
 * @err:	as struct pump
 * @more:	as struct pump (0 or 1, as every flag below)
 * @drained:	as struct pump
 * @src_eof:	as struct pump
 * @dst_shut:	as struct pump
 * @midframe:	as struct pump
 * @splicing:	the flow policy's state (struct flow_policy)
 * @pad:	zero
 *
 * Fixed-width fields only: the image is written by one build and read by
 * another.
 */
struct pump_saved {
	uint64_t in_pipe, pending;
	uint64_t spliced, copied;
	int32_t err;
	uint8_t more, drained, src_eof, dst_shut, midframe, splicing;
	uint8_t pad[2];
};

void pump_init(struct pump *h, struct sock *src, struct sock *dst,
	       struct pipe_pool *pipes, struct buf_pool *bufs, bool splice_ok,
	       struct smb_framer *fr, struct pump_stats *tot);
void pump_watch_writes(struct pump *h, void (*fn)(void *, uint64_t, uint64_t),
		       void *ctx);
void pump_tap(struct pump *h, void (*fn)(void *, const void *, size_t, bool),
	      void *ctx);
enum pump_status pump_run(struct pump *h);
void pump_release(struct pump *h);
bool pump_pending(const struct pump *h);
bool pump_holds_pipe(const struct pump *h);
int pump_unpipe(struct pump *h);
void pump_save(const struct pump *h, struct pump_saved *s, const void **bytes,
	       const struct pipe_slot **pipe);
int pump_restore(struct pump *h, const struct pump_saved *s, const void *bytes,
		 struct pipe_slot *pipe);
void pump_abandon(struct pump *h);

#endif /* SMBSPLICE_PUMP_H */
