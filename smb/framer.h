/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_FRAMER_H
#define SMBSPLICE_FRAMER_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/counter.h"
#include "smb/threshold.h"
#include "smb/who.h"
#include "smb/wire.h"

/* Bytes of an element's start the framer must see: the 64-byte SMB2
 * header and as much body as the fields it reads (a SESSION_SETUP
 * request's fixed body and the start of its security buffer). */
#define SMB_HOLD_MAX SMB2_SESS_REQ_PARSED
static_assert(SMB_HOLD_MAX >= SMB2_NEG_RSP_PARSED &&
		      SMB_HOLD_MAX >= SMB2_IOCTL_RSP_PARSED &&
		      SMB_HOLD_MAX >= SMB1_SS_RSP_PARSED &&
		      SMB_HOLD_MAX >= SMB2_TREE_REQ_PARSED &&
		      SMB_HOLD_MAX >= SMB2_TRANSFORM_HDR_LEN,
	      "every parse step fits in @hold");

/* Anonymous SESSION_SETUP requests a connection may have awaiting their
 * responses (struct smb_anon_ledger). A client logs in one leg at a
 * time; more than this at once is no client's doing. */
#define SMB_ANON_PENDING 4

/**
 * struct smb_anon_ledger - anonymous logins asked for, not yet answered
 * @ids:	MessageIds of SESSION_SETUP requests whose NTLMSSP
 *		AUTHENTICATE was anonymous (or hidden, see enum smb_login)
 * @n:		how many of @ids count
 * @blind:	requests went by unread (their stream went opaque, or more
 *		than SMB_ANON_PENDING were pending): from now on no session
 *		setup success is a login
 *
 * The client's framer writes it, the server's framer reads it when the
 * response comes (smb_framer_pair()): a server answers only what it was
 * sent, so the request is always parsed first.
 */
struct smb_anon_ledger {
	uint64_t ids[SMB_ANON_PENDING];
	uint32_t n;
	bool blind;
};

/**
 * struct smb_dir_stats - counters of one direction, summed over connections
 * @commands:		SMB2 messages per command; the last slot counts
 *			commands past SMB2_OPLOCK_BREAK
 * @interim:		interim (STATUS_PENDING, async) READ responses
 * @read_errors:	READ responses with an error body
 * @smb1:		SMB1 frames (the multi-protocol NEGOTIATE)
 * @encrypted:		encryption transform frames
 * @compressed:		compression transform frames
 * @netbios:		NetBIOS session service control frames
 * @multichannel:	NEGOTIATE responses that offered multichannel
 * @interface_lists:	IOCTL responses carrying the server's network
 *			interfaces
 * @payloads:		payloads per class and decision, [class][1] spliced
 * @payload_spliced:	payload bytes per class moved by the splice pump
 * @payload_copied:	payload bytes per class that went through the buffer
 *
 * Shared by every framer of one direction in one thread and added to with
 * counter_add(), so that a connection carries none of it and any thread
 * may read it. Nothing but uint64_t counters: counters_add_totals()
 * (proxy/counters.c) adds it up as part of struct totals and relies on
 * that.
 */
struct smb_dir_stats {
	uint64_t commands[SMB2_NCOMMANDS + 1];
	uint64_t interim, read_errors;
	uint64_t smb1, encrypted, compressed, netbios;
	uint64_t multichannel, interface_lists;
	uint64_t payloads[SMB_NCLASSES][2];
	uint64_t payload_spliced[SMB_NCLASSES], payload_copied[SMB_NCLASSES];
};

/**
 * struct smb_stream_facts - what one direction of one connection carried
 * @reads:		READ responses carrying data
 * @read_bytes:		their DataLength, summed
 * @writes:		WRITE requests carrying data
 * @write_bytes:	their Length, summed
 * @max_read:		MaxReadSize of the NEGOTIATE response
 * @max_write:		MaxWriteSize of the NEGOTIATE response
 * @max_transact:	MaxTransactSize of the NEGOTIATE response
 * @dialect:		DialectRevision of the NEGOTIATE response, 0 if none
 * @signed_seen:	a message had the SIGNED flag
 * @encrypted_seen:	an encryption transform frame passed
 * @multichannel:	the NEGOTIATE response offered multichannel
 * @interface_list:	an IOCTL response listed the server's interfaces:
 *			clients may connect to them around a proxy
 * @session_ok:		a session setup response with STATUS_SUCCESS
 *			passed (SMB2 SESSION_SETUP, or SMB1
 *			SESSION_SETUP_ANDX) that is neither guest nor null
 *			(anonymous), by its flags or by its request (struct
 *			smb_anon_ledger): the client has authenticated, and
 *			stays so whatever follows
 *
 * Kept per connection, for its log line; read only by the thread that
 * owns the connection.
 */
