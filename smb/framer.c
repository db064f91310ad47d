// SPDX-License-Identifier: GPL-2.0-or-later
/* framer.c - a streaming parser for SMB framing and SMB2 headers
 *
 * Theory of operation: the framer walks one direction's byte stream as it
 * arrives, split anywhere, down to one byte at a time. It never allocates,
 * never does I/O and never changes a byte: it only tells the pump, at every
 * moment, whether the next bytes may be spliced and whether more bytes of
 * the current message are due.
 *
 * A frame is a 4-byte transport prefix and a body. The framer collects the
 * prefix, then the start of each message in the body into @hold: just the
 * bytes it needs (the protocol id; the 64-byte SMB2 header; the first body
 * fields of READ responses, WRITE requests and NEGOTIATE responses; an
 * SMB1 header's command and status). From
 * those it plans the rest of the message as spans it does not need to see:
 * a gap, the payload, and a tail, up to the message's end. It then skips
 * those spans, either as bytes fed to it (they went through the copy
 * buffer) or as bytes reported moved (they went through a pipe, unseen). A
 * compound continues at NextCommand with the next header; the frame's end
 * starts the next prefix.
 *
 *   FR_PREFIX -> FR_HEADER -> FR_SKIP -> FR_HEADER (compound) ... -> FR_PREFIX
 *
 * Only payloads are ever spliced, and only when their class's threshold
 * says so: READ response data, WRITE request data, and the opaque rest of
 * encrypted, compressed and other large messages.
 *
 * A connection's view (smb_framer_who(), smb/who.c) is told what the
 * admin's `ctl conns` shows: a session setup or tree connect request's
 * start, and then its rest as it passes (such a request is never
 * spliced); responses' headers; encrypted frames' SessionIds.
 *
 * An observer (smb_framer_observe()) is told of each message once it is
 * planned: where it lies in the stream, its header's fields and the bytes
 * held. The proxy times requests and traces headers with it, and the
 * advisor builds its histograms; the framer does not care which.
 *
 * Every length read from the wire is checked against the frame that must
 * hold it. A frame that fails a check moves the framer to FR_OPAQUE for
 * good: the connection still forwards every byte, by the flow policy, and
 * the server decides what is an error.
 */
#include "config.h"

#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "smb/framer.h"
#include "smb/login.h"

/* The log's words for each reason (tests and users match them), indexed
 * by enum smb_opaque_why so that a handover carries a number, not a
 * pointer into the old process. */
const char *const smb_opaque_text[] = {
	[SMB_WHY_NONE] = NULL,
	[SMB_WHY_NBT_FLAGS] = "NetBIOS frame with reserved flag bits set",
	[SMB_WHY_BAD_TYPE] = "not an SMB transport frame (bad type byte)",
	[SMB_WHY_NO_PROTOCOL_ID] = "frame too short for a protocol id",
	[SMB_WHY_SMB2_HDR_SHORT] = "SMB2 header does not fit in its frame",
	[SMB_WHY_COMPOUND_NOT_SMB2] = "compound element is not SMB2",
	[SMB_WHY_TRANSFORM_SHORT] =
		"encryption transform header does not fit in its frame",
	[SMB_WHY_COMPRESS_SHORT] =
		"compression transform header does not fit in its frame",
	[SMB_WHY_UNKNOWN_PROTOCOL] = "unknown protocol id",
	[SMB_WHY_HDR_STRUCT_SIZE] = "SMB2 header StructureSize is not 64",
	[SMB_WHY_NEXT_COMMAND] = "NextCommand outside its frame or misaligned",
	[SMB_WHY_BODY_SHORT] = "SMB2 message shorter than its fixed body",
	[SMB_WHY_READ_INSIDE_HDR] =
		"READ response DataOffset inside the header",
	[SMB_WHY_WRITE_INSIDE_HDR] =
		"WRITE request DataOffset inside the header",
	[SMB_WHY_READ_PAST_END] =
		"READ response data past the end of the message",
	[SMB_WHY_WRITE_PAST_END] =
		"WRITE request data past the end of the message",
	[SMB_WHY_READ_STRUCT_SIZE] =
		"READ response body StructureSize is neither 17 nor 9",
	[SMB_WHY_WRITE_STRUCT_SIZE] =
		"WRITE request body StructureSize is not 49",
	[SMB_WHY_NO_ROOM_FOR_HDR] = "NextCommand leaves no room for a header",
};
/* A reason added at the enum's end without its text would log "(null)";
 * test_framer checks that no reason in between lacks one. */
static_assert(sizeof(smb_opaque_text) / sizeof(smb_opaque_text[0]) ==
		      SMB_WHY_COUNT,
	      "smb_opaque_text[] and enum smb_opaque_why differ");

/**
 * smb_framer_init() - start a framer at the beginning of a stream
 * @f:		the framer
 * @th:		splice thresholds, which must outlive it
 * @st:		counters to add to, which must outlive it too
 */
void smb_framer_init(struct smb_framer *f, const struct smb_thresholds *th,
		     struct smb_dir_stats *st)
{
	memset(f, 0, sizeof(*f));
	f->th = th;
	f->st = st;
	f->state = FR_PREFIX;
	f->want = SMB_PREFIX_LEN;
}

/**
 * smb_framer_observe() - be told of every message from now on
 * @f:		the framer
 * @fn:		called once per message; NULL to stop
 * @ctx:	passed to @fn
 */
void smb_framer_observe(struct smb_framer *f, smb_msg_fn *fn, void *ctx)
{
	f->observe = fn;
	f->observer = ctx;
}

/**
 * smb_framer_pair() - let a connection's two framers tell logins apart
 * @to_client:	the framer of the server's stream (responses)
 * @to_server:	the framer of the client's stream (requests)
 *
 * Whether a successful SESSION_SETUP response was an anonymous login is
 * in its request, which the other framer parsed: from now on
 * @to_client looks the response's MessageId up in @to_server's ledger.
 */
void smb_framer_pair(struct smb_framer *to_client, struct smb_framer *to_server)
{
	to_client->ledger = &to_server->anon;
	to_server->ledger = NULL;
}

/**
 * smb_framer_who() - note what the connection's view shows
 * @f:		the framer
 * @fn:		gives the view; NULL for none
 * @ctx:	passed to @fn
 */
