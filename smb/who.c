// SPDX-License-Identifier: GPL-2.0-or-later
/* who.c - who a connection's session is, and what it has open
 *
 * Theory of operation: an admin matches a row of `ctl conns` with one of
 * smbstatus by SessionId, and wants to see who and what without it. The
 * wire says some of it in clear: an NTLMSSP AUTHENTICATE names its user
 * and domain; a TREE_CONNECT names its share; CREATE and CLOSE responses
 * say whether a file was opened or closed; the final SESSION_SETUP
 * response gives the SessionId. A Kerberos AP-REQ names its user only
 * inside the ticket, which is sealed: that session says "kerberos". Once
 * a session encrypts, its frames say nothing but their SessionId.
 *
 * The framer (framer.c) hands over what it holds of a request (header,
 * fixed body, the start of a session setup's security buffer), then the
 * bytes of the rest as they pass (smb_who_bytes()); it never splices such
 * a request, so every byte is seen. Names sit far into the security
 * buffer (Samba puts them after the NT response), so they are never held
 * whole: each is decoded as it passes, UTF-16LE to UTF-8, into a bounded
 * slot, control characters made '?', and cut at a character when the
 * slot is full. A name whose bytes did not all pass is not known. What a
 * request names counts only when its own response (by MessageId) says
 * success. Nothing here goes to the log or the trace: the view is read
 * by the control socket only (proxy/conn/connview.c).
 */
#include "config.h"

#include <string.h>
#include <strings.h>

#include "smb/login.h"
#include "smb/who.h"
#include "smb/wire.h"

/* What a code point that cannot be shown becomes: U+FFFD for a broken
 * surrogate, '?' for a control character. */
#define WHO_REPLACEMENT 0xfffdu

/**
 * sink_start() - begin reading one name
 * @s:		the sink
 * @at:		where it starts, from its message's start
 * @len:	its bytes on the wire
 * @out:	its slot, cleared
 * @cap:	the slot's size
 * @wide:	UTF-16LE (else one byte a character)
 * @tail:	keep only what follows the last backslash
 */
static void sink_start(struct smb_who_sink *s, uint32_t at, uint32_t len,
		       char *out, uint16_t cap, bool wide, bool tail)
{
	*s = (struct smb_who_sink){
		.at = at, .len = len, .cap = cap, .wide = wide, .tail = tail
	};
	memset(out, 0, cap);
}

/**
 * sink_put() - write one code point into a name's slot
 * @s:		the sink
 * @out:	its slot
 * @cp:		the code point
 */
static void sink_put(struct smb_who_sink *s, char *out, uint32_t cp)
{
	uint8_t u[4];
	unsigned k;

	if (s->tail && cp == '\\') {
		memset(out, 0, s->cap);
		s->used = 0;
		return;
	}
	if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp < 0xa0))
		cp = '?';
	if (cp < 0x80) {
		u[0] = (uint8_t)cp;
		k = 1;
	} else if (cp < 0x800) {
		u[0] = (uint8_t)(0xc0 | cp >> 6);
		u[1] = (uint8_t)(0x80 | (cp & 0x3f));
		k = 2;
	} else if (cp < 0x10000) {
		u[0] = (uint8_t)(0xe0 | cp >> 12);
		u[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
		u[2] = (uint8_t)(0x80 | (cp & 0x3f));
		k = 3;
	} else {
		u[0] = (uint8_t)(0xf0 | cp >> 18);
		u[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3f));
		u[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
		u[3] = (uint8_t)(0x80 | (cp & 0x3f));
		k = 4;
	}
	/* Cut at a character, and keep the NUL: nothing after a cut is
	 * written, or "ab" + "c" could read as another name. */
	if (s->used + k >= s->cap) {
		s->used = s->cap;
		return;
	}
	memcpy(out + s->used, u, k);
	s->used = (uint16_t)(s->used + k);
}

/**
 * sink_unit() - one UTF-16 code unit of a name
 * @s:		the sink
 * @out:	its slot
 * @unit:	the unit
 */
