// SPDX-License-Identifier: GPL-2.0-or-later
/* srt.c - pairing SMB2 requests with their responses, by MessageId
 *
 * Theory of operation: the server's time for a request (its service
 * response time, as Wireshark's smb2,srt calls it) runs from the moment
 * the request's last byte is handed to the server to the moment the first
 * byte of its response comes back. A response names its request by
 * MessageId (an interim async response does too, and the final one after
 * it), so requests wait here, keyed by MessageId, from the moment the
 * framer sees them until their response does.
 *
 * The table is open addressing with linear probing, sized a power of two
 * and never more than three quarters full; removal shifts the following
 * entries back instead of leaving tombstones, so a long-lived connection
 * never degrades. The caller owns the memory: it sizes the table with
 * srt_size(), grows it with srt_move() into a larger one when srt_full()
 * says so, and decides what to do past its own cap. No clock is read and
 * nothing is allocated here.
 */
#include "config.h"

#include <string.h>

#include "smb/srt.h"
#include "smb/wire.h"

/* The MessageId of an oplock or lease break the server sends unasked. */
#define SMB2_UNSOLICITED_ID 0xffffffffffffffffull

/**
 * srt_role_of() - is a message a request to time, or a response to one
 * @m:	the message, as the framer reports it
 *
 * Return: see enum srt_role.
 */
enum srt_role srt_role_of(const struct smb_msg *m)
{
	if (m->kind != SMB_MSG_SMB2 || m->message_id == SMB2_UNSOLICITED_ID)
		return SRT_NONE;
	if (!(m->flags & SMB2_FLAG_RESPONSE))
		return m->command == SMB2_CANCEL ? SRT_NONE : SRT_REQUEST;
	if (m->status == SMB2_STATUS_PENDING && m->flags & SMB2_FLAG_ASYNC)
		return SRT_NONE;
	return SRT_RESPONSE;
}

/**
 * slot_of() - where a MessageId's probe sequence starts
 * @t:	the table
 * @id:	the MessageId; consecutive ones spread over the table
 *
 * Return: a slot index.
 */
static uint32_t slot_of(const struct srt_table *t, uint64_t id)
{
	return (uint32_t)((id * 0x9e3779b97f4a7c15ull) >> 32) & (t->cap - 1);
}

/**
 * srt_size() - bytes a table of @cap slots takes
 * @cap:	slots, a power of two
 *
 * Return: the size to allocate.
 */
size_t srt_size(uint32_t cap)
{
	return sizeof(struct srt_table) + cap * sizeof(struct srt_entry);
}

/**
 * srt_init() - make an empty table in memory of srt_size(@cap) bytes
 * @t:		the memory
 * @cap:	slots, a power of two
 */
void srt_init(struct srt_table *t, uint32_t cap)
{
	memset(t, 0, srt_size(cap));
	t->cap = cap;
}

/**
 * srt_full() - must the table grow before another request is added
 * @t:	the table
 *
 * Return: true at three quarters full.
 */
bool srt_full(const struct srt_table *t)
{
	return (t->count + 1) * 4 > t->cap * 3;
}

/**
 * find() - the slot holding a MessageId
 * @t:	the table
 * @id:	the MessageId
 *
 * Return: the slot, or the free slot where the probe ended.
 */
static uint32_t find(const struct srt_table *t, uint64_t id)
{
	uint32_t i = slot_of(t, id);

	while (t->e[i].used && t->e[i].id != id)
		i = (i + 1) & (t->cap - 1);
	return i;
}

/**
 * srt_add() - a request is on its way to the server
 * @t:		the table, not srt_full()
 * @id:		its MessageId
 * @cmd:	its command
 * @end:	stream offset just past its frame
 *
 * A MessageId already held (a client that reuses one, against the
 * protocol) takes the slot over: its old request will never be answered.
 */
void srt_add(struct srt_table *t, uint64_t id, uint16_t cmd, uint64_t end)
{
	struct srt_entry *e = &t->e[find(t, id)];

	if (e->used)
		t->unsent -= !e->sent_ns;
	else
		t->count++;
	*e = (struct srt_entry){
		.id = id, .end = end, .cmd = cmd, .used = true
	};
	t->unsent++;
}

/**
 * srt_sent() - the requests whose last byte is written are sent now
 * @t:		the table
 * @upto:	bytes written to the server so far
 * @now_ns:	the time, never 0
 */
void srt_sent(struct srt_table *t, uint64_t upto, uint64_t now_ns)
{
	for (uint32_t i = 0; t->unsent && i < t->cap; i++) {
		struct srt_entry *e = &t->e[i];

		if (e->used && !e->sent_ns && e->end <= upto) {
			e->sent_ns = now_ns;
			t->unsent--;
		}
	}
}

/**
 * remove_at() - empty a slot, and shift back the entries that probed past it
 * @t:	the table
 * @i:	the slot
 */
static void remove_at(struct srt_table *t, uint32_t i)
{
	uint32_t j = i, home;

	for (;;) {
		j = (j + 1) & (t->cap - 1);
		if (!t->e[j].used)
			break;
		home = slot_of(t, t->e[j].id);
		/* Leave e[j] if its home lies cyclically in (i, j]. */
		if (i <= j ? (i < home && home <= j) : (i < home || home <= j))
			continue;
		t->e[i] = t->e[j];
		i = j;
	}
	t->e[i].used = false;
	t->count--;
}

/**
 * srt_take() - a response came: its request's command and when it was sent
 * @t:		the table
 * @id:		the response's MessageId
 * @cmd:	set to the request's command
 * @sent_ns:	set to when it was sent, 0 if its last byte was not yet
 *		written (a server answering early, as to a failed WRITE)
 *
 * Return: true if the request was held; it no longer is.
 */
bool srt_take(struct srt_table *t, uint64_t id, uint16_t *cmd,
	      uint64_t *sent_ns)
{
	uint32_t i = find(t, id);

	if (!t->e[i].used)
		return false;
	*cmd = t->e[i].cmd;
	*sent_ns = t->e[i].sent_ns;
	t->unsent -= !*sent_ns;
	remove_at(t, i);
	return true;
}

/**
 * srt_move() - put every request of one table into another, larger one
 * @dst:	an empty table, with room for all of @src
 * @src:	the table to empty
 */
void srt_move(struct srt_table *dst, const struct srt_table *src)
{
	for (uint32_t i = 0; i < src->cap; i++) {
		const struct srt_entry *e = &src->e[i];

		if (!e->used)
			continue;
		dst->e[find(dst, e->id)] = *e;
		dst->count++;
		dst->unsent += !e->sent_ns;
	}
}

/**
 * srt_put() - hold a request as another process held it (a live handover)
 * @t:		the table
 * @id:		its MessageId
 * @cmd:	its command
 * @end:	stream offset just past its frame
 * @sent_ns:	when it was sent, 0 if not yet
 *
 * Unlike srt_add(), a MessageId already held is refused: one table never
 * holds a MessageId twice, so a list that does is not a table's; and a
 * full table is refused, not grown: the caller sized it.
 *
 * Return: true if it is held now.
 */
bool srt_put(struct srt_table *t, uint64_t id, uint16_t cmd, uint64_t end,
	     uint64_t sent_ns)
{
	struct srt_entry *e = &t->e[find(t, id)];

	if (e->used || srt_full(t))
		return false;
	*e = (struct srt_entry){
		.id = id, .end = end, .sent_ns = sent_ns, .cmd = cmd,
		.used = true
	};
	t->count++;
	t->unsent += !sent_ns;
	return true;
}
