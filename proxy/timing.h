/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_TIMING_H
#define SMBSPLICE_TIMING_H

#include <stdbool.h>
#include <stdint.h>

#include "framer.h"
#include "counters.h"

struct srt_table;
struct timing_block;

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
unsigned timing_outstanding(const struct timing *tm, uint16_t *cmd,
			    uint64_t *sent_ns);

#endif /* SMBSPLICE_TIMING_H */