void smb_framer_who(struct smb_framer *f, smb_who_fn *fn, void *ctx)
{
	f->who = fn;
	f->who_ctx = ctx;
}

/**
 * who_of() - the connection's view
 * @f:		the framer
 * @create:	make it if there is none
 *
 * Return: the view, or NULL.
 */
static struct smb_who *who_of(struct smb_framer *f, bool create)
{
	return f->who ? f->who(f->who_ctx, create) : NULL;
}

/**
 * ledger_of() - the ledger a framer notes requests in and reads from
 * @f:	the framer
 *
 * Return: its pair's, or its own.
 */
static struct smb_anon_ledger *ledger_of(struct smb_framer *f)
{
	return f->ledger ? f->ledger : &f->anon;
}

/**
 * tell_observer() - describe the message just planned to the observer
 * @f:		the framer, in FR_SKIP for the message
 * @kind:	what it is
 */
static void tell_observer(struct smb_framer *f, enum smb_msg_kind kind)
{
	struct smb_msg m = {
		.kind = kind,
		.frame_off = f->frame_off,
		.frame_len = f->frame_len,
		.start = f->elem_start,
		.end = f->elem_end,
		.pay_start = f->pay_start,
		.pay_end = f->pay_end,
		.pay_class = f->pay_class,
		.pay_splice = f->pay_splice,
		.hdr = f->hold,
		.hdr_len = kind == SMB_MSG_NETBIOS ? 0 : f->held,
	};

	if (kind == SMB_MSG_SMB2) {
		m.command = get_le16(f->hold + SMB2_HDR_COMMAND);
		m.flags = get_le32(f->hold + SMB2_HDR_FLAGS);
		m.status = get_le32(f->hold + SMB2_HDR_STATUS);
		m.message_id = get_le64(f->hold + SMB2_HDR_MESSAGE_ID);
		if (m.flags & SMB2_FLAG_ASYNC)
			m.async_id = get_le64(f->hold + SMB2_HDR_ASYNC_ID);
	}
	f->observe(f->observer, &m);
}

/**
 * go_opaque() - give up parsing this stream
 * @f:		the framer
 * @why:	what failed, for the log
 */
static void go_opaque(struct smb_framer *f, enum smb_opaque_why why)
{
	f->state = FR_OPAQUE;
	f->why = smb_opaque_text[why];
	f->tap = false;
	/* A client that makes its own stream unreadable (a malformed WRITE
	 * the server only refuses) could log in anonymously unseen next. */
	ledger_of(f)->blind = true;
}

/**
 * expect_prefix() - wait for the next frame's transport prefix
 * @f:	the framer
 */
static void expect_prefix(struct smb_framer *f)
{
	f->state = FR_PREFIX;
	f->held = 0;
	f->want = SMB_PREFIX_LEN;
}

/**
 * next_frame() - the current frame is done: wait for the next one's prefix
 * @f:	the framer, at the frame's last byte
 */
static void next_frame(struct smb_framer *f)
{
	f->frame_off += SMB_PREFIX_LEN + (uint64_t)f->frame_len;
	expect_prefix(f);
}

/**
 * expect_element() - wait for the start of a message at @start
 * @f:		the framer
 * @start:	its offset in the frame
 */
static void expect_element(struct smb_framer *f, uint32_t start)
{
	f->state = FR_HEADER;
	f->held = 0;
	f->want = 4; /* the protocol id decides what comes next */
	f->elem_start = start;
	f->elem_end = f->frame_len;
}

/**
 * msg_kind() - what the element being planned is
 * @f:	the framer, before plan_skip() leaves FR_PREFIX or FR_HEADER
 *
 * Return: its kind, from the state and the protocol id held.
 */
static enum smb_msg_kind msg_kind(const struct smb_framer *f)
{
	if (f->state == FR_PREFIX)
		return SMB_MSG_NETBIOS;
	switch (get_le32(f->hold)) {
	case SMB_TRANSFORM_MAGIC:
		return SMB_MSG_ENCRYPTED;
	case SMB_COMPRESS_MAGIC:
		return SMB_MSG_COMPRESSED;
	case SMB1_MAGIC:
		return SMB_MSG_SMB1;
	default:
		return SMB_MSG_SMB2;
	}
}

/**
 * plan_skip() - the rest of the element needs no parsing
 * @f:		the framer
 * @off:	payload offset from the element's start, 0 for none
 * @len:	payload length
 * @cls:	payload class
 *
 * The caller has checked that the payload lies inside the element and
 * after the bytes already parsed.
 */
static void plan_skip(struct smb_framer *f, uint32_t off, uint32_t len,
		      enum smb_class cls)
{
	enum smb_msg_kind kind = msg_kind(f);

	f->state = FR_SKIP;
	f->pay_start = len ? f->elem_start + off : f->pos;
	f->pay_end = f->pay_start + len;
	f->pay_class = cls;
	f->pay_splice = len && !f->tap && smb_payload_splices(f->th, cls, len);
	if (len)
		counter_add(&f->st->payloads[cls][f->pay_splice], 1);
	if (f->pay_splice) {
		f->keep_lead = true;
		f->lead = SMB_PREFIX_LEN + f->pay_start;
	}
	if (f->observe)
		tell_observer(f, kind);
}

/**
 * plan_rest_as_other() - the element's unparsed rest is one opaque payload
 * @f:	the framer
 *
 * For encrypted, compressed and SMB1 frames, and any SMB2 message that is
 * not a READ response or WRITE request: if what is left is large enough,
 * it may be spliced.
 */
static void plan_rest_as_other(struct smb_framer *f)
{
	plan_skip(f, f->pos - f->elem_start, f->elem_end - f->pos,
		  SMB_CLASS_OTHER);
}

/**
 * parse_prefix() - the transport prefix is complete
 * @f:	the framer
 *
 * Return: SMB_WHY_NONE, or what is wrong with the frame.
 */
static enum smb_opaque_why parse_prefix(struct smb_framer *f)
{
	const uint8_t *h = f->hold;
	uint8_t type = h[0];

