// SPDX-License-Identifier: GPL-2.0-or-later
/* pump.c - moving the bytes of one direction: the copy and splice pumps
 *
 * Theory of operation: a direction alternates between two steps until one
 * of them would block.
 *
 *   flush: write what is pending, from the copy buffer with send() or from
 *          the lent pipe with splice(), until nothing is pending;
 *   fill:  read the next stretch, with the pump the policy picks, into the
 *          buffer with recv() or into a freshly borrowed pipe with splice().
 *
 * Nothing new is read while anything is pending. That one rule gives
 * backpressure (a full destination stops reads from the source), keeps
 * order when the pump changes, and means a pipe is borrowed only between a
 * fill and the flush that empties it.
 *
 * Which pump reads, and whether a write carries MORE, comes from the SMB
 * framer when there is one: the splice pump reads exactly the payload span
 * the framer reports, and a write carries MORE while more bytes of the
 * current message are due, so every message's last bytes go out pushed.
 * Without a framer (tcp mode, or after the framer gave up on a stream that
 * is not SMB) the flow policy decides from read sizes (see policy.c).
 *
 * Buffers and pipes are borrowed from the thread's pools for the bytes in
 * flight and given back the moment they are written, so a direction that
 * waits to read holds neither.
 *
 * Cork: the destination's @corked flag records whether the last write
 * carried MORE. When the source runs dry, sock_uncork() pushes whatever MORE
 * left waiting, so no tail waits for the kernel's 200 ms timer. End of
 * file is forwarded with shutdown(SHUT_WR) once nothing is pending; the
 * FIN pushes any held bytes with it (the kernel sends a FIN segment
 * regardless of the cork), so no uncork is needed there.
 *
 * End of file is forwarded the same way when, in smb mode, it comes in the
 * middle of a message (a server killed mid-READ, a frame whose length
 * overstates its bytes): direct TCP would deliver every byte and the FIN,
 * and a length-framed receiver knows a message cut short when it reads
 * end of file. The direction only notes it (@midframe, counted), so that
 * the log and the metrics can say so; the other direction goes on.
 *
 * No function here knows about the event loop: pump_run() reports what it
 * waits for and the caller arms its watchers to match.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "common/counter.h"
#include "common/monotime.h"
#include "conf/options.h"
#include "io/pump.h"

enum io_res {
	IO_DONE,    /* the step finished: all flushed, or some bytes read */
	IO_BLOCKED, /* the socket would block */
	IO_EOF,	    /* the source has no more bytes, ever */
	IO_ERR,	    /* a hard error, in h->err */
};

/**
 * pump_init() - set up a direction
 * @h:		the direction
 * @src:	socket it reads
 * @dst:	socket it writes
 * @pipes:	where splice pipes come from
 * @bufs:	where copy buffers come from
 * @splice_ok:	false to use the copy pump only
 * @fr:		SMB framer for this direction, or NULL for opaque forwarding
 * @tot:	the thread's counters for this direction
 */
void pump_init(struct pump *h, struct sock *src, struct sock *dst,
	       struct pipe_pool *pipes, struct buf_pool *bufs, bool splice_ok,
	       struct smb_framer *fr, struct pump_stats *tot)
{
	*h = (struct pump){
		.src = src,
		.dst = dst,
		.pipes = pipes,
		.bufs = bufs,
		.fr = fr,
		.policy = { .splice_ok = splice_ok },
		.tot = tot,
	};
}

/**
 * buf_return() - give the copy buffer back to the pool
 * @h:	the direction, holding a buffer with nothing pending
 */
static void buf_return(struct pump *h)
{
	if (h->buf_own)
		bufpool_put_large(h->bufs, h->buf, h->buf_len);
	else
		bufpool_put(h->bufs, h->buf);
	h->buf = NULL;
	h->buf_own = false;
	h->buf_off = h->buf_len = 0;
}