static void sink_unit(struct smb_who_sink *s, char *out, uint16_t unit)
{
	if (s->hi && unit >= 0xdc00 && unit < 0xe000) {
		sink_put(s, out,
			 0x10000 + ((uint32_t)(s->hi - 0xd800) << 10) +
				 (unit - 0xdc00));
		s->hi = 0;
		return;
	}
	if (s->hi) {
		sink_put(s, out, WHO_REPLACEMENT);
		s->hi = 0;
	}
	if (unit >= 0xd800 && unit < 0xdc00)
		s->hi = unit;
	else if (unit >= 0xdc00 && unit < 0xe000)
		sink_put(s, out, WHO_REPLACEMENT);
	else
		sink_put(s, out, unit);
}

/**
 * sink_feed() - bytes of a message pass a name's sink
 * @s:		the sink
 * @out:	its slot
 * @at:		where @p starts, from the message's start
 * @p:		the bytes
 * @n:		how many
 *
 * Return: true if the name is now read whole.
 */
static bool sink_feed(struct smb_who_sink *s, char *out, uint32_t at,
		      const uint8_t *p, uint32_t n)
{
	uint32_t next = s->at + s->got, end = s->at + s->len, from, to;

	if (s->lost || s->got == s->len)
		return !s->lost;
	if (at + n <= next)
		return false; /* all before what is due: seen already */
	if (at > next) {
		s->lost = true; /* bytes went by unseen (spliced, skipped) */
		return false;
	}
	from = next - at;
	to = end - at < n ? end - at : n;
	for (uint32_t i = from; i < to; i++) {
		if (!s->wide) {
			sink_put(s, out, p[i] < 0x80 ? p[i] : '?');
		} else if (!s->odd) {
			s->lo = p[i];
			s->odd = true;
		} else {
			s->odd = false;
			sink_unit(s, out, (uint16_t)(s->lo | p[i] << 8));
		}
	}
	s->got += to - from;
	if (s->got < s->len)
		return false;
	if (s->hi || s->odd) /* a name cut inside a character */
		sink_put(s, out, WHO_REPLACEMENT);
	if (s->used == s->cap)
		s->used = (uint16_t)strlen(out);
	return true;
}

/**
 * range_ok() - does a name lie inside its message
 * @base:	where the structure its offset counts from starts
 * @off:	its offset from there
 * @len:	its length
 * @msg:	the message's length
 *
 * Return: true if it does.
 */
static bool range_ok(uint64_t base, uint64_t off, uint64_t len, uint32_t msg)
{
	return base + off + len <= msg;
}

/**
 * der_enter() - step into a DER element of the expected tag
 * @p:		the bytes
 * @n:		how many
 * @at:		where the element starts; moved to its contents
 * @tag:	the tag it must have
 *
 * The length is skipped, not checked: a first leg is read only as far
 * as its first mechanism, which the window holds.
 *
 * Return: true if the element has @tag and its header is inside @n.
 */
static bool der_enter(const uint8_t *p, uint32_t n, uint32_t *at, uint8_t tag)
{
	uint32_t i = *at, k;

	if (i + 2 > n || p[i] != tag)
		return false;
	k = p[i + 1] & DER_LEN_LONG ? p[i + 1] & ~DER_LEN_LONG & 0xff : 0;
	if (k > DER_LEN_MAX_BYTES || i + 2 + k > n)
		return false;
	*at = i + 2 + k;
	return true;
}

/**
 * is_krb5_oid() - is a Kerberos mechanism's OID at @at
 * @p:		the bytes
 * @n:		how many
 * @at:		where the OID's tag is
 *
 * Return: true if it is.
 */
static bool is_krb5_oid(const uint8_t *p, uint32_t n, uint32_t at)
{
	return at <= n && n - at >= KRB5_OID_DER_LEN &&
	       (!memcmp(p + at, KRB5_OID_DER, KRB5_OID_DER_LEN) ||
		!memcmp(p + at, KRB5_MS_OID_DER, KRB5_OID_DER_LEN));
}

/**
 * is_kerberos() - does a security buffer start a Kerberos login
 * @p:	its first bytes
 * @n:	how many
 *
 * A GSS InitialContextToken that is Kerberos's own (a bare AP-REQ), or
 * SPNEGO's negTokenInit whose first (preferred) mechanism is Kerberos,
 * carrying no NTLMSSP token in what the window shows: the mechToken
 * that follows is then the AP-REQ.
 *
 * Return: true if it does.
 */