	if (type == NBT_MESSAGE) {
		/* Direct TCP's 24-bit length; NetBIOS messages (17 bits)
		 * read the same, since their high length bits are zero. */
		f->frame_len =
			(uint32_t)h[1] << 16 | (uint32_t)h[2] << 8 | h[3];
	} else if (type >= NBT_SESSION_REQUEST && type <= NBT_KEEPALIVE) {
		if (h[1] & 0xfe)
			return SMB_WHY_NBT_FLAGS;
		f->frame_len =
			(uint32_t)(h[1] & 1) << 16 | (uint32_t)h[2] << 8 | h[3];
	} else {
		return SMB_WHY_BAD_TYPE;
	}
	f->pos = 0;
	f->keep_lead = false;
	if (type != NBT_MESSAGE)
		counter_add(&f->st->netbios, 1);
	if (f->frame_len == 0) {
		next_frame(f);
		return SMB_WHY_NONE;
	}
	if (type != NBT_MESSAGE) {
		/* Session request, responses, keepalive: passed whole. */
		f->elem_start = 0;
		f->elem_end = f->frame_len;
		plan_skip(f, 0, 0, SMB_CLASS_OTHER);
		return SMB_WHY_NONE;
	}
	if (f->frame_len < 4)
		return SMB_WHY_NO_PROTOCOL_ID;
	expect_element(f, 0);
	return SMB_WHY_NONE;
}

/**
 * plan_transform() - an encryption or compression transform frame
 * @f:		the framer, with the protocol id parsed
 * @hdr:	length of the transform header
 * @count:	the counter of such frames
 * @too_short:	the complaint when the frame cannot hold the header
 *
 * The rest of the frame after the header is opaque: one payload of the
 * "other" class.
 *
 * Return: SMB_WHY_NONE, or @too_short.
 */
static enum smb_opaque_why plan_transform(struct smb_framer *f, uint32_t hdr,
					  uint64_t *count,
					  enum smb_opaque_why too_short)
{
	uint32_t room = f->frame_len - f->elem_start;

	if (room < hdr)
		return too_short;
	counter_add(count, 1);
	plan_skip(f, hdr, room - hdr, SMB_CLASS_OTHER);
	return SMB_WHY_NONE;
}

/**
 * parse_protocol_id() - the first four bytes of a message are in
 * @f:	the framer
 *
 * Return: SMB_WHY_NONE, or what is wrong with the frame.
 */
static enum smb_opaque_why parse_protocol_id(struct smb_framer *f)
{
	uint32_t magic = get_le32(f->hold);
	uint32_t room = f->frame_len - f->elem_start;

	if (magic == SMB2_MAGIC) {
		if (room < SMB2_HDR_LEN)
			return SMB_WHY_SMB2_HDR_SHORT;
		f->want = SMB2_HDR_LEN;
		return SMB_WHY_NONE;
	}
	if (f->elem_start)
		return SMB_WHY_COMPOUND_NOT_SMB2;
	if (magic == SMB_TRANSFORM_MAGIC) {
		f->facts.encrypted_seen = true;
		if (room < SMB2_TRANSFORM_HDR_LEN)
			return SMB_WHY_TRANSFORM_SHORT;
		/* Counted now, as a compressed frame is: a stream cut inside
		 * the header still carried the frame. */
		counter_add(&f->st->encrypted, 1);
		f->want = SMB2_TRANSFORM_HDR_LEN;
		return SMB_WHY_NONE;
	}
	if (magic == SMB_COMPRESS_MAGIC)
		return plan_transform(f, SMB2_COMPRESS_HDR_LEN,
				      &f->st->compressed,
				      SMB_WHY_COMPRESS_SHORT);
	if (magic == SMB1_MAGIC) {
		counter_add(&f->st->smb1, 1);
		if (room < SMB1_HDR_PARSED)
			plan_rest_as_other(f);
		else
			f->want = SMB1_HDR_PARSED;
		return SMB_WHY_NONE;
	}
	return SMB_WHY_UNKNOWN_PROTOCOL;
}

/**
 * parse_transform() - an encryption transform header is in
 * @f:	the framer
 *
 * Its SessionId tells the view which session seals; the rest of the
 * frame is opaque.
 */
static void parse_transform(struct smb_framer *f)
{
	struct smb_who *w = who_of(f, false);

	if (w)
		smb_who_sealed(w,
			       get_le64(f->hold + SMB2_TRANSFORM_SESSION_ID));
	/* parse_protocol_id() counted it and saw that the frame holds it */
	plan_skip(f, SMB2_TRANSFORM_HDR_LEN,
		  f->frame_len - f->elem_start - SMB2_TRANSFORM_HDR_LEN,
		  SMB_CLASS_OTHER);
}

/**
 * smb1_session_ok() - an SMB1 SESSION_SETUP_ANDX reply's Action is in
 * @h:	the frame's first SMB1_SS_RSP_PARSED bytes
 *
 * Return: true if the reply logged a user in: a guest login (Action bit
 * 0, which is also what Samba answers an anonymous client) is not one.
 */
static bool smb1_session_ok(const uint8_t *h)
{
	return h[SMB1_SS_RSP_WORDCOUNT] >= SMB1_SS_RSP_MIN_WORDS &&
	       !(get_le16(h + SMB1_SS_RSP_ACTION) & SMB1_ACTION_GUEST);
}

/**
 * parse_smb1_header() - an SMB1 header's command, status and flags are in
 * @f:	the framer
 *
 * A server that allows SMB1 may carry a whole session in it; its
 * successful SESSION_SETUP_ANDX response authenticates the client as an
 * SMB2 SESSION_SETUP one does, unless it says guest. For such a reply the
 * framer collects the Action word first (a second call, with more held).
 * Nothing else of SMB1 is parsed.
 */
static void parse_smb1_header(struct smb_framer *f)
{
	const uint8_t *h = f->hold;

	if (f->held == SMB1_HDR_PARSED &&
	    h[SMB1_HDR_COMMAND] == SMB1_COM_SESSION_SETUP_ANDX &&
	    h[SMB1_HDR_FLAGS] & SMB1_FLAGS_REPLY &&
	    get_le32(h + SMB1_HDR_STATUS) == SMB2_STATUS_SUCCESS &&
	    f->frame_len >= SMB1_SS_RSP_PARSED) {
		f->want = SMB1_SS_RSP_PARSED;
		return;
	}
	if (f->held == SMB1_SS_RSP_PARSED && smb1_session_ok(h))
		f->facts.session_ok = true;
	plan_rest_as_other(f);
}