/**
 * framed() - is the framer in charge of this direction's bytes
 * @h:	the direction
 *
 * Return: true in smb mode until the framer gives up on the stream.
 */
static bool framed(const struct pump *h)
{
	return h->fr && !smb_framer_opaque(h->fr);
}

/**
 * next_pump() - which pump reads the next stretch, and how much of it
 * @h:		the direction, with nothing pending
 * @limit:	set to the most the splice pump may read
 *
 * Return: PUMP_SPLICE or PUMP_COPY.
 */
static enum pump_kind next_pump(const struct pump *h, size_t *limit)
{
	if (framed(h)) {
		/* The tail of a payload whose start came in with its header
		 * can be a few bytes: two splices would cost more than a
		 * copy. */
		*limit = smb_framer_splice_span(h->fr);
		return *limit >= SMB_SPLICE_MIN && h->policy.splice_ok
			       ? PUMP_SPLICE
			       : PUMP_COPY;
	}
	*limit = SIZE_MAX;
	return flow_pump(&h->policy);
}

/**
 * note_read() - let the framer or the flow policy see what was just read
 * @h:		the direction
 * @k:		pump that read
 * @got:	bytes read
 * @asked:	bytes it could have read
 *
 * Sets @more: in smb mode, whether more of the current message is due and
 * already queued (a short read emptied the socket, and holding its bytes
 * back would only cost an uncork at the EAGAIN that follows); otherwise
 * whether the read looked like part of a larger burst.
 */
static void note_read(struct pump *h, enum pump_kind k, size_t got,
		      size_t asked)
{
	const void *p = k == PUMP_COPY ? h->buf : NULL;

	if (h->tap)
		h->tap(h->tap_ctx, p, got, false);
	if (framed(h)) {
		if (k == PUMP_SPLICE)
			smb_framer_advance(h->fr, got);
		else
			smb_framer_feed(h->fr, p, got);
		if (framed(h)) {
			h->more = got == asked && smb_framer_mid_message(h->fr);
			goto out;
		}
		/* The framer just gave up: the flow policy takes over. */
	}
	h->more = flow_more_due(got, asked);
	policy_after_read(&h->policy, k, got, asked);
out:
	if (h->tap)
		h->tap(h->tap_ctx, p, got, true);
}

/**
 * io_fail() - classify a failed call
 * @h:	the direction, whose @err is set for hard errors
 *
 * Return: IO_BLOCKED for EAGAIN, IO_ERR otherwise. EINTR is handled by the
 * callers, which retry.
 */
static enum io_res io_fail(struct pump *h)
{
	if (errno == EAGAIN || errno == EWOULDBLOCK)
		return IO_BLOCKED;
	h->err = errno;
	return IO_ERR;
}

/**
 * flush_buf() - send the pending bytes of the copy buffer
 * @h:	the direction
 *
 * Return: IO_DONE when the buffer is empty, IO_BLOCKED or IO_ERR.
 */
static enum io_res flush_buf(struct pump *h)
{
	int flags = MSG_NOSIGNAL | (h->more ? MSG_MORE : 0);
	ssize_t n;

	if (!h->buf)
		return IO_DONE;
	while (h->buf_off < h->buf_len) {
		n = send(h->dst->fd, h->buf + h->buf_off,
			 h->buf_len - h->buf_off, flags);
		counter_add(&h->tot->copy_calls, 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return io_fail(h);
		}
		h->buf_off += (size_t)n;
		h->copied += (uint64_t)n;
		counter_add(&h->tot->copied, (uint64_t)n);
		counter_add(&h->tot->more_writes, h->more);
		h->dst->corked = h->more;
	}
	buf_return(h);
	return IO_DONE;
}

/**
 * flush_pipe() - splice the pending bytes of the pipe to the destination
 * @h:	the direction
 *
 * Splices may be short: the loop goes on until the pipe is empty or the
 * socket is full. An empty pipe goes back to the pool at once.
 *
 * Return: IO_DONE when the pipe is empty, IO_BLOCKED or IO_ERR.
 */
