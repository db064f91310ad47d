// SPDX-License-Identifier: GPL-2.0-or-later
/* opening.c - is a client's first frame one an SMB server answers
 *
 * Theory of operation: an SMB client always speaks first, and always the
 * same way. On port 445 it sends an SMB2 NEGOTIATE request, or an SMB1
 * NEGOTIATE whose dialect list lets the server choose SMB2 (the
 * multi-protocol negotiate); on port 139 it first sends a NetBIOS session
 * request. Samba forks an smbd for every connection it accepts, so the
 * proxy asks this module about the bytes queued on a new client socket
 * before it dials the server, and dials only for one of those openings.
 *
 * The verdict waits for the whole first frame, since a client that sends
 * a header and then trickles must not get a server for it, but no frame
 * longer than SMB_OPENING_MAX is waited for: the transport prefix says
 * the length up front, so a frame promising more is refused at once.
 * Only fixed header fields are read; dialects and contexts are the
 * server's to judge. Nothing here touches a socket.
 */
#include "config.h"

#include "smb/opening.h"
#include "smb/wire.h"

/**
 * judge_netbios() - a complete frame of type NBT_SESSION_REQUEST
 * @body:	its body, after the prefix
 * @len:	its length
 * @why:	set when it is refused
 *
 * Return: SMB_OPENING_NETBIOS or SMB_OPENING_BAD.
 */
static enum smb_opening judge_netbios(const uint8_t *body, size_t len,
				      const char **why)
{
	if (len < 2 || body[0] != NBT_ENCODED_NAME_LEN) {
		*why = "NetBIOS session request without an encoded called name";
		return SMB_OPENING_BAD;
	}
	return SMB_OPENING_NETBIOS;
}

/**
 * judge_smb() - a complete Direct TCP (or NetBIOS message) frame
 * @m:		its body, after the prefix: the message
 * @len:	its length
 * @why:	set when it is refused
 *
 * Return: SMB_OPENING_SMB2, SMB_OPENING_SMB1 or SMB_OPENING_BAD.
 */
static enum smb_opening judge_smb(const uint8_t *m, size_t len,
				  const char **why)
{
	uint32_t magic = len >= 4 ? get_le32(m) : 0;

	if (magic == SMB2_MAGIC) {
		if (len < SMB2_HDR_LEN + SMB2_NEG_REQ_BODY_SIZE ||
		    get_le16(m + SMB2_HDR_STRUCT_SIZE) != SMB2_HDR_LEN ||
		    get_le16(m + SMB2_HDR_COMMAND) != SMB2_NEGOTIATE ||
		    get_le32(m + SMB2_HDR_FLAGS) & SMB2_FLAG_RESPONSE ||
		    get_le16(m + SMB2_BODY) != SMB2_NEG_REQ_BODY_SIZE) {
			*why = "first SMB2 message is not a NEGOTIATE request";
			return SMB_OPENING_BAD;
		}
		return SMB_OPENING_SMB2;
	}
	if (magic == SMB1_MAGIC) {
		if (len < SMB1_MIN_REQ ||
		    m[SMB1_HDR_COMMAND] != SMB1_COM_NEGOTIATE ||
		    m[SMB1_HDR_FLAGS] & SMB1_FLAGS_REPLY) {
			*why = "first SMB1 message is not a NEGOTIATE request";
			return SMB_OPENING_BAD;
		}
		return SMB_OPENING_SMB1;
	}
	*why = "first frame is not SMB (unknown protocol id)";
	return SMB_OPENING_BAD;
}

/**
 * smb_opening_judge() - judge the bytes a client has sent so far
 * @p:		the bytes queued, from the first
 * @n:		how many; more than SMB_OPENING_MAX are never needed
 * @need:	on SMB_OPENING_MORE, how many bytes the verdict needs: at
 *		most SMB_OPENING_MAX
 * @why:	on SMB_OPENING_BAD, what is wrong, for the log
 *
 * A session request opens only on port 139: the caller, which knows the
 * port, refuses SMB_OPENING_NETBIOS elsewhere.
 *
 * Return: the verdict; SMB_OPENING_MORE until the first frame is in.
 */
enum smb_opening smb_opening_judge(const uint8_t *p, size_t n, size_t *need,
				   const char **why)
{
	uint32_t len;

	if (n < SMB_PREFIX_LEN) {
		*need = SMB_PREFIX_LEN;
		return SMB_OPENING_MORE;
	}
	if (p[0] == NBT_SESSION_REQUEST) {
		if (p[1] & 0xfe) {
			*why = "NetBIOS frame with reserved flag bits set";
			return SMB_OPENING_BAD;
		}
		len = (uint32_t)(p[1] & 1) << 16 | (uint32_t)p[2] << 8 | p[3];
	} else if (p[0] == NBT_MESSAGE) {
		len = (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
	} else {
		*why = "first frame is not SMB (bad type byte)";
		return SMB_OPENING_BAD;
	}
	if (len > SMB_OPENING_MAX - SMB_PREFIX_LEN) {
		*why = "first frame is longer than any NEGOTIATE";
		return SMB_OPENING_BAD;
	}
	if (n < SMB_PREFIX_LEN + len) {
		*need = SMB_PREFIX_LEN + len;
		return SMB_OPENING_MORE;
	}
	if (p[0] == NBT_SESSION_REQUEST)
		return judge_netbios(p + SMB_PREFIX_LEN, len, why);
	return judge_smb(p + SMB_PREFIX_LEN, len, why);
}
