/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_ADVISE_RESYNC_H
#define SMBSPLICE_ADVISE_RESYNC_H

#include <stddef.h>
#include <stdint.h>

/* Bytes from a frame's first byte that decide whether a frame starts
 * there: an encryption transform header's flags end at 48. */
#define RESYNC_WINDOW 48

enum frame_verdict {
	FRAME_NO,   /* no frame starts here */
	FRAME_YES,  /* a frame very probably starts here */
	FRAME_MORE, /* the bytes so far fit: more are needed to tell */
};

/**
 * struct resync - the search for a frame start in a stream that lost it
 * @carry:	the last bytes of the data searched so far that may still
 *		begin a frame, when too few came to tell
 * @n:		how many
 */
struct resync {
	uint8_t carry[RESYNC_WINDOW];
	uint32_t n;
};

enum frame_verdict frame_start_plausible(const uint8_t *b, size_t avail);
long resync_find(struct resync *r, const uint8_t *p, size_t n);
void resync_reset(struct resync *r);

#endif /* SMBSPLICE_ADVISE_RESYNC_H */