struct smb_stream_facts {
	uint64_t reads, read_bytes, writes, write_bytes;
	uint32_t max_read, max_write, max_transact;
	uint16_t dialect;
	bool signed_seen, encrypted_seen;
	bool multichannel, interface_list;
	bool session_ok;
};

/* What kind of message an observer is told of (struct smb_msg). */
enum smb_msg_kind {
	SMB_MSG_SMB2,	    /* an SMB2 message (one compound element) */
	SMB_MSG_ENCRYPTED,  /* an encryption transform frame */
	SMB_MSG_COMPRESSED, /* a compression transform frame */
	SMB_MSG_SMB1,	    /* an SMB1 frame */
	SMB_MSG_NETBIOS,    /* a NetBIOS session service control frame */
};

/**
 * struct smb_msg - one message, as the framer has just planned it
 * @kind:	see enum smb_msg_kind
 * @frame_off:	stream offset of its frame's transport prefix: bytes fed
 *		and advanced over before it
 * @frame_len:	the frame's length, after the prefix
 * @start:	where the message starts, from the frame's first byte after
 *		the prefix
 * @end:	where it ends: its NextCommand, or the frame's end
 * @pay_start:	where its payload starts, likewise; equal to @pay_end when
 *		there is none
 * @pay_end:	where it ends
 * @pay_class:	the payload's class
 * @pay_splice:	the payload is at or above its class's threshold
 * @command:	SMB2 only: the command
 * @flags:	SMB2 only: the header's Flags
 * @status:	SMB2 only: the header's Status
 * @message_id:	SMB2 only: MessageId
 * @async_id:	SMB2 only: AsyncId when SMB2_FLAG_ASYNC is set, else 0
 * @hdr:	the message's first bytes, as the framer holds them (valid
 *		during the call only)
 * @hdr_len:	how many: the SMB2 header and the body fields it parsed
 *		(for a SESSION_SETUP request, its fixed body only: the start
 *		of its security buffer is read and wiped before),
 *		SMB1_HDR_PARSED for SMB1 (4 if its frame is shorter),
 *		SMB2_TRANSFORM_HDR_LEN for an encrypted frame, 4 (the
 *		protocol id) for a compressed one, 0 for NetBIOS frames
 */
struct smb_msg {
	enum smb_msg_kind kind;
	uint64_t frame_off;
	uint32_t frame_len;
	uint32_t start, end;
	uint32_t pay_start, pay_end;
	enum smb_class pay_class;
	bool pay_splice;
	uint16_t command;
	uint32_t flags, status;
	uint64_t message_id, async_id;
	const uint8_t *hdr;
	uint32_t hdr_len;
};

/**
 * smb_msg_frame_end() - stream offset just past a message's frame
 * @m:	the message
 *
 * Return: the offset; once that many bytes are written, the frame is.
 */
static inline uint64_t smb_msg_frame_end(const struct smb_msg *m)
{
	return m->frame_off + SMB_PREFIX_LEN + m->frame_len;
}

/**
 * smb_msg_storable() - bytes of a message a record of it may keep
 * @m:	the message
 *
 * A SESSION_SETUP request or response carries a security blob after its
 * header: NTLMSSP's server challenge and the client's NTLMv2 response,
 * with user and domain, are all an offline cracker needs; a Kerberos
 * ticket is no better. So SESSION_SETUP is kept to its header, both
 * ways. An SMB1 frame may be SESSION_SETUP_ANDX, whose command byte the
 * framer does not read: SMB1 is kept to its header. An IOCTL's buffers
 * are a named pipe's RPC (which may bind with NTLMSSP of its own), and a
 * compressed frame may hold any message uncompressed (the NONE
 * algorithm): each is kept to its fixed part. What else a record may
 * hold (names of shares and files, in TREE_CONNECT and CREATE) is not
 * a secret the way these are.
 *
 * Return: bytes from @m->start; at most @m->end - @m->start.
 */
