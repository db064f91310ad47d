// SPDX-License-Identifier: GPL-2.0-or-later
/* login.c - is a SESSION_SETUP request an anonymous NTLMSSP login
 *
 * Theory of operation: Samba grants a null session to anyone who asks
 * (smbclient -N), and before SMB 3.1.1 its successful response says
 * nothing of it: SessionFlags are 0 and nothing need be signed. Only the
 * client's request tells: its NTLMSSP AUTHENTICATE names no user and
 * carries no NT response (MS-NLMP 3.2.5.1.2). So the framer hands this
 * module the first SMB2_SESS_REQ_WINDOW bytes of each SESSION_SETUP
 * request's security buffer, and it says what they ask for.
 *
 * The AUTHENTICATE comes raw, or as the responseToken of an SPNEGO
 * negTokenResp. Clients put at most a negState and NTLMSSP's OID as
 * supportedMech before that token (20 bytes or so), so its fixed fields
 * are inside the window. Samba takes any supportedMech, though, however
 * long (a 128-byte one let an anonymous client in), and its ASN.1
 * reader takes the fields in any order: a client can push the token out
 * of sight. A negTokenResp whose token the window cannot reach is
 * SMB_LOGIN_HIDDEN, and the framer treats it as anonymous. Only lengths
 * are read here, never a name or a response: the bytes are the framer's
 * @hold, which it wipes once this returns. Where the AUTHENTICATE starts
 * (smb_login_find()) is what the connection's view (who.c) needs to find
 * its user and domain names, which it reads as they pass.
 */
#include "config.h"

#include <string.h>

#include "smb/login.h"
#include "smb/wire.h"

/**
 * der_len() - read a DER length
 * @p:		the window
 * @n:		its length
 * @at:		where the length starts; moved past it
 * @len:	set to the length read
 *
 * Return: true if the length's bytes are all inside the window; a
 * length in more than DER_LEN_MAX_BYTES bytes (or the indefinite form,
 * which DER forbids) is read as one no window can hold.
 */
static bool der_len(const uint8_t *p, uint32_t n, uint32_t *at, uint32_t *len)
{
	uint32_t i = *at, k;

	if (i >= n)
		return false;
	if (!(p[i] & DER_LEN_LONG)) {
		*len = p[i];
		*at = i + 1;
		return true;
	}
	k = p[i] & ~DER_LEN_LONG & 0xff;
	if (k == 0 || k > DER_LEN_MAX_BYTES) {
		*len = UINT32_MAX;
		*at = i + 1;
		return true;
	}
	if (n - i - 1 < k)
		return false;
	*len = 0;
	for (uint32_t j = 1; j <= k; j++)
		*len = *len << 8 | p[i + j];
	*at = i + 1 + k;
	return true;
}

/**
 * ntlmssp_auth() - judge an NTLMSSP message at the window's @at
 * @p:		the window
 * @n:		its length
 * @at:		where the message starts
 * @whole:	the window holds the whole security buffer
 * @found:	set to @at when it is an AUTHENTICATE
 *
 * Return: SMB_LOGIN_NAMED or SMB_LOGIN_ANONYMOUS for an AUTHENTICATE,
 * SMB_LOGIN_OTHER for any other message or mechanism; for fixed fields
 * the window cuts off, SMB_LOGIN_HIDDEN (SMB_LOGIN_OTHER if the buffer
 * ends there: the server refuses a message that short).
 */
static enum smb_login ntlmssp_auth(const uint8_t *p, uint32_t n, uint32_t at,
				   bool whole, uint32_t *found)
{
	const uint8_t *m = p + at;

	if (at > n || n - at < NTLMSSP_AUTH_PARSED) {
		/* Past the window, a signature cannot be checked either. */
		return whole ? SMB_LOGIN_OTHER : SMB_LOGIN_HIDDEN;
	}
	if (memcmp(m, NTLMSSP_SIGNATURE, NTLMSSP_SIGNATURE_LEN) ||
	    get_le32(m + NTLMSSP_MESSAGE_TYPE) != NTLMSSP_AUTHENTICATE)
		return SMB_LOGIN_OTHER;
	*found = at;
	if (get_le16(m + NTLMSSP_AUTH_NT_LEN) == 0 &&
	    get_le16(m + NTLMSSP_AUTH_LM_LEN) <= NTLMSSP_ANON_LM_MAX)
		return SMB_LOGIN_ANONYMOUS;
	return SMB_LOGIN_NAMED;
}