/**
 * want_body() - how much of the body a message's parse step needs
 * @cmd:	SMB2 command
 * @resp:	the message is a response
 * @len:	the message's length (to NextCommand or the frame's end)
 *
 * Return: bytes from the header's start to collect, SMB2_HDR_LEN if the
 * header alone is enough.
 */
static uint32_t want_body(unsigned cmd, bool resp, uint32_t len)
{
	if (cmd == SMB2_READ && resp)
		return SMB2_READ_RSP_DATA_LENGTH + 4;
	if (cmd == SMB2_WRITE && !resp)
		return SMB2_WRITE_REQ_LENGTH + 4;
	if (cmd == SMB2_NEGOTIATE && resp)
		return len < SMB2_NEG_RSP_PARSED ? len : SMB2_NEG_RSP_PARSED;
	if (cmd == SMB2_SESSION_SETUP && resp)
		return len < SMB2_SESS_RSP_PARSED ? len : SMB2_SESS_RSP_PARSED;
	if (cmd == SMB2_SESSION_SETUP)
		return len < SMB2_SESS_REQ_PARSED ? len : SMB2_SESS_REQ_PARSED;
	if (cmd == SMB2_TREE_CONNECT && !resp)
		return len < SMB2_TREE_REQ_PARSED ? len : SMB2_TREE_REQ_PARSED;
	if (cmd == SMB2_IOCTL && resp)
		return len < SMB2_IOCTL_RSP_PARSED ? len
						   : SMB2_IOCTL_RSP_PARSED;
	return SMB2_HDR_LEN;
}

/**
 * note_response() - tell the view of a response it follows
 * @f:		the framer, with a response's header in @hold
 * @cmd:	its command
 *
 * Only the commands the view counts cost it a call.
 */
static void note_response(struct smb_framer *f, unsigned cmd)
{
	struct smb_who *w;

	switch (cmd) {
	case SMB2_SESSION_SETUP:
	case SMB2_LOGOFF:
	case SMB2_TREE_CONNECT:
	case SMB2_TREE_DISCONNECT:
	case SMB2_CREATE:
	case SMB2_CLOSE:
		if ((w = who_of(f, false)))
			smb_who_response(w, f->hold);
		break;
	default:
		break;
	}
}

/**
 * parse_header() - the 64-byte SMB2 header is in
 * @f:	the framer
 *
 * Return: SMB_WHY_NONE, or what is wrong with the frame.
 */
static enum smb_opaque_why parse_header(struct smb_framer *f)
{
	const uint8_t *h = f->hold;
	uint32_t next = get_le32(h + SMB2_HDR_NEXT);
	uint32_t flags = get_le32(h + SMB2_HDR_FLAGS);
	unsigned cmd = get_le16(h + SMB2_HDR_COMMAND);

	if (get_le16(h + SMB2_HDR_STRUCT_SIZE) != SMB2_HDR_LEN)
		return SMB_WHY_HDR_STRUCT_SIZE;
	if (next) {
		if (next < SMB2_HDR_LEN || next % 8 ||
		    next >= f->frame_len - f->elem_start)
			return SMB_WHY_NEXT_COMMAND;
		f->elem_end = f->elem_start + next;
	}
	counter_add(
		&f->st->commands[cmd < SMB2_NCOMMANDS ? cmd : SMB2_NCOMMANDS],
		1);
	if (flags & SMB2_FLAG_SIGNED)
		f->facts.signed_seen = true;
	if (flags & SMB2_FLAG_RESPONSE)
		note_response(f, cmd);
	f->want = want_body(cmd, flags & SMB2_FLAG_RESPONSE,
			    f->elem_end - f->elem_start);
	if (f->want > f->elem_end - f->elem_start)
		return SMB_WHY_BODY_SHORT;
	if (f->want == SMB2_HDR_LEN)
		plan_rest_as_other(f);
	return SMB_WHY_NONE;
}

/**
 * parse_error_body() - a response carries the 9-byte ERROR body
 * @f:	the framer, with the header in @hold
 */
static void parse_error_body(struct smb_framer *f)
{
	const uint8_t *h = f->hold;

	if (get_le32(h + SMB2_HDR_STATUS) == SMB2_STATUS_PENDING &&
	    get_le32(h + SMB2_HDR_FLAGS) & SMB2_FLAG_ASYNC) {
		/* Samba answers slow READs with one of these first: the
		 * large final response still follows. */
		counter_add(&f->st->interim, 1);
		f->keep_lead = true;
	} else
		counter_add(&f->st->read_errors, 1);
	plan_rest_as_other(f);
}

/**
 * plan_data() - check a READ or WRITE data span, then plan to skip it
 * @f:		the framer, with the message's fixed body in @hold
 * @off:	DataOffset, from the start of the SMB2 header
 * @len:	data length
 * @min_off:	where the fixed body ends: data may not start before it
 * @cls:	SMB_CLASS_READ or SMB_CLASS_WRITE
 *
 * The span must lie past the fixed body and inside the message; the
 * subtraction form of the second check cannot overflow.
 *
 * Return: SMB_WHY_NONE, or what is wrong with the frame.
 */
static enum smb_opaque_why plan_data(struct smb_framer *f, uint32_t off,
				     uint32_t len, uint32_t min_off,
				     enum smb_class cls)
{
	static const enum smb_opaque_why inside[] = {
		[SMB_CLASS_READ] = SMB_WHY_READ_INSIDE_HDR,
		[SMB_CLASS_WRITE] = SMB_WHY_WRITE_INSIDE_HDR,
	};
	static const enum smb_opaque_why past[] = {
		[SMB_CLASS_READ] = SMB_WHY_READ_PAST_END,
		[SMB_CLASS_WRITE] = SMB_WHY_WRITE_PAST_END,
	};
	uint32_t room = f->elem_end - f->elem_start;

	if (len && off < min_off)
		return inside[cls];
	if (len > room || off > room - len)
		return past[cls];
	plan_skip(f, off, len, cls);
	return SMB_WHY_NONE;
}

/**
 * parse_read_response() - header and first body fields of a READ response
 * @f:	the framer
 *
 * The data's position comes from DataOffset, never an assumed 80: Samba
 * sends 88 at times.
 *
 * Return: SMB_WHY_NONE, or what is wrong with the frame.
 */