static bool is_kerberos(const uint8_t *p, uint32_t n)
{
	static const uint8_t spnego[] = { DER_OBJECT_ID, 6,    0x2b, 0x06,
					  0x01,		 0x05, 0x05, 0x02 };
	uint32_t at = 0;

	if (!der_enter(p, n, &at, GSS_INITIAL_CONTEXT))
		return false;
	for (uint32_t i = 0; i + NTLMSSP_SIGNATURE_LEN <= n; i++)
		if (!memcmp(p + i, NTLMSSP_SIGNATURE, NTLMSSP_SIGNATURE_LEN))
			return false;
	if (is_krb5_oid(p, n, at))
		return true;
	if (n - at < sizeof(spnego) || memcmp(p + at, spnego, sizeof(spnego)))
		return false;
	at += sizeof(spnego);
	/* negTokenInit [0], its SEQUENCE, mechTypes [0], their SEQUENCE. */
	return der_enter(p, n, &at, SPNEGO_NEG_TOKEN_INIT) &&
	       der_enter(p, n, &at, DER_SEQUENCE) &&
	       der_enter(p, n, &at, SPNEGO_NEG_TOKEN_INIT) &&
	       der_enter(p, n, &at, DER_SEQUENCE) && is_krb5_oid(p, n, at);
}

/**
 * ntlmssp_names() - start reading the names of an NTLMSSP AUTHENTICATE
 * @w:		the view
 * @m:		the AUTHENTICATE's first bytes
 * @n:		how many the window holds
 * @base:	where it starts, from its message's start
 * @len:	the message's length
 *
 * Return: true if both names lie in the message and will be read.
 */
static bool ntlmssp_names(struct smb_who *w, const uint8_t *m, uint32_t n,
			  uint32_t base, uint32_t len)
{
	uint32_t ulen, uoff, dlen, doff;
	bool wide = true;

	if (n < NTLMSSP_AUTH_NAMES)
		return false;
	ulen = get_le16(m + NTLMSSP_AUTH_USER_LEN);
	uoff = get_le32(m + NTLMSSP_AUTH_USER_OFF);
	dlen = get_le16(m + NTLMSSP_AUTH_DOMAIN_LEN);
	doff = get_le32(m + NTLMSSP_AUTH_DOMAIN_OFF);
	if (n >= NTLMSSP_AUTH_FLAGS + 4)
		wide = get_le32(m + NTLMSSP_AUTH_FLAGS) &
		       NTLMSSP_NEGOTIATE_UNICODE;
	if (!range_ok(base, uoff, ulen, len) ||
	    !range_ok(base, doff, dlen, len))
		return false;
	sink_start(&w->sink[0], base + uoff, ulen, w->sess.name,
		   SMB_WHO_USER_MAX, wide, false);
	sink_start(&w->sink[1], base + doff, dlen, w->sess.domain,
		   SMB_WHO_DOMAIN_MAX, wide, false);
	w->reading = true;
	return true;
}

/**
 * smb_who_session_request() - a SESSION_SETUP request's start is held
 * @w:		the view
 * @h:		the message's first bytes: header, fixed body, the start
 *		of its security buffer
 * @held:	how many
 * @len:	the message's length
 *
 * Return: true if the rest of the message must be handed to
 * smb_who_bytes(), unspliced.
 */
bool smb_who_session_request(struct smb_who *w, const uint8_t *h, uint32_t held,
			     uint32_t len)
{
	uint32_t off, blen, end, have, at;
	enum smb_login kind;

	w->reading = false;
	w->sess = (struct smb_who_pending){
		.mid = get_le64(h + SMB2_HDR_MESSAGE_ID),
		.auth = SMB_WHO_UNKNOWN,
	};
	if (held < SMB2_SESS_REQ_FIXED ||
	    get_le16(h + SMB2_BODY) != SMB2_SESS_REQ_BODY_SIZE)
		return false;
	off = get_le16(h + SMB2_SESS_REQ_SEC_OFFSET);
	blen = get_le16(h + SMB2_SESS_REQ_SEC_LENGTH);
	end = off + blen;
	if (off < SMB2_SESS_REQ_FIXED || off >= held || end > len)
		return false;
	have = (end < held ? end : held) - off;
	if (is_kerberos(h + off, have)) {
		w->sess.auth = SMB_WHO_KERBEROS;
		w->sess.ready = true;
		return false;
	}
	kind = smb_login_find(h + off, have, end <= held, &at);
	if (kind == SMB_LOGIN_ANONYMOUS) {
		w->sess.auth = SMB_WHO_ANONYMOUS;
		w->sess.ready = true;
		return false;
	}
	if (kind != SMB_LOGIN_NAMED ||
	    !ntlmssp_names(w, h + off + at, have - at, off + at, len))
		return false;
	w->sess.auth = SMB_WHO_NTLMSSP;
	smb_who_bytes(w, 0, h, held);
	return w->reading;
}

