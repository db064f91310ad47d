/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef SMBSPLICE_OPENING_H
#define SMBSPLICE_OPENING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The longest first frame smbsplice waits for, prefix included. SMB2
 * NEGOTIATE requests with every dialect and context are a few hundred
 * bytes, SMB1 ones with every dialect string about 200; a session
 * request is 72. */
#define SMB_OPENING_MAX 4096

/* What a client's first frame is (smb_opening_judge()). */
enum smb_opening {
	SMB_OPENING_MORE,    /* not complete yet */
	SMB_OPENING_SMB2,    /* an SMB2 NEGOTIATE request */
	SMB_OPENING_SMB1,    /* an SMB1 NEGOTIATE request */
	SMB_OPENING_NETBIOS, /* a NetBIOS session request: only on port 139 */
	SMB_OPENING_BAD,     /* anything else: no SMB server answers it */
};

enum smb_opening smb_opening_judge(const uint8_t *p, size_t n, size_t *need,
				   const char **why);

#endif /* SMBSPLICE_OPENING_H */