static enum smb_opaque_why parse_read_response(struct smb_framer *f)
{
	const uint8_t *h = f->hold;
	uint16_t ss = get_le16(h + SMB2_BODY);
	uint32_t len, off;
	enum smb_opaque_why err;

	if (ss == SMB2_ERROR_BODY_SIZE) {
		parse_error_body(f);
		return SMB_WHY_NONE;
	}
	if (ss != SMB2_READ_RSP_BODY_SIZE)
		return SMB_WHY_READ_STRUCT_SIZE;
	off = h[SMB2_READ_RSP_DATA_OFFSET];
	len = get_le32(h + SMB2_READ_RSP_DATA_LENGTH);
	err = plan_data(f, off, len, SMB2_READ_RSP_DATA, SMB_CLASS_READ);
	if (err == SMB_WHY_NONE) {
		f->facts.reads += len != 0;
		f->facts.read_bytes += len;
	}
	return err;
}

/**
 * parse_write_request() - header and first body fields of a WRITE request
 * @f:	the framer
 *
 * Return: SMB_WHY_NONE, or what is wrong with the frame.
 */
static enum smb_opaque_why parse_write_request(struct smb_framer *f)
{
	const uint8_t *h = f->hold;
	uint32_t len, off;
	enum smb_opaque_why err;

	if (get_le16(h + SMB2_BODY) != SMB2_WRITE_REQ_BODY_SIZE)
		return SMB_WHY_WRITE_STRUCT_SIZE;
	off = get_le16(h + SMB2_WRITE_REQ_DATA_OFFSET);
	len = get_le32(h + SMB2_WRITE_REQ_LENGTH);
	err = plan_data(f, off, len, SMB2_WRITE_REQ_DATA, SMB_CLASS_WRITE);
	if (err == SMB_WHY_NONE) {
		f->facts.writes += len != 0;
		f->facts.write_bytes += len;
	}
	return err;
}

/**
 * parse_negotiate_response() - note the dialect and the negotiated sizes
 * @f:	the framer
 */
static void parse_negotiate_response(struct smb_framer *f)
{
	const uint8_t *h = f->hold;

	if (f->held >= SMB2_NEG_RSP_PARSED &&
	    get_le16(h + SMB2_BODY) == SMB2_NEG_RSP_BODY_SIZE) {
		f->facts.dialect = get_le16(h + SMB2_NEG_RSP_DIALECT);
		f->facts.max_transact = get_le32(h + SMB2_NEG_RSP_MAX_TRANSACT);
		f->facts.max_read = get_le32(h + SMB2_NEG_RSP_MAX_READ);
		f->facts.max_write = get_le32(h + SMB2_NEG_RSP_MAX_WRITE);
		if (get_le32(h + SMB2_NEG_RSP_CAPABILITIES) &
		    SMB2_GLOBAL_CAP_MULTI_CHANNEL) {
			f->facts.multichannel = true;
			counter_add(&f->st->multichannel, 1);
		}
	}
	plan_rest_as_other(f);
}

/**
 * anon_note() - a SESSION_SETUP request asked for an anonymous login
 * @l:	the connection's ledger
 * @id:	its MessageId
 */
static void anon_note(struct smb_anon_ledger *l, uint64_t id)
{
	if (l->n == SMB_ANON_PENDING) {
		l->blind = true;
		return;
	}
	l->ids[l->n++] = id;
}

/**
 * anon_answered() - the final response to a SESSION_SETUP request came
 * @l:	the connection's ledger
 * @id:	the response's MessageId
 *
 * Return: true if the request was an anonymous login, which is then
 * forgotten: a later login on the connection, by another request, is
 * judged by its own.
 */
static bool anon_answered(struct smb_anon_ledger *l, uint64_t id)
{
	for (uint32_t i = 0; i < l->n; i++) {
		if (l->ids[i] != id)
			continue;
		l->ids[i] = l->ids[--l->n];
		l->ids[l->n] = 0;
		return true;
	}
	return false;
}

/**
 * parse_session_setup_request() - note an anonymous NTLMSSP login
 * @f:	the framer, holding the fixed body and the start of the security
 *	buffer (as much of it as the message has, up to
 *	SMB2_SESS_REQ_PARSED)
 *
 * The buffer's bytes are read where they are held, by smb_login_blob()
 * and the view (which reads the names as the rest passes), and then
 * wiped: the observer (and so a trace) is told of the message's fixed
 * body only, and a handover from here on carries none of them.
 */
static void parse_session_setup_request(struct smb_framer *f)
{
	const uint8_t *h = f->hold;
	uint32_t off, len, end, have;
	enum smb_login kind = SMB_LOGIN_OTHER;
	struct smb_who *w;

	if (f->held >= SMB2_SESS_REQ_FIXED &&
	    get_le16(h + SMB2_BODY) == SMB2_SESS_REQ_BODY_SIZE) {
		off = get_le16(h + SMB2_SESS_REQ_SEC_OFFSET);
		len = get_le16(h + SMB2_SESS_REQ_SEC_LENGTH);
		end = off + len;
		/* A buffer elsewhere is one Samba refuses; another server
		 * says anonymous in SessionFlags. */
		if (off >= SMB2_SESS_REQ_FIXED && off < f->held) {
			have = (end < f->held ? end : f->held) - off;
			kind = smb_login_blob(h + off, have, end <= f->held);
		}
	}
	if (kind == SMB_LOGIN_ANONYMOUS || kind == SMB_LOGIN_HIDDEN)
		anon_note(ledger_of(f), get_le64(h + SMB2_HDR_MESSAGE_ID));
	if ((w = who_of(f, true)))
		f->tap = smb_who_session_request(w, h, f->held,
						 f->elem_end - f->elem_start);
	if (f->held > SMB2_SESS_REQ_FIXED) {
		memset(f->hold + SMB2_SESS_REQ_FIXED, 0,
		       f->held - SMB2_SESS_REQ_FIXED);
		f->held = SMB2_SESS_REQ_FIXED;
	}
	plan_rest_as_other(f);
}

/**
 * parse_session_setup_response() - see whether the server let a user in
 * @f:	the framer
 *
 * Sent in clear, or signed, even when the session then encrypts. Only a
 * success that is neither a guest nor a null (anonymous) session counts:
 * Samba grants those to anyone, and they must stay under the pre-auth
 * caps. Samba marks neither an anonymous NTLMSSP login (its SessionFlags
 * are 0), so its request tells (the ledger, where the client's framer
 * noted it); a response to a request that was not read (@blind) is no
 * login either. Such a session has no key, too: under 3.1.1, where the
 * final response of a keyed session is always signed, an unsigned one is
 * not a login. A response too short for its SessionFlags does not count.
 * An interim response (STATUS_PENDING) leaves its request pending.
 */