static enum io_res flush_pipe(struct pump *h)
{
	unsigned int flags = SPLICE_F_MOVE | SPLICE_F_NONBLOCK |
			     (h->more ? SPLICE_F_MORE : 0);
	ssize_t n;

	while (h->in_pipe) {
		n = splice(h->pipe->rd, NULL, h->dst->fd, NULL, h->in_pipe,
			   flags);
		counter_add(&h->tot->splice_calls, 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return io_fail(h);
		}
		if (n == 0) { /* a pipe we hold the write end of cannot end */
			h->err = EIO;
			return IO_ERR;
		}
		h->in_pipe -= (size_t)n;
		h->spliced += (uint64_t)n;
		counter_add(&h->tot->spliced, (uint64_t)n);
		counter_add(&h->tot->more_writes, h->more);
		h->dst->corked = h->more;
	}
	pipepool_put(h->pipes, h->pipe);
	h->pipe = NULL;
	return IO_DONE;
}

/**
 * fill_copy() - read the next stretch into the copy buffer
 * @h:	the direction, with an empty buffer
 *
 * In smb mode the framer may bound the read, so that a payload it expects
 * to splice is not swallowed with its header. The buffer is borrowed for
 * the read and goes straight back if the read brings nothing.
 *
 * Return: IO_DONE, IO_BLOCKED, IO_EOF or IO_ERR.
 */
static enum io_res fill_copy(struct pump *h)
{
	size_t asked = h->bufs->size, limit;
	ssize_t n;

	h->buf = bufpool_get(h->bufs);
	if (!h->buf) {
		h->err = ENOMEM;
		return IO_ERR;
	}
	if (framed(h) && h->policy.splice_ok) {
		limit = smb_framer_copy_limit(h->fr);
		if (limit < asked)
			asked = limit;
	}
	do {
		n = recv(h->src->fd, h->buf, asked, 0);
		counter_add(&h->tot->copy_calls, 1);
	} while (n < 0 && errno == EINTR);
	if (n <= 0) {
		buf_return(h);
		return n == 0 ? IO_EOF : io_fail(h);
	}
	h->buf_len = (size_t)n;
	h->drained = (size_t)n < asked;
	note_read(h, PUMP_COPY, (size_t)n, asked);
	return IO_DONE;
}

/**
 * fill_splice() - splice the next stretch from the source into a pipe
 * @h:		the direction, with nothing pending
 * @limit:	the most to read: the rest of the payload, in smb mode
 *
 * With no pipe to be had, the copy pump reads instead. A pipe that stays
 * empty (the source would block, or ended) goes straight back to the pool.
 *
 * splice() stops at TCP's urgent mark: there it fails with EAGAIN for
 * ever while epoll keeps reporting the socket readable, or, once the FIN
 * is in, returns 0 as if the stream had ended with bytes still queued. So
 * an EAGAIN on the first read after a wake-up, and every 0, is checked
 * with one recv(), which reads the urgent byte in line (SO_OOBINLINE) and
 * moves past the mark, or confirms the end of the stream.
 *
 * Return: IO_DONE, IO_BLOCKED, IO_EOF or IO_ERR.
 */
static enum io_res fill_splice(struct pump *h, size_t limit, bool first)
{
	enum io_res r;
	size_t asked;
	ssize_t n;

