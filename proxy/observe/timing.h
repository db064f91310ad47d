/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_TIMING_H
#define SMBSPLICE_TIMING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "smb/framer.h"
#include "observe/counters.h"

struct srt_table;
struct timing_block;

/* Frames in flight one direction times at once. */
#define TIMING_FWD_SLOTS 16u
/* Requests in flight a connection times at once; its table never holds
 * more (servers grant up to 8192 credits; a pipeline that deep is timed
 * in part, the rest counted as untimed). */
#define TIMING_MAX_REQUESTS 1024u

/**
 * struct timing_saved_ring - one direction's frames in flight, oldest first
 * @t0:		when the first frame of each slot was parsed (mono_ns())
 * @end:	stream offset just past the last frame of each slot
 * @n:		frames in each slot, at least 1
 * @len:	slots in use; the rest are zero
 */
struct timing_saved_ring {
	uint64_t t0[TIMING_FWD_SLOTS], end[TIMING_FWD_SLOTS];
	uint32_t n[TIMING_FWD_SLOTS];
	uint32_t len;
};

/**
 * struct timing_saved_request - one request waiting for its response
 * @id:		its MessageId
 * @end:	stream offset just past its frame
 * @sent_ns:	when its last byte was written (mono_ns()), 0 if not yet
 * @cmd:	its command
 * @sent:	1 if it was sent (then @sent_ns is not 0), else 0
 */
struct timing_saved_request {
	uint64_t id, end, sent_ns;
	uint16_t cmd;
	uint8_t sent;
};

/**
 * struct timing_saved - a connection's timing, for a live handover
 * @frame_t0:	when the current frame of each direction was parsed, 0
 *		when no frame is in flight
 * @fwd:	frames in flight, per direction
 * @nreq:	requests in @req; at most TIMING_MAX_REQUESTS, for a table
 *		never holds more
 * @hidden:	1 if responses can no longer be read (then @nreq is 0)
 * @req:	the requests waiting, in no order
 *
 * CLOCK_MONOTONIC is the machine's, the same in both processes: times
 * carry over as they are.
 */
struct timing_saved {
	uint64_t frame_t0[DIR_COUNT];
	struct timing_saved_ring fwd[DIR_COUNT];
	uint32_t nreq;
	uint8_t hidden;
	struct timing_saved_request req[TIMING_MAX_REQUESTS];
};

/**
 * timing_saved_len() - the bytes of a struct timing_saved that hold
 *			anything
 * @nreq:	its requests
 *
 * Only the requests there are: a handover that carried a table of 1,024
 * for every connection with one CHANGE_NOTIFY waiting would be hundreds
 * of megabytes. Inline, so that a reader of saved bytes (the handover
 * image's decoder, its seed writer) needs no more of timing.c than this.
 *
 * Return: the length.
 */
static inline size_t timing_saved_len(uint32_t nreq)
{
	return offsetof(struct timing_saved, req) +
	       nreq * sizeof(((struct timing_saved *)0)->req[0]);
}

/**
 * struct timing_pool - a worker's spare timing blocks
 * @free:	frame blocks kept for reuse, linked through their @next
 * @nfree:	how many
 * @tables:	request tables of the first size kept for reuse
 * @ntables:	how many
 * @used:	a spare was lent since the last trim
 */
struct timing_pool {
	struct timing_block *free;
	unsigned nfree;
	struct srt_table *tables;
	unsigned ntables;
	bool used;
};

/**
 * struct timing - what a connection keeps to time its messages
 * @b:		the frame clocks, lent from @pool while a frame is in
 *		flight, NULL otherwise
 * @srt:	the requests waiting for a response, lent likewise
 * @pool:	the worker's pool
 * @tot:	the listener's counters in this worker
 * @hidden:	the server's responses can no longer be read (compressed, or
 *		their direction forwarded opaque): requests are not timed,
 *		for none would ever leave the table
 */
struct timing {
	struct timing_block *b;
	struct srt_table *srt;
	struct timing_pool *pool;
	struct totals *tot;
	bool hidden;
};

void timing_init(struct timing *tm, struct timing_pool *pool,
		 struct totals *tot);
void timing_message(struct timing *tm, enum dir_index d,
		    const struct smb_msg *m);
void timing_wrote(struct timing *tm, enum dir_index d, uint64_t written,
		  uint64_t at);
void timing_responses_hidden(struct timing *tm);
void timing_end(struct timing *tm);
void timing_pool_trim(struct timing_pool *pool);
bool timing_busy(const struct timing *tm);
void timing_save(const struct timing *tm, struct timing_saved *s);
int timing_restore(struct timing *tm, const struct timing_saved *s);
unsigned timing_outstanding(const struct timing *tm, uint16_t *cmd,
			    uint64_t *sent_ns);

#endif /* SMBSPLICE_TIMING_H */