static void parse_session_setup_response(struct smb_framer *f)
{
	const uint8_t *h = f->hold;
	struct smb_anon_ledger *l = ledger_of(f);
	uint32_t flags = get_le32(h + SMB2_HDR_FLAGS),
		 status = get_le32(h + SMB2_HDR_STATUS);
	bool keyed =
		flags & SMB2_FLAG_SIGNED || f->facts.dialect < SMB2_DIALECT_311;
	bool anon = false;

	if (!(status == SMB2_STATUS_PENDING && flags & SMB2_FLAG_ASYNC))
		anon = anon_answered(l, get_le64(h + SMB2_HDR_MESSAGE_ID));
	if (f->held >= SMB2_SESS_RSP_PARSED && status == SMB2_STATUS_SUCCESS &&
	    keyed && !anon && !l->blind &&
	    !(get_le16(h + SMB2_SESS_RSP_FLAGS) &
	      (SMB2_SESSION_FLAG_IS_GUEST | SMB2_SESSION_FLAG_IS_NULL)))
		f->facts.session_ok = true;
	plan_rest_as_other(f);
}

/**
 * parse_tree_connect_request() - the view reads the share's name
 * @f:	the framer, holding the fixed body (as much as the message has)
 */
static void parse_tree_connect_request(struct smb_framer *f)
{
	struct smb_who *w = who_of(f, false);

	if (w)
		f->tap = smb_who_tree_request(w, f->hold, f->held,
					      f->elem_end - f->elem_start);
	plan_rest_as_other(f);
}

/**
 * parse_ioctl_response() - note a server that lists its interfaces
 * @f:	the framer
 *
 * A successful FSCTL_QUERY_NETWORK_INTERFACE_INFO response tells the
 * client the server's own addresses, which it may then connect to
 * directly. Nothing else of an IOCTL response matters here.
 */
static void parse_ioctl_response(struct smb_framer *f)
{
	const uint8_t *h = f->hold;

	if (f->held >= SMB2_IOCTL_RSP_PARSED &&
	    get_le16(h + SMB2_BODY) == SMB2_IOCTL_RSP_BODY_SIZE &&
	    get_le32(h + SMB2_IOCTL_RSP_CTL_CODE) ==
		    FSCTL_QUERY_NETWORK_INTERFACE_INFO) {
		f->facts.interface_list = true;
		counter_add(&f->st->interface_lists, 1);
	}
	plan_rest_as_other(f);
}

/**
 * parse_body() - the body fields a message's parse step wanted are in
 * @f:	the framer
 *
 * Return: SMB_WHY_NONE, or what is wrong with the frame.
 */
static enum smb_opaque_why parse_body(struct smb_framer *f)
{
	const uint8_t *h = f->hold;

	switch (get_le16(h + SMB2_HDR_COMMAND)) {
	case SMB2_READ:
		return parse_read_response(f);
	case SMB2_WRITE:
		return parse_write_request(f);
	case SMB2_IOCTL:
		parse_ioctl_response(f);
		return SMB_WHY_NONE;
	case SMB2_TREE_CONNECT:
		parse_tree_connect_request(f);
		return SMB_WHY_NONE;
	case SMB2_SESSION_SETUP:
		if (get_le32(h + SMB2_HDR_FLAGS) & SMB2_FLAG_RESPONSE)
			parse_session_setup_response(f);
		else
			parse_session_setup_request(f);
		return SMB_WHY_NONE;
	default: /* want_body() asks for more only for these six */
		parse_negotiate_response(f);
		return SMB_WHY_NONE;
	}
}

/**
 * parse_step() - @hold has the @want bytes the current step waited for
 * @f:	the framer
 */
static void parse_step(struct smb_framer *f)
{
	enum smb_opaque_why err = SMB_WHY_NONE;

	if (f->state == FR_PREFIX)
		err = parse_prefix(f);
	else if (f->held == 4)
		err = parse_protocol_id(f);
	else if (get_le32(f->hold) == SMB1_MAGIC)
		parse_smb1_header(f);
	else if (get_le32(f->hold) == SMB_TRANSFORM_MAGIC)
		parse_transform(f);
	else if (f->held == SMB2_HDR_LEN)
		err = parse_header(f);
	else
		err = parse_body(f);
	if (err != SMB_WHY_NONE)
		go_opaque(f, err);
}

/**
 * skip_done() - the element's spans are all passed: what comes next
 * @f:	the framer, at @elem_end
 */
static void skip_done(struct smb_framer *f)
{
	f->tap = false;
	if (f->elem_end == f->frame_len) {
		if (!f->keep_lead)
			f->lead = 0;
		next_frame(f);
	} else if (f->frame_len - f->elem_end < SMB2_HDR_LEN)
		go_opaque(f, SMB_WHY_NO_ROOM_FOR_HDR);
	else
		expect_element(f, f->elem_end);
}

/**
 * skip_some() - pass up to @n bytes of the current span
 * @f:		the framer, in FR_SKIP
 * @p:		the bytes, NULL if they went by unseen
 * @n:		bytes available
 * @spliced:	true if they went through the splice pump
 *
 * Return: bytes passed, at most to the span's end.
 */
static size_t skip_some(struct smb_framer *f, const uint8_t *p, size_t n,
			bool spliced)
{
	struct smb_who *w;

	uint32_t end = f->pos < f->pay_start ? f->pay_start
		       : f->pos < f->pay_end ? f->pay_end
					     : f->elem_end;
	bool payload = f->pos >= f->pay_start && f->pos < f->pay_end;
	size_t k = end - f->pos < n ? end - f->pos : n;

	if (payload) {
		if (spliced)
			counter_add(&f->st->payload_spliced[f->pay_class], k);
		else
			counter_add(&f->st->payload_copied[f->pay_class], k);
	}
	if (f->tap && p && (w = who_of(f, false)))
		smb_who_bytes(w, f->pos - f->elem_start, p, (uint32_t)k);
	f->pos += (uint32_t)k;
	if (f->pos == f->elem_end)
		skip_done(f);
	return k;
}