static inline uint32_t smb_msg_storable(const struct smb_msg *m)
{
	uint32_t len = m->end - m->start, keep = len;

	if (m->kind == SMB_MSG_SMB1)
		keep = SMB1_HDR_LEN;
	else if (m->kind == SMB_MSG_COMPRESSED)
		keep = SMB2_COMPRESS_HDR_LEN;
	else if (m->kind == SMB_MSG_SMB2 && m->command == SMB2_SESSION_SETUP)
		keep = SMB2_HDR_LEN;
	else if (m->kind == SMB_MSG_SMB2 && m->command == SMB2_IOCTL)
		keep = m->flags & SMB2_FLAG_RESPONSE ? SMB2_IOCTL_RSP_FIXED
						     : SMB2_IOCTL_REQ_FIXED;
	return keep < len ? keep : len;
}

/**
 * typedef smb_msg_fn - what an observer is called with, once per message
 * @ctx:	the observer's context
 * @m:		the message
 *
 * Called from inside smb_framer_feed() as soon as the message's header
 * (and the body fields the framer reads) are in, before its payload.
 */
typedef void smb_msg_fn(void *ctx, const struct smb_msg *m);

/**
 * typedef smb_who_fn - the connection's view, for the framer to note in
 * @ctx:	the hook's context
 * @create:	make the view if there is none yet (a session setup
 *		request is passing)
 *
 * Return: the view, or NULL (none yet, or no memory for one).
 */
typedef struct smb_who *smb_who_fn(void *ctx, bool create);

/* Why a framer went opaque (struct smb_framer's @why is the text of one):
 * an index into smb_opaque_text[], so that a live handover can carry it. */
enum smb_opaque_why {
	SMB_WHY_NONE, /* not opaque */
	SMB_WHY_NBT_FLAGS,
	SMB_WHY_BAD_TYPE,
	SMB_WHY_NO_PROTOCOL_ID,
	SMB_WHY_SMB2_HDR_SHORT,
	SMB_WHY_COMPOUND_NOT_SMB2,
	SMB_WHY_TRANSFORM_SHORT,
	SMB_WHY_COMPRESS_SHORT,
	SMB_WHY_UNKNOWN_PROTOCOL,
	SMB_WHY_HDR_STRUCT_SIZE,
	SMB_WHY_NEXT_COMMAND,
	SMB_WHY_BODY_SHORT,
	SMB_WHY_READ_INSIDE_HDR,
	SMB_WHY_WRITE_INSIDE_HDR,
	SMB_WHY_READ_PAST_END,
	SMB_WHY_WRITE_PAST_END,
	SMB_WHY_READ_STRUCT_SIZE,
	SMB_WHY_WRITE_STRUCT_SIZE,
	SMB_WHY_NO_ROOM_FOR_HDR,
	SMB_WHY_COUNT
};

extern const char *const smb_opaque_text[];

enum smb_framer_state {
	FR_PREFIX, /* collecting the 4-byte transport prefix */
	FR_HEADER, /* collecting the start of a message (element) to parse */
	FR_SKIP,   /* passing bytes that need no parsing: gaps and payload */
	FR_OPAQUE, /* gave up parsing for good; bytes still flow unchanged */
};