/**
 * token_then() - judge a responseToken, and what follows it
 * @p:		the window
 * @n:		its length
 * @at:		where the token's OCTET STRING starts
 * @rest:	bytes of the SEQUENCE from @at to its end
 * @whole:	the window holds the whole security buffer
 * @found:	as ntlmssp_auth()
 *
 * Samba's reader takes the last responseToken of a negTokenResp: a named
 * one followed by more than a mechListMIC may be followed by an
 * anonymous one, which is then what the server judges.
 *
 * Return: as ntlmssp_auth(); SMB_LOGIN_HIDDEN for a named token with
 * more than SPNEGO_AFTER_TOKEN_MAX bytes after it.
 */
static enum smb_login token_then(const uint8_t *p, uint32_t n, uint32_t at,
				 uint32_t rest, bool whole, uint32_t *found)
{
	uint32_t start = at, len;
	enum smb_login judged;

	if (at >= n)
		return whole ? SMB_LOGIN_OTHER : SMB_LOGIN_HIDDEN;
	if (p[at++] != DER_OCTET_STRING)
		return SMB_LOGIN_OTHER;
	if (!der_len(p, n, &at, &len))
		return whole ? SMB_LOGIN_OTHER : SMB_LOGIN_HIDDEN;
	judged = ntlmssp_auth(p, n, at, whole, found);
	if (judged == SMB_LOGIN_NAMED &&
	    (len > rest || rest - len - (at - start) > SPNEGO_AFTER_TOKEN_MAX))
		return SMB_LOGIN_HIDDEN;
	return judged;
}

/**
 * spnego_token() - find a negTokenResp's responseToken in the window
 * @p:		the window, starting with SPNEGO_NEG_TOKEN_RESP
 * @n:		its length
 * @whole:	the window holds the whole security buffer
 * @found:	as ntlmssp_auth()
 *
 * Walks the SEQUENCE's fields, skipping any before [2], however they are
 * ordered: each step moves forward by at least two bytes, so at most
 * @n / 2 steps are taken.
 *
 * Return: what the token asks for; SMB_LOGIN_HIDDEN when a field runs
 * past the window (SMB_LOGIN_OTHER when the buffer itself ends there).
 */
static enum smb_login spnego_token(const uint8_t *p, uint32_t n, bool whole,
				   uint32_t *found)
{
	enum smb_login cut = whole ? SMB_LOGIN_OTHER : SMB_LOGIN_HIDDEN;
	uint32_t at = 1, len, tag, end;

	if (!der_len(p, n, &at, &len) || at >= n)
		return cut;
	if (p[at++] != DER_SEQUENCE)
		return SMB_LOGIN_OTHER;
	if (!der_len(p, n, &at, &len))
		return cut;
	end = len > UINT32_MAX - at ? UINT32_MAX : at + len;
	while (at < n) {
		tag = p[at++];
		if (!der_len(p, n, &at, &len))
			return cut;
		if (tag == SPNEGO_RESPONSE_TOKEN)
			return token_then(p, n, at, end > at ? end - at : 0,
					  whole, found);
		if (len > n - at)
			return cut;
		at += len;
	}
	return cut;
}

/**
 * smb_login_find() - what a SESSION_SETUP request's security buffer asks,
 *		      and where its NTLMSSP AUTHENTICATE starts
 * @p:		its first bytes
 * @n:		how many: at most SMB2_SESS_REQ_WINDOW
 * @whole:	they are the whole buffer
 * @found:	set to the AUTHENTICATE's offset in @p, if the answer is
 *		SMB_LOGIN_NAMED or SMB_LOGIN_ANONYMOUS from one; else
 *		UINT32_MAX
 *
 * Return: see enum smb_login.
 */
enum smb_login smb_login_find(const uint8_t *p, uint32_t n, bool whole,
			      uint32_t *found)
{
	enum smb_login judged = SMB_LOGIN_OTHER;

	*found = UINT32_MAX;
	if (n >= NTLMSSP_SIGNATURE_LEN &&
	    !memcmp(p, NTLMSSP_SIGNATURE, NTLMSSP_SIGNATURE_LEN))
		judged = ntlmssp_auth(p, n, 0, whole, found);
	else if (n && p[0] == SPNEGO_NEG_TOKEN_RESP)
		judged = spnego_token(p, n, whole, found);
	if (judged != SMB_LOGIN_NAMED && judged != SMB_LOGIN_ANONYMOUS)
		*found = UINT32_MAX;
	return judged;
}

/**
 * smb_login_blob() - what a SESSION_SETUP request's security buffer asks
 * @p:		its first bytes
 * @n:		how many: at most SMB2_SESS_REQ_WINDOW
 * @whole:	they are the whole buffer
 *
 * Return: see enum smb_login.
 */
enum smb_login smb_login_blob(const uint8_t *p, uint32_t n, bool whole)
{
	uint32_t found;

	return smb_login_find(p, n, whole, &found);
}