/**
 * collect() - copy bytes into @hold toward the current parse step
 * @f:	the framer, in FR_PREFIX or FR_HEADER
 * @p:	bytes
 * @n:	how many
 *
 * Return: bytes taken.
 */
static size_t collect(struct smb_framer *f, const uint8_t *p, size_t n)
{
	size_t k = f->want - f->held < n ? f->want - f->held : n;

	memcpy(f->hold + f->held, p, k);
	f->held += (uint32_t)k;
	if (f->state == FR_HEADER)
		f->pos += (uint32_t)k;
	if (f->held == f->want)
		parse_step(f);
	/* A message the parse step consumed whole (nothing after its fixed
	 * part) is done now, not when the next byte comes: at a frame's end
	 * the framer must say so, or a FIN there would look like a cut. */
	if (f->state == FR_SKIP && f->pos == f->elem_end)
		skip_done(f);
	return k;
}

/**
 * smb_framer_feed() - walk bytes that went through the copy buffer
 * @f:	the framer
 * @p:	the bytes, in stream order
 * @n:	how many; any split is fine
 */
void smb_framer_feed(struct smb_framer *f, const uint8_t *p, size_t n)
{
	size_t done = 0;

	while (done < n && f->state != FR_OPAQUE) {
		if (f->state == FR_SKIP)
			done += skip_some(f, p + done, n - done, false);
		else
			done += collect(f, p + done, n - done);
	}
}

/**
 * smb_framer_advance() - account for bytes the splice pump moved
 * @f:	the framer
 * @n:	bytes, at most smb_framer_splice_span(), or smb_framer_skip_span()
 *	for bytes that were never seen
 */
void smb_framer_advance(struct smb_framer *f, size_t n)
{
	while (n && f->state == FR_SKIP)
		n -= skip_some(f, NULL, n, true);
}

/**
 * smb_command_name() - an SMB2 command as a metrics label
 * @cmd:	command code; SMB2_NCOMMANDS and above are "unknown"
 *
 * Return: lower-case name.
 */
const char *smb_command_name(unsigned cmd)
{
	static const char *const names[SMB2_NCOMMANDS + 1] = {
		"negotiate",
		"session_setup",
		"logoff",
		"tree_connect",
		"tree_disconnect",
		"create",
		"close",
		"flush",
		"read",
		"write",
		"lock",
		"ioctl",
		"cancel",
		"echo",
		"query_directory",
		"change_notify",
		"query_info",
		"set_info",
		"oplock_break",
		"unknown",
	};

	return names[cmd < SMB2_NCOMMANDS ? cmd : SMB2_NCOMMANDS];
}

/**
 * smb_dialect_text() - a DialectRevision as "3.1.1", "2.1", "none"
 * @dialect:	the revision, 0 if no NEGOTIATE response was seen
 * @out:	buffer
 * @outlen:	its size
 */
void smb_dialect_text(uint16_t dialect, char *out, size_t outlen)
{
	unsigned major = dialect >> 8, minor = dialect >> 4 & 0xf,
		 patch = dialect & 0xf;

	if (!dialect)
		snprintf(out, outlen, "none");
	else if (dialect == 0x02ff)
		snprintf(out, outlen, "2.x");
	else if (patch)
		snprintf(out, outlen, "%u.%u.%u", major, minor, patch);
	else
		snprintf(out, outlen, "%u.%u", major, minor);
}

/* The longest frame a transport prefix can state: 24 bits of length. */
#define FRAME_LEN_MAX 0xffffffu

/**
 * smb_framer_save() - write a framer's state out, for a live handover
 * @f:	the framer, between two calls that feed or advance it
 * @s:	filled whole; the bytes of @s->hold past @s->held are zero
 *
 * @why becomes its index in smb_opaque_text[]: found by its address,
 * since go_opaque() sets nothing else. A handover is rare and the table
 * short; carrying the index beside the text would be a second truth.
 */
void smb_framer_save(const struct smb_framer *f, struct smb_framer_saved *s)
{
	memset(s, 0, sizeof(*s));
	s->frame_off = f->frame_off;
	s->reads = f->facts.reads;
	s->read_bytes = f->facts.read_bytes;
	s->writes = f->facts.writes;
	s->write_bytes = f->facts.write_bytes;
	s->held = f->held;
	s->want = f->want;
	s->frame_len = f->frame_len;
	s->pos = f->pos;
	s->elem_start = f->elem_start;
	s->elem_end = f->elem_end;
	s->pay_start = f->pay_start;
	s->pay_end = f->pay_end;
	s->lead = f->lead;
	s->max_read = f->facts.max_read;
	s->max_write = f->facts.max_write;
	s->max_transact = f->facts.max_transact;
	s->state = (uint8_t)f->state;
	s->pay_class = (uint8_t)f->pay_class;
	for (unsigned i = SMB_WHY_NONE + 1; f->why && i < SMB_WHY_COUNT; i++)
		if (f->why == smb_opaque_text[i])
			s->why = (uint8_t)i;
	s->dialect = f->facts.dialect;
	s->pay_splice = f->pay_splice;
	s->keep_lead = f->keep_lead;
	s->signed_seen = f->facts.signed_seen;
	s->encrypted_seen = f->facts.encrypted_seen;
	s->multichannel = f->facts.multichannel;
	s->interface_list = f->facts.interface_list;
	s->session_ok = f->facts.session_ok;
	s->anon_blind = f->anon.blind;
	s->anon_n = f->anon.n;
	memcpy(s->anon_ids, f->anon.ids, f->anon.n * sizeof(s->anon_ids[0]));
	memcpy(s->hold, f->hold, f->held <= SMB_HOLD_MAX ? f->held : 0);
}

/**
 * saved_header_ok() - is a saved FR_HEADER state one the framer can reach
 * @s:	the saved state, its offsets already checked to lie in the frame
 *
 * parse_step() picks its step from @held and the protocol id held, and
 * the step reads the header it assumes is there: so what @want waits for
 * must be what the held bytes asked for, as parse_protocol_id(),
 * parse_smb1_header() and parse_header() would have set it.
 *
 * Return: true if it is.
 */
