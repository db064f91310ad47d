/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_WHO_H
#define SMBSPLICE_WHO_H

/* who.h - who a connection's session is and what it has open, as far as
 * the wire says it in clear (smb/who.c). */

#include <stdbool.h>
#include <stdint.h>

/* Bounds of what a view keeps: names are cut (at a character) to fit,
 * and shares past the first few are only counted. */
#define SMB_WHO_USER_MAX   64 /* bytes of UTF-8, the NUL included */
#define SMB_WHO_DOMAIN_MAX 32
#define SMB_WHO_SHARE_MAX  32
#define SMB_WHO_SHARES	   4

/* How the session's user is known. */
enum smb_who_auth {
	SMB_WHO_NONE,	   /* no session setup has succeeded (that was seen) */
	SMB_WHO_NTLMSSP,   /* user and domain as NTLMSSP AUTHENTICATE named
			    * them */
	SMB_WHO_ANONYMOUS, /* an NTLMSSP AUTHENTICATE that named no user */
	SMB_WHO_KERBEROS,  /* a Kerberos AP-REQ: the name is in the ticket,
			    * which is sealed */
	SMB_WHO_UNKNOWN,   /* its request could not be read */
	SMB_WHO_AUTH_COUNT
};

/**
 * struct smb_who_sink - one name being read as its bytes pass
 * @at:		where the name starts, from its message's start
 * @len:	its bytes on the wire
 * @got:	how many have passed so far
 * @used:	bytes of UTF-8 written out
 * @cap:	room for them, the NUL included
 * @hi:		a UTF-16 high surrogate waiting for its pair, or 0
 * @lo:		the first byte of a UTF-16 unit, when @odd
 * @odd:	a unit's first byte was taken
 * @wide:	UTF-16LE; else one byte a character (NTLMSSP's OEM form)
 * @tail:	keep only what follows the last backslash (a share's path)
 * @lost:	bytes of it went by unseen: it is not known
 */
struct smb_who_sink {
	uint32_t at, len, got;
	uint16_t used, cap, hi;
	uint8_t lo;
	bool odd, wide, tail, lost;
};

/**
 * struct smb_who_pending - a request waiting for its response
 * @mid:	its MessageId
 * @auth:	for a session setup, an enum smb_who_auth
 * @ready:	what it names is read whole
 * @name:	the user, or the share
 * @domain:	the user's domain
 */
struct smb_who_pending {
	uint64_t mid;
	uint8_t auth;
	bool ready;
	char name[SMB_WHO_USER_MAX];
	char domain[SMB_WHO_DOMAIN_MAX];
};

/**
 * struct smb_who - what a connection's SMB session shows in clear
 * @session_id:	SessionId of the last session setup that succeeded, 0
 *		for none
 * @sealed_id:	SessionId of the last encrypted frame, 0 for none
 * @open_files:	successful CREATE responses less successful CLOSE ones
 * @more_shares: trees connected beyond @share's slots
 * @tree_id:	each listed share's TreeId
 * @auth:	an enum smb_who_auth, for @session_id
 * @nshares:	slots of @share in use
 * @sealed:	an encrypted frame passed: what follows it is not read
 * @user:	the user, NUL-terminated UTF-8, no control characters
 * @domain:	the user's domain, likewise
 * @share:	shares connected, the last part of their paths, likewise
 * @sess:	the last SESSION_SETUP request, till its final response
 * @tree:	the last TREE_CONNECT request, likewise
 * @sink:	the names of the request being read: [0] the user or the
 *		path, [1] the domain
 * @reading:	a request's names are being read (@sink counts)
 *
 * 552 bytes (x86-64), made once a connection sets up a session (the
 * framer's smb_who_fn), whatever it sends next: names are cut to their
 * bounds as they pass, and trees beyond SMB_WHO_SHARES only counted.
 * Only the client's framer reads requests into it; both framers note
 * responses and encrypted frames, each of its own stream, and one thread
 * runs both.
 */
struct smb_who {
	uint64_t session_id, sealed_id;
	uint32_t open_files, more_shares;
	uint32_t tree_id[SMB_WHO_SHARES];
	uint8_t auth, nshares;
	bool sealed;
	char user[SMB_WHO_USER_MAX];
	char domain[SMB_WHO_DOMAIN_MAX];
	char share[SMB_WHO_SHARES][SMB_WHO_SHARE_MAX];
	struct smb_who_pending sess, tree;
	struct smb_who_sink sink[2];
	bool reading;
};

/**
 * struct smb_who_saved - what a live handover carries of a view
 * @session_id:	see struct smb_who, as are the fields below
 * @sealed_id:	likewise
 * @open_files:	likewise
 * @more_shares: likewise
 * @tree_id:	likewise
 * @present:	1 if the connection had a view, else 0 and all else zero
 * @auth:	likewise
 * @nshares:	likewise
 * @sealed:	0 or 1
 * @user:	NUL-terminated, zero after the NUL
 * @domain:	likewise
 * @share:	likewise; zero past @nshares
 *
 * Requests in flight are not carried: a response the new process sees
 * to one the old one read leaves the name unknown.
 */
struct smb_who_saved {
	uint64_t session_id, sealed_id;
	uint32_t open_files, more_shares;
	uint32_t tree_id[SMB_WHO_SHARES];
	uint8_t present, auth, nshares, sealed;
	char user[SMB_WHO_USER_MAX];
	char domain[SMB_WHO_DOMAIN_MAX];
	char share[SMB_WHO_SHARES][SMB_WHO_SHARE_MAX];
	uint8_t pad[4];
};

bool smb_who_session_request(struct smb_who *w, const uint8_t *h, uint32_t held,
			     uint32_t len);
bool smb_who_tree_request(struct smb_who *w, const uint8_t *h, uint32_t held,
			  uint32_t len);
void smb_who_bytes(struct smb_who *w, uint32_t at, const uint8_t *p,
		   uint32_t n);
void smb_who_response(struct smb_who *w, const uint8_t *h);
void smb_who_sealed(struct smb_who *w, uint64_t session_id);
const char *smb_who_auth_text(unsigned auth);
bool smb_who_user_is(const struct smb_who *w, const char *name);
void smb_who_save(const struct smb_who *w, struct smb_who_saved *s);
int smb_who_restore(struct smb_who *w, const struct smb_who_saved *s);

#endif /* SMBSPLICE_WHO_H */
