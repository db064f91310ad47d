// SPDX-License-Identifier: GPL-2.0-or-later
/* resync.c - find where a frame starts in a stream that lost its framing
 *
 * Theory of operation: when bytes of a stream are missing where the
 * framer needed to see them (a header in a lost segment, or past a
 * snaplen), or the capture began in the middle of a connection, nothing
 * says where the next frame starts. The bytes that follow are searched
 * for one: a Direct TCP prefix (a zero byte and a 24-bit length) followed
 * by either an SMB2 header whose fixed fields all hold (ProtocolId,
 * StructureSize 64, a known command, a NextCommand inside the frame and
 * 8-byte aligned) or an encryption transform header whose message size
 * accounts for the frame's length exactly and whose flags say encrypted.
 * That is 10 or more bytes with fixed or cross-checked values; file data
 * matches them by chance about once in 2^80 positions, and a false match
 * is caught soon by the framer itself, which then gives up on the stream
 * and the search starts again.
 *
 * The search may have to look across the end of one delivery into the
 * next, so the bytes at the end that might still start a frame are kept
 * (fewer than RESYNC_WINDOW of them).
 */
#include "config.h"

#include <string.h>

#include "resync.h"
#include "smb/wire.h"

/* The smallest SMB2 message: a header and a 4-byte body (ECHO). */
#define MIN_SMB2_FRAME (SMB2_HDR_LEN + 4)

/**
 * check_smb2() - does an SMB2 header plausibly start 4 bytes in
 * @b:		the prefix's first byte
 * @avail:	bytes from there
 * @len:	the prefix's length
 *
 * Return: the verdict.
 */
static enum frame_verdict check_smb2(const uint8_t *b, size_t avail,
				     uint32_t len)
{
	const uint8_t *h = b + SMB_PREFIX_LEN;
	uint32_t next;

	if (len < MIN_SMB2_FRAME)
		return FRAME_NO;
	if (avail < SMB_PREFIX_LEN + SMB2_HDR_STRUCT_SIZE + 2)
		return FRAME_MORE;
	if (get_le16(h + SMB2_HDR_STRUCT_SIZE) != SMB2_HDR_LEN)
		return FRAME_NO;
	if (avail < SMB_PREFIX_LEN + SMB2_HDR_COMMAND + 2)
		return FRAME_MORE;
	if (get_le16(h + SMB2_HDR_COMMAND) >= SMB2_NCOMMANDS)
		return FRAME_NO;
	if (avail < SMB_PREFIX_LEN + SMB2_HDR_NEXT + 4)
		return FRAME_MORE;
	next = get_le32(h + SMB2_HDR_NEXT);
	if (next && (next < SMB2_HDR_LEN || next % 8 || next >= len))
		return FRAME_NO;
	return FRAME_YES;
}

/**
 * check_transform() - does an encryption transform header start 4 bytes in
 * @b:		the prefix's first byte
 * @avail:	bytes from there
 * @len:	the prefix's length
 *
 * The ciphertext is exactly as long as the message it hides
 * (OriginalMessageSize), and Flags (or, in SMB 3.0, EncryptionAlgorithm)
 * is 1.
 *
 * Return: the verdict.
 */
static enum frame_verdict check_transform(const uint8_t *b, size_t avail,
					  uint32_t len)
{
	const uint8_t *h = b + SMB_PREFIX_LEN;

	if (len <= SMB2_TRANSFORM_HDR_LEN)
		return FRAME_NO;
	if (avail < SMB_PREFIX_LEN + 40)
		return FRAME_MORE;
	if ((uint64_t)get_le32(h + 36) + SMB2_TRANSFORM_HDR_LEN != len)
		return FRAME_NO;
	if (avail < SMB_PREFIX_LEN + 44)
		return FRAME_MORE;
	return get_le16(h + 42) == 1 ? FRAME_YES : FRAME_NO;
}