	h->pipe = pipepool_get(h->pipes);
	if (!h->pipe)
		return fill_copy(h);
	asked = h->pipe->cap < limit ? h->pipe->cap : limit;
	do {
		n = splice(h->src->fd, NULL, h->pipe->wr, NULL, asked,
			   SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		counter_add(&h->tot->splice_calls, 1);
	} while (n < 0 && errno == EINTR);
	if (n <= 0) {
		r = n == 0 ? IO_EOF : io_fail(h);
		pipepool_put(h->pipes, h->pipe);
		h->pipe = NULL;
		if (r == IO_EOF || (r == IO_BLOCKED && first))
			return fill_copy(h);
		return r;
	}
	h->in_pipe = (size_t)n;
	h->drained = (size_t)n < asked;
	note_read(h, PUMP_SPLICE, (size_t)n, asked);
	return IO_DONE;
}

/**
 * pump_finish() - forward end of file once nothing is pending
 * @h:	the direction
 *
 * Called once: it sets @dst_shut, and pump_run() goes no further after.
 *
 * Return: PUMP_FIN, or PUMP_DST_ERR if the destination is already gone.
 */
static enum pump_status pump_finish(struct pump *h)
{
	if (framed(h) && smb_framer_mid_message(h->fr)) {
		h->midframe = true;
		counter_add(&h->tot->midframe_ends, 1);
	}
	h->dst_shut = true;
	h->dst->corked = false; /* the FIN pushes whatever MORE held back */
	if (shutdown(h->dst->fd, SHUT_WR)) {
		h->err = errno;
		return PUMP_DST_ERR;
	}
	return PUMP_FIN;
}

/**
 * wait_read() - go idle on the source, pushing anything MORE held back
 * @h:	the direction, with nothing pending
 *
 * Return: PUMP_WAIT_READ, or PUMP_DST_ERR if the push failed.
 */
static enum pump_status wait_read(struct pump *h)
{
	counter_add(&h->tot->uncorks, h->dst->corked);
	if (sock_uncork(h->dst)) {
		h->err = errno;
		return PUMP_DST_ERR;
	}
	return PUMP_WAIT_READ;
}

/**
 * pump_tap() - be shown every read, before and after the framer walks it
 * @h:		the direction
 * @fn:		called with the bytes (NULL when spliced), their count, and
 *		whether the framer has walked them yet; NULL to stop
 * @ctx:	passed to @fn
 */
void pump_tap(struct pump *h, void (*fn)(void *, const void *, size_t, bool),
	      void *ctx)
{
	h->tap = fn;
	h->tap_ctx = ctx;
}

/**
 * pump_watch_writes() - be told of every write that handed bytes on
 * @h:		the direction
 * @fn:		called with the bytes written so far, and the time
 *		(mono_ns()) the writes that moved them began; NULL to stop
 * @ctx:	passed to @fn
 *
 * Called after each flush of the buffer or the pipe that moved bytes,
 * whether it emptied it or the destination filled up first: a message
 * whose last byte went out in a write that ended blocked is sent, and its
 * peer may answer it before the rest is written. The time is taken before
 * the write, not after: on a loaded machine the peer the write wakes may
 * run first, do its work and answer before this thread gets the CPU back,
 * and a clock read after the write would miss all of that.
 */
void pump_watch_writes(struct pump *h, void (*fn)(void *, uint64_t, uint64_t),
		       void *ctx)
{
	h->wrote = fn;
	h->wrote_ctx = ctx;
}

/**
 * pump_run() - move bytes from source to destination until something blocks
 * @h:	the direction
 *
 * Return: what the direction waits for next (see enum pump_status).
 */
enum pump_status pump_run(struct pump *h)
{
	enum io_res r;
	size_t limit;
	int budget;