/**
 * smb_who_tree_request() - a TREE_CONNECT request's fixed body is held
 * @w:		the view
 * @h:		the message's first bytes
 * @held:	how many
 * @len:	the message's length
 *
 * Return: true if the rest of the message must be handed to
 * smb_who_bytes(), unspliced.
 */
bool smb_who_tree_request(struct smb_who *w, const uint8_t *h, uint32_t held,
			  uint32_t len)
{
	uint32_t off, plen;

	w->reading = false;
	w->tree = (struct smb_who_pending){
		.mid = get_le64(h + SMB2_HDR_MESSAGE_ID),
	};
	if (held < SMB2_TREE_REQ_PARSED ||
	    get_le16(h + SMB2_BODY) != SMB2_TREE_REQ_BODY_SIZE ||
	    get_le16(h + SMB2_TREE_REQ_FLAGS) & SMB2_TREE_FLAG_EXTENSION)
		return false;
	off = get_le16(h + SMB2_TREE_REQ_PATH_OFFSET);
	plen = get_le16(h + SMB2_TREE_REQ_PATH_LENGTH);
	if (off < SMB2_TREE_REQ_PARSED || !range_ok(0, off, plen, len))
		return false;
	sink_start(&w->sink[0], off, plen, w->tree.name, SMB_WHO_SHARE_MAX,
		   true, true);
	sink_start(&w->sink[1], 0, 0, w->tree.domain, SMB_WHO_DOMAIN_MAX, true,
		   false);
	w->reading = true;
	smb_who_bytes(w, 0, h, held);
	return w->reading;
}

/**
 * smb_who_bytes() - bytes of the request being read pass
 * @w:		the view
 * @at:		where they start, from the message's start
 * @p:		the bytes
 * @n:		how many
 *
 * The request's names are ready once both are read whole; a gap in what
 * passes (bytes the framer did not see) leaves them unknown.
 */
void smb_who_bytes(struct smb_who *w, uint32_t at, const uint8_t *p, uint32_t n)
{
	struct smb_who_pending *q = w->sink[0].tail ? &w->tree : &w->sess;
	bool a, b;

	if (!w->reading)
		return;
	a = sink_feed(&w->sink[0], q->name, at, p, n);
	b = sink_feed(&w->sink[1], q->domain, at, p, n);
	if (w->sink[0].lost || w->sink[1].lost)
		w->reading = false;
	else if (a && b) {
		w->reading = false;
		q->ready = true;
	}
}

/**
 * add_share() - a TREE_CONNECT succeeded
 * @w:		the view
 * @tree:	the TreeId the server gave it
 * @name:	its share, or NULL if its request was not read
 */
static void add_share(struct smb_who *w, uint32_t tree, const char *name)
{
	if (w->nshares == SMB_WHO_SHARES) {
		if (w->more_shares < UINT32_MAX)
			w->more_shares++;
		return;
	}
	w->tree_id[w->nshares] = tree;
	memset(w->share[w->nshares], 0, SMB_WHO_SHARE_MAX);
	memcpy(w->share[w->nshares], name ? name : "?",
	       name ? strnlen(name, SMB_WHO_SHARE_MAX - 1) : 1);
	w->nshares++;
}

/**
 * drop_share() - a TREE_DISCONNECT succeeded
 * @w:		the view
 * @tree:	its TreeId
 */