/**
 * frame_start_plausible() - does a frame plausibly start at @b
 * @b:		the candidate's first byte
 * @avail:	bytes from there that are known
 *
 * Return: FRAME_YES, FRAME_NO, or FRAME_MORE when every byte so far fits
 * but too few are known to tell.
 */
enum frame_verdict frame_start_plausible(const uint8_t *b, size_t avail)
{
	uint32_t len, magic;

	if (!avail)
		return FRAME_MORE;
	if (b[0] != NBT_MESSAGE)
		return FRAME_NO;
	if (avail < SMB_PREFIX_LEN + 4) {
		/* Reject early on what is there of the protocol id. */
		static const uint8_t smb[3] = { 'S', 'M', 'B' };

		if (avail > 4 && b[4] != 0xfe && b[4] != 0xfd)
			return FRAME_NO;
		if (avail > 5 && memcmp(b + 5, smb, avail - 5))
			return FRAME_NO;
		return FRAME_MORE;
	}
	len = (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
	magic = get_le32(b + SMB_PREFIX_LEN);
	if (magic == SMB2_MAGIC)
		return check_smb2(b, avail, len);
	if (magic == SMB_TRANSFORM_MAGIC)
		return check_transform(b, avail, len);
	return FRAME_NO;
}

/**
 * resync_reset() - forget the kept bytes: what follows does not continue
 * them (a hole, or a frame was found)
 * @r:	the search
 */
void resync_reset(struct resync *r)
{
	r->n = 0;
}

/**
 * keep_tail() - keep the bytes from @from on, which may still start a frame
 * @r:		the search
 * @p:		the new bytes
 * @n:		how many
 * @from:	where the first undecided candidate is, counted over the
 *		kept bytes and then @p; fewer than RESYNC_WINDOW bytes from
 *		there to the end, or it would have been decided
 */
static void keep_tail(struct resync *r, const uint8_t *p, size_t n, size_t from)
{
	size_t at;

	if (from < r->n) {
		memmove(r->carry, r->carry + from, r->n - from);
		r->n -= (uint32_t)from;
		memcpy(r->carry + r->n, p, n);
		r->n += (uint32_t)n;
	} else {
		at = from - r->n;
		r->n = (uint32_t)(n - at);
		memcpy(r->carry, p + at, r->n);
	}
}

/**
 * resync_find() - look for a frame start in the next bytes of a stream
 * @r:	the search
 * @p:	the bytes, following the kept ones directly
 * @n:	how many
 *
 * Return: where a frame starts, counted over the kept bytes (@r->n of
 * them, which the caller must use before resync_reset()) and then @p; or
 * -1 when none does yet, the bytes that might still start one kept.
 */
long resync_find(struct resync *r, const uint8_t *p, size_t n)
{
	uint8_t tmp[2 * RESYNC_WINDOW];
	size_t take = n < RESYNC_WINDOW ? n : RESYNC_WINDOW;
	size_t total = r->n + take, undecided = SIZE_MAX, i;
	enum frame_verdict v;
	const uint8_t *z;

	/* Candidates that start in the kept bytes. */
	memcpy(tmp, r->carry, r->n);
	memcpy(tmp + r->n, p, take);
	for (i = 0; i < r->n; i++) {
		v = frame_start_plausible(tmp + i, total - i);
		if (v == FRAME_YES)
			return (long)i;
		if (v == FRAME_MORE && undecided == SIZE_MAX)
			undecided = i;
	}
	/* Candidates in the new bytes: a frame starts with a zero byte. */
	for (i = 0; i < n && (z = memchr(p + i, 0, n - i)); i++) {
		i = (size_t)(z - p);
		v = frame_start_plausible(p + i, n - i);
		if (v == FRAME_YES)
			return (long)(r->n + i);
		if (v == FRAME_MORE) {
			if (undecided == SIZE_MAX)
				undecided = r->n + i;
			break; /* every later one has fewer bytes still */
		}
	}
	if (undecided == SIZE_MAX)
		r->n = 0;
	else
		keep_tail(r, p, n, undecided);
	return -1;
}