	if (h->dst_shut)
		return PUMP_FIN;
	for (budget = PUMP_BUDGET;; budget--) {
		uint64_t was = h->spliced + h->copied;
		uint64_t began = h->wrote && pump_pending(h) ? mono_ns() : 0;

		r = h->in_pipe ? flush_pipe(h) : flush_buf(h);
		if (r == IO_ERR)
			return PUMP_DST_ERR;
		if (began && h->spliced + h->copied != was)
			h->wrote(h->wrote_ctx, h->spliced + h->copied, began);
		if (r == IO_BLOCKED)
			return PUMP_WAIT_WRITE;
		if (h->src_eof)
			return pump_finish(h);
		/* The last read may have emptied the socket, and then no
		 * event would come to push what MORE held back. */
		if (!budget)
			return wait_read(h);
		/* A short read emptied the socket: another read would only
		 * fail with EAGAIN. Unless MORE is holding bytes back, which
		 * only that EAGAIN may release, let epoll say when more come.
		 */
		if (h->drained && !h->dst->corked) {
			h->drained = false;
			return PUMP_WAIT_READ;
		}

		if (next_pump(h, &limit) == PUMP_SPLICE)
			r = fill_splice(h, limit, budget == PUMP_BUDGET);
		else
			r = fill_copy(h);
		if (r == IO_BLOCKED)
			return wait_read(h);
		if (r == IO_ERR)
			return PUMP_SRC_ERR;
		if (r == IO_EOF)
			h->src_eof = true;
	}
}

/**
 * pump_pending() - does the direction hold bytes not yet written
 * @h:	the direction
 *
 * Return: true if bytes sit in the copy buffer or the pipe.
 */
bool pump_pending(const struct pump *h)
{
	return h->in_pipe || h->buf_off < h->buf_len;
}

/**
 * pump_holds_pipe() - does the direction hold a pipe with bytes in it
 * @h:	the direction
 *
 * Return: true while a splice waits for its destination.
 */
bool pump_holds_pipe(const struct pump *h)
{
	return h->pipe && h->in_pipe;
}

/**
 * pump_unpipe() - move the bytes of a stalled pipe into a buffer
 * @h:	the direction, holding a pipe whose destination is not taking them
 *
 * A receiver that stalls would keep its pipe for as long as it stalls,
 * and a thousand of them would keep the pool from everyone. Their bytes
 * go to a buffer instead (the pool's when they fit, else one of their
 * own), where they wait just the same, and the pipe goes back to the
 * pool. The bytes are already past the framer, so nothing else changes;
 * they count as copied when they are written.
 *
 * Return: 0 once moved, 1 if no buffer could be had (memory ran out, or
 * the bytes moved out of pipes in the whole process reached their bound,
 * bufpool_get_large(): the pipe is kept, try again later), or -1 if the
 * pipe could not be read (@err is set: bytes are lost, so the connection
 * must end).
 */
int pump_unpipe(struct pump *h)
{
	size_t n = h->in_pipe, got = 0;
	bool own = n > h->bufs->size;
	char *buf;
	ssize_t k;

	if (!pump_holds_pipe(h))
		return 0;
	buf = own ? bufpool_get_large(h->bufs, n) : bufpool_get(h->bufs);
	if (!buf)
		return 1;
	while (got < n) {
		k = read(h->pipe->rd, buf + got, n - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			h->err = k < 0 ? errno : EIO;
			h->buf = buf;
			h->buf_own = own;
			h->buf_len = n;
			buf_return(h);
			return -1;
		}
		got += (size_t)k;
	}
	pipepool_put(h->pipes, h->pipe);
	h->pipe = NULL;
	h->in_pipe = 0;
	h->buf = buf;
	h->buf_own = own;
	h->buf_off = 0;
	h->buf_len = n;
	return 0;
}

/**
 * pump_release() - give back the direction's pipe and buffer, if it holds any
 * @h:	the direction, about to be freed
 *
 * A pipe that still holds bytes is closed rather than pooled: those bytes
 * belong to this connection and must never reach another. A buffer's
 * unsent bytes are simply forgotten when it is reused.
 */
void pump_release(struct pump *h)
{
	if (h->buf)
		buf_return(h);
	if (!h->pipe)
		return;
	if (h->in_pipe)
		pipepool_drop(h->pipes, h->pipe);
	else
		pipepool_put(h->pipes, h->pipe);
	h->pipe = NULL;
	h->in_pipe = 0;
}

/**
 * pump_save() - what a handover must carry of a direction
 * @h:		the direction, whose loop is paused
 * @s:		filled in
 * @bytes:	set to the copy buffer's pending bytes (s->pending of them),
 *		or NULL
 * @pipe:	set to the pipe holding s->in_pipe bytes, or NULL
 *
 * The pipe itself is not read: its two ends go to the next process, with
 * the bytes still inside, and no byte is copied.
 */
void pump_save(const struct pump *h, struct pump_saved *s, const void **bytes,
	       const struct pipe_slot **pipe)
{
	*s = (struct pump_saved){
		.in_pipe = h->pipe ? h->in_pipe : 0,
		.pending = h->buf ? h->buf_len - h->buf_off : 0,
		.spliced = h->spliced,
		.copied = h->copied,
		.err = h->err,
		.more = h->more,
		.drained = h->drained,
		.src_eof = h->src_eof,
		.dst_shut = h->dst_shut,
		.midframe = h->midframe,
		.splicing = h->policy.splicing,
	};
	*bytes = s->pending ? h->buf + h->buf_off : NULL;
	*pipe = s->in_pipe ? h->pipe : NULL;
}

/**
 * pump_restore() - continue a direction another process was running
 * @h:		the direction, just set up by pump_init()
 * @s:		its saved state, from the image (checked here)
 * @bytes:	s->pending bytes that were waiting in its copy buffer
 * @pipe:	the pipe holding s->in_pipe bytes, already counted in the
 *		pool (pipepool_adopt()), or NULL; the direction owns it from
 *		here, whatever the outcome
 *
 * Return: 0, or -1 with errno: EINVAL for a state no pump could have been
 * in (a pipe and a buffer both pending, bytes after end of file was
 * forwarded, a flag not 0 or 1), ENOMEM.
 */
int pump_restore(struct pump *h, const struct pump_saved *s, const void *bytes,
		 struct pipe_slot *pipe)
{
	const uint8_t *flags = &s->more;
	int queued;