static void drop_share(struct smb_who *w, uint32_t tree)
{
	for (unsigned i = 0; i < w->nshares; i++) {
		if (w->tree_id[i] != tree)
			continue;
		w->nshares--;
		w->tree_id[i] = w->tree_id[w->nshares];
		memcpy(w->share[i], w->share[w->nshares], SMB_WHO_SHARE_MAX);
		w->tree_id[w->nshares] = 0;
		memset(w->share[w->nshares], 0, SMB_WHO_SHARE_MAX);
		return;
	}
	if (w->more_shares)
		w->more_shares--;
}

/**
 * session_answered() - the final response to a SESSION_SETUP request
 * @w:		the view
 * @mid:	its MessageId
 * @sid:	its SessionId
 * @ok:		it says success
 */
static void session_answered(struct smb_who *w, uint64_t mid, uint64_t sid,
			     bool ok)
{
	bool mine = w->sess.mid == mid && w->sess.auth != SMB_WHO_NONE;

	if (ok) {
		w->session_id = sid;
		w->auth =
			mine && w->sess.ready ? w->sess.auth : SMB_WHO_UNKNOWN;
		memset(w->user, 0, sizeof(w->user));
		memset(w->domain, 0, sizeof(w->domain));
		if (w->auth == SMB_WHO_NTLMSSP) {
			memcpy(w->user, w->sess.name, sizeof(w->user));
			memcpy(w->domain, w->sess.domain, sizeof(w->domain));
		}
	}
	if (mine)
		w->sess = (struct smb_who_pending){ 0 };
}

/**
 * smb_who_response() - a response's header passed
 * @w:	the view
 * @h:	its 64 bytes
 *
 * An interim response (STATUS_PENDING, async) is not the answer; a
 * failed one changes nothing but the request it answers.
 */
void smb_who_response(struct smb_who *w, const uint8_t *h)
{
	uint32_t status = get_le32(h + SMB2_HDR_STATUS),
		 flags = get_le32(h + SMB2_HDR_FLAGS);
	uint64_t mid = get_le64(h + SMB2_HDR_MESSAGE_ID),
		 sid = get_le64(h + SMB2_HDR_SESSION_ID);
	bool ok = status == SMB2_STATUS_SUCCESS,
	     sync = !(flags & SMB2_FLAG_ASYNC);

	if (status == SMB2_STATUS_PENDING && !sync)
		return;
	switch (get_le16(h + SMB2_HDR_COMMAND)) {
	case SMB2_SESSION_SETUP:
		/* MORE_PROCESSING_REQUIRED: the next leg is another request. */
		session_answered(w, mid, sid, ok);
		break;
	case SMB2_LOGOFF:
		if (ok && sid == w->session_id) {
			w->session_id = 0;
			w->auth = SMB_WHO_NONE;
			memset(w->user, 0, sizeof(w->user));
			memset(w->domain, 0, sizeof(w->domain));
		}
		break;
	case SMB2_TREE_CONNECT:
		if (ok && sync)
			add_share(w, get_le32(h + SMB2_HDR_TREE_ID),
				  w->tree.mid == mid && w->tree.ready
					  ? w->tree.name
					  : NULL);
		if (w->tree.mid == mid)
			w->tree = (struct smb_who_pending){ 0 };
		break;
	case SMB2_TREE_DISCONNECT:
		if (ok && sync)
			drop_share(w, get_le32(h + SMB2_HDR_TREE_ID));
		break;
	case SMB2_CREATE:
		if (ok && w->open_files < UINT32_MAX)
			w->open_files++;
		break;
	case SMB2_CLOSE:
		if (ok && w->open_files)
			w->open_files--;
		break;
	default:
		break;
	}
}

/**
 * smb_who_sealed() - an encryption transform frame passed
 * @w:		the view
 * @session_id:	the session whose keys seal it
 */
void smb_who_sealed(struct smb_who *w, uint64_t session_id)
{
	w->sealed = true;
	w->sealed_id = session_id;
}

/**
 * smb_who_auth_text() - how a session's user is known, as a word
 * @auth:	an enum smb_who_auth
 *
 * Return: "ntlmssp", "anonymous", "kerberos", "unknown", or NULL for
 * none.
 */
const char *smb_who_auth_text(unsigned auth)
{
	static const char *const text[SMB_WHO_AUTH_COUNT] = {
		[SMB_WHO_NONE] = NULL,
		[SMB_WHO_NTLMSSP] = "ntlmssp",
		[SMB_WHO_ANONYMOUS] = "anonymous",
		[SMB_WHO_KERBEROS] = "kerberos",
		[SMB_WHO_UNKNOWN] = "unknown",
	};

	return auth < SMB_WHO_AUTH_COUNT ? text[auth] : NULL;
}

