/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_SRT_H
#define SMBSPLICE_SRT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "smb/framer.h"

/* What a message is to the pairing of requests with responses. */
enum srt_role {
	SRT_NONE,     /* neither: not SMB2, a CANCEL (never answered), an
		       * interim response (the final one follows), or an
		       * oplock break the server sent unasked */
	SRT_REQUEST,  /* a request that will be answered */
	SRT_RESPONSE, /* the final response to a request */
};

/**
 * struct srt_entry - one request waiting for its response
 * @id:		its MessageId
 * @end:	stream offset just past its frame: once that many bytes are
 *		written to the server, the request is sent
 * @sent_ns:	when it was sent, 0 until then
 * @cmd:	its command
 * @used:	the slot holds a request
 */
struct srt_entry {
	uint64_t id;
	uint64_t end;
	uint64_t sent_ns;
	uint16_t cmd;
	bool used;
};

/**
 * struct srt_table - requests in flight, by MessageId
 * @next:	for the owner's list of spare tables
 * @cap:	slots, a power of two
 * @count:	requests held
 * @unsent:	of them, not yet sent
 * @e:		the slots
 */
struct srt_table {
	struct srt_table *next;
	uint32_t cap, count, unsent;
	struct srt_entry e[];
};

enum srt_role srt_role_of(const struct smb_msg *m);
size_t srt_size(uint32_t cap);
void srt_init(struct srt_table *t, uint32_t cap);
bool srt_full(const struct srt_table *t);
void srt_add(struct srt_table *t, uint64_t id, uint16_t cmd, uint64_t end);
void srt_sent(struct srt_table *t, uint64_t upto, uint64_t now_ns);
bool srt_take(struct srt_table *t, uint64_t id, uint16_t *cmd,
	      uint64_t *sent_ns);
void srt_move(struct srt_table *dst, const struct srt_table *src);
bool srt_put(struct srt_table *t, uint64_t id, uint16_t cmd, uint64_t end,
	     uint64_t sent_ns);

#endif /* SMBSPLICE_SRT_H */