	for (unsigned i = 0; i < 6; i++)
		if (flags[i] > 1)
			goto bad;
	if ((s->in_pipe && s->pending) || (!!s->in_pipe != !!pipe) ||
	    (s->dst_shut && (s->in_pipe || s->pending || !s->src_eof)) ||
	    (pipe && s->in_pipe > pipe->cap) || s->pending > OPT_MAX_PIPE_SIZE)
		goto bad;
	/* The pipe holds exactly the bytes the image says, or they would be
	 * lost or repeated. */
	if (pipe && (ioctl(pipe->rd, FIONREAD, &queued) ||
		     (uint64_t)queued != s->in_pipe))
		goto bad;
	h->spliced = s->spliced;
	h->copied = s->copied;
	h->err = s->err;
	h->more = s->more;
	h->drained = s->drained;
	h->src_eof = s->src_eof;
	h->dst_shut = s->dst_shut;
	h->midframe = s->midframe;
	h->policy.splicing = s->splicing;
	if (pipe) {
		h->pipe = pipe;
		h->in_pipe = s->in_pipe;
	}
	if (!s->pending)
		return 0;
	h->buf_own = s->pending > h->bufs->size;
	h->buf = h->buf_own ? bufpool_get_large(h->bufs, s->pending)
			    : bufpool_get(h->bufs);
	if (!h->buf) {
		h->buf_own = false;
		errno = ENOMEM;
		return -1;
	}
	memcpy(h->buf, bytes, s->pending);
	h->buf_off = 0;
	h->buf_len = s->pending;
	return 0;
bad:
	if (pipe)
		pipepool_drop(h->pipes, pipe);
	errno = EINVAL;
	return -1;
}

/**
 * pump_abandon() - forget a direction another process has taken over
 * @h:	the direction, saved and handed over
 *
 * The pipe's bytes now belong to the next process, which holds its two
 * ends: this process only closes its own copies, and frees the buffer.
 */
void pump_abandon(struct pump *h)
{
	if (h->pipe) {
		pipepool_drop(h->pipes, h->pipe);
		h->pipe = NULL;
		h->in_pipe = 0;
	}
	if (h->buf)
		buf_return(h);
}
