// SPDX-License-Identifier: GPL-2.0-or-later
/* probe.c - the bytes of a health check: one SMB2 NEGOTIATE and its answer
 *
 * Theory of operation: a backend that accepts a TCP connection may still
 * be no working SMB server (smbd stuck on a lock, a port forward to
 * nothing). The health check (proxy/net/health.c) therefore sends what a
 * client's first frame is, an SMB2 NEGOTIATE request, and calls the
 * backend up only when the answer's header says it is the NEGOTIATE
 * response and that it succeeded. The request offers SMB 2.0.2 to 3.0.2,
 * none of which takes negotiate contexts, so that it is short and fixed;
 * any SMB2 server picks one of them. The answer's body beyond its first
 * field is not read: the header is what says the server works, and a
 * check that needs no more than 70 bytes needs no buffer to speak of.
 *
 * No sockets here: the caller sends the request and feeds what it reads.
 */
#include "config.h"

#include <string.h>

#include "smb/probe.h"
#include "smb/wire.h"

/* The dialects offered, in the order a client lists them. */
static const uint16_t probe_dialects[] = { 0x0202, 0x0210, 0x0300, 0x0302 };

/* A fixed client GUID: the server only records it, and every probe is
 * the same client coming back, which is what it is. */
static const uint8_t probe_guid[16] = "smbsplice-check";

/**
 * put_le16() - store a little-endian u16
 * @p:	where
 * @v:	the value
 */
static void put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

/**
 * put_le32() - store a little-endian u32
 * @p:	where
 * @v:	the value
 */
static void put_le32(uint8_t *p, uint32_t v)
{
	put_le16(p, (uint16_t)v);
	put_le16(p + 2, (uint16_t)(v >> 16));
}

/**
 * smb_probe_request() - write the probe's NEGOTIATE request
 * @buf:	where
 * @len:	its size, at least SMB_PROBE_REQ_LEN
 *
 * Return: the request's length, or 0 if @buf is too small.
 */
size_t smb_probe_request(uint8_t *buf, size_t len)
{
	uint8_t *h = buf + SMB_PREFIX_LEN, *b = h + SMB2_BODY;
	size_t body = SMB_PROBE_REQ_LEN - SMB_PREFIX_LEN;

	if (len < SMB_PROBE_REQ_LEN)
		return 0;
	memset(buf, 0, SMB_PROBE_REQ_LEN);
	buf[0] = NBT_MESSAGE;
	buf[2] = (uint8_t)(body >> 8);
	buf[3] = (uint8_t)body;
	put_le32(h, SMB2_MAGIC);
	put_le16(h + SMB2_HDR_STRUCT_SIZE, SMB2_HDR_LEN);
	put_le16(h + SMB2_HDR_COMMAND, SMB2_NEGOTIATE);
	/* CreditRequest: one, all a NEGOTIATE needs. */
	put_le16(h + SMB2_HDR_COMMAND + 2, 1);
	put_le16(b, SMB2_NEG_REQ_BODY_SIZE);
	put_le16(b + 2, sizeof(probe_dialects) / sizeof(probe_dialects[0]));
	put_le16(b + 4, 1); /* SecurityMode: signing enabled */
	memcpy(b + 12, probe_guid, sizeof(probe_guid));
	for (size_t i = 0; i < sizeof(probe_dialects) / sizeof(*probe_dialects);
	     i++)
		put_le16(b + SMB2_NEG_REQ_BODY_SIZE + 2 * i, probe_dialects[i]);
	return SMB_PROBE_REQ_LEN;
}

/**
 * smb_probe_judge() - is this the answer of a working SMB2 server
 * @p:		the bytes read so far from the backend
 * @n:		how many
 * @why:	set to what is wrong, with SMB_PROBE_BAD
 *
 * A server that speaks first, answers with another command, an error
 * status or an SMB1 frame, or sends a frame too short for a NEGOTIATE
 * response, is no server a client can use.
 *
 * Return: SMB_PROBE_OK, SMB_PROBE_BAD, or SMB_PROBE_MORE while fewer than
 * SMB_PROBE_RSP_NEED bytes are in and nothing is wrong yet.
 */
enum smb_probe smb_probe_judge(const uint8_t *p, size_t n, const char **why)
{
	const uint8_t *h = p + SMB_PREFIX_LEN;
	uint32_t len;

	*why = "";
	if (n >= 1 && p[0] != NBT_MESSAGE) {
		*why = "the answer is not an SMB frame (transport type)";
		return SMB_PROBE_BAD;
	}
	if (n < SMB_PREFIX_LEN + 4)
		return SMB_PROBE_MORE;
	len = (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
	if (get_le32(h) != SMB2_MAGIC) {
		*why = get_le32(h) == SMB1_MAGIC
			       ? "the answer is SMB1, not SMB2"
			       : "the answer is not SMB2";
		return SMB_PROBE_BAD;
	}
	if (len < SMB2_HDR_LEN + SMB2_NEG_RSP_BODY_SIZE - 1) {
		*why = "the answer is too short for a NEGOTIATE response";
		return SMB_PROBE_BAD;
	}
	if (n < SMB_PROBE_RSP_NEED)
		return SMB_PROBE_MORE;
	if (get_le16(h + SMB2_HDR_STRUCT_SIZE) != SMB2_HDR_LEN)
		*why = "the answer's SMB2 header is malformed";
	else if (get_le16(h + SMB2_HDR_COMMAND) != SMB2_NEGOTIATE)
		*why = "the answer is not a NEGOTIATE response";
	else if (!(get_le32(h + SMB2_HDR_FLAGS) & SMB2_FLAG_RESPONSE))
		*why = "the answer is a request, not a response";
	else if (get_le32(h + SMB2_HDR_STATUS) != SMB2_STATUS_SUCCESS)
		*why = "the NEGOTIATE failed (error status)";
	else if (get_le16(h + SMB2_BODY) != SMB2_NEG_RSP_BODY_SIZE)
		*why = "the NEGOTIATE response's body is malformed";
	return **why ? SMB_PROBE_BAD : SMB_PROBE_OK;
}