/**
 * smb_who_user_is() - is a session's user the one an admin named
 * @w:		the view, or NULL for none
 * @name:	"user", or "DOMAIN\user"
 *
 * For acting on a user's connections (`ctl kill user`). Only a name
 * NTLMSSP gave counts: a Kerberos or anonymous session, or one whose
 * name was not read, matches no name. Letters compare without case in
 * ASCII alone, as the names are the client's to spell (Windows and
 * Samba take "Alice" for "alice"); a domain is matched only when named.
 *
 * Return: true if @name is the session's user.
 */
bool smb_who_user_is(const struct smb_who *w, const char *name)
{
	const char *slash = strchr(name, '\\');
	size_t dlen = slash ? (size_t)(slash - name) : 0;

	if (!w || w->auth != SMB_WHO_NTLMSSP || !w->user[0])
		return false;
	if (slash &&
	    (strlen(w->domain) != dlen || strncasecmp(w->domain, name, dlen)))
		return false;
	return !strcasecmp(w->user, slash ? slash + 1 : name);
}

/**
 * smb_who_save() - what a handover carries of a view
 * @w:	the view, or NULL for none
 * @s:	filled whole
 */
void smb_who_save(const struct smb_who *w, struct smb_who_saved *s)
{
	memset(s, 0, sizeof(*s));
	if (!w)
		return;
	s->present = 1;
	s->session_id = w->session_id;
	s->sealed_id = w->sealed_id;
	s->open_files = w->open_files;
	s->more_shares = w->more_shares;
	s->auth = w->auth;
	s->nshares = w->nshares;
	s->sealed = w->sealed;
	memcpy(s->tree_id, w->tree_id, sizeof(s->tree_id));
	memcpy(s->user, w->user, sizeof(s->user));
	memcpy(s->domain, w->domain, sizeof(s->domain));
	memcpy(s->share, w->share, sizeof(s->share));
}

/**
 * text_ok() - is a carried name one a view could hold
 * @t:	the name's slot
 * @n:	its size
 *
 * Return: true if it ends in a NUL with only zeros after it, and has no
 * control character (what sink_put() never writes).
 */
static bool text_ok(const char *t, size_t n)
{
	size_t len = strnlen(t, n);

	if (len == n)
		return false;
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)t[i] < 0x20 || t[i] == 0x7f)
			return false;
	for (size_t i = len; i < n; i++)
		if (t[i])
			return false;
	return true;
}

/**
 * smb_who_restore() - a view as the old process left it
 * @w:	the view, zeroed
 * @s:	what smb_who_save() wrote there (an image is input: checked)
 *
 * Return: 0, or -1 if @s is no view's, @w then untouched.
 */
int smb_who_restore(struct smb_who *w, const struct smb_who_saved *s)
{
	bool ok = s->present == 1 && s->auth < SMB_WHO_AUTH_COUNT &&
		  s->nshares <= SMB_WHO_SHARES && s->sealed <= 1 &&
		  text_ok(s->user, sizeof(s->user)) &&
		  text_ok(s->domain, sizeof(s->domain));

	for (unsigned i = 0; ok && i < SMB_WHO_SHARES; i++)
		ok = text_ok(s->share[i], sizeof(s->share[i])) &&
		     (i < s->nshares || (!s->share[i][0] && !s->tree_id[i]));
	for (unsigned i = 0; ok && i < sizeof(s->pad); i++)
		ok = !s->pad[i];
	if (!ok)
		return -1;
	memset(w, 0, sizeof(*w));
	w->session_id = s->session_id;
	w->sealed_id = s->sealed_id;
	w->open_files = s->open_files;
	w->more_shares = s->more_shares;
	w->auth = s->auth;
	w->nshares = s->nshares;
	w->sealed = s->sealed;
	memcpy(w->tree_id, s->tree_id, sizeof(w->tree_id));
	memcpy(w->user, s->user, sizeof(w->user));
	memcpy(w->domain, s->domain, sizeof(w->domain));
	memcpy(w->share, s->share, sizeof(w->share));
	return 0;
}
