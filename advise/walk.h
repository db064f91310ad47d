/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_ADVISE_WALK_H
#define SMBSPLICE_ADVISE_WALK_H

#include <stdbool.h>
#include <stdint.h>

#include "smb/framer.h"
#include "reassembly.h"
#include "resync.h"
#include "tally.h"

/**
 * struct walk_stats - how well the streams could be followed
 * @sync_lost:		holes that took away bytes the framer needed to see
 *			(a header), so that the next frame had to be found
 * @skipped_bytes:	missing bytes inside payloads and other spans the
 *			framer need not see: passed over, framing kept
 * @unparsed_bytes:	bytes (present or missing) passed while looking for
 *			the next frame: the messages among them are not
 *			counted
 * @opaque:		times the framer gave up on a stream it was
 *			following (a frame it could not make sense of)
 * @opaque_why:		the first reason it gave
 * @unframed:		directions that carried bytes in which no frame was
 *			ever found
 */
struct walk_stats {
	uint64_t sync_lost, skipped_bytes, unparsed_bytes, opaque;
	const char *opaque_why;
	uint64_t unframed;
};

/**
 * struct walk - the SMB streams of a capture, walked with the framer
 * @th:		the framers' thresholds (unused: every span is walked the
 *		same way whatever they say)
 * @st:		the framers' own counters, per direction
 * @tally:	what the streams carried
 * @ws:		how well they could be followed
 */
struct walk {
	struct smb_thresholds th;
	struct smb_dir_stats st[2];
	struct tally tally;
	struct walk_stats ws;
};

void walk_init(struct walk *w);

/* The reassembler's consumer: open()'s context is a struct walk. */
extern const struct rs_ops walk_ops;

#endif /* SMBSPLICE_ADVISE_WALK_H */
