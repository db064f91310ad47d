/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_LOGIN_H
#define SMBSPLICE_LOGIN_H

#include <stdbool.h>
#include <stdint.h>

/* What the start of a SESSION_SETUP request's security buffer asks for
 * (smb_login_blob()). */
enum smb_login {
	SMB_LOGIN_OTHER,     /* no NTLMSSP AUTHENTICATE: another leg, another
			      * mechanism (Kerberos), or not SPNEGO at all;
			      * the server's SessionFlags decide */
	SMB_LOGIN_NAMED,     /* an NTLMSSP AUTHENTICATE naming a user, or
			      * carrying an NT response */
	SMB_LOGIN_ANONYMOUS, /* an anonymous NTLMSSP AUTHENTICATE */
	SMB_LOGIN_HIDDEN,    /* a negTokenResp whose responseToken starts
			      * past the window: no client's doing */
};

enum smb_login smb_login_blob(const uint8_t *p, uint32_t n, bool whole);
enum smb_login smb_login_find(const uint8_t *p, uint32_t n, bool whole,
			      uint32_t *found);

#endif /* SMBSPLICE_LOGIN_H */