/**
 * struct smb_framer - streaming parser for one direction of one connection
 * @th:		splice thresholds
 * @state:	see enum smb_framer_state
 * @hold:	bytes collected for the parse step in progress
 * @held:	bytes in @hold
 * @want:	bytes @hold must reach before the next parse step
 * @frame_len:	length of the current frame, after its prefix
 * @pos:	offset in the current frame of the next byte to come
 * @elem_start:	offset of the current SMB2 message (compound element)
 * @elem_end:	offset where it ends: its NextCommand, or the frame's end
 * @pay_start:	offset of the payload span of the current element
 * @pay_end:	its end; equal to @pay_start when there is none
 * @pay_class:	the payload's class
 * @pay_splice:	the payload is at or above its class's threshold
 * @keep_lead:	the current frame does not end a run of spliced payloads:
 *		it had one, or it is an interim response
 * @lead:	bytes from the first byte of the last frame that had a
 *		spliced payload (prefix included) to that payload; 0 once a
 *		frame without one has passed. A hint for the next read.
 * @why:	after the switch to FR_OPAQUE: why, for the log; one of
 *		smb_opaque_text[], never another string
 * @st:		the direction's shared counters
 * @facts:	this stream's facts, for the connection's log line
 * @frame_off:	stream offset of the current frame's transport prefix
 * @observe:	called once per message, or NULL
 * @observer:	its context
 * @anon:	anonymous SESSION_SETUP requests this stream carried
 * @ledger:	where its requests are noted and its responses looked up:
 *		the client's framer's @anon (smb_framer_pair()), or NULL for
 *		its own (a framer fed both ways, as in tests)
 * @who:	the connection's view (smb/who.c), or NULL for none
 * @who_ctx:	its context
 * @tap:	the current message's rest is handed to the view as it
 *		passes, and never spliced
 *
 * Offsets count from the first byte after the transport prefix. Every
 * length read from the wire is checked against the frame before it is
 * used; a frame that fails a check sends the framer to FR_OPAQUE.
 */
struct smb_framer {
	const struct smb_thresholds *th;
	enum smb_framer_state state;
	uint8_t hold[SMB_HOLD_MAX];
	uint32_t held, want;
	uint32_t frame_len, pos;
	uint32_t elem_start, elem_end;
	uint32_t pay_start, pay_end;
	enum smb_class pay_class;
	bool pay_splice, keep_lead;
	uint32_t lead;
	const char *why;
	struct smb_dir_stats *st;
	struct smb_stream_facts facts;
	uint64_t frame_off;
	smb_msg_fn *observe;
	void *observer;
	struct smb_anon_ledger anon;
	struct smb_anon_ledger *ledger;
	smb_who_fn *who;
	void *who_ctx;
	bool tap;
};

/**
 * struct smb_framer_saved - a framer's state, for a live handover
 * @frame_off:	see struct smb_framer
 * @reads:	@facts.reads, and so on for every member of @facts
 * @read_bytes:	see struct smb_stream_facts
 * @writes:	likewise
 * @write_bytes: likewise
 * @held:	bytes of @hold that count; the rest are zero
 * @want:	see struct smb_framer, as are the fields below
 * @frame_len:	the current frame's length
 * @pos:	offset of the next byte in the frame
 * @elem_start:	the current message's offset
 * @elem_end:	its end
 * @pay_start:	its payload's offset
 * @pay_end:	its payload's end
 * @lead:	the copy-limit hint
 * @max_read:	see struct smb_stream_facts
 * @max_write:	likewise
 * @max_transact: likewise
 * @state:	an enum smb_framer_state
 * @pay_class:	an enum smb_class
 * @why:	an enum smb_opaque_why: SMB_WHY_NONE unless @state is
 *		FR_OPAQUE
 * @dialect:	see struct smb_stream_facts
 * @pay_splice:	0 or 1, as every flag below
 * @keep_lead:	see struct smb_framer
 * @signed_seen: see struct smb_stream_facts
 * @encrypted_seen: likewise
 * @multichannel: likewise
 * @interface_list: likewise
 * @session_ok:	likewise
 * @anon_blind:	see struct smb_anon_ledger, as are the two below
 * @anon_n:	pending anonymous requests
 * @anon_ids:	their MessageIds; zero past @anon_n
 * @hold:	the bytes collected for the parse step in progress
 *
 * Every member of struct smb_framer but its pointers (thresholds,
 * counters, observer and view are the new process's own) and @tap (a
 * request being read for the view is left unread), in fixed-width
 * fields: the handover image encodes it field by field, and
 * smb_framer_restore() checks it whole, for an image is input.
 */
struct smb_framer_saved {
	uint64_t frame_off;
	uint64_t reads, read_bytes, writes, write_bytes;
	uint32_t held, want;
	uint32_t frame_len, pos;
	uint32_t elem_start, elem_end;
	uint32_t pay_start, pay_end;
	uint32_t lead;
	uint32_t max_read, max_write, max_transact;
	uint8_t state, pay_class, why;
	uint16_t dialect;
	uint8_t pay_splice, keep_lead;
	uint8_t signed_seen, encrypted_seen, multichannel, interface_list;
	uint8_t session_ok;
	uint8_t anon_blind;
	uint32_t anon_n;
	uint64_t anon_ids[SMB_ANON_PENDING];
	uint8_t hold[SMB_HOLD_MAX];
};