static bool saved_header_ok(const struct smb_framer_saved *s)
{
	uint32_t len = s->elem_end - s->elem_start, magic, next, flags;

	if (s->held >= s->want || s->pos - s->elem_start != s->held ||
	    s->want > len)
		return false;
	if (s->want == 4) /* expect_element(): the message runs to the end */
		return s->elem_end == s->frame_len;
	if (s->held < 4)
		return false;
	magic = get_le32(s->hold);
	if (magic == SMB_TRANSFORM_MAGIC)
		return s->elem_start == 0 && s->elem_end == s->frame_len &&
		       s->want == SMB2_TRANSFORM_HDR_LEN;
	if (magic == SMB1_MAGIC)
		return s->elem_start == 0 && s->elem_end == s->frame_len &&
		       (s->want == SMB1_HDR_PARSED ||
			(s->want == SMB1_SS_RSP_PARSED &&
			 s->held >= SMB1_HDR_PARSED));
	if (magic != SMB2_MAGIC)
		return false;
	if (s->want == SMB2_HDR_LEN)
		return s->elem_end == s->frame_len;
	if (s->held < SMB2_HDR_LEN ||
	    get_le16(s->hold + SMB2_HDR_STRUCT_SIZE) != SMB2_HDR_LEN)
		return false;
	next = get_le32(s->hold + SMB2_HDR_NEXT);
	if (next ? next != len || next % 8 || s->elem_end >= s->frame_len
		 : s->elem_end != s->frame_len)
		return false;
	flags = get_le32(s->hold + SMB2_HDR_FLAGS);
	return s->want > SMB2_HDR_LEN &&
	       s->want == want_body(get_le16(s->hold + SMB2_HDR_COMMAND),
				    flags & SMB2_FLAG_RESPONSE, len);
}

/**
 * saved_ok() - may a saved state be restored
 * @s:	the saved state, from a handover image (input, not trusted)
 *
 * What the framer's code relies on, checked before anything is used:
 * @hold is never written past its end (collect() takes @want - @held),
 * counters are indexed by a class in range, offsets are ordered inside
 * the frame (skip_some() and the span helpers subtract them), and each
 * state's fields are ones that state can have.
 *
 * Return: true if it may.
 */
static bool saved_ok(const struct smb_framer_saved *s)
{
	const uint8_t flags[] = { s->pay_splice,   s->keep_lead,
				  s->signed_seen,  s->encrypted_seen,
				  s->multichannel, s->interface_list,
				  s->session_ok,   s->anon_blind };

	for (size_t i = 0; i < sizeof(flags); i++)
		if (flags[i] > 1)
			return false;
	if (s->anon_n > SMB_ANON_PENDING)
		return false;
	for (size_t i = s->anon_n; i < SMB_ANON_PENDING; i++)
		if (s->anon_ids[i])
			return false;
	for (size_t i = s->held; i < SMB_HOLD_MAX; i++)
		if (s->hold[i])
			return false;
	if (s->held > s->want || s->want > SMB_HOLD_MAX ||
	    s->pay_class >= SMB_NCLASSES || s->frame_len > FRAME_LEN_MAX ||
	    s->lead > SMB_PREFIX_LEN + FRAME_LEN_MAX ||
	    (s->state == FR_OPAQUE) != (s->why != SMB_WHY_NONE) ||
	    s->why >= SMB_WHY_COUNT)
		return false;
	switch (s->state) {
	case FR_PREFIX:
		/* The rest is the last frame's, and unused till parse_prefix()
		 * sets it anew. */
		return s->want == SMB_PREFIX_LEN && s->held < s->want;
	case FR_HEADER:
		return s->elem_start < s->elem_end &&
		       s->elem_end <= s->frame_len && saved_header_ok(s);
	case FR_SKIP:
		return s->elem_start <= s->pos && s->pos < s->elem_end &&
		       s->elem_end <= s->frame_len &&
		       s->elem_start <= s->pay_start &&
		       s->pay_start <= s->pay_end &&
		       s->pay_end <= s->elem_end &&
		       (!s->pay_splice || s->pay_start < s->pay_end);
	case FR_OPAQUE:
		return true; /* nothing is parsed or spliced any more */
	default:
		return false;
	}
}

/**
 * smb_framer_restore() - continue a framer where another process left it
 * @f:	a framer set up by smb_framer_init() (and smb_framer_observe()):
 *	its thresholds, counters and observer stay
 * @s:	what smb_framer_save() wrote in the old process
 *
 * The payload already planned keeps the decision the old process made,
 * under its thresholds: the pump may be in the middle of splicing it.
 * Messages from the next one on are judged by @f's.
 *
 * The pairing (smb_framer_pair()) is @f's own, like its pointers.
 *
 * Return: 0, the framer going on exactly as the old one would have; -1
 * if @s is not a state a framer can be in, @f left untouched.
 */
int smb_framer_restore(struct smb_framer *f, const struct smb_framer_saved *s)
{
	if (!saved_ok(s))
		return -1;
	f->state = (enum smb_framer_state)s->state;
	memcpy(f->hold, s->hold, sizeof(f->hold));
	f->held = s->held;
	f->want = s->want;
	f->frame_len = s->frame_len;
	f->pos = s->pos;
	f->elem_start = s->elem_start;
	f->elem_end = s->elem_end;
	f->pay_start = s->pay_start;
	f->pay_end = s->pay_end;
	f->pay_class = (enum smb_class)s->pay_class;
	f->pay_splice = s->pay_splice;
	f->keep_lead = s->keep_lead;
	f->lead = s->lead;
	f->why = smb_opaque_text[s->why];
	f->facts = (struct smb_stream_facts){
		.reads = s->reads,
		.read_bytes = s->read_bytes,
		.writes = s->writes,
		.write_bytes = s->write_bytes,
		.max_read = s->max_read,
		.max_write = s->max_write,
		.max_transact = s->max_transact,
		.dialect = s->dialect,
		.signed_seen = s->signed_seen,
		.encrypted_seen = s->encrypted_seen,
		.multichannel = s->multichannel,
		.interface_list = s->interface_list,
		.session_ok = s->session_ok,
	};
	f->anon = (struct smb_anon_ledger){
		.n = s->anon_n,
		.blind = s->anon_blind,
	};
	memcpy(f->anon.ids, s->anon_ids, sizeof(f->anon.ids));
	f->frame_off = s->frame_off;
	return 0;
}