void smb_framer_init(struct smb_framer *f, const struct smb_thresholds *th,
		     struct smb_dir_stats *st);
void smb_framer_save(const struct smb_framer *f, struct smb_framer_saved *s);
int smb_framer_restore(struct smb_framer *f, const struct smb_framer_saved *s);
void smb_framer_observe(struct smb_framer *f, smb_msg_fn *fn, void *ctx);
void smb_framer_pair(struct smb_framer *to_client,
		     struct smb_framer *to_server);
void smb_framer_who(struct smb_framer *f, smb_who_fn *fn, void *ctx);
void smb_framer_feed(struct smb_framer *f, const uint8_t *p, size_t n);
void smb_framer_advance(struct smb_framer *f, size_t n);

/**
 * smb_framer_splice_span() - bytes that may go through the splice pump now
 * @f:	the framer
 *
 * Return: bytes from here to the end of a payload at or above its class's
 * threshold, or 0 when the next bytes must be copied (headers, small
 * messages) or the framer is opaque.
 */
static inline size_t smb_framer_splice_span(const struct smb_framer *f)
{
	if (f->state != FR_SKIP || !f->pay_splice || f->pos < f->pay_start ||
	    f->pos >= f->pay_end)
		return 0;
	return f->pay_end - f->pos;
}

/**
 * smb_framer_skip_span() - bytes from here the framer need not see
 * @f:	the framer
 *
 * Past a message's header the framer only counts bytes to the message's
 * end (a gap, the payload, a tail): smb_framer_advance() may account for
 * any of them unseen, whatever the threshold. The capture advisor does so
 * for bytes a capture lacks. A spliced payload is a part of this span.
 *
 * Return: bytes to the end of the current message, or 0 when the next
 * bytes must be fed (a prefix or a header) or the framer is opaque.
 */
static inline size_t smb_framer_skip_span(const struct smb_framer *f)
{
	return f->state == FR_SKIP ? f->elem_end - f->pos : 0;
}

/**
 * smb_framer_copy_limit() - the most the next copy read should take
 * @f:	the framer, not opaque
 *
 * A greedy read at a message boundary takes in the start of the payload
 * behind the header, and those bytes can only be copied. When the last
 * frame had a spliced payload, the next one probably has too, at the same
 * place: read only up to there, and let the splice pump take the rest. A
 * gap between a header and a spliced payload (DataOffset 88) is read
 * exactly, and a payload tail too short to splice is read no further than
 * the next frame's payload.
 *
 * Return: bytes, or SIZE_MAX for no limit.
 */
static inline size_t smb_framer_copy_limit(const struct smb_framer *f)
{
	uint32_t seen;

	if (f->state == FR_SKIP && f->pay_splice && f->pos < f->pay_start)
		return f->pay_start - f->pos;
	if (!f->lead)
		return SIZE_MAX;
	/* A copied payload tail: up to the next frame's payload, at most. */
	if (f->state == FR_SKIP)
		return f->frame_len - f->pos + f->lead;
	seen = f->state == FR_PREFIX ? f->held : SMB_PREFIX_LEN + f->pos;
	return f->lead > seen ? f->lead - seen : SIZE_MAX;
}

/**
 * smb_framer_mid_message() - are more bytes of the current message due
 * @f:	the framer, not opaque
 *
 * Return: true between a frame's first byte and its last.
 */
static inline bool smb_framer_mid_message(const struct smb_framer *f)
{
	return f->state != FR_PREFIX || f->held > 0;
}

/**
 * smb_framer_opaque() - has the framer given up on this stream
 * @f:	the framer
 *
 * Return: true once a frame failed to parse.
 */
static inline bool smb_framer_opaque(const struct smb_framer *f)
{
	return f->state == FR_OPAQUE;
}

const char *smb_command_name(unsigned cmd);
void smb_dialect_text(uint16_t dialect, char *out, size_t outlen);

#endif /* SMBSPLICE_FRAMER_H */
